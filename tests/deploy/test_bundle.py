"""A bundle is verified before it runs: every refusal is one line that names the problem."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import yaml

from robolearn_deploy import DeployError, Policy, RobotState
from robolearn_deploy.bundle import metadata_digest


def rewrite(bundle, edit):
    """Edit robot.yaml and re-sign it, as an export of another version or layout would."""
    meta = yaml.safe_load((bundle / "robot.yaml").read_text())
    edit(meta)
    meta["metadata_sha256"] = metadata_digest(meta)
    (bundle / "robot.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))


def refused(bundle, *expected):
    with pytest.raises(DeployError) as info:
        Policy(bundle)
    message = str(info.value)
    assert "\n" not in message
    for text in expected:
        assert text in message, message
    return message


def test_intact_bundle_loads(cartpole_bundle):
    policy = Policy(cartpole_bundle)
    assert policy.bundle.obs_size == 4 and policy.engine.name == "onnxruntime"
    assert policy.act([0.0, 0.1, 0.0, 0.0]).shape == (1,)


def test_tampered_policy_file(cartpole_bundle):
    onnx = cartpole_bundle / "policy.onnx"
    data = bytearray(onnx.read_bytes())
    data[-20] ^= 0xFF
    onnx.write_bytes(bytes(data))
    refused(cartpole_bundle, "policy.onnx does not match its sha256")


def test_robot_yaml_edited_by_hand(cartpole_bundle):
    path = cartpole_bundle / "robot.yaml"
    path.write_text(path.read_text().replace("action_scale: 1.0", "action_scale: 2.0"))
    refused(cartpole_bundle, "robot.yaml was edited after export")


def test_wrong_bundle_format(cartpole_bundle):
    rewrite(cartpole_bundle, lambda m: m.update(bundle_format=99))
    refused(cartpole_bundle, "bundle format 99", "a format this runtime reads (1, 2")


def test_missing_file(cartpole_bundle):
    (cartpole_bundle / "task.yaml").unlink()
    refused(cartpole_bundle, "task.yaml", "missing")


def test_a_file_this_user_may_not_read(cartpole_bundle, monkeypatch):
    """chmod 000 on policy.onnx (root reads it anyway: the read is made to fail as it would)."""
    import robolearn_deploy.bundle

    def denied(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(robolearn_deploy.bundle, "sha256", denied)
    refused(cartpole_bundle, "cannot read the bundle", "Permission denied", "valid: a bundle directory whose files this user may read")


def test_layout_that_does_not_add_up(cartpole_bundle):
    def drop_last_term(meta):
        meta["observation"]["terms"].pop()

    rewrite(cartpole_bundle, drop_last_term)
    refused(cartpole_bundle, "observation terms cover 3 values", "4")


def test_layout_that_does_not_match_the_network(cartpole_bundle):
    def extra_term(meta):
        obs = meta["observation"]
        obs["terms"].append({**obs["terms"][-1], "name": "extra", "start": 4, "stop": 5})
        obs["size"] = 5

    rewrite(cartpole_bundle, extra_term)
    refused(cartpole_bundle, "takes 4 observations", "describes 5", "layout mismatch")


def test_source_a_robot_cannot_provide(cartpole_bundle):
    def privileged(meta):
        meta["observation"]["terms"][0]["source"] = "model_field"

    rewrite(cartpole_bundle, privileged)
    from robolearn_deploy import ObservationBuilder

    policy = Policy(cartpole_bundle)
    with pytest.raises(DeployError, match="comes from 'model_field'"):
        ObservationBuilder(policy.bundle, ["slider", "hinge"])


def test_cli_reports_a_bad_bundle_in_one_line(cartpole_bundle, tmp_path):
    (cartpole_bundle / "policy.onnx").write_bytes(b"not a network")
    result = subprocess.run([sys.executable, "-m", "robolearn.cli", "sim2sim", f"bundle={cartpole_bundle}"],
                            capture_output=True, text=True, cwd=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "does not match its sha256" in lines[0], result.stderr


def test_deploy_runs_without_torch_or_robolearn(cartpole_bundle):
    """The runtime's whole path, bundle to control loop against the MuJoCo stand-in, in a process
    where importing torch (or robolearn) fails."""
    script = textwrap.dedent(f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "robolearn"):
                    raise ImportError("blocked: " + name)
        sys.meta_path.insert(0, Block())
        from robolearn_deploy import ControlLoop, Policy
        from robolearn_deploy.sim import MujocoRobot
        policy = Policy({str(cartpole_bundle)!r})
        robot = MujocoRobot({str(cartpole_bundle / "cartpole.xml")!r})
        report = ControlLoop(policy, robot).run(50)
        assert report.steps == 50 and report.tripped is None, report
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "robolearn"))
        assert not loaded, loaded
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def _set(*path_and_value):
    """An edit of robot.yaml setting the entry at `path` (keys and list indices) to `value`."""
    *path, key, value = path_and_value

    def edit(meta):
        for k in path:
            meta = meta[k]
        meta[key] = value

    return edit


@pytest.mark.parametrize("edit, expected", [
    (lambda m: m["observation"]["terms"][0].pop("source"), "observation term 'cart_pos' source: None"),
    (lambda m: m["actuators"][0].pop("joint"), "actuator 'slide' (kind motor) has no 'joint'"),
    (lambda m: m["actuators"][0].pop("effort_per_ctrl"), "(kind motor) has no 'effort_per_ctrl'"),
    (lambda m: m["artifacts"][0].pop("precision"), "robot.yaml is malformed"),
    (_set("default_pose", [0.0, 0.0]), "default_pose: [0.0, 0.0]; valid: a mapping"),
    # the types a re-signed hand edit can give, each refused by name before anything reads it
    (_set("observation", "terms", 0, "source", ["joint_pos"]), "source: ['joint_pos']; valid: a non-empty string"),
    (_set("observation", "terms", 0, "params", "joints", 5), "params.joints: 5; valid: a list of names"),
    (_set("observation", "terms", 0, "params", "joints", [["slider"]]), "params.joints: [['slider']]"),
    (_set("observation", "terms", 0, "name", ["x"]), "an observation term's name: ['x']"),
    (_set("observation", "terms", 1, "start", True), "observation term 'pole_angle' start: True; valid: an integer"),
    (_set("observation", "input", ["obs"]), "observation input: ['obs']"),
    (_set("action", "output", {"a": 1}), "action output: {'a': 1}"),
    (_set("action", "size", True), "action size: True; valid: an integer"),
    (_set("artifacts", 3), "artifacts: 3; valid: a list"),
    (_set("artifacts", 0, "file", None), "an artifact {"),
    (_set("model_file", ["cartpole.xml"]), "model_file: ['cartpole.xml']"),
    (_set("task", 5), "task: 5; valid: the training task's name"),
    (_set("commands", "abc"), "commands: 'abc'; valid: a mapping"),
    (_set("commands", {"base_velocity": [1, 2]}), "command 'base_velocity': [1, 2]; valid: a mapping with a components"),
    (_set("actuators", 0, "name", ["slide"]), "an actuator name: ['slide']"),
    (_set("bundle_format", True), "bundle format True"),
    (_set("actuators", 0, "action_scale", 0.0), "actuator 'slide' action_scale: 0.0; valid: a finite number other than 0"),
])  # fmt: skip
def test_malformed_robot_yaml_is_one_line(cartpole_bundle, edit, expected):
    rewrite(cartpole_bundle, edit)
    refused(cartpole_bundle, expected, "re-export")


def test_every_artifact_must_carry_a_checksum(cartpole_bundle):
    rewrite(cartpole_bundle, lambda m: m["files"].pop("policy.onnx"))
    refused(cartpole_bundle, "no checksum for policy.onnx")
    rewrite(cartpole_bundle, lambda m: m.update(files=[]))
    refused(cartpole_bundle, "'files' must map")


def test_term_width_must_match_its_source(cartpole_bundle):
    from robolearn_deploy import ObservationBuilder

    rewrite(cartpole_bundle, lambda m: m["observation"]["terms"][0]["params"].update(joints=["slider", "hinge"]))
    with pytest.raises(DeployError, match="'cart_pos' .* has 1 values in robot.yaml but its source gives 2"):
        ObservationBuilder(Policy(cartpole_bundle).bundle, ["slider", "hinge"])


def test_a_ctrl_actuator_needs_a_known_safe_ctrl(cartpole_bundle):
    rewrite(cartpole_bundle, lambda m: m["actuators"][0].update(kind="actuator", joint=None, safe_ctrl="freeze"))
    refused(cartpole_bundle, "actuator 'slide' has safe_ctrl 'freeze'; valid: hold, zero")


def test_a_sensor_term_needs_its_sensors_described(cartpole_bundle):
    from robolearn_deploy import ObservationBuilder

    sensor = {"source": "sensor", "params": {"names": ["cart_sensor"]}}
    rewrite(cartpole_bundle, lambda m: m["observation"]["terms"][0].update(sensor))
    with pytest.raises(DeployError, match="^observation 'cart_pos' \\(sensor\\) reads sensor 'cart_sensor', which robot.yaml's "
                                          "sensors do not describe; re-export the bundle$"):  # fmt: skip
        ObservationBuilder(Policy(cartpole_bundle).bundle, ["slider", "hinge"])
    rewrite(cartpole_bundle, lambda m: m.update(sensors={"cart_sensor": {"dim": 2, "type": "framepos"}}))
    with pytest.raises(DeployError, match="'cart_pos' \\(sensor\\) has 1 values in robot.yaml but its source gives 2"):
        ObservationBuilder(Policy(cartpole_bundle).bundle, ["slider", "hinge"])
    rewrite(cartpole_bundle, lambda m: m.update(sensors={"cart_sensor": {"dim": 1, "type": "framepos"}}))
    builder = ObservationBuilder(Policy(cartpole_bundle).bundle, ["slider", "hinge"])
    assert builder.signals == {"cart_sensor": 1}
    state = RobotState(np.zeros(2), np.zeros(2), {"cart_sensor": np.array([0.25])})
    assert builder.build(state)[0] == 0.25
    before = builder.build(state).copy()
    three = RobotState(np.zeros(3), np.zeros(2), {"cart_sensor": np.array([0.25])})  # a joint too many
    for bad, why in ((None, "reading is NoneType, not a RobotState"),
                     (three, "reading's joint_pos has shape \\(3,\\), the robot has 2"),
                     (RobotState(np.zeros(2), np.zeros(2)), "reading lacks signal 'cart_sensor'")):  # fmt: skip
        with pytest.raises(DeployError, match=f"^cannot build an observation: {why}"):
            builder.build(bad)
    np.testing.assert_array_equal(builder.build(state), before)


def files_of(folder):
    """Every file under `folder` with its bytes: what a refusal must leave as it was."""
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _actuator(**entry):
    return lambda m: m["actuators"][0].update(entry)


def _joint_limit(low, high):
    return lambda m: m["joint_limits"].update(slider=[low, high])


def _term(**entry):
    return lambda m: m["observation"]["terms"][0].update(entry)


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("edit,expected", [
    (lambda m: m.update(control_period_s=-0.02), ["control_period_s: -0.02", "valid: a number of seconds in 1e-4..100"]),
    (lambda m: m.update(control_period_s=NAN), ["control_period_s: nan", "valid: a number of seconds in 1e-4..100"]),
    (lambda m: m.update(control_period_s="fast"), ["control_period_s: 'fast'", "valid: a number of seconds"]),
    # a period that would tick for ever or never, each with a physics step that matches it
    (lambda m: m.update(control_period_s=1e9, physics_dt_s=5e8), ["control_period_s: 1000000000.0", "in 1e-4..100"]),
    (lambda m: m.update(control_period_s=1e-9, physics_dt_s=5e-10), ["control_period_s: 1e-09", "in 1e-4..100"]),
    (lambda m: m.update(physics_dt_s=0.0), ["physics_dt_s: 0.0", "valid: a number of seconds in 1e-6..100"]),
    (lambda m: m.update(decimation=0), ["decimation: 0", "valid: an integer 1..1000"]),
    (lambda m: m.update(decimation="two"), ["decimation: 'two'", "valid: an integer 1..1000"]),
    (lambda m: m.update(decimation=2.5), ["decimation: 2.5", "valid: an integer 1..1000"]),
    # a billion physics steps per tick (of 2e-11 s each) would never finish one tick
    (lambda m: m.update(decimation=10**9, physics_dt_s=0.02 / 10**9), ["physics_dt_s: 2.0000000000000002e-11", "in 1e-6..100"]),
    (lambda m: m.update(decimation=10**9), ["decimation: 1000000000", "valid: an integer 1..1000"]),
    (lambda m: m.update(physics_dt_s=0.005), ["control_period_s: 0.02 but physics_dt_s x decimation = 0.005 x 2",
                                              "valid: equal periods"]),
    (_actuator(ctrl_min=NAN), ["actuator 'slide' ctrl_min: nan", "valid: a number (.inf and -.inf: unbounded)"]),
    (_actuator(ctrl_max=NAN), ["actuator 'slide' ctrl_max: nan", "valid: a number"]),
    (_actuator(ctrl_min=2.0), ["actuator 'slide' ctrl_min: 2.0, ctrl_max: 1.0", "valid: ctrl_min <= ctrl_max"]),
    (_actuator(ctrl_min=INF, ctrl_max=INF), ["ctrl_min: inf, ctrl_max: inf", "ctrl_min below .inf"]),
    (_actuator(action_scale="big"), ["actuator 'slide' action_scale: 'big'", "valid: a finite number"]),
    (_actuator(effort_per_ctrl=INF), ["actuator 'slide' effort_per_ctrl: inf", "valid: a finite number"]),
    (_actuator(effort_range=[5.0, -5.0]), ["actuator 'slide' effort_range: [5.0, -5.0]", "low <= high"]),
    (_actuator(kp=-25.0), ["actuator 'slide' kp: -25.0", "valid: a finite number >= 0"]),
    (_actuator(kd=-0.5), ["actuator 'slide' kd: -0.5", "valid: a finite number >= 0"]),
    (_actuator(kd=NAN), ["actuator 'slide' kd: nan", "valid: a finite number >= 0"]),
    (lambda m: m["default_pose"].update(hinge=NAN), ["default_pose of 'hinge': nan", "valid: a finite number"]),
    (_joint_limit(1.8, -1.8), ["joint_limits of 'slider': [1.8, -1.8]", "valid: [low, high], finite numbers with low <= high"]),
    (_joint_limit(NAN, 1.8), ["joint_limits of 'slider': [nan, 1.8]", "finite numbers"]),
    (lambda m: m["joint_limits"].update(slider=[-1.8]), ["joint_limits of 'slider': [-1.8]", "valid: [low, high]"]),
    # an observation term's scale and clip: 0 hides the term, a clip of -1 makes it a constant, text fails later
    (_term(scale=0), ["observation term 'cart_pos' scale: 0", "valid: a finite number other than 0"]),
    (_term(scale=NAN), ["observation term 'cart_pos' scale: nan", "valid: a finite number other than 0"]),
    (_term(clip=-1.0), ["observation term 'cart_pos' clip: -1.0", "valid: a positive finite number, or none"]),
    (_term(clip=NAN), ["observation term 'cart_pos' clip: nan", "valid: a positive finite number"]),
    (_term(clip="x"), ["observation term 'cart_pos' clip: 'x'", "valid: a positive finite number"]),
    (lambda m: m.update(evaluation="good"), ["evaluation: 'good'", "valid: a mapping of the training evaluation's numbers"]),
    (lambda m: m["evaluation"].update(return_mean="high"), ["evaluation return_mean: 'high'", "valid: a finite number"]),
])  # fmt: skip
def test_a_re_signed_robot_yaml_with_nonsense_numbers_is_refused(cartpole_bundle, edit, expected):
    """A hand edit re-signed with metadata_digest passes the checksums; the numbers the control
    loop relies on are checked on their own, and the refusal names the field and what is valid."""
    rewrite(cartpole_bundle, edit)
    before = files_of(cartpole_bundle)
    message = refused(cartpole_bundle, "robot.yaml has ", *expected, "re-export the bundle")
    assert message.startswith("robot.yaml has "), message
    assert files_of(cartpole_bundle) == before


def test_unbounded_ctrl_limits_still_load(cartpole_bundle):
    """An imported policy's unclipped action is written as ctrl_min -.inf, ctrl_max .inf."""
    rewrite(cartpole_bundle, _actuator(ctrl_min=-INF, ctrl_max=INF))
    actuator = Policy(cartpole_bundle).bundle.actuators[0]
    assert (actuator.ctrl_min, actuator.ctrl_max) == (-INF, INF)


def test_sim2sim_refuses_a_re_signed_negative_control_period_in_one_line(cartpole_bundle, tmp_path):
    rewrite(cartpole_bundle, lambda m: m.update(control_period_s=-0.02))
    before = files_of(tmp_path)
    result = subprocess.run([sys.executable, "-m", "robolearn.cli", "sim2sim", f"bundle={cartpole_bundle}", "episodes=1"],
                            capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "robot.yaml has control_period_s: -0.02; valid: a number of seconds in 1e-4..100" in lines[0]
    assert files_of(tmp_path) == before



def test_a_policy_whose_weights_are_nan_is_refused_at_load(cartpole_bundle):
    """An ONNX whose weights are NaN, its checksum and robot.yaml signed again (so the files look
    whole): it would act NaN on every tick, and the watchdog would end every episode at its first
    step. Policy() refuses it in one line instead."""
    import onnx
    from onnx import numpy_helper
    from robolearn_deploy.bundle import sha256

    path = cartpole_bundle / "policy.onnx"
    model = onnx.load(str(path))
    weight = next(i for i in model.graph.initializer if numpy_helper.to_array(i).size > 8)
    weight.CopyFrom(numpy_helper.from_array(np.full_like(numpy_helper.to_array(weight), np.nan), weight.name))
    onnx.save(model, str(path))
    rewrite(cartpole_bundle, lambda meta: meta["files"]["policy.onnx"].update(sha256=sha256(path)))
    refused(cartpole_bundle, "the policy acts NaN or inf at a zero observation", "valid: a bundle exported from a sound checkpoint")
