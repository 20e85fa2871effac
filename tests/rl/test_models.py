import math

import numpy as np
import pytest
import torch

from robolearn.rl.models import (
    ActorCritic,
    EmpiricalNormalization,
    InferencePolicy,
    follow_normalizer,
    gaussian_entropy,
    gaussian_log_prob,
)


def test_normalizer_running_statistics_equal_batch_statistics():
    gen = torch.Generator().manual_seed(0)
    data = torch.randn(1000, 3, generator=gen) * torch.tensor([1.0, 5.0, 0.1]) + torch.tensor([2.0, -1.0, 0.0])
    norm = EmpiricalNormalization(3)
    for chunk in data.split(137):
        norm.update(chunk)
    np.testing.assert_allclose(norm.mean.numpy(), data.mean(0).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(norm.var.numpy(), data.var(0, unbiased=False).numpy(), rtol=1e-4)
    out = norm(data)
    np.testing.assert_allclose(out.mean(0).numpy(), 0.0, atol=1e-4)
    np.testing.assert_allclose(out.std(0, unbiased=False).numpy(), 1.0, atol=1e-4)


def test_a_column_that_never_varied_is_amplified_at_most_one_over_the_floor():
    # Column 1 is always 3.0 in training: its variance is 0, its mean 3. On the robot it reads 3.5:
    # (3.5 - 3) / max(sqrt(0), 0.01) = 50 with the default floor, not 0.5 / 1e-4 = 5000.
    norm = EmpiricalNormalization(2)
    norm.update(torch.stack([torch.randn(500), torch.full((500,), 3.0)], dim=1))
    assert norm.var[1].item() == 0.0
    assert norm(torch.tensor([[0.0, 3.5]]))[0, 1].item() == pytest.approx(50.0, rel=1e-5)
    wider = EmpiricalNormalization(2, min_std=0.1)
    wider.load_state_dict(norm.state_dict())
    assert wider(torch.tensor([[0.0, 3.5]]))[0, 1].item() == pytest.approx(5.0, rel=1e-5)
    # a column that did vary is untouched by the floor: (x - mean) / std
    x = torch.tensor([[1.0, 3.0]])
    assert norm(x)[0, 0].item() == pytest.approx(((1.0 - norm.mean[0]) / norm.var[0].sqrt()).item(), rel=1e-5)


def test_normalizer_clip_bounds_the_normalized_value():
    norm = EmpiricalNormalization(1, clip=5.0)
    norm.update(torch.tensor([[-1.0], [1.0]]))  # mean 0, std 1
    assert norm(torch.tensor([[100.0], [-100.0], [2.0]]))[:, 0].tolist() == [5.0, -5.0, 2.0]


def test_gaussian_log_prob_and_entropy_match_torch_distributions():
    gen = torch.Generator().manual_seed(0)
    mean, actions, log_std = torch.randn(7, 3, generator=gen), torch.randn(7, 3, generator=gen), torch.randn(3, generator=gen)
    reference = torch.distributions.Normal(mean, log_std.exp().expand_as(mean))
    assert torch.allclose(gaussian_log_prob(actions, mean, log_std), reference.log_prob(actions).sum(-1), atol=1e-5)
    assert gaussian_entropy(log_std).item() == pytest.approx(reference.entropy().sum(-1)[0].item(), rel=1e-6)


def test_actor_critic_shapes_and_inference_policy_is_the_mean():
    ac = ActorCritic(4, 6, 2, [16], [16], "elu", init_noise_std=0.5)
    obs = torch.randn(5, 4)
    actions, log_prob, mean, std, _ = ac.act(obs)
    assert actions.shape == mean.shape == (5, 2) and log_prob.shape == (5,)
    assert torch.allclose(std, torch.full((5, 2), 0.5))
    assert ac.value(torch.randn(5, 6)).shape == (5,)
    ac.actor_normalizer.update(torch.randn(100, 4) * 3 + 1)
    n = ac.actor_normalizer
    by_hand = ac.actor((obs - n.mean) / torch.sqrt(n.var))
    assert torch.allclose(InferencePolicy(ac)(obs), by_hand, atol=1e-6)
    assert not torch.allclose(InferencePolicy(ac)(obs), ac.actor(obs))  # the normalizer is in the graph


def test_noise_floor_is_kept_in_place():
    ac = ActorCritic(2, 2, 3, [8], [8], init_noise_std=1.0, min_noise_std=0.2)
    log_std = ac.log_std
    with torch.no_grad():
        ac.log_std.copy_(torch.tensor([0.0, math.log(0.1), math.log(0.5)]))
    ac.clamp_noise()
    assert ac.log_std is log_std
    assert ac.log_std.exp().tolist() == pytest.approx([1.0, 0.2, 0.5])


def test_sampled_log_prob_equals_the_density_of_the_sampled_action():
    ac = ActorCritic(3, 3, 4, [8], [8], init_noise_std=0.7)
    obs = torch.randn(6, 3)
    actions, log_prob, mean, _, _ = ac.act(obs)
    assert torch.allclose(log_prob, gaussian_log_prob(actions, mean, ac.log_std), atol=1e-5)


def test_following_the_normalizer_leaves_the_network_unchanged():
    """New statistics are absorbed by the first layer: the same inputs give the same outputs,
    while the normalizer itself moved (here by a hand-made shift and scale)."""
    torch.manual_seed(0)
    ac = ActorCritic(3, 5, 2, [16, 8], [16], normalizer_min_std=0.01)
    policy_obs, critic_obs = torch.randn(64, 3) * 4 + 7, torch.randn(64, 5) * 0.1 - 2
    critic_obs[:, 0] = 1.5  # a column that never varies: divided by the floor, still unchanged
    before = ac.action_mean(policy_obs), ac.value(critic_obs)
    follow_normalizer(ac.actor_normalizer, ac.actor_input_layer(), policy_obs)
    follow_normalizer(ac.critic_normalizer, ac.critic_input_layer(), critic_obs)
    after = ac.action_mean(policy_obs), ac.value(critic_obs)
    assert torch.allclose(ac.actor_normalizer.mean, policy_obs.mean(0))
    assert torch.allclose(ac.critic_normalizer.std[0], torch.tensor(0.01))
    for b, a in zip(before, after):
        assert torch.allclose(b, a, rtol=1e-4, atol=1e-4), (b - a).abs().max()


def test_the_first_layer_absorbs_a_hand_worked_change_of_statistics():
    """1 input, 1 output, no hidden layer: y = w (x - m) / s + b. From (m, s) = (0, 1) to the
    statistics of {1, 3} (mean 2, std 1): w' = w * 1 / 1, b' = b + w * (2 - 0) / 1."""
    ac = ActorCritic(1, 1, 1, [], [])
    with torch.no_grad():
        ac.actor[0].weight.fill_(0.5), ac.actor[0].bias.fill_(0.25)
    follow_normalizer(ac.actor_normalizer, ac.actor_input_layer(), torch.tensor([[1.0], [3.0]]))
    assert ac.actor[0].weight.item() == 0.5 and ac.actor[0].bias.item() == 0.25 + 0.5 * 2
    assert ac.action_mean(torch.tensor([[3.0]])).item() == 0.5 * 3 + 0.25


def test_seeding_the_normalizers_keeps_the_initial_networks():
    """The first observations set the statistics; the networks still compute what they did."""
    torch.manual_seed(0)
    ac = ActorCritic(2, 2, 1, [8], [8])
    obs = torch.tensor([[1.0, 5.0], [3.0, 5.0]])  # the second column never varies: floored std
    probe = torch.randn(16, 2)
    before = ac.action_mean(probe), ac.value(probe)
    ac.seed_normalizers(obs, obs)
    assert ac.actor_normalizer.mean.tolist() == [2.0, 5.0] and ac.critic_normalizer.std[0].item() == 1.0
    for b, a in zip(before, (ac.action_mean(probe), ac.value(probe))):
        assert torch.allclose(b, a, atol=1e-5)


def test_a_weighted_normalizer_update_takes_only_the_samples_of_weight_one():
    gen = torch.Generator().manual_seed(0)
    data = torch.randn(200, 3, generator=gen) * 2 + 1
    weights = (torch.rand(200, generator=gen) > 0.3).float()
    garbage = data.clone()
    garbage[weights == 0] = 1e6
    masked, reference = EmpiricalNormalization(3), EmpiricalNormalization(3)
    masked.update(data[:50])
    reference.update(data[:50])
    masked.update(garbage, weights)
    reference.update(data[weights.bool()])
    assert torch.allclose(masked.mean, reference.mean, atol=1e-5) and torch.allclose(masked.var, reference.var, rtol=1e-4)
    assert masked.count.item() == reference.count.item()
    before = masked.mean.clone()
    masked.update(garbage, torch.zeros(200))  # nothing counts: nothing changes
    assert torch.equal(masked.mean, before)
