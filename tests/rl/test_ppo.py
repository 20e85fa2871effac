"""PPO and the runner in-process, on a tiny contextual bandit: the policy must learn a = x."""

import copy
import math

import pytest
import torch

from robolearn.config import AlgoCfg, RunnerCfg
from robolearn.errors import UserError
from robolearn.rl.losses import gae, gaussian_kl
from robolearn.rl.models import gaussian_log_prob
from robolearn.rl.ppo import BATCH_FIELDS
from robolearn.rl.runner import OnPolicyRunner, read_once
from tests.sync_guard import HostSyncError, no_host_sync


class Bandit:
    """obs x ~ U(-2, 2) (plus a constant column for the critic); reward -(a - x)^2; episodes time
    out every 8 steps."""

    num_envs, num_actions, max_episode_length = 64, 1, 8
    device = torch.device("cpu")

    def __init__(self, scale: float = 1.0):
        self.gen = torch.Generator().manual_seed(0)
        self.t = 0
        self.scale = scale
        self._draw()

    def _draw(self):
        self.x = torch.rand(self.num_envs, 1, generator=self.gen) * 4 - 2
        return {"policy": self.x, "critic": torch.cat([self.x, torch.ones_like(self.x)], dim=1)}

    def reset(self):
        return self._draw()

    def step(self, action):
        reward = -self.scale * (action - self.x).square().squeeze(1)
        self.t += 1
        truncated = torch.full((self.num_envs,), self.t % 8 == 0)
        return self._draw(), reward, torch.zeros_like(truncated), truncated

    def observation_dims(self):
        return {"policy": 1, "critic": 2}

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


def make_runner(num_steps=4, env=None, **algo):
    env = env or Bandit()
    return OnPolicyRunner(env, AlgoCfg(**algo), RunnerCfg(num_steps_per_env=num_steps), env.device)


def collect(runner):
    """One rollout into the runner's storage (what learn() does before each update)."""
    obs = runner._obs if runner._obs is not None else runner.env.reset()
    with torch.inference_mode():
        for _ in range(runner.cfg.num_steps_per_env):
            obs, reward, terminated, truncated = runner.env.step(runner.alg.act(obs))
            runner.alg.record(reward, terminated, truncated)
        runner.alg.compute_returns(obs)
    runner._obs = obs


def test_returns_bootstrap_time_outs_with_the_stored_values():
    runner = make_runner(gamma=0.9, lam=0.8)
    alg, storage = runner.alg, runner.storage
    gen = torch.Generator().manual_seed(1)
    storage.rewards.copy_(torch.rand(storage.rewards.shape, generator=gen))
    storage.values.copy_(torch.rand(storage.values.shape, generator=gen))
    storage.truncated[1] = True
    storage.terminated[3, :5] = True
    last_obs = {"policy": torch.zeros(64, 1), "critic": torch.ones(64, 2)}
    with torch.no_grad():
        alg.compute_returns(last_obs)
        last = alg.ac.value(last_obs["critic"])
    _, expected = gae(storage.rewards, storage.values, last, storage.terminated, storage.truncated,
                      storage.values, 0.9, 0.8)  # fmt: skip
    assert torch.allclose(storage.returns, expected)
    assert storage.advantages.mean().abs() < 1e-5 and (storage.advantages.std() - 1).abs() < 1e-4


@pytest.mark.parametrize("capturable", [False, True])  # True: sorted random keys (algo.cuda_graph)
def test_minibatches_cover_every_sample_once_per_epoch(capturable):
    storage = make_runner().storage
    storage.rewards.copy_(torch.arange(4 * 64, dtype=torch.float32).reshape(4, 64))
    batches = list(storage.minibatches(num_mini_batches=4, num_epochs=2, fields=("rewards",), capturable=capturable))
    assert len(batches) == 8 and all(b[0].shape == (64,) for b in batches)
    for epoch in (batches[:4], batches[4:]):
        assert torch.equal(torch.cat([b[0] for b in epoch]).sort().values, torch.arange(256.0))
    assert not torch.equal(torch.cat([b[0] for b in batches[:4]]), torch.arange(256.0))  # shuffled


def spy_first_minibatches(alg) -> list[tuple[float, float, float]]:
    """Record (max |ratio - 1|, KL, max |value - stored value|) of the first minibatch of each update."""
    first: list[tuple[float, float, float]] = []
    step, calls = alg._step, [0]
    per_update = alg.cfg.num_mini_batches * alg.cfg.num_learning_epochs

    def spy(memory, policy_obs, critic_obs, actions, old_log_prob, old_values, advantages, returns, old_mu, old_sigma,
            valid):  # fmt: skip
        if calls[0] % per_update == 0:
            with torch.no_grad():
                if memory is None:
                    mean, values = alg.ac.action_mean(policy_obs), alg.ac.value(critic_obs)
                else:
                    mean, values = alg.ac.sequences(policy_obs, critic_obs, *memory)
                ratio = torch.exp(gaussian_log_prob(actions, mean, alg.ac.log_std) - old_log_prob)
                kl = gaussian_kl(old_mu, old_sigma, mean, alg.ac.log_std.exp().expand_as(mean)).mean()
                value_error = (values - old_values).abs().max()
            first.append(((ratio - 1).abs().max().item(), kl.item(), value_error.item()))
        calls[0] += 1
        return step(memory, policy_obs, critic_obs, actions, old_log_prob, old_values, advantages, returns, old_mu,
                    old_sigma, valid)  # fmt: skip

    alg._step = spy
    return first


@pytest.mark.parametrize("normalize,policy,bptt", [(True, "mlp", 0), (False, "mlp", 0), (True, "gru", 0),
                                                    (True, "lstm", 4), (False, "gru", 2)])
def test_the_first_minibatch_of_every_update_has_ratio_one_and_kl_zero(normalize, policy, bptt):
    """Before any step the update's policy and values are those that acted: the actor's normalizer
    takes the rollout after the update, the critic's before it with its first layer absorbing
    the change. A recurrent network re-run over the rollout's sequences (from the stored states,
    restarted where episodes start: every 8 steps here, inside the 12-step rollouts) reproduces
    the rollout's actions and values."""
    num_steps = 8 if policy == "mlp" else 12
    runner = make_runner(num_steps=num_steps, normalize_observations=normalize, policy=policy, bptt_length=bptt)
    first = spy_first_minibatches(runner.alg)
    for _ in range(5):
        collect(runner)
        runner.alg.update()
    assert len(first) == 5
    for ratio_error, kl, value_error in first:
        assert ratio_error < 1e-5 and abs(kl) < 1e-10 and value_error < 1e-4, first


def test_normalizers_take_each_rollout_once_per_update():
    """After k updates each normalizer holds the exact mean and variance of every observation the
    policy acted on (each rollout merged once, in one batch); the actor's only after the epochs."""
    runner = make_runner(num_steps=8)
    seen, seen_critic = [], []
    for _ in range(3):
        collect(runner)
        seen.append(runner.storage.policy_obs.flatten(0, 1).clone())
        seen_critic.append(runner.storage.critic_obs.flatten(0, 1).clone())
        runner.alg.update()
    ac = runner.actor_critic
    for norm, everything in ((ac.actor_normalizer, torch.cat(seen)), (ac.critic_normalizer, torch.cat(seen_critic))):
        assert norm.count.item() == 3 * 8 * 64
        assert torch.allclose(norm.mean, everything.mean(0), atol=1e-6)
        assert torch.allclose(norm.var, everything.var(0, unbiased=False), atol=1e-5)
    counts = []
    step = runner.alg._step
    runner.alg._step = lambda *batch: counts.append(runner.actor_critic.actor_normalizer.count.item()) or step(*batch)
    collect(runner)
    runner.alg.update()
    assert set(counts) == {3 * 8 * 64} and runner.actor_critic.actor_normalizer.count.item() == 4 * 8 * 64


def test_the_step_schedule_acts_on_statistics_that_include_each_step_and_the_update_uses_the_newest():
    """algo.normalizer_schedule=step (rsl_rl's schedule): no seeding; before each action both
    normalizers merge that step's observations; the update changes neither and its first minibatch
    sees the policy with the rollout's last statistics (so its ratio is not 1: the drift shows)."""
    runner = make_runner(num_steps=8, normalizer_schedule="step")
    runner.start()
    ac = runner.actor_critic
    assert ac.actor_normalizer.count.item() == 0 and ac.critic_normalizer.count.item() == 0
    seen, acted = [], []
    act = runner.alg.act
    def spy(obs):
        seen.append(obs["policy"].clone())
        actions = act(obs)
        acted.append(runner.storage.mu[runner.storage.step].clone())
        return actions
    runner.alg.act = spy
    first = spy_first_minibatches(runner.alg)
    collect(runner)
    for k, (x, mu) in enumerate(zip(seen, acted)):  # step k acted on the statistics of steps 0..k
        so_far = torch.cat(seen[: k + 1])
        expected = ac.actor(((x - so_far.mean(0)) / so_far.std(0, unbiased=False).clamp(min=0.01)))
        assert torch.allclose(mu, expected, atol=1e-5), k
    before = (ac.actor_normalizer.mean.clone(), ac.critic_normalizer.count.clone())
    runner.alg.update()
    assert torch.equal(ac.actor_normalizer.mean, before[0]) and torch.equal(ac.critic_normalizer.count, before[1])
    assert ac.critic_normalizer.count.item() == 8 * 64
    assert first[0][0] > 1e-3  # the first steps acted on other statistics than the update's


def test_normalizer_schedule_is_checked():
    with pytest.raises(UserError, match="algo.normalizer_schedule must be 'rollout' or 'step', got 'epoch'"):
        make_runner(normalizer_schedule="epoch")


def test_a_fresh_run_starts_its_normalizers_from_the_first_observations():
    runner = make_runner(num_steps=8)
    runner.cfg.max_iterations = 0
    runner.learn(lambda row: None)
    norm = runner.actor_critic.actor_normalizer
    first_obs = Bandit().reset()["policy"]  # the same generator, the same first draw
    assert norm.count.item() == 64 and torch.allclose(norm.mean, first_obs.mean(0))


def test_gradients_are_clipped_per_network():
    """A huge value error must not shrink the policy's step: actor and critic are clipped apart."""
    env = Bandit(scale=1e4)  # returns of ~1e4: the critic's gradient norm is enormous
    runner = make_runner(env=env, max_grad_norm=5.0, schedule="fixed")
    alg = runner.alg
    collect(runner)
    batch = next(runner.storage.minibatches(4, 1, BATCH_FIELDS))
    seen = {}

    def record_then_step(enabled=None):
        seen["actor"] = torch.cat([p.grad.flatten() for p in runner.actor_critic.actor_parameters()]).norm().item()
        seen["critic"] = torch.cat([p.grad.flatten() for p in runner.actor_critic.critic_parameters()]).norm().item()
        real_step(enabled)

    reference = copy.deepcopy(runner.actor_critic)
    for p in reference.parameters():
        p.grad = None

    # the actor's unclipped gradient, for comparison
    mean = reference.action_mean(batch[0])
    ratio = torch.exp(gaussian_log_prob(batch[2], mean, reference.log_std) - batch[3])
    surrogate = torch.max(-batch[5] * ratio, -batch[5] * ratio.clamp(0.8, 1.2)).mean()
    entropy = (0.5 + 0.5 * math.log(2 * math.pi) + reference.log_std).sum()
    (surrogate - alg.cfg.entropy_coef * entropy).backward()
    actor_norm = torch.cat([p.grad.flatten() for p in reference.actor_parameters()]).norm().item()
    assert actor_norm < 5.0  # small enough that no clip should touch it

    real_step = alg.optimizer.step
    alg.optimizer.step = record_then_step
    alg._minibatch_step(None, *batch)
    assert seen["critic"] == pytest.approx(5.0, rel=1e-4)  # clipped to max_grad_norm
    assert seen["actor"] == pytest.approx(actor_norm, rel=1e-4)  # untouched by the critic's norm


def test_policy_std_never_drops_below_the_floor():
    # The bandit is deterministic: the policy wants its noise to vanish; the floor holds it at 0.3.
    runner = make_runner(num_steps=8, min_noise_std=0.3, learning_rate=1e-2, schedule="fixed")
    rows = []
    runner.cfg.max_iterations = 40
    runner.learn(rows.append)
    std = runner.actor_critic.log_std.exp().item()
    assert std == pytest.approx(0.3, rel=1e-5)
    assert min(r["action_std"] for r in rows) >= 0.3 - 1e-6


def test_the_update_never_reads_the_device():
    runner = make_runner(num_steps=8)
    collect(runner)
    with no_host_sync():
        metrics = runner.alg.update()
    assert set(metrics) >= {"kl", "learning_rate", "value_loss", "action_std"}
    assert all(isinstance(v, torch.Tensor) for v in metrics.values())
    collect(runner)
    runner.alg.cfg.schedule = "adaptive"
    with pytest.raises(HostSyncError):  # the guard does catch the old way of adapting the rate
        with no_host_sync():
            float(runner.alg.update()["kl"])


def test_adaptive_learning_rate_moves_on_the_device():
    runner = make_runner(num_steps=8, learning_rate=1e-3, desired_kl=1e-9)  # any move is "too far"
    collect(runner)
    lr = runner.alg.learning_rate
    runner.alg.update()
    assert runner.alg.learning_rate is lr and runner.alg.optimizer.lr is lr
    assert lr.item() < 1e-3  # shrunk at least once


def test_compiled_update_matches_eager():
    eager, compiled = make_runner(num_steps=8), make_runner(num_steps=8, compile=True)
    compiled.actor_critic.load_state_dict(eager.actor_critic.state_dict())
    torch.manual_seed(3)
    collect(eager)
    torch.manual_seed(3)
    collect(compiled)
    torch.manual_seed(4)
    a = eager.alg.update()
    torch.manual_seed(4)
    b = compiled.alg.update()
    for key in a:
        assert a[key].item() == pytest.approx(b[key].item(), rel=1e-4, abs=1e-6), key
    for p, q in zip(eager.actor_critic.parameters(), compiled.actor_critic.parameters()):
        assert torch.allclose(p, q, atol=1e-5)


def test_learning_stops_at_the_iteration_boundary_it_is_asked_to():
    runner = make_runner(num_steps=4)
    runner.cfg.max_iterations = 10
    rows = []
    runner.learn(rows.append, should_stop=lambda: len(rows) >= 2)
    assert [r["iteration"] for r in rows] == [1, 2] and runner.iteration == 2
    runner.learn(rows.append, should_stop=lambda: True)  # asked before any iteration: none runs
    assert runner.iteration == 2


def test_an_env_on_its_own_cpu_threads_gets_the_cores_while_the_rollout_is_collected(monkeypatch):
    """With `steps_on_host_threads` the rollout (acting and stepping) runs with one PyTorch thread,
    so PyTorch's spinning idle threads leave the cores to the env's pool; the update gets every
    thread back, and so does the caller."""
    seen = {"step": set(), "update": set()}

    class CountingBandit(Bandit):
        def step(self, action):
            seen["step"].add(torch.get_num_threads())
            return super().step(action)

    class PooledBandit(CountingBandit):
        steps_on_host_threads = True

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        runner = make_runner(num_steps=4, env=PooledBandit())
        update = runner.alg.update
        monkeypatch.setattr(runner.alg, "update", lambda: seen["update"].add(torch.get_num_threads()) or update())
        runner.cfg.max_iterations = 2
        runner.learn(lambda row: None)
        assert seen == {"step": {1}, "update": {2}} and torch.get_num_threads() == 2
        seen["step"].clear()
        plain = make_runner(num_steps=4, env=CountingBandit())  # no pool of its own: PyTorch keeps its threads
        plain.cfg.max_iterations = 1
        plain.learn(lambda row: None)
        assert seen["step"] == {2}
    finally:
        torch.set_num_threads(before)


def test_a_minibatch_with_a_non_finite_loss_is_skipped_and_counted():
    runner = make_runner(num_steps=4, num_mini_batches=4, num_learning_epochs=5)
    collect(runner)
    runner.storage.log_probs.view(-1)[7] = float("nan")  # one sample: one minibatch in each epoch
    out = runner.alg.update()
    assert out["health/skipped_minibatches"].item() == 5
    assert all(torch.isfinite(p).all() for p in runner.actor_critic.parameters())
    assert all(torch.isfinite(v).all() for k, v in out.items() if k != "health/skipped_minibatches")
    assert runner.alg.optimizer.step_count.item() == 15  # 20 minibatches, 5 skipped


def test_a_transition_marked_invalid_has_no_part_in_the_update():
    # Two identical runners and rollouts; in the second, the transitions the env marked invalid hold
    # garbage (all but the stored values, which the step before bootstraps from). The updates agree.
    runners = []
    for garbage in (False, True):
        torch.manual_seed(0)
        runner = make_runner(num_steps=6, num_mini_batches=4, num_learning_epochs=3)
        s = runner.storage
        obs = runner.env.reset()
        runner.actor_critic.seed_normalizers(obs["policy"], obs["critic"])
        torch.manual_seed(1)
        with torch.inference_mode():
            for t in range(6):
                obs, reward, terminated, truncated = runner.env.step(runner.alg.act(obs))
                invalid = torch.zeros(64, dtype=torch.bool)
                invalid[[3, 17, 40]] = t in (2, 4)
                runner.alg.record(reward, terminated | invalid, truncated, invalid)
            bad = s.valid == 0
            assert bad.sum() == 6
            if garbage:
                for name in ("policy_obs", "critic_obs", "actions", "mu"):
                    getattr(s, name)[bad] = 1e3
                s.log_probs[bad], s.sigma[bad], s.rewards[bad] = -50.0, 7.0, 1e6
            runner.alg.compute_returns(obs)
        torch.manual_seed(2)
        runner.metrics = read_once(runner.alg.update())
        runners.append(runner)
    clean, dirty = runners
    for p, q in zip(clean.actor_critic.parameters(), dirty.actor_critic.parameters()):
        assert torch.allclose(p, q, atol=1e-6)
    for a, b in zip(clean.actor_critic.buffers(), dirty.actor_critic.buffers()):
        assert torch.allclose(a.double(), b.double(), atol=1e-6)
    for key in clean.metrics:
        assert clean.metrics[key] == pytest.approx(dirty.metrics[key], rel=1e-5, abs=1e-7), key


@pytest.mark.parametrize("native", [True, False])
def test_bf16_on_a_cpu_that_emulates_it_is_said_at_start(monkeypatch, native):
    """A CPU without native bfloat16 runs algo.amp=bf16's update ~8x slower (the AMD EPYC VM):
    one note at start, nothing where the CPU has it, nothing for float32 or a GPU."""
    from robolearn.rl.ppo import amp_note

    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: native)
    note = amp_note("bf16", torch.device("cpu"))
    assert (note is None) if native else note.startswith("algo.amp=bf16 on a CPU without native bfloat16")
    assert amp_note(None, torch.device("cpu")) is None and amp_note("bf16", torch.device("cuda")) is None


def test_bf16_update_learns_the_bandit_and_stays_close_to_float32():
    """algo.amp=bf16: the networks' matrix products in bfloat16 (8-bit mantissa), everything the
    optimizer keeps in float32. One update moves the weights almost as float32 does, and the policy
    still learns a = x."""
    fp32, bf16 = make_runner(num_steps=8), make_runner(num_steps=8, amp="bf16")
    bf16.actor_critic.load_state_dict(fp32.actor_critic.state_dict())
    for runner in (fp32, bf16):
        torch.manual_seed(3)
        collect(runner)
    a, b = (read_once(r.alg.update()) for r in (fp32, bf16))
    assert b["value_loss"] == pytest.approx(a["value_loss"], rel=0.05)
    assert b["kl"] == pytest.approx(a["kl"], rel=0.25)
    for p, q in zip(fp32.actor_critic.parameters(), bf16.actor_critic.parameters()):
        assert p.dtype == q.dtype == torch.float32
        assert torch.allclose(p, q, atol=5e-3), (p - q).abs().max()
    assert any(not torch.equal(p, q) for p, q in zip(fp32.actor_critic.parameters(), bf16.actor_critic.parameters()))

    env = Bandit()
    runner = OnPolicyRunner(env, AlgoCfg(amp="bf16"), RunnerCfg(num_steps_per_env=8, max_iterations=60), env.device)
    runner.learn(lambda row: None)
    probe = torch.linspace(-2, 2, 41).unsqueeze(1)
    with torch.no_grad():
        assert (runner.actor_critic.action_mean(probe) - probe).square().mean().item() < 0.05
