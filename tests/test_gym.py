"""robolearn.gym: tasks as gymnasium vector envs (spaces, autoreset, seeding, gymnasium's checker,
Stable-Baselines3 learning through it)."""

import numpy as np
import pytest
import torch

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from gymnasium.vector import AutoresetMode, VectorEnv  # noqa: E402

from robolearn.app import build_env  # noqa: E402
from robolearn.compose import compose_train  # noqa: E402
from robolearn.errors import UserError  # noqa: E402
from robolearn.gym import make, make_vec, register_envs, to_sb3  # noqa: E402

CPU = ["physics=mujoco", "physics.num_threads=1", "device=cpu"]
CLEAN = [*CPU, "randomization=none"]  # no observation noise: angles can be compared with bounds


@pytest.fixture
def vec():
    built = []

    def make_one(*args, **kwargs):
        env = make_vec(*args, **kwargs)
        built.append(env)
        return env

    yield make_one
    for env in built:
        env.close()


def test_spaces_match_the_task(vec):
    env = vec("cartpole", 3, CPU)
    assert isinstance(env, VectorEnv) and env.num_envs == 3
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    inner = env.batched_env
    assert env.single_observation_space.shape == (inner.observation_dims()["policy"],) == (4,)
    assert env.observation_space.shape == (3, 4) and env.observation_space.dtype == np.float32
    # cartpole: ctrl = 1.0 * action, ctrlrange [-1, 1]
    assert env.single_action_space.shape == (inner.num_actions,) == (1,)
    np.testing.assert_array_equal(env.single_action_space.low, [-1.0])
    np.testing.assert_array_equal(env.single_action_space.high, [1.0])
    assert env.action_space.shape == (3, 1)


def test_action_bounds_follow_scale_offset_and_ctrlrange(vec):
    env = vec("quadruped_flat", 1, CPU)
    act = env.batched_env.actions  # ctrl = offset + 0.25 * action, clipped to the joint's ctrlrange
    low, high = env.single_action_space.low, env.single_action_space.high
    np.testing.assert_allclose(low, ((act.ctrl_low - act.offset) / 0.25).numpy(), rtol=1e-6)
    np.testing.assert_allclose(high, ((act.ctrl_high - act.offset) / 0.25).numpy(), rtol=1e-6)
    assert np.all(low < 0) and np.all(high > 0)  # the default pose lies inside every range


def test_step_returns_float32_numpy_and_copies(vec):
    env = vec("cartpole", 4, CPU, critic_obs=True)
    obs, info = env.reset(seed=0)
    assert isinstance(obs, np.ndarray) and obs.dtype == np.float32 and obs.shape == (4, 4)
    assert info["critic"].shape == (4, 5) and info["_critic"].all()  # + the pole's mass
    obs2, reward, terminated, truncated, info = env.step(np.zeros((4, 1), np.float32))
    assert obs2.dtype == reward.dtype == np.float32 and reward.shape == (4,)
    assert terminated.dtype == truncated.dtype == np.bool_
    assert info["final_obs"].shape == (4, 4) and info["critic"].shape == (4, 5)
    before = obs2.copy()
    env.step(np.ones((4, 1)))
    np.testing.assert_array_equal(obs2, before)  # returned arrays are the caller's, not the env's buffers
    assert not np.shares_memory(obs2, env.batched_env.current_observations()["policy"].numpy())


def test_tensors_on_request(vec):
    env = vec("cartpole", 4, CPU, tensors=True)
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.dtype == torch.float32 and obs.device == env.device
    obs2, reward, terminated, truncated, info = env.step(torch.zeros(4, 1, requires_grad=True))
    for value in (obs2, reward, terminated, truncated, info["final_obs"], info["_final_obs"]):
        assert isinstance(value, torch.Tensor) and value.device == env.device and not value.requires_grad
    assert terminated.dtype == torch.bool and reward.shape == (4,)
    assert obs2.data_ptr() != env.batched_env.current_observations()["policy"].data_ptr()


def test_same_step_autoreset_gives_the_final_observation(vec):
    """Pushing the cart one way makes the pole fall (|angle| > 0.4 ends the episode); the step that
    ends it returns the next episode's first observation (|angle| <= 0.1 after a reset) and the
    fallen pole in infos["final_obs"]. Every observation matches the training env stepped alike."""
    overrides = [*CLEAN, "task.episode_length_s=0.5"]  # 25 control steps: time-outs too
    env = vec("cartpole", 4, overrides)
    plain = build_env(compose_train(["task=cartpole", "env.num_envs=4", *overrides]), "mujoco", torch.device("cpu"))
    try:
        obs, _ = env.reset(seed=0)
        np.testing.assert_array_equal(obs, plain.reset(spread_timeouts=False)["policy"].numpy())
        pushes = np.array([[1.0], [-1.0], [0.0], [0.0]], np.float32)  # envs 2 and 3 time out at step 25
        fell = timed_out = 0
        for step in range(1, 61):
            obs, reward, terminated, truncated, info = env.step(pushes)
            plain_obs, plain_reward, plain_term, plain_trunc = plain.step(torch.from_numpy(pushes))
            np.testing.assert_array_equal(obs, plain_obs["policy"].numpy())
            np.testing.assert_array_equal(reward, plain_reward.numpy())
            np.testing.assert_array_equal(terminated, plain_term.numpy())
            ended = terminated | truncated
            np.testing.assert_array_equal(info["_final_obs"], ended)
            np.testing.assert_array_equal(info["final_obs"][~ended], obs[~ended])
            for i in np.flatnonzero(terminated):
                assert abs(info["final_obs"][i, 1]) > 0.4 and abs(obs[i, 1]) <= 0.1 + 1e-6
                fell += 1
            for i in np.flatnonzero(truncated):
                assert step % 25 == 0 and abs(info["final_obs"][i, 1]) <= 0.4
                assert not np.array_equal(info["final_obs"][i], obs[i])
                timed_out += 1
        assert fell >= 4 and timed_out >= 4
    finally:
        plain.close()


def test_seeded_reset_is_reproducible(vec):
    env = vec("cartpole", 8, CPU)  # default randomization: startup masses, noise and reset states all drawn
    actions = np.random.default_rng(0).uniform(-1, 1, (40, 8, 1)).astype(np.float32)

    def rollout(seed):
        first, _ = env.reset(seed=seed)
        return [first, *(np.concatenate([o, r[:, None]], 1) for o, r, *_ in map(env.step, actions))]

    a, b, c = rollout(7), rollout(7), rollout(8)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.allclose(a[0], c[0])
    with pytest.raises(UserError, match="one int"):
        env.reset(seed=[1, 2])


@pytest.mark.filterwarnings("ignore:.*Box observation space m.* value is -?infinity")  # unbounded velocities: fine
@pytest.mark.filterwarnings("error")  # any other complaint of the checker fails the test
def test_single_env_view_passes_gymnasiums_checker():
    ids = register_envs()
    assert "robolearn/cartpole" in ids
    env = gymnasium.make("robolearn/cartpole", overrides=CPU)  # with a spec: every determinism check runs
    try:
        check_env(env.unwrapped)
    finally:
        env.close()
    single = make("cartpole", CLEAN)
    try:
        single.reset(seed=0)
        for _ in range(200):  # the pole falls: the fallen pole is returned, not the next episode's start
            obs, reward, terminated, truncated, _ = single.step(np.ones(1, np.float32))
            if terminated:
                break
        assert terminated and abs(obs[1]) > 0.4 and isinstance(reward, float)
    finally:
        single.close()
    vector = gymnasium.make_vec("robolearn/cartpole", num_envs=2, vectorization_mode="vector_entry_point",
                                overrides=CPU)  # fmt: skip
    assert vector.num_envs == 2 and vector.spec.id == "robolearn/cartpole"
    vector.close()


def test_rgb_array_frames_show_each_robot_moving():
    """render_mode="rgb_array": one frame per env (gymnasium's vector wrappers expect num_envs), the
    robot drawn (its pixels differ from the empty scene's), frames that change as it moves; the
    single env and gymnasium.make give env 0's; render_fps is the control rate."""
    vector = make_vec("cartpole", 2, CLEAN, render_mode="rgb_array")
    plain = make_vec("cartpole", 1, CLEAN)
    try:
        assert plain.render() is None and vector.metadata["render_fps"] == 50.0 and vector.render_mode == "rgb_array"
        vector.reset(seed=0)
        first = vector.render()
        assert len(first) == 2 and first[0].shape == (480, 640, 3) and first[0].dtype == np.uint8
        for _ in range(10):
            vector.step(np.array([[1.0], [-1.0]], np.float32))
        later = vector.render()
        moved = [np.abs(a.astype(int) - b.astype(int)).sum(-1) > 30 for a, b in zip(first, later)]
        assert all(m.sum() > 200 for m in moved)  # the cart slid (the tracking camera follows it: the grid moves too)
        assert np.abs(later[0].astype(int) - later[1].astype(int)).sum(-1).max() > 30  # pushed apart: two pictures
    finally:
        vector.close()
        plain.close()
    register_envs()
    single = gymnasium.make("robolearn/cartpole", overrides=CPU, render_mode="rgb_array")
    try:
        single.reset(seed=0)
        frame = single.render()
        assert frame.shape == (480, 640, 3) and frame.std() > 10  # a picture, not a blank
    finally:
        single.close()
    with pytest.raises(UserError, match=r"render_mode='human' is not offered; valid: 'rgb_array' or None"):
        make("cartpole", CLEAN, render_mode="human")


def test_unknown_task_and_bad_override_are_one_line_user_errors():
    with pytest.raises(UserError, match=r"unknown task 'cartpol'.*cartpole") as err:
        make_vec("cartpol")
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="randomization preset 'loud'") as err:
        make_vec("cartpole", 1, ["randomization=loud"])
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="list of Hydra overrides"):
        make_vec("cartpole", 1, "physics=mujoco")
    with pytest.raises(UserError, match="first argument"):
        make_vec("cartpole", 1, ["task=pendulum"])


def test_actions_of_another_layout_nan_or_after_close_are_refused(vec):
    envs = vec("arm_reach", 2, CLEAN)
    envs.reset(seed=np.int64(3))  # a numpy integer seeds as an int does
    actions = np.zeros((2, envs.batched_env.num_actions), np.float32)
    with pytest.raises(ValueError, match=r"actions must have shape \(2, 6\), got \(6, 2\)"):
        envs.step(actions.T)  # transposed: each env would get the other's actions
    with pytest.raises(ValueError, match=r"got \(12,\)"):
        envs.step(actions.ravel())
    actions[1, 2] = np.nan
    with pytest.raises(ValueError, match="actions are not finite"):
        envs.step(actions)
    envs.step(np.nan_to_num(actions)[:, :, None])  # a size-1 axis more is the same layout
    envs.close()
    for call in (envs.reset, lambda: envs.step(np.zeros((2, 6)))):
        with pytest.raises(UserError, match="on an env that is closed"):
            call()
    one = make("cartpole", CLEAN)
    try:
        one.reset(seed=np.int64(1))
        one.step(0.5)  # one action: a scalar is its (1,) shape
        with pytest.raises(ValueError, match=r"action must have shape \(1,\), got \(2,\)"):
            one.step(np.zeros(2))
    finally:
        one.close()
    assert vec("cartpole", 1, None, "cpu").num_envs == 1  # overrides=None: none


def test_sb3_adapter_marks_time_outs_for_bootstrapping(vec):
    pytest.importorskip("stable_baselines3")
    sb3_env = to_sb3(vec("cartpole", 2, [*CLEAN, "task.episode_length_s=0.1"]))  # 5 control steps
    first = sb3_env.reset()
    assert first.shape == (2, 4)
    for _ in range(5):
        sb3_env.step_async(np.array([[0.0], [1.0]], np.float32))
        obs, reward, dones, infos = sb3_env.step_wait()
    assert dones.tolist() == [True, True] and reward.shape == (2,)
    assert [info["TimeLimit.truncated"] for info in infos] == [True, True]  # a time-out: bootstrap from the value
    for i, info in enumerate(infos):
        assert info["terminal_observation"].shape == (4,)
        assert not np.array_equal(info["terminal_observation"], obs[i])  # the episode's last, not the next first
    assert sb3_env.get_attr("render_mode") == [None, None]


def _mean_episode_return(env, act, steps=300):
    """Mean return of the episodes that end within `steps` steps from a seeded reset."""
    obs, _ = env.reset(seed=123)
    running, finished = np.zeros(env.num_envs), []
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(act(obs))
        running += reward
        ended = terminated | truncated
        finished += list(running[ended])
        running[ended] = 0
    return float(np.mean(finished))


def test_sb3_ppo_learns_cartpole(vec, tmp_path):
    """16k steps of SB3's PPO through the adapter balance the pole several times longer than random
    actions do (measured: random ~60, PPO 240-440 over seeds 0-5; an upright 5 s episode ~480)."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.vec_env import VecMonitor

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        evaluation = vec("cartpole", 16, CPU)
        rng = np.random.default_rng(0)
        random_return = _mean_episode_return(evaluation, lambda obs: rng.uniform(-1, 1, (16, 1)))
        train = VecMonitor(to_sb3(vec("cartpole", 16, CPU)))
        model = PPO("MlpPolicy", train, n_steps=128, batch_size=256, n_epochs=5, learning_rate=1e-3, seed=0,
                    device="cpu")  # fmt: skip
        model.set_logger(configure(str(tmp_path), []))  # not a new SB3-<date> folder in /tmp per run
        model.learn(16 * 128 * 8)
        assert len(model.ep_info_buffer) > 0  # VecMonitor saw the adapter's episodes end
        trained_return = _mean_episode_return(evaluation, lambda obs: model.predict(obs, deterministic=True)[0])
    finally:
        torch.set_num_threads(threads)
    print(f"mean episode return: random {random_return:.1f}, PPO {trained_return:.1f}")
    assert trained_return > 2 * random_return
