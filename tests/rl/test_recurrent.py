"""Recurrent actor-critics: the cores against PyTorch's, sequence minibatching, episode boundaries,
and a memory task a GRU learns and an MLP cannot."""

import pytest
import torch
from torch import nn

from robolearn.config import AlgoCfg, RunnerCfg
from robolearn.rl.models import ActorCritic, Controller, InferencePolicy, unroll
from robolearn.rl.recurrent import RecurrentCore
from robolearn.rl.runner import OnPolicyRunner


@pytest.mark.parametrize("kind,reference", [("gru", nn.GRU), ("lstm", nn.LSTM)])
def test_cores_compute_what_pytorch_computes(kind, reference):
    torch.manual_seed(0)
    core = RecurrentCore(kind, 5, 7, layers=2)
    ref = reference(5, 7, num_layers=2)
    ref.load_state_dict(core.state_dict())  # same parameter names and shapes
    x = torch.randn(9, 3, 5)
    state = tuple(torch.randn(3, 2, 7) for _ in core.state_names)
    expected, ref_state = ref(x, state[0].transpose(0, 1).contiguous() if kind == "gru" else
                              tuple(s.transpose(0, 1).contiguous() for s in state))  # fmt: skip
    outputs = []
    for t in range(9):
        y, state = core(x[t], state)
        outputs.append(y)
    assert torch.allclose(torch.stack(outputs), expected, atol=1e-6)
    ref_state = (ref_state,) if kind == "gru" else ref_state
    for ours, theirs in zip(state, ref_state):
        assert torch.allclose(ours, theirs.transpose(0, 1), atol=1e-6)


def test_unroll_restarts_at_episode_starts_and_no_gradient_crosses_them():
    """Hand-built: 6 steps, an episode starts at step 3 in env 0 only. Env 0's outputs from step 3
    on equal a fresh run from the zero state over steps 3..5, and have zero gradient with respect
    to the inputs before step 3 and to the initial state; env 1's carry on."""
    torch.manual_seed(1)
    core = RecurrentCore("gru", 2, 4)
    x = torch.randn(6, 2, 2, requires_grad=True)
    h0 = torch.randn(2, 1, 4, requires_grad=True)
    starts = torch.zeros(6, 2, dtype=torch.bool)
    starts[3, 0] = True
    out = unroll(core, x, (h0,), starts)
    fresh = unroll(core, x[3:, :1], core.initial_state(1), torch.zeros(3, 1, dtype=torch.bool))
    assert torch.allclose(out[3:, :1], fresh, atol=1e-7)
    out[3:, 0].sum().backward(retain_graph=True)
    assert torch.all(x.grad[:3, 0] == 0) and torch.all(h0.grad[0] == 0)
    assert torch.any(x.grad[3:, 0] != 0)
    x.grad, h0.grad = None, None
    out[3:, 1].sum().backward()  # env 1 had no episode start: its past matters
    assert torch.any(x.grad[:3, 1] != 0) and torch.any(h0.grad[1] != 0)


class Recall:
    """A memory task: the first observation of each 8-step episode shows a cue x ~ U(-1, 1), the
    later ones show 0 (plus a flag saying it is the first step); reward -(a - x)^2 at every
    step. A feed-forward policy sees nothing on 7 of 8 steps (best mean reward -1/3 there); a
    recurrent one can keep x."""

    num_envs, num_actions, max_episode_length = 64, 1, 8
    device = torch.device("cpu")

    def __init__(self):
        self.gen = torch.Generator().manual_seed(0)
        self.t = 0
        self.x = torch.zeros(self.num_envs, 1)

    def _obs(self):
        first = float(self.t % 8 == 0)
        shown = self.x * first
        return {"policy": torch.cat([shown, torch.full_like(shown, first)], 1),
                "critic": torch.cat([self.x, torch.full_like(shown, first)], 1)}  # fmt: skip

    def reset(self):
        self.x = torch.rand(self.num_envs, 1, generator=self.gen) * 2 - 1
        return self._obs()

    def step(self, action):
        reward = -(action - self.x).square().squeeze(1)
        self.t += 1
        truncated = torch.full((self.num_envs,), self.t % 8 == 0)
        if self.t % 8 == 0:
            self.x = torch.rand(self.num_envs, 1, generator=self.gen) * 2 - 1
        return self._obs(), reward, torch.zeros_like(truncated), truncated

    def observation_dims(self):
        return {"policy": 2, "critic": 2}

    def pop_episode_stats(self):
        return {}


def recall_error(policy: str, iterations: int) -> float:
    """Mean squared error of the deterministic policy on the 7 steps without the cue, after training."""
    torch.manual_seed(0)
    env = Recall()
    algo = AlgoCfg(policy=policy, critic_network="mlp", rnn_hidden_size=16, actor_hidden_dims=[16],
                   critic_hidden_dims=[16], learning_rate=3e-3, init_noise_std=0.5)  # fmt: skip
    runner = OnPolicyRunner(env, algo, RunnerCfg(num_steps_per_env=16, max_iterations=iterations), env.device)
    runner.learn(lambda row: None)
    controller, errors = Controller(runner.actor_critic, env.num_envs), []
    obs = env.reset() if env.t % 8 == 0 else None
    while obs is None:  # finish the running episodes
        obs, *_ = env.step(torch.zeros(env.num_envs, 1))
        obs = obs if env.t % 8 == 0 else None
    with torch.no_grad():
        for t in range(8):
            action = controller(obs["policy"])
            if t > 0:
                errors.append((action - env.x).square().mean().item())
            obs, *_ = env.step(action)
    return sum(errors) / len(errors)


def test_a_gru_learns_to_remember_what_an_mlp_cannot():
    gru, mlp = recall_error("gru", 60), recall_error("mlp", 60)
    assert gru < 0.05 and mlp > 0.25, (gru, mlp)


def test_controller_resets_only_the_environments_whose_episode_ended():
    ac = ActorCritic(3, 3, 2, [8], [8], actor_memory="lstm", rnn_hidden_size=5)
    controller = Controller(ac, 4)
    with torch.no_grad():
        controller(torch.randn(4, 3))
        controller.reset(torch.tensor([True, False, True, False]))
    h, c = controller.state
    assert torch.all(h[[0, 2]] == 0) and torch.all(c[[0, 2]] == 0)
    assert torch.all(h[[1, 3]] != 0) and torch.all(c[[1, 3]] != 0)


def test_inference_policy_takes_and_returns_the_state():
    ac = ActorCritic(3, 3, 2, [8], [8], actor_memory="gru", rnn_hidden_size=5, rnn_num_layers=2)
    policy = InferencePolicy(ac)
    obs = torch.randn(4, 3)
    with torch.no_grad():
        actions, h = policy(obs, *policy.initial_state(4))
        mean, (h_ref,) = ac.actor_step(obs, ac.initial_actor_state(4))
    assert policy.state_names == ("h",) and h.shape == (4, 2, 5)
    assert torch.equal(actions, mean) and torch.equal(h, h_ref)
