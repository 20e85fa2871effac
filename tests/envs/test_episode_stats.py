"""Reported episode statistics: a rolling mean over the last K finished episodes, never NaN."""

import pytest
import torch

from robolearn.envs.episode_stats import EpisodeStats


def rows(*values):
    return torch.tensor([[v, 10 * v] for v in values], dtype=torch.float32)


def test_window_holds_the_last_k_episodes():
    stats = EpisodeStats(3, ["return", "length"], torch.device("cpu"))
    assert stats.summary() == {"episodes": 0.0}  # nothing finished: no means at all
    # step 1: envs 0 and 2 end with returns 1 and 3
    stats.record(torch.tensor([True, False, True, False]), rows(1, 2, 3, 4))
    assert stats.summary() == {"episodes": 2.0, "episode_window": 2.0, "return": 2.0, "length": 20.0}
    # no episode ends in the next iteration: the means still cover the last finished ones
    assert stats.summary() == {"episodes": 0.0, "episode_window": 2.0, "return": 2.0, "length": 20.0}
    # step 2: envs 1 and 3 end (2, 4): the window keeps 3, 2, 4 (the oldest, 1, drops out)
    stats.record(torch.tensor([False, True, False, True]), rows(9, 2, 9, 4))
    assert stats.summary() == {"episodes": 2.0, "episode_window": 3.0, "return": 3.0, "length": 30.0}


def test_more_endings_in_one_step_than_the_window_keeps_the_last_ones():
    stats = EpisodeStats(2, ["return", "length"], torch.device("cpu"))
    stats.record(torch.tensor([True, True, True, True]), rows(1, 2, 3, 4))
    assert stats.summary() == {"episodes": 4.0, "episode_window": 2.0, "return": 3.5, "length": 35.0}
    stats.record(torch.tensor([True, False, False, False]), rows(10, 0, 0, 0))
    assert stats.summary()["return"] == pytest.approx((4 + 10) / 2)


def test_state_round_trip():
    stats = EpisodeStats(4, ["return", "length"], torch.device("cpu"))
    stats.record(torch.tensor([True, True]), rows(1, 2))
    other = EpisodeStats(4, ["return", "length"], torch.device("cpu"))
    other.load_state_dict(stats.state_dict())
    assert other.summary() == stats.summary()


def test_a_run_reports_no_means_until_an_episode_has_finished(make_env):
    import math

    from robolearn.config import AlgoCfg, RunnerCfg
    from robolearn.logger import episode_summary
    from robolearn.rl.runner import OnPolicyRunner

    env = make_env("pendulum", num_envs=8)  # 500-step episodes, no terminations
    env.stagger_timeouts = False
    runner = OnPolicyRunner(env, AlgoCfg(num_mini_batches=1), RunnerCfg(num_steps_per_env=8, max_iterations=2), env.device)
    rows = []
    runner.learn(rows.append)
    for row in rows:
        assert row["episodes"] == 0 and "mean_episode_return" not in row and "episode_window" not in row
        assert all(math.isfinite(v) for v in row.values() if isinstance(v, float))
        assert episode_summary(row) == "no episode finished yet"
    assert episode_summary({"mean_episode_return": 1.5, "mean_episode_length": 10}) == "return 1.50 | length 10.0"
