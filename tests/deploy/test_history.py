"""Observation history in the bundle and the runtime: robot.yaml describes it, and the runtime's
history equals the training env's step by step, across resets and watchdog trips."""

import shutil

import numpy as np
import pytest
import torch

from robolearn_deploy import ControlLoop, DeployError, Policy, RobotInterface, RobotState
from robolearn_deploy.observations import ObservationBuilder

from .conftest import make_bundle
from .test_bundle import refused, rewrite

TERMS = "task.observations.policy.terms"
HISTORY = [
    "task.observations.policy.enable_noise=false",
    f"{TERMS}.pole_angle.history=3", f"{TERMS}.pole_angle.scale=2.0",
    f"{TERMS}.cart_vel.history=2", f"{TERMS}.cart_vel.clip=0.5",
    f"{TERMS}.pole_vel.history=2", f"{TERMS}.pole_vel.params.joints=[slider,hinge]",  # 2 values a step
]  # fmt: skip
JOINTS = ["hinge", "slider"]  # the robot's own order: the bundle's reversed


@pytest.fixture(scope="module")
def _history_template(tmp_path_factory):
    out = tmp_path_factory.mktemp("history") / "cartpole"
    make_bundle(out, "cartpole", HISTORY)
    return out


@pytest.fixture
def history_bundle(_history_template, tmp_path):
    return shutil.copytree(_history_template, tmp_path / "bundle")


def _reading(env, i):
    qpos, qvel = env.physics.qpos[i].double().numpy(), env.physics.qvel[i].double().numpy()
    return RobotState(qpos[::-1].copy(), qvel[::-1].copy())


def test_robot_yaml_describes_the_history(history_bundle):
    bundle = Policy(history_bundle).bundle
    layout = {t.name: (t.start, t.stop, t.history, t.width) for t in bundle.terms}
    assert layout == {"cart_pos": (0, 1, 1, 1), "pole_angle": (1, 4, 3, 1), "cart_vel": (4, 6, 2, 1), "pole_vel": (6, 10, 2, 2)}
    assert bundle.obs_size == 10 and bundle.meta["observation"]["terms"][1]["history"] == 3


def test_runtime_history_equals_the_training_env_step_by_step(history_bundle, make_env):
    """4 envs, random actions, 15-step episodes: pole falls and time-outs reset each env at its own
    step; one runtime builder per env, reset when its env's episode ends, observes the same."""
    policy = Policy(history_bundle)
    env = make_env("cartpole", HISTORY + ["task.episode_length_s=0.3"], num_envs=4)
    builders = [ObservationBuilder(policy.bundle, JOINTS) for _ in range(4)]
    obs = env.reset()["policy"]
    gen = torch.Generator().manual_seed(0)
    resets = 0
    for _ in range(40):
        for i, builder in enumerate(builders):
            builder.last_action[:] = env.actions.action[i].numpy()
            np.testing.assert_allclose(builder.build(_reading(env, i)), obs[i].numpy(), atol=1e-6)
        out, _, terminated, truncated = env.step(torch.rand(4, 1, generator=gen) * 4 - 2)
        obs = out["policy"]
        for i, done in enumerate((terminated | truncated).tolist()):
            if done:
                builders[i].reset()
                resets += 1
    assert resets >= 8
    assert np.abs(obs[:, 4:6].numpy()).max() <= 0.5  # cart_vel's clip holds in every slot


class EnvRobot(RobotInterface):
    """The robot is env 0 of a training env (joints in reversed order); `broken` reads NaN."""

    joint_names = JOINTS

    def __init__(self, env):
        self.env, self.broken = env, False

    def now(self):
        return 0.0

    def sleep_until(self, t):
        pass

    def read_state(self):
        state = _reading(self.env, 0)
        if self.broken:
            state.joint_pos[0] = np.nan
        return state

    def write_command(self, command):
        pass


def test_history_restarts_like_a_training_episode_after_a_watchdog_trip(history_bundle, make_env):
    """The ControlLoop drives env 0 with the bundle's policy. A bad reading trips the watchdog at
    tick 8 (nothing is built), a non-finite policy output at tick 20 (after the build); each time
    the loop is reset and the env starts a new episode: the histories agree throughout."""
    policy = Policy(history_bundle)
    env = make_env("cartpole", HISTORY, num_envs=1)
    obs = env.reset(spread_timeouts=False)["policy"]
    robot = EnvRobot(env)
    loop = ControlLoop(policy, robot)
    nan = np.full(1, np.nan, np.float32)
    compared = 0
    for k in range(32):
        if k == 8:
            robot.broken = True
        if k == 20:
            loop.policy.act = lambda obs=None: nan
        step = loop.step(k, 0.0)
        if k in (8, 20):
            assert step.tripped is not None and step.action is None
            if k == 20:  # this tick's observation was built before the policy failed
                np.testing.assert_allclose(loop.observations.obs, obs[0].numpy(), atol=1e-6)
            robot.broken = False
            vars(loop.policy).pop("act", None)
            assert loop.step(k, 0.0).action is None  # still tripped: the safe command, nothing built
            loop.reset()
            obs = env.reset(spread_timeouts=False)["policy"]
            continue
        assert step.tripped is None, step.tripped
        np.testing.assert_allclose(loop.observations.obs, obs[0].numpy(), atol=1e-6)
        compared += 1
        out, _, terminated, truncated = env.step(torch.tensor(step.action).unsqueeze(0))
        obs = out["policy"]
        if bool(terminated[0] or truncated[0]):
            loop.reset()
    assert compared == 30


def test_a_robot_yaml_without_history_means_one(cartpole_bundle):
    def no_history(meta):
        for term in meta["observation"]["terms"]:
            term.pop("history", None)

    rewrite(cartpole_bundle, no_history)
    bundle = Policy(cartpole_bundle).bundle
    assert all(t.history == 1 and t.width == t.stop - t.start for t in bundle.terms)
    obs = ObservationBuilder(bundle, JOINTS).build(RobotState(np.array([0.1, 0.2]), np.array([0.3, 0.4])))
    assert obs.tolist() == pytest.approx([0.2, 0.1, 0.4, 0.3])


def test_history_on_a_source_the_runtime_cannot_read_is_one_line(history_bundle):
    rewrite(history_bundle, lambda m: m["observation"]["terms"][1].update(source="model_field"))
    with pytest.raises(DeployError) as info:
        ObservationBuilder(Policy(history_bundle).bundle, JOINTS)
    assert "\n" not in str(info.value) and "'pole_angle' comes from 'model_field'" in str(info.value)


@pytest.mark.parametrize("history,expected", [
    (2, "'pole_angle' has history 2 but its slice 1:4 is not 2 steps of equal width"),
    (0, "'pole_angle' has history 0; valid: an integer >= 1"),
    ("three", "'pole_angle' has history 'three'; valid: an integer >= 1"),
])  # fmt: skip
def test_a_history_the_slice_does_not_hold_is_one_line(history_bundle, history, expected):
    rewrite(history_bundle, lambda m: m["observation"]["terms"][1].update(history=history))
    refused(history_bundle, expected)


def test_a_history_term_whose_source_gives_another_width_is_one_line(history_bundle):
    rewrite(history_bundle, lambda m: m["observation"]["terms"][3]["params"].update(joints=["hinge"]))
    with pytest.raises(DeployError, match="'pole_vel' .* has 2 values per step in robot.yaml but its source gives 1"):
        ObservationBuilder(Policy(history_bundle).bundle, JOINTS)
