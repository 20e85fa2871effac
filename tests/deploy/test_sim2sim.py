"""The deploy path reproduces training: same observations, same controls, same trajectory."""

from pathlib import Path

import numpy as np
import pytest
import torch

from robolearn_deploy import ActionMapper, ControlLoop, Policy, RobotState
from robolearn_deploy.observations import ObservationBuilder
from robolearn_deploy.sim import MujocoRobot

from .conftest import make_bundle

NO_NOISE = ["task.observations.policy.enable_noise=false"]
NOMINAL = {  # the stand-in robot is the nominal MJCF: no randomized model parameters
    "cartpole": ["~task.events.pole_mass", "~task.events.actuator_gain", "~task.events.hinge_damping"],
    "pendulum": ["~task.events.pole_mass", "~task.events.motor_gain", "~task.events.hinge_damping"],
}


@pytest.mark.parametrize("task", ["cartpole", "pendulum"])
def test_observations_and_controls_match_the_training_env(make_env, tmp_path, task):
    make_bundle(tmp_path / "b", task, NO_NOISE)
    policy = Policy(tmp_path / "b")
    env = make_env(task, NO_NOISE, num_envs=4)
    robot_joints = list(reversed(MujocoRobot(tmp_path / "b" / f"{task}.xml").joint_names))  # another order
    builder = ObservationBuilder(policy.bundle, robot_joints)
    mapper = ActionMapper(policy.bundle, robot_joints)
    obs = env.reset()["policy"]
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        action = torch.rand(4, env.num_actions, generator=gen) * 4 - 2
        qpos, qvel = env.physics.qpos.double().numpy(), env.physics.qvel.double().numpy()
        for i in range(4):
            # hinge/slide joints only; qpos and qvel addresses coincide in these models
            state = RobotState(qpos[i][::-1].copy(), qvel[i][::-1].copy())
            builder.last_action[:] = env.actions.action[i].numpy()
            np.testing.assert_allclose(builder.build(state), obs[i].numpy(), atol=1e-6)
        obs = env.step(action)[0]["policy"]
        for i in range(4):
            effort = mapper.map(action[i].numpy()).effort
            for k, a in enumerate(policy.bundle.actuators):  # motors: effort = ctrl * gear * gain
                ctrl = env.actions.ctrl[i, env.actions.actuator_ids[k]].item()
                assert effort[robot_joints.index(a.joint)] == pytest.approx(ctrl * a.effort_per_ctrl, rel=1e-6)


@pytest.mark.parametrize("task,variant", [("cartpole", None), ("pendulum", None), ("pendulum", "servo_pendulum"),
                                          ("pendulum", "tendon_pendulum")])  # fmt: skip
def test_stand_in_robot_follows_the_training_physics(make_env, tmp_path, task, variant, request):
    """Same start, same policy, same timestep and integrator: the deploy loop against MujocoRobot
    visits the states the training env visits (float32 observations are the only difference).
    The servo variant drives the pendulum with a force-limited position servo; the tendon variant
    adds a tendon actuator with activation dynamics (commanded by its ctrl) and sensor readings
    in the observation."""
    asset = request.getfixturevalue(variant) if variant else []
    make_bundle(tmp_path / "b", task, NO_NOISE + asset, seed=3)
    policy = Policy(tmp_path / "b")
    env = make_env(task, NO_NOISE + NOMINAL[task] + asset, num_envs=1)
    env.reset(spread_timeouts=False)
    robot = MujocoRobot(tmp_path / "b" / policy.bundle.meta["model_file"])
    robot.reset(env.physics.qpos[0].double().numpy(), env.physics.qvel[0].double().numpy())
    loop = ControlLoop(policy, robot)
    sim_states, env_states = [], []

    def on_step(step):
        sim_states.append(robot.data.qpos.copy())

    loop.run(60, on_step)
    with torch.inference_mode():
        for _ in range(60):
            env_states.append(env.physics.qpos[0].double().numpy().copy())
            obs = env.observations.buffers["policy"]
            _, _, terminated, _ = env.step(torch.as_tensor(policy(obs.numpy())))
            if terminated[0]:  # the env starts a new episode; the robot does not
                break
    assert len(env_states) > 10
    gap = np.abs(np.array(sim_states[: len(env_states)]) - np.array(env_states)).max()
    assert gap < 1e-4, gap


SERVO = """<mujoco><option gravity="0 0 0"/><worldbody><body><joint name="j" type="hinge" damping="0"/>
<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1"/></body></worldbody>
<actuator><position name="a" joint="j" kp="20" kv="1"/></actuator></mujoco>"""


def test_stand_in_servo_takes_the_commanded_gains(tmp_path):
    from robolearn_deploy import JointCommand

    (tmp_path / "servo.xml").write_text(SERVO)
    robot = MujocoRobot(tmp_path / "servo.xml", timestep=0.002, integrator="implicitfast")
    assert robot.joint_names == ["j"]
    robot.write_command(JointCommand(np.array([0.5]), np.zeros(1), np.array([20.0]), np.array([2.0]), np.zeros(1)))
    robot.sleep_until(3.0)
    assert robot.read_state().joint_pos[0] == pytest.approx(0.5, abs=1e-3)
    robot.data.qvel[0] = 1.0
    robot.write_command(JointCommand(np.zeros(1), np.zeros(1), np.zeros(1), np.array([0.1]), np.zeros(1)))  # damping
    robot.sleep_until(8.0)
    state = robot.read_state()
    # no pull back to the target: it coasts I * v / kd = (1 * 0.3^2 / 3) * 1 / 0.1 = 0.3 rad and stops
    assert abs(state.joint_vel[0]) < 1e-3 and state.joint_pos[0] == pytest.approx(0.5 + 0.3, abs=0.02)


def test_a_stand_in_that_blows_up_stays_blown_up_and_its_clock_goes_on(tmp_path, monkeypatch):
    """Explicit Euler with kd * dt / I = 1000 * 0.002 / 0.03 >> 2 diverges within steps. MuJoCo would
    reset such a simulation and turn its clock back to 0 (the loop waiting for the next tick then
    never returns); the stand-in, like a robot, keeps the non-finite state for the watchdog."""
    import signal

    from robolearn_deploy import JointCommand

    monkeypatch.chdir(tmp_path)  # MuJoCo logs its warning to MUJOCO_LOG.TXT in the working folder
    (tmp_path / "servo.xml").write_text(SERVO)
    robot = MujocoRobot(tmp_path / "servo.xml", timestep=0.002, integrator="euler")
    robot.write_command(JointCommand(np.array([0.5]), np.zeros(1), np.array([20.0]), np.array([1000.0]), np.zeros(1)))

    def hung(*_):
        raise AssertionError("sleep_until(0.5) did not return: the simulated clock went back")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        robot.sleep_until(0.5)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert robot.now() == pytest.approx(0.5, abs=0.002)
    state = robot.read_state()
    assert not (np.isfinite(state.joint_pos).all() and np.abs(state.joint_pos).max() < 1e6), state.joint_pos


def test_motor_effort_matches_mujoco_including_its_force_limit(tmp_path):
    """Deploy effort = the joint torque MuJoCo applied in training for the same ctrl, including
    forcerange clamping (the pendulum motor limited to 0.5 N m here) and ctrlrange clamping with
    the action manager's own clip switched off."""
    import mujoco

    xml = (Path(__file__).parents[2] / "assets" / "pendulum.xml").read_text()
    xml = xml.replace('ctrlrange="-1 1"/>', 'ctrlrange="-1 1" forcelimited="true" forcerange="-0.5 0.5"/>')
    (tmp_path / "p.xml").write_text(xml)
    make_bundle(tmp_path / "b", "pendulum", [f"task.asset={tmp_path / 'p.xml'}", "task.action.clip_to_ctrlrange=false"])
    bundle = Policy(tmp_path / "b").bundle
    assert (bundle.actuators[0].ctrl_min, bundle.actuators[0].ctrl_max) == (-1.0, 1.0)  # MuJoCo clamps ctrl anyway
    mapper = ActionMapper(bundle, ["hinge"])
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "p.xml"))
    data = mujoco.MjData(model)
    for action in (-3.0, -0.7, -0.2, 0.0, 0.3, 0.6, 2.0):
        data.ctrl[0] = action  # what training sends: scale 1, offset 0, no clip of its own
        mujoco.mj_forward(model, data)
        assert mapper.map(np.array([action])).effort[0] == pytest.approx(data.qfrc_actuator[0], abs=1e-12)


def test_referee_scores_the_terminal_step_like_training(make_env, tmp_path):
    """The pole past 0.4 rad ends a cartpole episode; the referee's reward for that step equals
    the training env's (is_alive is 0 on it)."""
    from robolearn.sim2sim import Referee

    make_bundle(tmp_path / "b", "cartpole", NO_NOISE)
    env = make_env("cartpole", NO_NOISE + NOMINAL["cartpole"], num_envs=1)
    env.reset(spread_timeouts=False)
    qpos = torch.tensor([[0.1, 0.6]])
    env.physics.reset(torch.ones(1, dtype=torch.bool), qpos, torch.zeros(1, 2))
    env.actions.process(torch.tensor([[0.3]]))
    env.terminated = env.terminations.compute()
    expected = env.rewards.compute()[0].item()

    referee = Referee(tmp_path / "b", "cartpole.xml", seed=0)
    referee.initial_state()
    reward, fired = referee.score(np.array([0.1, 0.6]), np.zeros(2), np.array([0.3]), {})
    referee.close()
    assert fired == ["pole_fell"] and reward == pytest.approx(expected) and expected < 0.9


def test_a_bundle_whose_task_is_not_installed_is_refereed_from_its_task_yaml(tmp_path):
    """The referee of a plugin task this machine lacks is rebuilt from the bundle's task.yaml with
    the generic terms; a term only the package defines is named in one line."""
    import shutil

    from robolearn.errors import UserError
    from robolearn.sim2sim import Referee

    make_bundle(tmp_path / "b", "cartpole", NO_NOISE)
    task = tmp_path / "b" / "task.yaml"
    task.write_text(task.read_text().replace("name: cartpole", "name: my_cart_task", 1))
    referee = Referee(tmp_path / "b", "cartpole.xml", seed=0)
    assert referee.env.cfg.name == "my_cart_task" and referee.names == ["pole_fell", "cart_out"]
    referee.close()
    shutil.copytree(tmp_path / "b", tmp_path / "c")
    task = tmp_path / "c" / "task.yaml"
    task.write_text(task.read_text().replace("func: is_alive", "func: my_alive", 1))
    with pytest.raises(UserError, match="task 'my_cart_task' is not installed here .*unknown function 'my_alive'"):
        Referee(tmp_path / "c", "cartpole.xml", seed=0)


# --- the report: returns of either sign, episodes the watchdog ended --------------------------
@pytest.mark.parametrize("sim,training,expected", [
    # a negative return that got better: -50 against -100 is 50 better, half of |-100|, 2.5 std of 20
    (-50.0, {"return_mean": -100.0, "return_std": 20.0},
     {"difference": 50.0, "relative": 0.5, "in_training_std": 2.5, "ratio": None, "verdict": "better"}),
    # and one that got worse: -150 against -100
    (-150.0, {"return_mean": -100.0, "return_std": 25.0},
     {"difference": -50.0, "relative": -0.5, "in_training_std": -2.0, "ratio": None, "verdict": "worse"}),
    # positive returns: the ratio is meaningful (90 of 100 kept)
    (90.0, {"return_mean": 100.0, "return_std": 5.0},
     {"difference": -10.0, "relative": -0.1, "in_training_std": -2.0, "ratio": 0.9, "verdict": "worse"}),
    # a positive training return and a negative sim2sim one: no ratio
    (-2.0, {"return_mean": 5.0, "return_std": 0.0},
     {"difference": -7.0, "relative": -1.4, "in_training_std": None, "ratio": None, "verdict": "worse"}),
    # a zero training return: no relative change, no ratio
    (3.0, {"return_mean": 0.0, "return_std": 1.5},
     {"difference": 3.0, "relative": None, "in_training_std": 2.0, "ratio": None, "verdict": "better"}),
    (7.0, {"return_mean": 7.0, "return_std": 1.0},
     {"difference": 0.0, "relative": 0.0, "in_training_std": 0.0, "ratio": 1.0, "verdict": "equal"}),
])  # fmt: skip
def test_returns_are_compared_right_for_either_sign(sim, training, expected):
    from robolearn.sim2sim import compare_returns

    result = compare_returns(sim, training)
    assert result["training"] == training["return_mean"] and result["sim2sim"] == sim
    for key, value in expected.items():
        assert result[key] == (value if value is None or isinstance(value, str) else pytest.approx(value)), key


def test_the_return_verdict_in_words():
    from robolearn.sim2sim import compare_returns, comparison_line

    line = comparison_line(compare_returns(-50.0, {"return_mean": -100.0, "return_std": 20.0}))
    assert line == ("return: 50 better than the training evaluation (-50 vs -100: +50.0% of |training return|, "
                    "+2.5 std of its returns)")
    line = comparison_line(compare_returns(90.0, {"return_mean": 100.0, "return_std": 5.0}))
    assert line == ("return: 10 worse than the training evaluation (90 vs 100: -10.0% of |training return|, "
                    "-2 std of its returns; kept 90.0%)")
    line = comparison_line(compare_returns(3.0, {"return_mean": 0.0}))
    assert line == "return: 3 better than the training evaluation (3 vs 0: the training return is 0)"
    assert comparison_line(compare_returns(7.0, {"return_mean": 7.0})) == "return: equal to the training evaluation (7)"
    assert compare_returns(7.0, {}) is None  # a bundle without a training evaluation


def test_a_higher_return_from_shorter_episodes_of_a_negative_task_is_not_better():
    """Rewards negative per step (a reach task's distance cost): an episode the watchdog ended at step
    19 of 200 scores -1.4 against the training's -49.4; that is no improvement, and it says why."""
    from robolearn.sim2sim import compare_returns, comparison_line

    training = {"return_mean": -49.44, "return_std": 17.0, "episode_length_mean": 200.0}
    cut = compare_returns(-1.418, training, episode_length=19.0)
    assert cut["verdict"] == "shorter"
    assert comparison_line(cut) == ("return: -1.418 vs the training evaluation's -49.44, higher only because its "
                                    "episodes ended sooner (19 vs 200 steps) and this task's returns are negative: "
                                    "not better")  # fmt: skip
    assert compare_returns(-40.0, training, episode_length=199.0)["verdict"] == "better"  # as long: really better
    assert compare_returns(-60.0, training, episode_length=19.0)["verdict"] == "worse"
    positive = {"return_mean": 100.0, "return_std": 5.0, "episode_length_mean": 200.0}
    assert compare_returns(120.0, positive, episode_length=150.0)["verdict"] == "better"  # more in fewer steps


def test_episodes_the_watchdog_ended_are_counted():
    from robolearn.sim2sim import Episode, summarize_episodes

    episodes = [
        Episode(10.0, 100),  # to the time limit
        Episode(4.0, 40, ("pole_fell",)),
        Episode(-2.0, 7, (), "policy output is not finite (NaN or inf)"),
        Episode(1.0, 5, ("pole_fell",), "joint 'hinge' at 3.600 is outside its limits"),  # both on one tick
    ]
    summary = summarize_episodes(episodes, ["pole_fell", "cart_out"])
    # returns 10, 4, -2, 1: mean 3.25, deviations 6.75, 0.75, -5.25, -2.25 -> variance 78.75 / 4
    assert summary["episodes"] == 4 and summary["return_mean"] == pytest.approx(3.25)
    assert summary["return_std"] == pytest.approx((78.75 / 4) ** 0.5)
    assert summary["episode_length_mean"] == pytest.approx((100 + 40 + 7 + 5) / 4)
    assert summary["terminated_fraction"] == 0.75  # all but the first ended early
    assert summary["termination/pole_fell"] == 0.5 and summary["termination/cart_out"] == 0.0
    assert summary["ended_by_watchdog"] == 2
    assert summary["trip_reasons"] == ["joint 'hinge' at 3.600 is outside its limits", "policy output is not finite (NaN or inf)"]


def test_sim2sim_counts_an_episode_the_watchdog_ended(cartpole_bundle, monkeypatch, capsys):
    """The policy's 5th output is NaN: the watchdog ends the first episode at tick 4, after 4
    scored steps; that episode stays in the return, length and terminated fraction."""
    from robolearn_deploy.policy import Policy as DeployPolicy

    from robolearn.sim2sim import open_sim, print_report, run_episode, sim2sim

    act, calls = DeployPolicy.act, []

    def act_nan_once(self, obs=None):
        action = act(self, obs)
        calls.append(1)
        return np.full_like(action, np.nan) if len(calls) == 5 else action

    monkeypatch.setattr(DeployPolicy, "act", act_nan_once)
    policy, robot, referee, loop = open_sim(cartpole_bundle)
    try:
        episode, _ = run_episode(loop, robot, referee, referee.env.max_episode_length)
    finally:
        referee.close()
    assert episode.tripped == "policy output is not finite (NaN or inf)" and episode.length == 4 and episode.ret > 0

    calls.clear()
    result = sim2sim(cartpole_bundle, episodes=2)
    assert result["episodes"] == 2 and result["ended_by_watchdog"] == 1
    assert result["trip_reasons"] == ["policy output is not finite (NaN or inf)"]
    assert result["terminated_fraction"] >= 0.5
    assert result["return_comparison"]["training"] == result["training_evaluation"]["return_mean"]
    print_report(result)
    out = capsys.readouterr().out
    assert "episodes ended by the watchdog: 1 of 2 (policy output is not finite (NaN or inf))" in out
    assert " than the training evaluation (" in out or "equal to the training evaluation" in out


def test_the_stand_in_robot_starts_from_the_home_keyframes_activations(tmp_path):
    """As training's backends do (tests/physics/test_engine_backends.py): an intvelocity servo's target."""
    from tests.physics.test_engine_backends import HOME_ACT

    (tmp_path / "arm.xml").write_text(HOME_ACT)
    robot = MujocoRobot(tmp_path / "arm.xml")
    robot.reset(qpos=np.array([0.7]))
    assert robot.data.act.tolist() == [0.7]


def test_a_report_without_a_completed_control_step_says_so(cartpole_bundle, capsys):
    """Every episode ended at its first tick (a reading out of range at the start): no step was
    timed, and the report says none completed instead of 'median nan us'."""
    from robolearn.sim2sim import print_report, sim2sim

    result = sim2sim(cartpole_bundle, episodes=1)
    result["control_step_ms"] = {"median": float("nan"), "p99": float("nan")}
    print_report(result)
    out = capsys.readouterr().out
    assert "control step (observe + infer + map): none completed" in out and "nan us" not in out
