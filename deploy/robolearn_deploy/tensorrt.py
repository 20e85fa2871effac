"""Optional TensorRT engines: build one from the bundle's ONNX, and run it.

An engine only loads on the GPU model and TensorRT version that built it. The one `robolearn export
format=tensorrt` puts in a bundle serves robots with the training machine's GPU; any other robot
builds its own with `python -m robolearn_deploy.tensorrt build <bundle dir>` (a Jetson, say), which
writes policy.<precision>.local.engine and a sidecar with its hashes so the runtime can verify it.
tensorrt and cuda-python are imported inside functions: importing this module needs neither.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

import numpy as np

from robolearn_deploy.bundle import sha256
from robolearn_deploy.errors import DeployError

PRECISIONS = ("fp32", "fp16")
REBUILD = "rebuild it on this machine with `python -m robolearn_deploy.tensorrt build <bundle dir>`"
_LOGGER = None


def _cudart():
    """cuda-python's runtime API: `cuda.bindings.runtime` since 12.6, `cuda.cudart` before (removed in 13)."""
    try:
        from cuda.bindings import runtime as cudart
    except ImportError:
        from cuda import cudart
    return cudart


def _cuda(cudart, what: str, result):
    """cuda-python returns (error, *values) instead of raising: turn a failure into a one-line DeployError."""
    err, *values = result
    if err != cudart.cudaError_t.cudaSuccess:
        raise DeployError(f"CUDA {what} failed ({getattr(err, 'name', err)}) while using TensorRT")
    return values[0] if len(values) == 1 else None


def _logger():
    """One logger for every builder and runtime (TensorRT needs it to outlive what it made). It keeps the last
    error, so that a failure is reported in one line instead of as TensorRT's log; warnings go to stderr."""
    global _LOGGER
    if _LOGGER is None:
        import tensorrt as trt

        class Logger(trt.ILogger):
            def __init__(self):
                trt.ILogger.__init__(self)
                self.last_error = ""

            def log(self, severity, msg):
                if severity in (trt.ILogger.Severity.ERROR, trt.ILogger.Severity.INTERNAL_ERROR):
                    self.last_error = " ".join(str(msg).split())
                elif severity == trt.ILogger.Severity.WARNING:
                    print(f"tensorrt: warning: {msg}", file=sys.stderr)

        _LOGGER = Logger()
    _LOGGER.last_error = ""
    return _LOGGER


def unavailable_reason() -> str | None:
    """None when engines can be built and run here; otherwise one line saying what is missing."""
    try:
        importlib.import_module("tensorrt")
    except ModuleNotFoundError:
        return "TensorRT is not installed (pip install tensorrt cuda-python on a machine with an NVIDIA GPU)"
    except (ImportError, OSError) as exc:
        return f"TensorRT is installed but cannot load: {' '.join(str(exc).split())}"
    try:
        cudart = _cudart()
    except ImportError:
        return "cuda-python is not installed (pip install cuda-python matching this machine's CUDA version)"
    err, count = cudart.cudaGetDeviceCount()
    if err != cudart.cudaError_t.cudaSuccess or count < 1:
        detail = "" if err == cudart.cudaError_t.cudaSuccess else f"{getattr(err, 'name', err)}; "
        return f"no CUDA GPU is visible ({detail}TensorRT engines need one)"
    return None


def local_engine_name(precision: str) -> str:
    """An engine built on the robot itself (not listed in robot.yaml; verified through its sidecar)."""
    return f"policy.{precision}.local.engine"


def compute_capability() -> str | None:
    """This machine's GPU compute capability ("8.7" on a Jetson Orin), None without a usable GPU."""
    if unavailable_reason() is not None:
        return None
    cudart = _cudart()
    props = _cuda(cudart, "cudaGetDeviceProperties",
                  cudart.cudaGetDeviceProperties(_cuda(cudart, "cudaGetDevice", cudart.cudaGetDevice())))
    return f"{props.major}.{props.minor}"


def _write_atomically(path: Path, data) -> None:
    """Write beside the target, then rename: readers never see half a file and a failure keeps the old one."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise DeployError(f"cannot write {path}: {exc.strerror or exc}") from None


def build_engine(onnx_path: Path, engine_path: Path, precision: str, max_batch: int = 1024,
                 workspace_mib: int = 1024, strongly_typed: bool = False) -> dict:
    """Parse the ONNX policy ([batch, D] -> [batch, A]) and write an engine for batches 1..max_batch, tuned
    for batch 1, which is what a control loop runs. strongly_typed: keep exactly the ONNX's own types (the
    bundle's policy.fp16.onnx keeps its normalizer in fp32 and runs the MLP in fp16); otherwise fp16 means
    TensorRT's FP16 flag on an fp32 graph, where it may pick fp16 for any layer, normalizer included."""
    if reason := unavailable_reason():
        raise DeployError(reason)
    if precision not in PRECISIONS:
        raise DeployError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
    if max_batch < 1:
        raise DeployError(f"max batch must be at least 1, got {max_batch}")
    if not onnx_path.is_file():
        raise DeployError(f"{onnx_path} does not exist; pass the bundle's ONNX policy")
    import tensorrt as trt

    logger = _logger()
    builder = trt.Builder(logger)
    flags = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED) if strongly_typed else 0
    network = builder.create_network(flags)  # TensorRT 10 networks are always explicit-batch
    parser = trt.OnnxParser(network, logger)
    if not parser.parse(onnx_path.read_bytes(), str(onnx_path)):
        errors = "; ".join(" ".join(parser.get_error(i).desc().split()) for i in range(parser.num_errors))
        raise DeployError(f"TensorRT cannot parse {onnx_path.name}: {errors or logger.last_error or 'no reason given'}")
    shape = tuple(network.get_input(0).shape) if network.num_inputs == 1 else ()
    if network.num_outputs != 1 or len(shape) != 2 or shape[0] != -1 or shape[1] < 1:
        raise DeployError(f"{onnx_path.name} has {network.num_inputs} input(s) {shape or ''} and {network.num_outputs} "
                          "output(s); a policy has one input shaped [dynamic batch, features] and one output")
    input_name = network.get_input(0).name

    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, workspace_mib << 20)
    if precision == "fp32" and hasattr(trt.BuilderFlag, "TF32"):
        config.clear_flag(trt.BuilderFlag.TF32)  # on by default: it rounds matmul inputs to 10-bit mantissas
    if precision == "fp16" and not strongly_typed:
        if not hasattr(trt.BuilderFlag, "FP16"):  # gone once TensorRT builds only strongly typed networks
            raise DeployError(f"TensorRT {trt.__version__} has no FP16 builder flag; build from the bundle's "
                              "policy.fp16.onnx (export with precision=fp16)")
        config.set_flag(trt.BuilderFlag.FP16)
    profile = builder.create_optimization_profile()
    profile.set_shape(input_name, (1, shape[1]), (1, shape[1]), (max_batch, shape[1]))
    config.add_optimization_profile(profile)
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise DeployError(f"TensorRT cannot build {onnx_path.name}: {logger.last_error or 'no reason given'}")
    _write_atomically(engine_path, serialized)

    cudart = _cudart()
    props = _cuda(cudart, "cudaGetDeviceProperties",
                  cudart.cudaGetDeviceProperties(_cuda(cudart, "cudaGetDevice", cudart.cudaGetDevice())))
    gpu = props.name.decode(errors="replace") if isinstance(props.name, bytes) else str(props.name)
    return {"tensorrt_version": trt.__version__, "precision": precision, "gpu": gpu.strip("\x00 "),
            "compute_capability": f"{props.major}.{props.minor}", "max_batch": max_batch}


class TensorRTEngine:
    """A built engine on one CUDA stream. Device buffers grow to the largest batch seen and are then reused,
    so a control loop at a fixed batch size allocates nothing and sets no shape after its first step."""

    name = "tensorrt"
    _cudart = _runtime = _engine = _context = _stream = None
    _d_in = _d_out = 0

    def __init__(self, path: Path, input_name: str, output_name: str, precision: str,
                 expected_version: str | None = None):
        if reason := unavailable_reason():
            raise DeployError(reason)
        import tensorrt as trt

        if expected_version is not None and expected_version != trt.__version__:
            raise DeployError(f"{path.name} was built with TensorRT {expected_version} but this machine has TensorRT "
                              f"{trt.__version__}, and engines only load on the version that built them: {REBUILD}")
        if not path.is_file():
            raise DeployError(f"{path} does not exist: {REBUILD}")
        self._logger = _logger()
        self._runtime = trt.Runtime(self._logger)
        self._engine = self._runtime.deserialize_cuda_engine(path.read_bytes())
        if self._engine is None:
            raise DeployError(f"TensorRT cannot load {path.name} ({self._logger.last_error or 'no reason given'}); "
                              f"it was probably built for another GPU or TensorRT version: {REBUILD}")
        names = [self._engine.get_tensor_name(i) for i in range(self._engine.num_io_tensors)]
        for name in (input_name, output_name):
            if name not in names or self._engine.get_tensor_dtype(name) != trt.DataType.FLOAT:
                raise DeployError(f"{path.name} has no float32 tensor {name!r}; its tensors are {names}")
        self.input_dim = tuple(self._engine.get_tensor_shape(input_name))[-1]  # shapes are [-1 (batch), features]
        self.output_dim = tuple(self._engine.get_tensor_shape(output_name))[-1]
        self.precision, self.input_name, self.output_name = precision, input_name, output_name
        self._context = self._engine.create_execution_context()
        self._cudart = _cudart()
        self._stream = _cuda(self._cudart, "cudaStreamCreate", self._cudart.cudaStreamCreate())
        self._capacity, self._batch = 0, -1

    def _grow(self, batch: int) -> None:
        cudart = self._cudart
        for ptr in (self._d_in, self._d_out):
            if ptr:
                _cuda(cudart, "cudaFree", cudart.cudaFree(ptr))
        self._d_in = self._d_out = 0
        self._d_in = _cuda(cudart, "cudaMalloc", cudart.cudaMalloc(batch * self.input_dim * 4))
        self._d_out = _cuda(cudart, "cudaMalloc", cudart.cudaMalloc(batch * self.output_dim * 4))
        self._context.set_tensor_address(self.input_name, int(self._d_in))
        self._context.set_tensor_address(self.output_name, int(self._d_out))
        self._capacity = batch

    def run(self, obs: np.ndarray) -> np.ndarray:
        """[B, D] float32 -> a new [B, A] float32 array."""
        obs = np.ascontiguousarray(obs, dtype=np.float32)
        if obs.ndim != 2 or obs.shape[1] != self.input_dim:
            raise DeployError(f"observation batch has shape {obs.shape}; the engine takes [batch, {self.input_dim}]")
        batch = obs.shape[0]
        if batch > self._capacity:
            self._grow(batch)
        if batch != self._batch:
            if not self._context.set_input_shape(self.input_name, (batch, self.input_dim)):
                raise DeployError(f"batch {batch} is outside the 1..max batch this engine was built for; rebuild "
                                  "it with `python -m robolearn_deploy.tensorrt build <bundle dir> --max-batch N`")
            self._batch = batch
        out = np.empty((batch, self.output_dim), np.float32)
        cudart, kind, stream = self._cudart, self._cudart.cudaMemcpyKind, self._stream
        _cuda(cudart, "cudaMemcpyAsync", cudart.cudaMemcpyAsync(
            self._d_in, obs.ctypes.data, obs.nbytes, kind.cudaMemcpyHostToDevice, stream))
        if not self._context.execute_async_v3(int(stream)):
            raise DeployError(f"TensorRT failed to run the engine ({self._logger.last_error or 'no reason given'})")
        _cuda(cudart, "cudaMemcpyAsync", cudart.cudaMemcpyAsync(
            out.ctypes.data, self._d_out, out.nbytes, kind.cudaMemcpyDeviceToHost, stream))
        _cuda(cudart, "cudaStreamSynchronize", cudart.cudaStreamSynchronize(stream))
        return out

    def close(self) -> None:
        """Free GPU memory and the stream now, not whenever the garbage collector gets to it."""
        cudart, self._cudart = self._cudart, None
        self._context = self._engine = self._runtime = None
        if cudart is not None:
            for ptr in (self._d_in, self._d_out):
                if ptr:
                    cudart.cudaFree(ptr)
            if self._stream is not None:
                cudart.cudaStreamDestroy(self._stream)
        self._d_in = self._d_out = 0
        self._stream = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # at interpreter exit cuda-python may already be gone
            pass


def _bundle_policy(bundle: Path, precision: str) -> tuple[Path, str, str]:
    """The bundle's ONNX of this precision (else its fp32 one) and the tensor names robot.yaml binds."""
    import yaml

    meta_path = bundle / "robot.yaml"
    if not meta_path.is_file():
        raise DeployError(f"{meta_path} does not exist; pass a bundle directory (robot.yaml and the ONNX policy)")
    try:
        meta = yaml.safe_load(meta_path.read_text())
        onnx = [a for a in meta["artifacts"] if a["kind"] == "onnx"]
        chosen = next((a for a in onnx if a.get("precision") == precision), None)
        chosen = chosen or next((a for a in onnx if a.get("precision") == "fp32"), onnx[0])
        return bundle / chosen["file"], meta["observation"]["input"], meta["action"]["output"]
    except (yaml.YAMLError, KeyError, TypeError, IndexError) as exc:
        raise DeployError(f"{meta_path} names no ONNX artifact, observation.input or action.output "
                          f"({type(exc).__name__}: {' '.join(str(exc).split())}); re-export the bundle") from None


def _parity(engine: TensorRTEngine, onnx_path: Path, input_name: str, output_name: str, precision: str,
            max_batch: int) -> float:
    """Max |engine - ONNX Runtime| on observations around 0 (inside the graph they are normalized); one
    line and no sidecar when it exceeds the export tolerance (1e-5 fp32, 1e-2 fp16, relative above 1)."""
    from robolearn_deploy.engines import OnnxRuntimeEngine

    reference = OnnxRuntimeEngine(onnx_path, input_name, output_name, precision)
    obs = np.random.default_rng(0).uniform(-3, 3, (256, engine.input_dim)).astype(np.float32)
    expected = reference.run(obs)
    got = np.concatenate([engine.run(obs[i : i + max_batch]) for i in range(0, len(obs), max_batch)])
    diff = float(np.abs(got - expected).max())
    tolerance = {"fp32": 1e-5, "fp16": 1e-2}[precision] * max(1.0, float(np.abs(expected).max()))
    if not diff < tolerance:
        raise DeployError(f"the engine differs from ONNX Runtime by {diff:.3g} (tolerance {tolerance:.3g}); not using it")
    return diff


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m robolearn_deploy.tensorrt", description=(
        "Build a bundle's TensorRT engine on this machine: engines are tied to its GPU and TensorRT version."))
    build = parser.add_subparsers(dest="command", required=True).add_parser(
        "build", help="write <bundle>/policy.<precision>.local.engine and its .yaml sidecar")
    build.add_argument("bundle", type=Path)
    build.add_argument("--precision", choices=PRECISIONS, default="fp32")
    build.add_argument("--max-batch", type=int, default=1024)
    args = parser.parse_args(argv)
    try:
        import yaml

        onnx_path, input_name, output_name = _bundle_policy(args.bundle, args.precision)
        engine_path = args.bundle / local_engine_name(args.precision)
        typed = args.precision == "fp16" and onnx_path.name.endswith(".fp16.onnx")
        info = build_engine(onnx_path, engine_path, args.precision, args.max_batch, strongly_typed=typed)
        engine = TensorRTEngine(engine_path, input_name, output_name, args.precision)
        try:  # robot.yaml's names bind, and the engine agrees with ONNX Runtime on this machine
            info["parity_max_abs_diff"] = _parity(engine, onnx_path, input_name, output_name, args.precision,
                                                  args.max_batch)
        finally:
            engine.close()
        info.update(sha256=sha256(engine_path), onnx_sha256=sha256(onnx_path))
        _write_atomically(engine_path.with_name(engine_path.name + ".yaml"),
                          yaml.safe_dump(info, sort_keys=False).encode())
    except DeployError as exc:
        print(f"robolearn-deploy: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {engine_path} and its .yaml sidecar (TensorRT {info['tensorrt_version']}, {info['precision']}, "
          f"{info['gpu']}, compute capability {info['compute_capability']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
