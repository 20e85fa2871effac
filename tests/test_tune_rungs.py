"""Where a tune trial saves for ASHA: the rungs robolearn computes are Ray's own."""

import pytest

from robolearn.tune import asha_rungs


@pytest.mark.parametrize("grace,rf,max_t", [(2, 2, 9), (1, 3, 101), (5, 4, 1001), (10, 2, 11), (3, 2.5, 60)])
def test_the_rungs_a_trial_saves_at_are_where_ray_asha_decides(grace, rf, max_t):
    pytest.importorskip("ray")
    from ray.tune.schedulers import ASHAScheduler

    ray_rungs = ASHAScheduler(time_attr="iteration", max_t=max_t, grace_period=grace, reduction_factor=rf)._brackets[0]._rungs
    # Ray decides at the first reported iteration at or past a milestone: each iteration is reported
    assert asha_rungs(grace, rf, max_t) == tuple(sorted({-(-milestone // 1) for milestone, _ in ray_rungs}))
    assert asha_rungs(2, 2, 9) == (2, 4, 8)
