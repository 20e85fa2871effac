"""The control loop and its watchdog, against a scripted robot with its own clock."""

import json
import re

import numpy as np
import pytest

from robolearn_deploy import ControlLoop, JointCommand, Policy, RobotInterface, RobotState, Safety
from robolearn_deploy.errors import DeployError


class ScriptedRobot(RobotInterface):
    """Joints in an order of its own (not the bundle's); a clock that only moves when told."""

    joint_names = ["hinge", "slider"]

    def __init__(self):
        self.t = 0.0
        self.q = np.array([0.05, 0.2])
        self.qd = np.array([0.0, 0.0])
        self.commands: list[JointCommand] = []
        self.step_delay: dict[int, float] = {}  # read number -> seconds the "policy step" takes
        self.reads = 0

    def now(self):
        return self.t

    def sleep_until(self, t):
        self.t = max(self.t, t)

    def read_state(self):
        self.t += self.step_delay.get(self.reads, 0.0)  # time spent after the read, before the write
        self.reads += 1
        return RobotState(self.q.copy(), self.qd.copy())

    def write_command(self, command):
        self.commands.append(command.copy())


@pytest.fixture
def loop(cartpole_bundle):
    return ControlLoop(Policy(cartpole_bundle), ScriptedRobot())


def test_commands_follow_the_bundle_by_joint_name(loop):
    loop.run(3)
    robot, policy = loop.robot, loop.policy
    expected_obs = np.array([0.2, 0.05, 0.0, 0.0], np.float32)  # bundle order: slider, hinge
    action = policy(expected_obs[None])[0, 0]
    first = robot.commands[0]
    # cartpole's motor: effort = clip(action, -1, 1) * 10 N on the slider (robot index 1)
    assert first.effort[1] == pytest.approx(10.0 * np.clip(action, -1, 1), rel=1e-6)
    assert first.effort[0] == 0.0 and (first.kp == 0).all()


def test_late_step_trips_the_watchdog_and_sends_the_safe_command(loop):
    period = loop.period
    loop.robot.step_delay = {2: 1.5 * period}
    report = loop.run(6)
    assert report.tripped is not None and report.trip_step == 2
    assert "step 2 finished 30.0 ms after its tick (limit 20.0 ms)" in report.tripped
    assert len(loop.robot.commands) == 6  # the safe command keeps coming on every tick
    for cmd in loop.robot.commands[2:]:
        assert (cmd.kp == 0).all() and (cmd.effort == 0).all()
        assert cmd.kd[1] == 1.0  # damping on the actuated slider
    assert loop.robot.commands[1].effort[1] != 0.0


def test_nan_policy_output_trips(loop):
    real_act = loop.policy.act
    calls = []

    def act(obs=None):
        out = real_act(obs)
        calls.append(1)
        if len(calls) == 2:
            out[:] = np.nan
        return out

    loop.policy.act = act
    report = loop.run(4)
    assert report.trip_step == 1 and "not finite" in report.tripped
    assert len(calls) == 2  # the policy is not consulted again after the trip
    assert all((c.effort == 0).all() and (c.kd[1] == 1.0) for c in loop.robot.commands[1:])


def test_bad_readings_trip(cartpole_bundle):
    robot = ScriptedRobot()
    robot.q[1] = 2.5  # slider beyond its 1.8 m limit + 0.1 margin
    report = ControlLoop(Policy(cartpole_bundle), robot).run(2)
    assert report.trip_step == 0 and "'slider' at 2.500 is outside its limits" in report.tripped

    robot = ScriptedRobot()
    robot.qd[0] = np.nan
    assert "'hinge' is not finite" in ControlLoop(Policy(cartpole_bundle), robot).run(1).tripped

    robot = ScriptedRobot()
    robot.qd[0] = 30.0
    loop = ControlLoop(Policy(cartpole_bundle), robot, Safety(max_joint_vel=20.0))
    assert "moves at 30.000" in loop.run(1).tripped


def test_a_speed_limit_per_joint_trips_on_that_joint_only(cartpole_bundle):
    """max_joint_vel by joint name: the hinge's 20 rad/s trips at 30; a limit on the slider alone
    leaves the hinge unchecked; a value per joint is named in the trip."""
    robot = ScriptedRobot()
    robot.qd[:] = [30.0, 0.5]
    tripped = ControlLoop(Policy(cartpole_bundle), robot, Safety(max_joint_vel={"hinge": 20.0, "slider": 1.0})).run(1).tripped
    assert tripped == "joint 'hinge' moves at 30.000, above max_joint_vel 20"
    robot = ScriptedRobot()
    robot.qd[:] = [30.0, 0.5]
    assert ControlLoop(Policy(cartpole_bundle), robot, Safety(max_joint_vel={"slider": 1.0})).run(2).tripped is None
    robot = ScriptedRobot()
    robot.qd[:] = [0.0, -1.5]
    assert ControlLoop(Policy(cartpole_bundle), robot, Safety(max_joint_vel={"slider": 1.0})).run(1).tripped == (
        "joint 'slider' moves at -1.500, above max_joint_vel 1")


@pytest.mark.parametrize(("limit", "message"), [
    (0.0, "max_joint_vel is 0.0; valid: a speed above 0"),
    (-3, "max_joint_vel is -3; valid: a speed above 0"),
    (float("nan"), "max_joint_vel is nan; valid"),
    ("fast", "max_joint_vel is 'fast'; valid"),
    (True, "max_joint_vel is True; valid"),
    ({"hinge": float("inf")}, "max_joint_vel['hinge'] is inf; valid"),
])  # fmt: skip
def test_a_speed_limit_that_checks_nothing_is_refused(limit, message):
    with pytest.raises(DeployError, match=re.escape(message)):
        Safety(max_joint_vel=limit)


def test_a_speed_limit_for_a_joint_the_robot_lacks_is_refused(cartpole_bundle):
    with pytest.raises(DeployError, match="max_joint_vel names joint 'elbow', which the robot does not have; valid: hinge, slider"):
        ControlLoop(Policy(cartpole_bundle), ScriptedRobot(), Safety(max_joint_vel={"elbow": 5.0}))


def test_hold_mode_keeps_the_pose_at_the_trip(cartpole_bundle):
    robot = ScriptedRobot()
    robot.step_delay = {0: 1.0}
    loop = ControlLoop(Policy(cartpole_bundle), robot, Safety(safe_mode="hold", damping_kd=3.0))
    loop.run(2)
    cmd = robot.commands[-1]
    assert cmd.position.tolist() == [0.05, 0.2] and cmd.kd.tolist() == [0.0, 3.0]


def test_reset_rearms_the_watchdog(loop):
    loop.robot.step_delay = {0: 1.0}
    assert loop.run(2).tripped
    loop.reset()
    assert loop.run(2).tripped is None


def test_action_rate_limit(cartpole_bundle):
    robot = ScriptedRobot()
    loop = ControlLoop(Policy(cartpole_bundle), robot, Safety(action_rate_limit=0.5))
    loop.policy.act = lambda obs=None: np.array([1.0], np.float32)  # a step from 0 to 1
    loop.run(3)
    efforts = [c.effort[1] for c in robot.commands]
    assert efforts == pytest.approx([0.1, 0.2, 0.3])  # 0.5 /s * 20 ms = 0.01 per tick, times 10 N


def test_every_step_is_logged(cartpole_bundle, tmp_path):
    robot = ScriptedRobot()
    robot.step_delay = {3: 1.0}
    loop = ControlLoop(Policy(cartpole_bundle), robot, log=tmp_path / "log.jsonl")
    loop.run(5)
    loop.close()
    rows = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4]
    assert len(rows[0]["obs"]) == 4 and len(rows[0]["action"]) == 1 and rows[0]["tripped"] is None
    assert "finished" in rows[3]["tripped"] and rows[3]["action"] is None and rows[4]["tripped"] is None


def test_position_servo_commands_and_hold(servo_pendulum, tmp_path):
    from .conftest import make_bundle

    make_bundle(tmp_path / "b", "pendulum", servo_pendulum)
    policy = Policy(tmp_path / "b")
    [servo] = policy.bundle.actuators
    assert (servo.kind, servo.kp, servo.kd, servo.effort_range) == ("position", 8.0, 0.4, (-2.0, 2.0))

    class Servo(ScriptedRobot):
        joint_names = ["hinge"]

        def __init__(self):
            super().__init__()
            self.q, self.qd = np.array([0.3]), np.array([0.1])

    robot = Servo()
    loop = ControlLoop(policy, robot, Safety(safe_mode="hold"))
    loop.policy.act = lambda obs=None: np.array([5.0], np.float32)  # beyond ctrlrange: clipped to 3
    robot.step_delay = {1: 1.0}
    loop.run(3)
    first, held = robot.commands[0], robot.commands[-1]
    assert (first.position[0], first.kp[0], first.kd[0], first.effort[0]) == (3.0, 8.0, 0.4, 0.0)
    assert (held.position[0], held.kp[0], held.kd[0]) == (0.3, 8.0, 0.4)  # the pose at the trip, own gains


def test_safe_command_has_no_target_on_a_broken_sensor(servo_pendulum, tmp_path):
    from .conftest import make_bundle

    make_bundle(tmp_path / "b", "pendulum", servo_pendulum)
    robot = ScriptedRobot()
    robot.joint_names = ["hinge"]
    robot.q, robot.qd = np.array([np.nan]), np.array([0.0])
    loop = ControlLoop(Policy(tmp_path / "b"), robot, Safety(safe_mode="hold"))
    assert "not finite" in loop.run(1).tripped
    cmd = robot.commands[0]
    assert cmd.kp[0] == 0.0 and np.isfinite(cmd.position).all() and cmd.kd[0] == 0.4


def test_damping_falls_back_to_damping_kd_where_the_servo_has_no_kd(servo_pendulum, tmp_path):
    from .conftest import make_bundle
    from .test_bundle import rewrite

    make_bundle(tmp_path / "b", "pendulum", servo_pendulum)
    rewrite(tmp_path / "b", lambda meta: meta["actuators"][0].update(kd=0.0))
    robot = ScriptedRobot()
    robot.joint_names = ["hinge"]
    robot.q, robot.qd, robot.step_delay = np.array([0.3]), np.array([0.0]), {0: 1.0}
    ControlLoop(Policy(tmp_path / "b"), robot, Safety(damping_kd=2.5)).run(1)
    assert robot.commands[0].kd[0] == 2.5 and robot.commands[0].kp[0] == 0.0


def test_policy_act_refuses_what_numpy_would_broadcast(cartpole_bundle):
    from robolearn_deploy.errors import DeployError

    policy = Policy(cartpole_bundle)
    size = policy.bundle.obs_size
    for bad in (np.float32(0.5), np.zeros(1), np.zeros(size + 1), np.zeros((1, size)), np.array(["a"] * size)):
        with pytest.raises(DeployError, match=f"Policy.act takes one observation of {size} real numbers, got shape"):
            policy.act(bad)
    assert policy.act([0.1] * size).shape == (policy.bundle.num_actions,)  # a list of floats is fine
    with pytest.raises(DeployError, match=rf"a Policy call takes a batch \[B, {size}\]"):
        policy(np.zeros(size))


class PartialRobot(ScriptedRobot):
    """Returns a reading with one joint missing from the third read on."""

    def read_state(self):
        state = super().read_state()
        return state if self.reads < 3 else RobotState(state.joint_pos[:1], state.joint_vel[:1])


def test_a_reading_that_lacks_a_joint_trips_and_the_robot_still_gets_a_safe_command(cartpole_bundle):
    robot = PartialRobot()
    report = ControlLoop(Policy(cartpole_bundle), robot).run(4)
    assert report.trip_step == 2 and "reading's joint_pos has shape (1,), the robot has 2 joints" in report.tripped
    assert len(robot.commands) == 4  # a command on every tick, the bad one included
    for command in robot.commands[2:]:
        assert np.all(command.kp == 0) and np.all(np.isfinite(command.position)) and command.kd.max() > 0  # damping


REFERENCE = "docs/reference/quadruped_flat_cpu/bundle"


class Legs(RobotInterface):
    """A 12-joint driver whose readings carry the IMU but no velocity command."""

    def __init__(self, joint_names, signals=None):
        self.joint_names, self.commands, self.t = joint_names, [], 0.0
        if signals is not None:
            self.signals = signals

    def now(self):
        return self.t

    def sleep_until(self, t):
        self.t = max(self.t, t)

    def read_state(self):
        n = len(self.joint_names)
        return RobotState(np.zeros(n), np.zeros(n), {"base_ang_vel": np.zeros(3), "projected_gravity": np.array([0, 0, -1.0])})

    def write_command(self, command):
        self.commands.append(command)


def test_a_signal_the_policy_needs_is_checked_when_the_loop_is_built_or_trips_on_its_tick():
    from pathlib import Path

    from robolearn_deploy.errors import DeployError

    policy = Policy(Path(__file__).parents[2] / REFERENCE)
    joints = [a.joint for a in policy.bundle.actuators]
    with pytest.raises(DeployError, match="the policy needs signal 'base_velocity', which Legs does not provide"):
        ControlLoop(policy, Legs(joints, signals=["base_ang_vel", "projected_gravity"]))
    undeclared = Legs(joints)
    report = ControlLoop(policy, undeclared).run(2)
    assert report.trip_step == 0 and "reading lacks signal 'base_velocity'" in report.tripped
    assert len(undeclared.commands) == 2


class TendonRobot(ScriptedRobot):
    """The tendon pendulum's driver: one joint, the actuators it commands by ctrl in an order of
    its own (one the policy does not drive), and the two sensors the policy reads."""

    joint_names = ["hinge"]
    actuator_names = ["brake", "assist"]

    def __init__(self):
        super().__init__()
        self.q, self.qd = np.array([0.3]), np.array([0.0])

    def read_state(self):
        state = super().read_state()
        state.signals = {"tip_pos": np.array([0.1, 0.0, 0.4]), "assist_force": np.array([0.2])}
        return state


@pytest.mark.parametrize("safe_ctrl,held", [("zero", 0.0), ("hold", 0.7)])
def test_ctrl_actuators_reach_the_driver_by_name_and_let_go_or_hold_on_a_trip(tendon_pendulum, tmp_path, safe_ctrl, held):
    from .conftest import make_bundle
    from .test_bundle import rewrite

    make_bundle(tmp_path / "b", "pendulum", tendon_pendulum)
    assert Policy(tmp_path / "b").bundle.actuators[1].safe_ctrl == "zero"  # a filtered motor lets go
    rewrite(tmp_path / "b", lambda meta: meta["actuators"][1].update(safe_ctrl=safe_ctrl))
    robot = TendonRobot()
    loop = ControlLoop(Policy(tmp_path / "b"), robot, log=tmp_path / "steps.jsonl")
    loop.policy.act = lambda obs=None: np.array([0.4, 0.7], np.float32)
    robot.step_delay = {1: 1.0}  # the second step is late: the watchdog trips
    report = loop.run(3)
    loop.close()
    assert report.trip_step == 1
    first, safe = robot.commands[0], robot.commands[-1]
    assert first.effort[0] == pytest.approx(0.4) and first.ctrl.tolist() == pytest.approx([0.0, 0.7])
    assert safe.ctrl.tolist() == [0.0, pytest.approx(held)] and safe.effort[0] == 0.0
    rows = [json.loads(line) for line in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert rows[0]["command"]["ctrl"] == pytest.approx([0.0, 0.7]) and rows[0]["obs"][3:7] == pytest.approx([0.1, 0.0, 0.4, 0.2])


def test_a_driver_that_does_not_list_a_ctrl_actuator_is_refused_when_the_loop_is_built(tendon_pendulum, tmp_path):
    from robolearn_deploy import DeployError

    from .conftest import make_bundle

    make_bundle(tmp_path / "b", "pendulum", tendon_pendulum)
    robot = TendonRobot()
    robot.actuator_names = []
    with pytest.raises(DeployError, match=r"^the policy drives actuator 'assist' \(tendon 'rope', filter dynamics\) by its "
                                          r"ctrl, which the robot does not list in its actuator_names \(it lists: none\)$"):
        ControlLoop(Policy(tmp_path / "b"), robot)


@pytest.mark.parametrize("settings, message", [
    ({"action_rate_limit": float("nan")}, "action_rate_limit is nan; valid: a rate above 0"),
    ({"action_rate_limit": -1.0}, "action_rate_limit is -1.0; valid: a rate above 0"),  # inverted clip bounds
    ({"joint_limit_margin": float("nan")}, "joint_limit_margin is nan; valid: a margin >= 0"),  # no limit check
    ({"max_latency_s": float("nan")}, "max_latency_s is nan; valid: a time above 0"),  # no latency check
    ({"max_latency_s": "0.02"}, "max_latency_s is '0.02'; valid"),  # would fail on the first tick
    ({"damping_kd": -3.0}, "damping_kd is -3.0; valid: a gain >= 0"),  # negative damping in the safe command
    ({"damping_kd": float("nan")}, "damping_kd is nan"),
    ({"safe_mode": ["hold"]}, "unknown safe_mode ['hold']; valid: damping, hold"),
])  # fmt: skip
def test_a_safety_setting_that_would_switch_a_check_off_is_refused(settings, message):
    with pytest.raises(DeployError, match=re.escape(message)):
        Safety(**settings)
    assert Safety(joint_limit_margin=0, damping_kd=0.0, max_latency_s=0.05, action_rate_limit=2)  # the edges that are fine


def test_a_failing_or_odd_reading_trips_with_the_safe_command(cartpole_bundle):
    class Failing(ScriptedRobot):
        def read_state(self):
            raise OSError("CAN bus timeout")

    robot = Failing()
    report = ControlLoop(Policy(cartpole_bundle), robot, Safety(damping_kd=2.0)).run(2)
    assert report.tripped == "reading the robot failed: OSError: CAN bus timeout" and len(robot.commands) == 2
    assert robot.commands[-1].kd.tolist() == [0.0, 2.0] and (robot.commands[-1].effort == 0).all()  # damping
    for reading in (np.array(["a", "b"]), np.array([0.1 + 1j, 0.2])):
        robot = ScriptedRobot()
        robot.read_state = lambda reading=reading: RobotState(reading, np.zeros(2))
        report = ControlLoop(Policy(cartpole_bundle), robot).run(1)
        assert report.tripped.endswith("values, not real numbers") and len(robot.commands) == 1


@pytest.mark.parametrize("names, message", [
    (["hinge", "slider", "slider"], "joint_names names 'slider' more than once"),
    ("hinge,slider", "joint_names is str 'hinge,slider'; valid: a list of names"),
    (None, "joint_names is NoneType None; valid: a list of names"),
    (["hinge", 3], "joint_names holds 3; valid: each entry a name"),
])  # fmt: skip
def test_driver_joint_names_that_cannot_be_matched_are_refused(cartpole_bundle, names, message):
    robot = ScriptedRobot()
    robot.joint_names = names
    with pytest.raises(DeployError, match=re.escape(message)):
        ControlLoop(Policy(cartpole_bundle), robot)


def test_wrong_arguments_to_the_loop_and_the_mapper_are_one_line(cartpole_bundle):
    with pytest.raises(DeployError, match="safety is dict; valid: a Safety"):
        ControlLoop(Policy(cartpole_bundle), ScriptedRobot(), {"max_latency_s": 0.1})
    with pytest.raises(DeployError, match="policy is str"):
        ControlLoop(str(cartpole_bundle), ScriptedRobot())
    loop = ControlLoop(Policy(cartpole_bundle), ScriptedRobot())
    with pytest.raises(DeployError, match=re.escape("action has shape (2,); valid: an array of 1 values")):
        loop.actions.map(np.zeros(2))


def test_a_source_is_registered_by_name_and_a_built_in_one_only_replaced_on_purpose():
    from robolearn_deploy import observations, register_signal_source, register_source

    with pytest.raises(DeployError, match="source 'joint_pos' is one of the runtime's own; valid: another name, or replace=True"):
        register_signal_source("joint_pos")
    with pytest.raises(DeployError, match="source 'foot_forces': the factory is int, not callable"):
        register_source("foot_forces", 3)
    assert observations.SOURCES["joint_pos"] is observations._joint_pos  # untouched
    try:
        register_signal_source("foot_forces")
        register_signal_source("foot_forces", "contacts")  # a source of its own may be registered again
        register_source("joint_pos", observations._joint_pos, replace=True)
    finally:
        observations.SOURCES.pop("foot_forces", None)


def same(a, b) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True) for k in ("position", "velocity", "kp", "kd", "effort"))


class Clock(ScriptedRobot):
    """A driver clock that reads `reading` from tick `at` on (a value, or an exception to raise)."""

    def __init__(self, reading, at=2):
        super().__init__()
        self.reading, self.at = reading, at

    def now(self):
        if self.reads > self.at:
            if isinstance(self.reading, Exception):
                raise self.reading
            return self.reading
        return self.t


@pytest.mark.parametrize("reading, message", [
    (float("nan"), "the robot's clock reads nan, not a finite number of seconds"),
    ("soon", "the robot's clock reads 'soon', not a finite number of seconds"),
    (OSError("clock"), "reading the robot's clock failed: OSError: clock"),
])  # fmt: skip
def test_a_clock_that_cannot_be_read_trips_instead_of_switching_the_latency_check_off(cartpole_bundle, reading, message):
    robot = Clock(reading)
    report = ControlLoop(Policy(cartpole_bundle), robot).run(6)
    assert report.tripped == message and report.trip_step == 2
    assert len(robot.commands) == report.steps == 6  # every tick, the trip's included, wrote a command
    assert all(same(c, robot.commands[2]) for c in robot.commands[2:])  # from the trip on: the safe command
    robot = Clock(reading, at=-1)  # unusable from the start: no tick can be scheduled
    with pytest.raises(DeployError, match=re.escape(f"ControlLoop.run: {message}; valid: now() returning")):
        ControlLoop(Policy(cartpole_bundle), robot).run(3)
    assert robot.commands == []


class Bus(ScriptedRobot):
    """A driver whose write fails `failures` times from the 3rd command on."""

    def __init__(self, failures):
        super().__init__()
        self.failures = failures

    def write_command(self, command):
        if len(self.commands) >= 2 and self.failures:
            self.failures -= 1
            raise OSError("bus off")
        super().write_command(command)


def test_a_failed_write_trips_and_sends_the_safe_command_or_says_the_robot_may_hold_the_last_one(cartpole_bundle):
    robot = Bus(failures=1)
    loop = ControlLoop(Policy(cartpole_bundle), robot)
    report = loop.run(5)
    assert report.tripped == "writing the command failed: OSError: bus off" and report.trip_step == 2
    assert len(robot.commands) == 5 and all(same(c, robot.commands[2]) for c in robot.commands[2:])  # the safe command
    assert not same(robot.commands[1], robot.commands[2])
    robot = Bus(failures=2)
    with pytest.raises(DeployError, match=r"^step 2: writing the command failed: OSError: bus off, and sending the safe "
                                          r"command failed too \(OSError: bus off\): .*stop it by other means$"):  # fmt: skip
        ControlLoop(Policy(cartpole_bundle), robot).run(5)


def test_a_robot_that_is_not_a_driver_is_refused_when_the_loop_is_built(cartpole_bundle):
    class NoNames:
        def read_state(self):
            return RobotState(np.zeros(2), np.zeros(2))

        def write_command(self, command):
            pass

    for robot, message in ((NoNames(), "robot is NoNames without joint_names"), (None, "robot is NoneType without joint_names")):
        with pytest.raises(DeployError, match=re.escape(message) + ".*valid: a RobotInterface"):
            ControlLoop(Policy(cartpole_bundle), robot)


@pytest.mark.parametrize("steps", ["x", -1, 2.5, True, None])
def test_a_step_count_that_is_not_one_is_one_line(loop, steps):
    """run("x") raised a TypeError from range(); run(-1) returned an empty report, as if it had run."""
    with pytest.raises(DeployError, match=rf"ControlLoop.run: steps={steps!r}; valid: an integer >= 0"):
        loop.run(steps)
