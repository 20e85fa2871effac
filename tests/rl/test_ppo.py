"""PPO and the runner in-process, on a tiny contextual bandit: the policy must learn a = x."""

import pytest
import torch

from robolearn.config import AlgoCfg, RunnerCfg
from robolearn.rl.losses import gae
from robolearn.rl.runner import OnPolicyRunner


class Bandit:
    """obs x ~ U(-2, 2); reward -(a - x)^2; episodes time out every 8 steps."""

    num_envs, num_actions, max_episode_length = 64, 1, 8
    device = torch.device("cpu")

    def __init__(self):
        self.gen = torch.Generator().manual_seed(0)
        self.t = 0
        self._draw()

    def _draw(self):
        self.x = torch.rand(self.num_envs, 1, generator=self.gen) * 4 - 2
        return {"policy": self.x, "critic": self.x}

    def reset(self):
        return self._draw()

    def step(self, action):
        reward = -(action - self.x).square().squeeze(1)
        self.t += 1
        truncated = torch.full((self.num_envs,), self.t % 8 == 0)
        return self._draw(), reward, torch.zeros_like(truncated), truncated

    def observation_dims(self):
        return {"policy": 1, "critic": 1}

    def pop_episode_stats(self):
        return {"episodes": 0.0}


def test_runner_learns_the_bandit():
    env = Bandit()
    runner = OnPolicyRunner(env, AlgoCfg(), RunnerCfg(num_steps_per_env=8, max_iterations=60), env.device)
    probe = torch.linspace(-2, 2, 41).unsqueeze(1)

    def error():
        with torch.no_grad():
            return (runner.actor_critic.action_mean(probe) - probe).square().mean().item()

    before = error()
    rows = []
    runner.learn(rows.append)
    assert [r["iteration"] for r in rows] == list(range(1, 61)) and rows[-1]["env_steps"] == 60 * 8 * 64
    assert before > 0.5 and error() < 0.05, (before, error())
    assert all(r["kl"] >= 0 and r["entropy"] == r["entropy"] for r in rows)


def make_ppo(**algo):
    env = Bandit()
    runner = OnPolicyRunner(env, AlgoCfg(**algo), RunnerCfg(num_steps_per_env=4), env.device)
    return runner.alg, runner.storage


@pytest.mark.parametrize(("kl", "expected"), [(0.05, 1e-3 / 1.5), (0.001, 1.5e-3), (0.01, 1e-3)])
def test_adaptive_learning_rate(kl, expected):
    alg, _ = make_ppo(learning_rate=1e-3, desired_kl=0.01)
    alg._adapt_learning_rate(torch.tensor(kl))
    assert alg.learning_rate == pytest.approx(expected)
    assert all(g["lr"] == pytest.approx(expected) for g in alg.optimizer.param_groups)


def test_returns_bootstrap_time_outs_with_the_stored_values():
    alg, storage = make_ppo(gamma=0.9, lam=0.8)
    gen = torch.Generator().manual_seed(1)
    storage.rewards.copy_(torch.rand(storage.rewards.shape, generator=gen))
    storage.values.copy_(torch.rand(storage.values.shape, generator=gen))
    storage.truncated[1] = True
    storage.terminated[3, :5] = True
    last_obs = {"policy": torch.zeros(64, 1), "critic": torch.ones(64, 1)}
    with torch.no_grad():
        alg.compute_returns(last_obs)
        last = alg.ac.value(last_obs["critic"])
    _, expected = gae(storage.rewards, storage.values, last, storage.terminated, storage.truncated,
                      storage.values, 0.9, 0.8)
    assert torch.allclose(storage.returns, expected)
    assert storage.advantages.mean().abs() < 1e-5 and (storage.advantages.std() - 1).abs() < 1e-4


def test_minibatches_cover_every_sample_once_per_epoch():
    _, storage = make_ppo()
    storage.rewards.copy_(torch.arange(4 * 64, dtype=torch.float32).reshape(4, 64))
    batches = list(storage.minibatches(num_mini_batches=4, num_epochs=2))
    assert len(batches) == 8 and all(b["rewards"].shape == (64,) for b in batches)
    for epoch in (batches[:4], batches[4:]):
        assert torch.equal(torch.cat([b["rewards"] for b in epoch]).sort().values, torch.arange(256.0))
