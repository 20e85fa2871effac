"""robolearn.draws: eagerly the same numbers as torch's own generator calls; compiled, the
same numbers in the same order, two look-alike draws never merged, and no graph break."""

import types

import pytest
import torch
import torch._dynamo

from robolearn import draws


def fake_env(seed: int = 0):
    return types.SimpleNamespace(generator=torch.Generator().manual_seed(seed), device=torch.device("cpu"))


def test_eager_draws_are_torchs_own():
    env, gen = fake_env(), torch.Generator().manual_seed(0)
    assert torch.equal(draws.uniform(env, (5, 3)), torch.rand(5, 3, generator=gen))
    assert torch.equal(draws.normal(env, (7,)), torch.randn(7, generator=gen))
    assert torch.equal(draws.integers(env, (4, 2), 2, 9), torch.randint(2, 9, (4, 2), generator=gen))
    low_high = draws.uniform(env, (1000,), -0.5, 0.5)
    assert torch.equal(low_high, torch.empty(1000).uniform_(-0.5, 0.5, generator=gen))
    assert -0.5 <= float(low_high.min()) and float(low_high.max()) < 0.5


def _reset_like(env, x):
    """Two draws that look alike (same shape and bounds), arithmetic between them, three kinds."""
    a = draws.uniform(env, (x.shape[0], 2), -1.0, 1.0)
    y = x.unsqueeze(1) * 2 + a
    b = draws.uniform(env, (x.shape[0], 2), -1.0, 1.0)
    c = draws.normal(env, (x.shape[0],))
    k = draws.integers(env, (x.shape[0],), 0, 5)
    return y + b, c * 3, k, a, b


def test_compiled_draws_keep_the_eager_stream_and_order():
    env = fake_env()
    draws.register(env.generator)
    compiled = torch.compile(_reset_like, dynamic=False)
    x = torch.arange(6.0)
    for seed in (0, 1, 2):
        env.generator.manual_seed(seed)
        got = compiled(env, x)
        after_compiled = env.generator.get_state()
        env.generator.manual_seed(seed)
        want = _reset_like(env, x)
        assert torch.equal(after_compiled, env.generator.get_state())  # as many numbers drawn
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=0, atol=1e-6)  # fused arithmetic may round differently
        assert torch.equal(got[3], want[3]) and torch.equal(got[4], want[4])  # the draws themselves: bit for bit
        assert not torch.equal(got[3], got[4])  # two look-alike draws stay two draws


def test_compiled_draws_make_one_graph():
    env = fake_env()
    draws.register(env.generator)
    explained = torch._dynamo.explain(_reset_like)(env, torch.arange(4.0))
    assert explained.graph_break_count == 0 and explained.graph_count == 1, explained.break_reasons


def test_an_unregistered_generator_is_named():
    env = fake_env()
    with pytest.raises(Exception, match="register"):
        torch.compile(_reset_like, dynamic=False, fullgraph=True)(env, torch.arange(3.0))
