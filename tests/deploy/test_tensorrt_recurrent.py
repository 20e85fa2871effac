"""A recurrent policy on TensorRT: `export format=tensorrt` builds an engine that takes and returns the
state, checks it over sequences, and the runtime carries the state through it like through ONNX Runtime.
Run against the stand-ins in tests/fakes (TensorRT's API over ONNX Runtime): this checks the plumbing
(names, shapes, profiles, buffers, the state round trip, resets), not TensorRT's numerics."""

import numpy as np
import pytest
import yaml

from robolearn_deploy import DeployError, Policy
from robolearn_deploy.tensorrt import TensorRTEngine, main

from .conftest import make_bundle


def _act_sequence(policy: Policy, observations: np.ndarray, reset_at: int) -> np.ndarray:
    actions = []
    for t, obs in enumerate(observations):
        if t == reset_at:
            policy.reset()
        actions.append(policy.act(obs).copy())
    return np.array(actions)


@pytest.mark.parametrize("kind, precision", [("gru", "fp32"), ("lstm", "fp32"), ("lstm", "fp16")])
def test_export_builds_a_recurrent_engine_and_the_runtime_carries_its_state(fake_tensorrt, tmp_path, kind, precision):
    cudart = fake_tensorrt
    out = tmp_path / "bundle"
    make_bundle(out, "cartpole", policy=kind, rnn_hidden_size=8, rnn_num_layers=2, hidden=(16,), fmt="tensorrt",
                precision=precision)  # fmt: skip
    meta = yaml.safe_load((out / "robot.yaml").read_text())
    engine_entry = next(a for a in meta["artifacts"] if a["kind"] == "tensorrt")
    parity = engine_entry["parity"]  # torch vs the engine over sequences: per step, and with the state fed back
    assert engine_entry["file"] == f"policy.{precision}.engine" and engine_entry["gpu"] == "Fake GPU (ONNX Runtime)"
    assert parity["sequence_max_abs_diff"] < parity["sequence_tolerance"] and parity["samples"] == 64 * 100 + 8 * 200
    assert [s["input"] for s in meta["policy_state"]] == (["h_in"] if kind == "gru" else ["h_in", "c_in"])

    live = cudart.live_allocations()
    on_trt = Policy(out, engine="tensorrt", precision=precision)
    on_ort = Policy(out, engine="onnxruntime", precision=precision)
    assert on_trt.engine.name == "tensorrt" and on_trt.engine.state_shapes == [(2, 8)] * len(meta["policy_state"])
    observations = np.random.default_rng(0).uniform(-2, 2, (60, on_trt.bundle.obs_size)).astype(np.float32)
    got, want = _act_sequence(on_trt, observations, 40), _act_sequence(on_ort, observations, 40)
    tolerance = 1e-5 if precision == "fp32" else 1e-2
    np.testing.assert_allclose(got, want, atol=tolerance)
    fresh = _act_sequence(Policy(out, engine="tensorrt", precision=precision), observations[40:], 0)
    np.testing.assert_allclose(got[40:], fresh, atol=tolerance)  # reset() = a fresh policy

    batch = observations[:5]
    actions, *state = on_trt(batch, *on_trt.initial_state(5))
    ort_actions, *ort_state = on_ort(batch, *on_ort.initial_state(5))
    np.testing.assert_allclose(actions, ort_actions, atol=tolerance)
    for a, b in zip(state, ort_state):
        np.testing.assert_allclose(a, b, atol=tolerance)
    on_trt.engine.close()
    assert cudart.live_allocations() == live  # every device buffer freed


@pytest.fixture(scope="module")
def _gru_onnx_bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("gru") / "bundle"
    make_bundle(out, "cartpole", policy="gru", rnn_hidden_size=8, rnn_num_layers=1, hidden=(16,))
    return out


def test_a_robot_builds_its_own_recurrent_engine_and_auto_picks_it(fake_tensorrt, _gru_onnx_bundle, tmp_path, capsys):
    import shutil

    bundle = shutil.copytree(_gru_onnx_bundle, tmp_path / "bundle")
    assert main(["build", str(bundle), "--max-batch", "16"]) == 0
    assert "policy.fp32.local.engine" in capsys.readouterr().out
    sidecar = yaml.safe_load((bundle / "policy.fp32.local.engine.yaml").read_text())
    assert sidecar["parity_max_abs_diff"] < 1e-5  # per step over 50-step sequences (ONNX Runtime's state given)
    policy = Policy(bundle)  # auto: the engine built here
    assert policy.engine.name == "tensorrt"
    observations = np.random.default_rng(1).uniform(-2, 2, (30, policy.bundle.obs_size)).astype(np.float32)
    np.testing.assert_allclose(_act_sequence(policy, observations, 20),
                               _act_sequence(Policy(bundle, engine="onnxruntime"), observations, 20), atol=1e-5)
    policy.engine.close()

    meta = yaml.safe_load((bundle / "robot.yaml").read_text())
    meta["policy_state"][0]["shape"] = ["x", 8]
    (bundle / "robot.yaml").write_text(yaml.safe_dump(meta))
    assert main(["build", str(bundle)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has a malformed policy_state (ValueError" in err, err


def test_a_recurrent_engine_refuses_wrong_use_in_one_line(fake_tensorrt, _gru_onnx_bundle, tmp_path):
    from robolearn_deploy.tensorrt import build_engine

    engine_path = tmp_path / "policy.fp32.engine"
    build_engine(_gru_onnx_bundle / "policy.onnx", engine_path, "fp32", max_batch=4)
    messages = []
    for attempt in (
        lambda: TensorRTEngine(engine_path, "obs", "actions", "fp32"),  # the state left out
        lambda: TensorRTEngine(engine_path, "obs", "actions", "fp32", state=(("h_in", "actions"),)),
        lambda: TensorRTEngine(engine_path, "obs", "h_out", "fp32", state=(("h_in", "actions"),)),  # mis-paired
        lambda: engine.run(np.zeros((1, engine.input_dim), np.float32)),
        lambda: engine.step(np.zeros((1, engine.input_dim), np.float32), [np.zeros((1, 8), np.float32)]),
        lambda: engine.step(np.zeros((1, engine.input_dim), np.float32), []),
        lambda: engine.step(np.zeros((5, engine.input_dim), np.float32), [np.zeros((5, 1, 8), np.float32)]),
    ):
        engine = TensorRTEngine(engine_path, "obs", "actions", "fp32", state=(("h_in", "h_out"),))
        with pytest.raises(DeployError) as refused:
            attempt()
        messages.append(str(refused.value))
        engine.close()
    assert all("\n" not in m for m in messages)
    assert "takes input 'h_in', which robot.yaml does not describe" in messages[0]
    assert "gives output 'h_out', which robot.yaml does not describe" in messages[1]
    assert "state 'h_in' [1, 8] and 'actions' [1] differ in shape" in messages[2]
    assert "recurrent: it needs its state" in messages[3]
    assert "state 'h_in' has shape [1, 8]; the engine takes [1, 1, 8]" in messages[4]
    assert "takes 1 state array(s) with the observations, got 0" in messages[5]
    assert "batch 5 is outside the 1..max batch" in messages[6]


def test_the_build_refuses_an_engine_whose_steps_or_state_round_trip_differ(fake_tensorrt, _gru_onnx_bundle, tmp_path):
    """`python -m robolearn_deploy.tensorrt build` compares the engine with ONNX Runtime per step
    (1e-5) and with each side's state fed back (1e-3): a next state that is lost fails the second,
    an action that is off the first."""
    from robolearn_deploy.tensorrt import _parity, build_engine

    onnx_path, engine_path, state = _gru_onnx_bundle / "policy.onnx", tmp_path / "policy.engine", (("h_in", "h_out"),)
    build_engine(onnx_path, engine_path, "fp32", max_batch=64)
    engine = TensorRTEngine(engine_path, "obs", "actions", "fp32", state=state)
    step = engine.step
    try:
        assert _parity(engine, onnx_path, "obs", "actions", "fp32", 64, state) < 1e-5
        engine.step = lambda obs, s: (lambda a, n: (a, [x * 0 for x in n]))(*step(obs, s))  # the state is lost
        with pytest.raises(DeployError, match="differs from ONNX Runtime over sequences with the state fed back"):
            _parity(engine, onnx_path, "obs", "actions", "fp32", 64, state)
        engine.step = lambda obs, s: (lambda a, n: (a + 1e-3, n))(*step(obs, s))  # every action a little off
        with pytest.raises(DeployError, match=r"^the engine differs from ONNX Runtime by"):
            _parity(engine, onnx_path, "obs", "actions", "fp32", 64, state)
    finally:
        engine.close()
