"""ONNX export: normalizer in the graph, fixed names, dynamic batch, parity with torch."""

import onnx
import onnxruntime as ort
import torch
import yaml

from robolearn.config import AlgoCfg
from robolearn.export.bundle import export_bundle, record_observations
from robolearn.export.onnx import INPUT_NAME, OUTPUT_NAME
from robolearn.rl.models import ActorCritic, InferencePolicy


def test_bundle_matches_torch_policy(make_env, tmp_path):
    env = make_env(num_envs=8)
    algo = AlgoCfg(actor_hidden_dims=[32, 32], critic_hidden_dims=[32])
    ac = ActorCritic.from_config(algo, env.observation_dims(), env.num_actions)
    obs = record_observations(env, ac, steps=20)
    ac.actor_normalizer.update(obs)  # non-trivial statistics, which must travel inside the graph
    report = export_bundle(ac, env, tmp_path, obs)
    assert report.ok and report.max_abs_diff < 1e-5 and report.max_abs_output < 10

    model = onnx.load(tmp_path / "policy.onnx")
    assert [i.name for i in model.graph.input] == [INPUT_NAME] and [o.name for o in model.graph.output] == [OUTPUT_NAME]
    session = ort.InferenceSession(str(tmp_path / "policy.onnx"), providers=["CPUExecutionProvider"])
    for batch in (1, 7, 300):  # dynamic batch
        x = torch.randn(batch, obs.shape[1])
        got = session.run(None, {INPUT_NAME: x.numpy()})[0]
        with torch.no_grad():
            assert abs(got - InferencePolicy(ac)(x).numpy()).max() < 1e-5

    meta = yaml.safe_load((tmp_path / "robot.yaml").read_text())
    assert [a["name"] for a in meta["actuators"]] == ["slide"] and meta["control_period_s"] == 0.02
    assert [t["name"] for t in meta["observation"]["terms"]] == ["cart_pos", "pole_angle", "cart_vel", "pole_vel"]
    assert len(meta["files"]["policy.onnx"]["sha256"]) == 64


def test_parity_tolerance_is_absolute_up_to_one_then_relative():
    from robolearn.export.onnx import ParityReport

    assert ParityReport(9e-6, 1e-7, 10, max_abs_output=0.5).ok
    assert not ParityReport(2e-5, 1e-7, 10, max_abs_output=0.5).ok
    assert ParityReport(1.5e-5, 0.0, 10, max_abs_output=20.0).ok  # a few float32 ulps at |y| = 20
    assert not ParityReport(3e-4, 0.0, 10, max_abs_output=20.0).ok
