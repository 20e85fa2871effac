"""Export: each artifact checked against torch, robot.yaml complete, a failed export changes nothing."""

import re

import onnx
import onnxruntime as ort
import pytest
import torch
import yaml

from robolearn.config import AlgoCfg
from robolearn.errors import UserError
from robolearn.export.bundle import export_bundle
from robolearn.export.onnx import INPUT_NAME, OUTPUT_NAME, ParityReport, check_parity, export_onnx, state_input, state_output
from robolearn.rl.models import ActorCritic, InferencePolicy
from robolearn_deploy.bundle import Bundle


def policy_for(env, hidden=(32, 32)):
    ac = ActorCritic.from_config(AlgoCfg(actor_hidden_dims=list(hidden), critic_hidden_dims=[32]),
                                 env.observation_dims(), env.num_actions)
    obs = env.reset()["policy"]
    ac.actor_normalizer.update(obs * 3 + 1)  # non-trivial statistics, which must travel inside the graph
    return ac


def test_bundle_matches_torch_policy(make_env, tmp_path):
    env = make_env(num_envs=8)
    ac = policy_for(env)
    result = export_bundle(ac, env, tmp_path / "b")
    [onnx_report] = result.artifacts
    assert onnx_report.parity.ok and onnx_report.parity.max_abs_diff < 1e-5
    assert onnx_report.parity.samples == 1024 + 32 * 8
    assert 0 < onnx_report.latency_ms["median"] <= onnx_report.latency_ms["p99"] < 100

    model = onnx.load(tmp_path / "b" / "policy.onnx")
    assert [i.name for i in model.graph.input] == [INPUT_NAME] and [o.name for o in model.graph.output] == [OUTPUT_NAME]
    session = ort.InferenceSession(str(tmp_path / "b" / "policy.onnx"), providers=["CPUExecutionProvider"])
    for batch in (1, 7, 300):  # dynamic batch
        x = torch.randn(batch, 4)
        got = session.run(None, {INPUT_NAME: x.numpy()})[0]
        with torch.no_grad():
            assert abs(got - InferencePolicy(ac)(x).numpy()).max() < 1e-5

    meta = yaml.safe_load((tmp_path / "b" / "robot.yaml").read_text())
    assert meta["actuators"] == [{"name": "slide", "joint": "slider", "action_scale": 1.0, "action_offset": 0.0,
                                  "ctrl_min": -1.0, "ctrl_max": 1.0, "kind": "motor", "effort_per_ctrl": 10.0}]
    assert meta["control_period_s"] == 0.02 and meta["default_pose"] == {"slider": 0.0, "hinge": 0.0}
    assert meta["joint_limits"] == {"slider": [-1.8, 1.8]}
    terms = meta["observation"]["terms"]
    assert [(t["name"], t["start"], t["stop"], t["source"], t["params"]["joints"]) for t in terms] == [
        ("cart_pos", 0, 1, "joint_pos", ["slider"]), ("pole_angle", 1, 2, "joint_pos", ["hinge"]),
        ("cart_vel", 2, 3, "joint_vel", ["slider"]), ("pole_vel", 3, 4, "joint_vel", ["hinge"])]
    assert terms[0]["units"] == "m" and terms[3]["units"] == "rad/s"
    assert sorted(meta["files"]) == ["cartpole.xml", "policy.onnx", "task.yaml"]
    assert meta["versions"]["opset"] >= 18 and meta["versions"]["robolearn"] == "0.1.0"
    assert meta["evaluation"]["episodes"] == 8 and meta["evaluation"]["episode_length_mean"] > 0
    assert meta["artifacts"][0]["parity"]["tolerance"] >= 1e-5
    Bundle.load(tmp_path / "b")  # the deploy runtime accepts what export wrote


def test_fp16_onnx_artifact(make_env, tmp_path):
    env = make_env(num_envs=8)
    result = export_bundle(policy_for(env, hidden=(64, 64)), env, tmp_path / "b", precision="fp16")
    fp32, fp16 = result.artifacts
    assert (fp32.file, fp32.precision, fp16.file, fp16.precision) == ("policy.onnx", "fp32", "policy.fp16.onnx", "fp16")
    assert fp32.parity.max_abs_diff < 1e-5 < fp16.parity.max_abs_diff < 1e-2  # fp16 really is half precision
    types = {init.data_type for init in onnx.load(tmp_path / "b" / "policy.fp16.onnx").graph.initializer}
    assert onnx.TensorProto.FLOAT16 in types


def test_failed_export_keeps_the_previous_bundle(make_env, tmp_path, monkeypatch):
    env = make_env(num_envs=8)
    ac = policy_for(env)
    export_bundle(ac, env, tmp_path / "b")
    before = (tmp_path / "b" / "robot.yaml").read_text()
    import robolearn.export.bundle as bundle_module

    real = bundle_module.check_parity
    monkeypatch.setattr(bundle_module, "check_parity", lambda *a: ParityReport(**{**real(*a).__dict__, "random_max_abs_diff": 1.0}))
    with pytest.raises(UserError, match="policy.onnx parity check failed"):
        export_bundle(ac, env, tmp_path / "b")
    assert (tmp_path / "b" / "robot.yaml").read_text() == before and not (tmp_path / "b.tmp").exists()


def test_tensorrt_unavailable_is_one_line(make_env, tmp_path):
    from robolearn_deploy.tensorrt import unavailable_reason

    if unavailable_reason() is None:
        pytest.skip("TensorRT is available here; see tests/deploy/test_tensorrt.py")
    env = make_env(num_envs=8)
    with pytest.raises(UserError, match="format=tensorrt: .*; format=onnx works without it") as info:
        export_bundle(policy_for(env), env, tmp_path / "b", fmt="tensorrt")
    assert "\n" not in str(info.value) and not (tmp_path / "b").exists()


def test_parity_tolerance_is_absolute_up_to_one_then_relative():
    assert ParityReport(9e-6, 1e-7, 10, max_abs_output=0.5).ok
    assert not ParityReport(2e-5, 1e-7, 10, max_abs_output=0.5).ok
    assert ParityReport(1.5e-5, 0.0, 10, max_abs_output=20.0).ok  # a few float32 ulps at |y| = 20
    assert not ParityReport(3e-4, 0.0, 10, max_abs_output=20.0).ok
    assert ParityReport(5e-3, 0.0, 10, max_abs_output=0.5, precision="fp16").ok


class _NextState:
    """An engine whose actions are right for the state it is given but whose next state is not."""

    def __init__(self, engine, change):
        self.engine, self.change = engine, change

    def step(self, obs, state):
        actions, next_state = self.engine.step(obs, state)
        return actions, [self.change(s) for s in next_state]


def test_recurrent_parity_is_strict_per_step_and_looser_over_fed_back_sequences(tmp_path):
    """Each step is checked with torch's own state given to the artifact (1e-5); the sequences with
    each side's state fed back allow rounding carried over steps (1e-3) but not a broken round trip."""
    from robolearn_deploy.engines import OnnxRuntimeEngine

    torch.manual_seed(0)
    ac = ActorCritic.from_config(AlgoCfg(policy="gru", rnn_hidden_size=8, actor_hidden_dims=[16],
                                         critic_hidden_dims=[8]), {"policy": 5, "critic": 5}, 2)  # fmt: skip
    policy = InferencePolicy(ac).eval()
    path = export_onnx(policy, 5, tmp_path / "policy.onnx")
    engine = OnnxRuntimeEngine(path, INPUT_NAME, OUTPUT_NAME, state=((state_input("h"), state_output("h")),))
    recorded = torch.randn(40, 8, 5)
    good = check_parity(policy, engine, recorded)
    assert good.ok and good.max_abs_diff < 1e-5 and good.sequence_max_abs_diff is not None
    assert "sequence_max_abs_diff" in good.as_dict() and "sequence_max_abs_diff" not in ParityReport(0, 0, 1, 1).as_dict()
    drifting = check_parity(policy, _NextState(engine, lambda h: h * (1 + 1e-4)), recorded)  # small, like rounding
    assert drifting.ok and drifting.max_abs_diff < 1e-5 < drifting.sequence_max_abs_diff
    for broken in (lambda h: h * 0, lambda h: h[:, :, ::-1].copy()):  # state lost, or scrambled
        report = check_parity(policy, _NextState(engine, broken), recorded)
        assert report.max_abs_diff < 1e-5 and not report.ok
        assert report.failure.startswith("max abs difference over sequences with the state fed back")


def test_bundle_carries_the_model_and_its_included_files(make_env, tmp_path):
    """sim2sim rebuilds the robot from the bundle alone: the MJCF and every file it includes."""
    from pathlib import Path

    src = tmp_path / "robot"
    (src / "parts").mkdir(parents=True)
    xml = (Path(__file__).parents[1] / "assets" / "cartpole.xml").read_text()
    start, stop = xml.index("<actuator>"), xml.index("</actuator>") + len("</actuator>")
    (src / "parts" / "motors.xml").write_text(f"<mujoco>{xml[start:stop]}</mujoco>")
    (src / "cartpole.xml").write_text(xml[:start] + '<include file="parts/motors.xml"/>' + xml[stop:])
    env = make_env(overrides=[f"task.asset={src / 'cartpole.xml'}"], num_envs=4)
    export_bundle(policy_for(env), env, tmp_path / "b")
    meta = yaml.safe_load((tmp_path / "b" / "robot.yaml").read_text())
    assert {"cartpole.xml", "parts/motors.xml"} <= set(meta["files"])
    assert yaml.safe_load((tmp_path / "b" / "task.yaml").read_text())["asset"] == "cartpole.xml"
    Bundle.load(tmp_path / "b")


@pytest.mark.parametrize("actuator,kind,drives,safe", [
    ('<position name="slide" joint="slider" kp="20" kv="2"', "position", None, None),
    ('<general name="slide" joint="slider" gear="10" dyntype="filter" dynprm="0.05"', "actuator",
     "slide joint 'slider', filter dynamics, gear 10", "zero"),
    ('<velocity name="slide" joint="slider" kv="5"', "actuator", "slide joint 'slider'", "zero"),
    ('<position name="slide" joint="slider" kp="20" gear="2"', "actuator", "slide joint 'slider', gear 2", "hold"),
    ('<position name="slide" joint="slider" kp="20" timeconst="0.05"', "actuator", "slide joint 'slider', filterexact dynamics", "hold"),
    ('<intvelocity name="slide" joint="slider" kp="20" actrange="-1 1"', "actuator", "slide joint 'slider', integrator dynamics", "zero"),
])  # fmt: skip
def test_actuators_without_a_joint_level_equivalent_go_by_their_ctrl(make_env, tmp_path, actuator, kind, drives, safe):
    """Only motors and gear-1 position servos are joint commands; any other actuator is handed to
    the driver by its ctrl, holding its last ctrl on a trip where its ctrl sets a position target."""
    from pathlib import Path

    xml = (Path(__file__).parents[1] / "assets" / "cartpole.xml").read_text()
    (tmp_path / "c.xml").write_text(xml.replace('<motor name="slide" joint="slider" gear="10"', actuator))
    env = make_env(overrides=[f"task.asset={tmp_path / 'c.xml'}", "~task.events.actuator_gain"], num_envs=4)
    export_bundle(policy_for(env), env, tmp_path / "b")
    (entry,) = yaml.safe_load((tmp_path / "b" / "robot.yaml").read_text())["actuators"]
    assert (entry["kind"], entry.get("drives"), entry.get("safe_ctrl")) == (kind, drives, safe)


def write_skin(path, body: str) -> None:
    """A one-triangle MuJoCo skin (.skn) bound to `body`: counts, vertices, faces, then the bone."""
    import struct

    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    data = struct.pack("4i", 3, 0, 1, 1) + np.array([0, 0, 0, 0.1, 0, 0, 0, 0.1, 0], np.float32).tobytes()
    data += np.array([0, 1, 2], np.int32).tobytes() + body.encode().ljust(40, b"\0")
    data += np.array([0, 0, 0, 1, 0, 0, 0], np.float32).tobytes() + struct.pack("i", 3)
    data += np.array([0, 1, 2], np.int32).tobytes() + np.ones(3, np.float32).tobytes()
    path.write_bytes(data)


def test_bundle_carries_a_skin_file(make_env, tmp_path):
    """Skins are loaded from meshdir like meshes (dm_control's dog has one): the bundle takes the file."""
    from pathlib import Path

    xml = (Path(__file__).parents[1] / "assets" / "cartpole.xml").read_text()
    xml = xml.replace("<worldbody>", '<compiler meshdir="art"/><asset><skin name="s" file="pole.skn"/></asset><worldbody>')
    (tmp_path / "robot").mkdir()
    (tmp_path / "robot" / "cartpole.xml").write_text(xml)
    write_skin(tmp_path / "robot" / "art" / "pole.skn", "pole")
    env = make_env(overrides=[f"task.asset={tmp_path / 'robot' / 'cartpole.xml'}"], num_envs=4)
    export_bundle(policy_for(env), env, tmp_path / "b")
    assert "art/pole.skn" in yaml.safe_load((tmp_path / "b" / "robot.yaml").read_text())["files"]
    Bundle.load(tmp_path / "b")


def _rope_cartpole(tmp_path, name: str = 'name="slide" ') -> str:
    """The cartpole with its motor on a tendon over the slider (named as given, or unnamed)."""
    from pathlib import Path

    xml = (Path(__file__).parents[1] / "assets" / "cartpole.xml").read_text()
    xml = xml.replace('<motor name="slide" joint="slider"', f'<motor {name}tendon="rope"')
    xml = xml.replace("<actuator>", '<tendon><fixed name="rope"><joint joint="slider" coef="1"/></fixed></tendon><actuator>')
    (tmp_path / "c.xml").write_text(xml)
    return f"task.asset={tmp_path / 'c.xml'}"


def test_a_tendon_actuator_goes_into_the_bundle_by_its_ctrl(make_env, tmp_path):
    from robolearn_deploy.bundle import Bundle

    env = make_env(overrides=[_rope_cartpole(tmp_path)], num_envs=4)
    export_bundle(policy_for(env), env, tmp_path / "b")
    (entry,) = yaml.safe_load((tmp_path / "b" / "robot.yaml").read_text())["actuators"]
    assert entry["kind"] == "actuator" and entry["joint"] is None and entry["drives"] == "tendon 'rope', gear 10"
    assert entry["safe_ctrl"] == "zero" and (entry["ctrl_min"], entry["ctrl_max"]) == (-1.0, 1.0)
    (actuator,) = Bundle.load(tmp_path / "b").actuators
    assert (actuator.kind, actuator.joint, actuator.name) == ("actuator", None, "slide")


def test_an_unnamed_ctrl_actuator_is_refused_and_training_can_tell_before_it_starts(make_env, tmp_path):
    from robolearn.export.metadata import bundle_refusal

    assert bundle_refusal(make_env(num_envs=2)) is None
    env = make_env(overrides=[_rope_cartpole(tmp_path, name=""), "task.action.actuators=[]", "~task.events.actuator_gain"],
                   num_envs=4)
    line = "actuator 0 (tendon 'rope', gear 10) has no name; the robot driver receives its ctrl by the actuator's name"
    assert line in bundle_refusal(env)
    with pytest.raises(UserError, match=re.escape(line)):
        export_bundle(policy_for(env), env, tmp_path / "b")
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("name,what", [("projected_gravity", "floating base's"), ("target", "command's")])
def test_a_sensor_named_like_another_signal_is_refused(make_env, tmp_path, name, what):
    """The robot supplies each sensor the policy reads under the sensor's name; one named like a base
    signal or a command would be two values under one name (the stand-in robot silently gave the other)."""
    from pathlib import Path

    from robolearn.export.metadata import bundle_refusal

    xml = (Path(__file__).parents[1] / "assets" / "cartpole.xml").read_text()
    (tmp_path / "c.xml").write_text(xml.replace("</worldbody>", f'</worldbody><sensor><jointpos name="{name}" joint="hinge"/></sensor>'))
    reads = f"++task.observations.policy.terms={{s:{{func:sensor,params:{{names:[{name}]}}}}}}"
    command = "++task.commands={target:{ranges:{x:[0.0,1.0]}}}"
    env = make_env(overrides=[f"task.asset={tmp_path / 'c.xml'}", reads, command], num_envs=2)
    line = f"sensor '{name}' (observation 's') has the name of the {what} signal '{name}'; the robot supplies each sensor"
    assert line in bundle_refusal(env)
    with pytest.raises(UserError, match=re.escape(line)):
        export_bundle(policy_for(env), env, tmp_path / "b")


def test_a_policy_term_the_runtime_cannot_compute_is_named_at_train_start_and_at_export(make_env, tmp_path, capsys,
                                                                                        monkeypatch):  # fmt: skip
    """A policy observation without a deploy-runtime source (the pole's mass, a privileged model
    field) still exports, but training's start and the export each say in one line which term the
    robot's code must teach the runtime; a source registered as a plugin would (on import) ends it."""
    from robolearn.app import _exportable
    from robolearn_deploy import observations

    mass = "+task.observations.policy.terms.pole_mass={func: model_field, params: {field: body_mass, names: [pole]}}"
    env = make_env(overrides=[mass], num_envs=4)
    line = "note: the deploy runtime has no source for policy observation 'pole_mass' (model_field); the robot's code must register one"
    assert _exportable(env) and line in capsys.readouterr().out
    export_bundle(policy_for(env), env, tmp_path / "b")
    assert line in capsys.readouterr().err and (tmp_path / "b" / "robot.yaml").is_file()
    monkeypatch.setitem(observations.SOURCES, "model_field", lambda term, ctx: None)
    assert _exportable(env) and "note:" not in capsys.readouterr().out
    export_bundle(policy_for(env), env, tmp_path / "c")
    assert "note:" not in capsys.readouterr().err
