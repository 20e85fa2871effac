"""Non-finite containment in the env (robolearn/envs/health.py), on every backend: a diverged
environment is terminated, reset, marked invalid and counted; nothing non-finite leaves the step."""

import math

import pytest
import torch

from robolearn.physics import BACKENDS

ENGINES = ["mujoco"] + [
    pytest.param(name, marks=pytest.mark.skipif(BACKENDS[name].available(torch.device("cpu")) is not None,
                                                reason=f"{name} not installed"))
    for name in ("warp", "mjx")
]  # fmt: skip
BAD = torch.tensor([False, True, False, False, True, False])


def settled(make_env, physics="mujoco", **kw):
    env = make_env(num_envs=6, physics=physics, **kw)
    env.reset()
    env.step(torch.zeros(6, 1))
    env.pop_episode_stats()
    return env


def assert_all_finite(obs, reward, env):
    assert all(torch.isfinite(o).all() for o in obs.values())
    assert torch.isfinite(reward).all()
    assert torch.isfinite(env.physics.qpos).all() and torch.isfinite(env.physics.qvel).all()
    assert torch.isfinite(env.rewards.episode_sums).all()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("value", [math.nan, math.inf, 1e8])
def test_a_diverged_state_is_reset_masked_and_counted(make_env, engine, value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo would write MUJOCO_LOG.TXT here if it logged its warning
    env = settled(make_env, engine)
    qvel = env.physics.qvel.clone()
    qvel[BAD] = value
    env.physics.set_velocity(qvel, BAD)
    obs, reward, terminated, truncated = env.step(torch.zeros(6, 1))
    assert torch.equal(env.invalid, BAD)
    assert terminated[BAD].all() and not truncated[BAD].any()
    assert (reward[BAD] == 0).all()
    assert_all_finite(obs, reward, env)
    assert (env.episode_length[BAD] == 0).all()  # reset in the same step
    obs, reward, _, _ = env.step(torch.zeros(6, 1))
    assert not env.invalid.any()  # the reset envs step normally again
    assert_all_finite(obs, reward, env)
    stats = env.pop_episode_stats()
    assert stats["health/nonfinite_resets"] == 2
    assert env.pop_episode_stats()["health/nonfinite_resets"] == 0  # counted once
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()


def test_mujocos_own_reset_of_an_unstable_env_is_seen_and_not_printed(make_env, capfd):
    # 1e11 exceeds MuJoCo's own limit (1e10): the engine resets that env's data itself and warns.
    # The state the step ends in is then finite and small: only the clock going back shows it.
    env = settled(make_env, "mujoco")
    env.health.state_limit = 1e12
    qvel = env.physics.qvel.clone()
    qvel[BAD] = 1e11
    env.physics.set_velocity(qvel, BAD)
    env.step(torch.zeros(6, 1))
    assert torch.equal(env.physics.unstable, BAD)
    assert torch.equal(env.invalid, BAD)
    assert env.pop_episode_stats()["health/nonfinite_resets"] == 2
    out, err = capfd.readouterr()
    assert "unstable" not in out + err


def test_a_reward_term_that_returns_nan_zeroes_that_env_and_resets_it(make_env):
    env = settled(make_env)
    func, params = env.rewards._calls[0]

    def sometimes_nan(env, **params):
        value = func(env, **params).clone()
        value[BAD] = math.nan
        return value

    env.rewards._calls[0] = (sometimes_nan, params)
    obs, reward, terminated, _ = env.step(torch.zeros(6, 1))
    assert torch.equal(env.invalid, BAD) and terminated[BAD].all()
    assert (reward[BAD] == 0).all() and (reward[~BAD] != 0).all()
    assert_all_finite(obs, reward, env)
    assert env.pop_episode_stats()["health/nonfinite_resets"] == 2


def test_a_non_finite_observation_is_zeroed_and_that_env_is_invalid_at_its_next_step(make_env):
    env = settled(make_env)
    columns, func, params = env.observations._groups["policy"][0]

    def poisoned(env, **params):
        value = func(env, **params).clone()
        value[BAD] = math.inf
        return value

    env.observations._groups["policy"][0] = (columns, poisoned, params)
    obs, _, terminated, _ = env.step(torch.zeros(6, 1))
    assert not env.invalid.any() and not terminated.any()  # this step's transition acted on good obs
    assert (obs["policy"][BAD] == 0).all() and (obs["policy"][~BAD] != 0).any()
    assert torch.equal(env.health.pending, BAD)
    env.observations._groups["policy"][0] = (columns, func, params)
    obs, reward, terminated, _ = env.step(torch.zeros(6, 1))
    assert torch.equal(env.invalid, BAD) and terminated[BAD].all() and (reward[BAD] == 0).all()
    assert env.pop_episode_stats()["health/nonfinite_resets"] == 2


def test_a_pending_invalid_env_survives_a_checkpoint(make_env):
    env = settled(make_env)
    env.health.pending.copy_(BAD)
    state = env.state_dict()
    other = settled(make_env)
    other.load_state_dict(state)
    other.step(torch.zeros(6, 1))
    assert torch.equal(other.invalid, BAD)


def test_the_state_limit_is_configurable(make_env):
    env = settled(make_env)
    env.health.state_limit = 0.5  # cart-pole velocities of a few m/s are now 'diverged'
    qvel = env.physics.qvel.clone()
    qvel[BAD] = 3.0
    env.physics.set_velocity(qvel, BAD)
    env.step(torch.zeros(6, 1))
    assert env.invalid[BAD].all()


def test_the_mujoco_warning_hook_prints_other_warnings_once(capfd):
    from robolearn.physics import mujoco_cpu

    mujoco_cpu._on_mujoco_warning("Nan, Inf or huge value in QACC at DOF 0. The simulation is unstable. Time = 0.")
    mujoco_cpu._on_mujoco_warning("Pre-allocated constraint buffer is full. Increase njmax. Time = 0.1.")
    mujoco_cpu._on_mujoco_warning("Pre-allocated constraint buffer is full. Increase njmax. Time = 0.1.")
    err = capfd.readouterr().err
    assert err.count("constraint buffer is full") == 1 and "unstable" not in err


@pytest.mark.parametrize("engine", ENGINES)
def test_training_goes_on_through_diverging_envs_with_finite_weights(make_env, engine):
    from robolearn.config import AlgoCfg, RunnerCfg
    from robolearn.rl.runner import OnPolicyRunner

    env = make_env(num_envs=8, physics=engine)
    physics, step, calls = env.physics, env.physics.step, [0]

    def diverging_step(ctrl, substeps):  # every 3rd step, one env's velocities become NaN
        calls[0] += 1
        if calls[0] % 3 == 0:
            mask = torch.arange(8) == calls[0] % 8
            physics.set_velocity(torch.full_like(physics.qvel, math.nan), mask)
        step(ctrl, substeps)

    physics.step = diverging_step
    func, params, reward_only = *env.rewards._calls[0], [0]

    def nan_at_the_7th_step(env, **params):  # and a reward term that returns NaN at each 7th step
        nan = env.episode_length == 7
        reward_only[0] += int((nan & ~env.invalid).sum())  # those not already invalid by their state
        return torch.where(nan, math.nan, func(env, **params))

    env.rewards._calls[0] = (nan_at_the_7th_step, params)
    runner = OnPolicyRunner(env, AlgoCfg(num_mini_batches=2), RunnerCfg(num_steps_per_env=12, max_iterations=4), env.device)
    rows = []
    runner.learn(rows.append)
    injected = 4 * 12 // 3
    counted = sum(r["health/nonfinite_resets"] for r in rows)
    assert reward_only[0] > 0 and counted == injected + reward_only[0]
    assert all(torch.isfinite(p).all() for p in runner.actor_critic.parameters())
    assert all(torch.isfinite(b).all() for b in runner.actor_critic.buffers())
    assert all(r["health/skipped_minibatches"] == 0 for r in rows)  # nothing non-finite reached the learner
    assert all(math.isfinite(r["value_loss"]) and math.isfinite(r["surrogate_loss"]) for r in rows)


def test_a_run_whose_every_step_diverges_stops_and_names_the_term(make_env):
    """A reward term that is NaN everywhere makes every transition invalid: nothing is learned, so
    the run stops at the end of its first iteration in one line naming the term, instead of
    training on and exporting an untrained policy."""
    import dataclasses

    from robolearn.config import AlgoCfg, RunnerCfg
    from robolearn.errors import UserError
    from robolearn.rl.runner import OnPolicyRunner

    env = make_env(num_envs=4)

    def always_nan(env, **params):
        return torch.full((env.num_envs,), math.nan)

    term = env.rewards.terms[0]
    env.rewards.terms[0] = dataclasses.replace(term, func=always_nan, source="always_nan")
    env.rewards._calls[0] = (always_nan, term.params)
    runner = OnPolicyRunner(env, AlgoCfg(num_mini_batches=1), RunnerCfg(num_steps_per_env=8, max_iterations=3), env.device)
    rows = []
    with pytest.raises(UserError, match=rf"iteration 1: every one of its 32 env steps diverged and was reset, so nothing can "
                                        rf"be learned: reward term '{term.name}' \(always_nan\) returns values that are not finite"):  # fmt: skip
        runner.learn(rows.append)
    assert rows == [] and runner.iteration == 1


def test_a_reward_weight_too_large_for_the_value_loss_stops_the_run_and_names_the_term(make_env):
    """A weight of 1e38 keeps every step's reward finite, but its returns overflow the value loss:
    every minibatch is skipped, so the run stops after its first update in one line naming the term
    (it used to train on unchanged weights and report a return of inf). A weight of 1e6 trains."""
    from robolearn.config import AlgoCfg, RunnerCfg
    from robolearn.errors import UserError
    from robolearn.rl.runner import OnPolicyRunner

    env = make_env(num_envs=4)
    term = env.rewards.terms[0]
    env.rewards.weights[0] = 1e38
    runner = OnPolicyRunner(env, AlgoCfg(num_mini_batches=1, num_learning_epochs=2), RunnerCfg(num_steps_per_env=8, max_iterations=3),
                            env.device)  # fmt: skip
    rows = []
    with pytest.raises(UserError, match=rf"iteration 1: the loss of every one of its 2 minibatches was not finite, so nothing "
                                        rf"was learned: reward term '{term.name}' reaches .*e\+3[78] per step \(weight x value\)"):  # fmt: skip
        runner.learn(rows.append)
    assert rows == [] and runner.iteration == 1

    env = make_env(num_envs=4)
    env.rewards.weights[0] = 1e6
    runner = OnPolicyRunner(env, AlgoCfg(num_mini_batches=1), RunnerCfg(num_steps_per_env=8, max_iterations=2), env.device)
    runner.learn(rows.append)
    assert [r["health/skipped_minibatches"] for r in rows] == [0, 0]


def test_the_finite_test_neither_warns_nor_overflows():
    """+inf and -inf in one tensor are not finite without numpy's RuntimeWarning (a sum of them
    printed one); finite values whose sum passes float32 are finite."""
    import warnings

    from robolearn.envs.health import _finite

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _finite(torch.tensor([math.inf, -math.inf]))
        assert _finite(torch.tensor([3e38, 3e38]))


def test_weights_that_turn_nan_are_not_saved_and_a_nan_checkpoint_is_not_resumed(make_env, tmp_path):
    """A NaN learning rate (a damaged checkpoint's, a schedule's) passes every finite loss and
    gradient but turns the weights NaN in the optimizer step: that iteration's checkpoint would have
    become the run's newest, the one eval, export and resume take. It is not written, the run stops
    in one line naming the entry, and a checkpoint holding NaN is refused by resume."""
    from robolearn import checkpoint
    from robolearn.config import AlgoCfg, RunnerCfg
    from robolearn.errors import UserError
    from robolearn.rl.runner import OnPolicyRunner

    env = make_env(num_envs=4)
    cfg = RunnerCfg(num_steps_per_env=8, max_iterations=3, save_interval=1)
    runner = OnPolicyRunner(env, AlgoCfg(num_mini_batches=1), cfg, env.device)
    saved = tmp_path / "ok.pt"
    runner.save(saved)  # iteration 0: finite
    runner.alg.learning_rate.fill_(math.nan)
    with pytest.raises(UserError, match=r"iteration 1: model\.\S+ \(NaN or inf\) is not finite after the update, so this "
                                        r"iteration is not saved"):  # fmt: skip
        runner.learn(lambda row: None, checkpoint_dir=tmp_path)
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == []  # nothing of iteration 1

    payload = checkpoint.load(saved)
    payload["algorithm"]["optimizer"]["lr"].fill_(math.nan)
    resumed = OnPolicyRunner(make_env(num_envs=4), AlgoCfg(num_mini_batches=1), cfg, env.device)
    with pytest.raises(UserError, match=r"checkpoint ok\.pt holds algorithm\.optimizer\.lr \(NaN or inf\): "
                                        r"training would continue from a broken state"):  # fmt: skip
        resumed.load(payload, saved.relative_to(tmp_path))
    payload = checkpoint.load(saved)
    name = next(k for k in payload["model"] if k.endswith(".var"))
    payload["model"][name][0] = -1.0
    with pytest.raises(UserError, match=rf"holds model\.{name} \(a negative variance\)"):
        resumed.load(payload, saved)
