import numpy as np
import torch

from robolearn.rl.models import ActorCritic, EmpiricalNormalization, InferencePolicy


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


def test_actor_critic_shapes_and_inference_policy_is_the_mean():
    ac = ActorCritic(4, 6, 2, [16], [16], "elu", init_noise_std=0.5)
    obs = torch.randn(5, 4)
    dist = ac.distribution(obs)
    assert dist.mean.shape == (5, 2)
    assert torch.allclose(dist.stddev, torch.full((5, 2), 0.5))
    assert ac.value(torch.randn(5, 6)).shape == (5,)
    ac.actor_normalizer.update(torch.randn(100, 4) * 3 + 1)
    n = ac.actor_normalizer
    by_hand = ac.actor((obs - n.mean) / torch.sqrt(n.var + n.eps))
    assert torch.allclose(InferencePolicy(ac)(obs), by_hand)
    assert not torch.allclose(InferencePolicy(ac)(obs), ac.actor(obs))  # the normalizer is in the graph
