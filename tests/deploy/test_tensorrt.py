"""TensorRT engines against onnxruntime on a tiny policy graph. Each engine test runs against the stand-ins in
tests/fakes (TensorRT's API over ONNX Runtime: the plumbing, everywhere) and, where TensorRT, cuda-python and an
NVIDIA GPU exist, against the real packages (numerics too); the availability tests run everywhere."""

import hashlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import yaml
from onnx import TensorProto, helper, numpy_helper

from robolearn_deploy.errors import DeployError
from robolearn_deploy.tensorrt import TensorRTEngine, build_engine, main, unavailable_reason

REASON = unavailable_reason()
"""Why the real TensorRT cannot run here (None: it can)."""
OBS, HIDDEN, ACT = 6, 32, 2


@pytest.fixture(params=["fake", "real"])
def tensorrt_packages(request):
    """The TensorRT packages a test runs against: the fakes, or the real ones where they work."""
    if request.param == "real":
        if REASON is not None:
            pytest.skip(REASON)
    else:
        request.getfixturevalue("fake_tensorrt")
    return request.param


def write_policy(path):
    """obs [batch, 6] -> Relu(obs @ W1 + b1) @ W2 -> actions [batch, 2], random float32 weights."""
    rng = np.random.default_rng(0)
    weights = {
        "w1": rng.normal(0, 1 / np.sqrt(OBS), (OBS, HIDDEN)),
        "b1": rng.normal(0, 0.1, HIDDEN),
        "w2": rng.normal(0, 1 / np.sqrt(HIDDEN), (HIDDEN, ACT)),
    }
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["obs", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
         helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["actions"])],
        "policy",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", OBS])],
        [helper.make_tensor_value_info("actions", TensorProto.FLOAT, ["batch", ACT])],
        [numpy_helper.from_array(w.astype(np.float32), name) for name, w in weights.items()],
    )
    # An opset and IR version that both TensorRT 10's parser and onnxruntime read.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def test_unavailable_reason_is_one_line_and_build_refuses_with_it(tmp_path):
    assert REASON is None or (isinstance(REASON, str) and REASON.strip() and "\n" not in REASON)
    if REASON is None:
        return  # engines can be built here: the tests below cover it
    with pytest.raises(DeployError) as refused:
        build_engine(write_policy(tmp_path / "policy.onnx"), tmp_path / "policy.fp32.engine", "fp32")
    assert str(refused.value) == REASON
    with pytest.raises(DeployError) as refused:
        TensorRTEngine(tmp_path / "policy.fp32.engine", "obs", "actions", "fp32")
    assert str(refused.value) == REASON


def test_the_fakes_refuse_what_tensorrt_and_cuda_refuse(fake_tensorrt, tmp_path):
    """The stand-ins are only worth testing against if they fail where the real packages fail: an
    unset input shape or address, a shape outside the profile, a copy past an allocation or into
    freed memory."""
    import tensorrt as trt

    cudart = fake_tensorrt
    engine_path = tmp_path / "policy.fp32.engine"
    build_engine(write_policy(tmp_path / "policy.onnx"), engine_path, "fp32", max_batch=4)
    logger = trt.ILogger()
    engine = trt.Runtime(logger).deserialize_cuda_engine(engine_path.read_bytes())
    context = engine.create_execution_context()
    _, stream = cudart.cudaStreamCreate()
    assert not context.execute_async_v3(int(stream))  # no addresses, no shape
    assert not context.set_input_shape("obs", (5, OBS))  # max batch 4
    assert not context.set_input_shape("obs", (1, OBS + 1))
    assert context.set_input_shape("obs", (2, OBS))
    _, small = cudart.cudaMalloc(4 * OBS)  # one row, but the shape says two
    _, out = cudart.cudaMalloc(4 * 2 * ACT)
    context.set_tensor_address("obs", small)
    context.set_tensor_address("actions", out)
    assert not context.execute_async_v3(int(stream))
    host = np.zeros((2, OBS), np.float32)
    kind = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
    assert cudart.cudaMemcpyAsync(small, host.ctypes.data, host.nbytes, kind, stream)[0] != cudart.cudaError_t.cudaSuccess
    cudart.cudaFree(small)
    assert cudart.cudaMemcpyAsync(small, host.ctypes.data, 4, kind, stream)[0] != cudart.cudaError_t.cudaSuccess
    assert trt.Runtime(logger).deserialize_cuda_engine(b"not an engine") is None
    cudart.cudaFree(out)


def test_cli_reports_a_missing_bundle_in_one_line(capsys):
    assert main(["build", "/nonexistent"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("robolearn-deploy: error: ") and err.count("\n") == 1 and "robot.yaml" in err


@pytest.mark.parametrize("precision, tolerance", [("fp32", 1e-5), ("fp16", 1e-2)])
def test_engine_matches_onnxruntime(tensorrt_packages, tmp_path, precision, tolerance):
    import tensorrt as trt

    onnx_path = write_policy(tmp_path / "policy.onnx")
    engine_path = tmp_path / f"policy.{precision}.engine"
    info = build_engine(onnx_path, engine_path, precision, max_batch=512)
    assert engine_path.is_file() and not engine_path.with_name(engine_path.name + ".tmp").exists()
    assert info["tensorrt_version"] == trt.__version__ and info["precision"] == precision and info["max_batch"] == 512
    assert info["gpu"] and info["compute_capability"].count(".") == 1

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    engine = TensorRTEngine(engine_path, "obs", "actions", precision, expected_version=trt.__version__)
    assert engine.name == "tensorrt" and engine.precision == precision
    rng = np.random.default_rng(1)
    try:
        for batch in (1, 7, 300, 7, 1):  # growing, then smaller batches reusing the grown buffers
            obs = rng.normal(size=(batch, OBS)).astype(np.float32)
            got = engine.run(obs)
            want = session.run(["actions"], {"obs": obs})[0]
            assert got.shape == (batch, ACT) and got.dtype == np.float32
            assert np.abs(got - want).max() < tolerance
        first = engine.run(obs)
        assert not np.shares_memory(first, engine.run(obs))  # a new array each call, never a reused buffer
    finally:
        engine.close()
    engine.close()  # closing twice is harmless


def test_engine_from_another_tensorrt_version_is_refused(tensorrt_packages, tmp_path):
    import tensorrt as trt

    engine_path = tmp_path / "policy.fp32.engine"
    build_engine(write_policy(tmp_path / "policy.onnx"), engine_path, "fp32", max_batch=8)
    with pytest.raises(DeployError) as refused:
        TensorRTEngine(engine_path, "obs", "actions", "fp32", expected_version="0.0.0")
    message = str(refused.value)
    assert "0.0.0" in message and trt.__version__ in message and "robolearn_deploy.tensorrt build" in message
    assert "\n" not in message


def test_cli_builds_engine_and_sidecar_from_a_bundle(tensorrt_packages, tmp_path, capsys):
    import tensorrt as trt

    onnx_path = write_policy(tmp_path / "policy.onnx")
    (tmp_path / "robot.yaml").write_text(yaml.safe_dump({
        "artifacts": [{"file": "policy.onnx", "kind": "onnx", "precision": "fp32"}],
        "observation": {"input": "obs", "size": OBS},
        "action": {"output": "actions", "size": ACT},
    }))
    assert main(["build", str(tmp_path), "--precision", "fp32", "--max-batch", "16"]) == 0
    assert "policy.fp32.local.engine" in capsys.readouterr().out

    engine_path = tmp_path / "policy.fp32.local.engine"
    sidecar = yaml.safe_load((tmp_path / "policy.fp32.local.engine.yaml").read_text())
    assert sidecar["sha256"] == hashlib.sha256(engine_path.read_bytes()).hexdigest()
    assert sidecar["onnx_sha256"] == hashlib.sha256(onnx_path.read_bytes()).hexdigest()
    assert sidecar["tensorrt_version"] == trt.__version__ and sidecar["precision"] == "fp32"
    assert sidecar["max_batch"] == 16 and sidecar["gpu"] and sidecar["compute_capability"]
