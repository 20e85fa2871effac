"""GAE and the PPO loss against numbers worked out by hand."""

import math

import pytest
import torch

from robolearn.rl.losses import adapt_learning_rate, gae, gaussian_kl, ppo_loss


def col(*values, dtype=torch.float32):
    """A [T, 1] tensor (one environment)."""
    return torch.tensor(values, dtype=dtype).unsqueeze(1)


def test_gae_without_episode_end_matches_hand_computation():
    # gamma = 0.5, lam = 0.5, r = [1, 2], V = [0.5, 1.0], V(s_2) = 2.0
    # delta_1 = 2 + 0.5*2.0 - 1.0 = 2.0          A_1 = 2.0
    # delta_0 = 1 + 0.5*1.0 - 0.5 = 1.0          A_0 = 1.0 + 0.25*2.0 = 1.5
    adv, ret = gae(col(1.0, 2.0), col(0.5, 1.0), torch.tensor([2.0]), col(False, False, dtype=torch.bool),
                   col(False, False, dtype=torch.bool), col(0.0, 0.0), gamma=0.5, lam=0.5)
    assert adv[:, 0].tolist() == pytest.approx([1.5, 2.0])
    assert ret[:, 0].tolist() == pytest.approx([2.0, 3.0])


def test_gae_time_out_in_the_middle_bootstraps_and_termination_does_not():
    # Four steps; step 1 is a time-out (bootstrap with its timeout value 10), step 3 terminates.
    # gamma = 0.9, lam = 0.8, r = [1, 1, 1, 1], V = [2, 3, 4, 5], V(after last) = 7 (unused: ended).
    # t=3 terminated: delta = 1 - 5 = -4                      A_3 = -4
    # t=2:           delta = 1 + 0.9*5 - 4 = 1.5              A_2 = 1.5 + 0.72*(-4) = -1.38
    # t=1 time-out:  delta = 1 + 0.9*10 - 3 = 7               A_1 = 7 (recursion cut at the end)
    # t=0:           delta = 1 + 0.9*3 - 2 = 1.7              A_0 = 1.7 + 0.72*7 = 6.74
    terminated = col(False, False, False, True, dtype=torch.bool)
    truncated = col(False, True, False, False, dtype=torch.bool)
    timeout_values = col(0.0, 10.0, 0.0, 0.0)
    adv, ret = gae(col(1.0, 1.0, 1.0, 1.0), col(2.0, 3.0, 4.0, 5.0), torch.tensor([7.0]), terminated, truncated,
                   timeout_values, gamma=0.9, lam=0.8)
    assert adv[:, 0].tolist() == pytest.approx([6.74, 7.0, -1.38, -4.0])
    assert ret[:, 0].tolist() == pytest.approx([8.74, 10.0, 2.62, 1.0])


def test_gae_treats_environments_independently():
    rewards = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    values = torch.zeros(2, 2)
    flags = torch.zeros(2, 2, dtype=torch.bool)
    adv, _ = gae(rewards, values, torch.zeros(2), flags, flags, values, gamma=1.0, lam=1.0)
    assert adv[:, 0].tolist() == [2.0, 1.0]
    assert adv[:, 1].tolist() == [0.0, 0.0]


def test_ppo_loss_matches_hand_computation():
    # Two samples, eps = 0.2.
    # sample 0: ratio = e^{ln 1.5} = 1.5, A = 1  -> max(-1.5, -1.2) = -1.2
    # sample 1: ratio = 0.5,              A = -2 -> max(1.0, 1.6) = 1.6        surrogate = 0.2
    # values: V = [1.5, 0.0], V_old = [1.0, 0.0], R = [2.0, 1.0]
    #   clipped V = [1.2, 0.0]; losses max((−0.5)^2, (−0.8)^2) = 0.64 ; max(1, 1) = 1 -> value = 0.82
    # entropy mean = 1.0; loss = 0.2 + 0.5*0.82 - 0.01*1.0 = 0.6
    log_prob = torch.log(torch.tensor([1.5, 0.5]))
    loss, metrics = ppo_loss(
        log_prob, torch.zeros(2), torch.tensor([1.0, -2.0]), torch.tensor([1.5, 0.0]), torch.tensor([1.0, 0.0]),
        torch.tensor([2.0, 1.0]), torch.tensor([0.5, 1.5]), clip_param=0.2, value_loss_coef=0.5, entropy_coef=0.01,
    )
    assert metrics["surrogate_loss"].item() == pytest.approx(0.2)
    assert metrics["value_loss"].item() == pytest.approx(0.82)
    assert metrics["clip_fraction"].item() == pytest.approx(1.0)
    assert loss.item() == pytest.approx(0.6)


def test_ppo_value_loss_unclipped():
    _, metrics = ppo_loss(
        torch.zeros(2), torch.zeros(2), torch.zeros(2), torch.tensor([1.5, 0.0]), torch.tensor([1.0, 0.0]),
        torch.tensor([2.0, 1.0]), torch.zeros(2), 0.2, 1.0, 0.0, value_clip=None,
    )
    assert metrics["value_loss"].item() == pytest.approx((0.25 + 1.0) / 2)


def test_value_clip_is_its_own_epsilon():
    # V = [3.0], V_old = [1.0], R = [4.0]. The ratio's clip_param (0.2) must not touch the value:
    #   value_clip 1.5 -> clipped V = 2.5: max((3-4)^2, (2.5-4)^2) = 2.25
    #   value_clip 0.5 -> clipped V = 1.5: max(1, (1.5-4)^2) = 6.25
    args = (torch.zeros(1), torch.zeros(1), torch.zeros(1), torch.tensor([3.0]), torch.tensor([1.0]), torch.tensor([4.0]),
            torch.zeros(1), 0.2, 1.0, 0.0)  # fmt: skip
    assert ppo_loss(*args, value_clip=1.5)[1]["value_loss"].item() == pytest.approx(2.25)
    assert ppo_loss(*args, value_clip=0.5)[1]["value_loss"].item() == pytest.approx(6.25)


@pytest.mark.parametrize(
    ("lr", "kl", "expected"),
    [
        (1e-3, 0.05, 1e-3 / 1.5),  # moved too far (kl > 2 x 0.01): shrink
        (1e-3, 0.001, 1.5e-3),  # barely moved (0 < kl < 0.005): grow
        (1e-3, 0.01, 1e-3),  # on target: keep
        (1e-3, 0.0, 1e-3),  # no movement at all (first minibatch): keep
        (1.2e-5, 0.05, 1e-5),  # shrink, floored at 1e-5
        (8e-3, 0.001, 1e-2),  # grow, capped at 1e-2
    ],
)
def test_adaptive_learning_rate_by_hand(lr, kl, expected):
    new = adapt_learning_rate(torch.tensor(lr), torch.tensor(kl), desired_kl=0.01)
    assert new.item() == pytest.approx(expected)


def test_gaussian_kl_matches_closed_form():
    # KL(N(0,1) || N(1,2)) = ln 2 + (1 + 1) / 8 - 1/2
    kl = gaussian_kl(torch.tensor([[0.0]]), torch.tensor([[1.0]]), torch.tensor([[1.0]]), torch.tensor([[2.0]]))
    assert kl.item() == pytest.approx(math.log(2) + 2 / 8 - 0.5)
    same = gaussian_kl(torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2))
    assert torch.all(same == 0)


def test_gae_gives_an_invalid_step_no_advantage_and_cuts_before_it():
    # The env marked step 2 invalid (a diverged simulation: terminated, reward 0). It gets A = 0 and
    # return V_2; step 1 bootstraps from V_2 as if its episode had been cut there.
    # gamma = 0.9, lam = 0.8, r = [1, 1, 0, 1], V = [2, 3, 4, 5], V(after last) = 6.
    # t=3:           delta = 1 + 0.9*6 - 5 = 1.4              A_3 = 1.4
    # t=2 invalid:                                            A_2 = 0
    # t=1:           delta = 1 + 0.9*4 - 3 = 1.6              A_1 = 1.6 + 0.72*0 = 1.6
    # t=0:           delta = 1 + 0.9*3 - 2 = 1.7              A_0 = 1.7 + 0.72*1.6 = 2.852
    terminated = col(False, False, True, False, dtype=torch.bool)
    truncated = col(False, False, False, False, dtype=torch.bool)
    adv, ret = gae(col(1.0, 1.0, 0.0, 1.0), col(2.0, 3.0, 4.0, 5.0), torch.tensor([6.0]), terminated, truncated,
                   col(0.0, 0.0, 0.0, 0.0), gamma=0.9, lam=0.8, valid=col(1.0, 1.0, 0.0, 1.0))  # fmt: skip
    assert adv[:, 0].tolist() == pytest.approx([2.852, 1.6, 0.0, 1.4])
    assert ret[:, 0].tolist() == pytest.approx([4.852, 4.6, 4.0, 6.4])


def test_ppo_loss_with_weights_is_the_loss_of_the_weighted_samples_alone():
    gen = torch.Generator().manual_seed(0)
    args = [torch.randn(6, generator=gen) for _ in range(6)]  # log probs (new, old), A, V, V_old, R
    weights = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    kept = [a[weights.bool()] for a in args]
    garbage = [a.clone() for a in args]
    for a in garbage:
        a[~weights.bool()] = 1e6  # what a masked sample holds does not matter
    loss, metrics = ppo_loss(*garbage, torch.tensor(1.0), 0.2, 0.5, 0.01, 0.2, weights)
    ref_loss, ref_metrics = ppo_loss(*kept, torch.tensor(1.0), 0.2, 0.5, 0.01, 0.2)
    assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-6)
    for name in ref_metrics:
        assert metrics[name].item() == pytest.approx(ref_metrics[name].item(), rel=1e-6, abs=1e-7)
