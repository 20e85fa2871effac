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

from robolearn_deploy.bundle import sha256, state_tensors
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
    """Parse the ONNX policy (inputs [batch, ...]: the observations, and a recurrent policy's state;
    outputs: the actions, and its next state) and write an engine for batches 1..max_batch, tuned
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
    inputs = [network.get_input(i) for i in range(network.num_inputs)]
    shapes = {t.name: tuple(t.shape) for t in inputs}
    if not inputs or network.num_outputs < 1 or any(
        len(s) < 2 or s[0] != -1 or any(d < 1 for d in s[1:]) for s in shapes.values()
    ):
        shown = ", ".join(f"{name} {list(s)}" for name, s in shapes.items()) or "none"
        raise DeployError(f"{onnx_path.name} has inputs {shown} and {network.num_outputs} output(s); a policy's inputs "
                          "are shaped [dynamic batch, fixed sizes...] and it has at least one output")  # fmt: skip

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
    for name, shape in shapes.items():  # every input shares the batch dimension
        profile.set_shape(name, (1, *shape[1:]), (1, *shape[1:]), (max_batch, *shape[1:]))
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
    so a control loop at a fixed batch size allocates nothing and sets no shape after its first step.

    A recurrent policy's engine (`state`: the (input, output) tensor names of each state tensor) takes
    its state with the observations and returns the next one (`step`), like OnnxRuntimeEngine; the
    state goes to the GPU and back each step with the observations and actions (a few hundred bytes
    at batch 1), so the caller owns it and can reset it between any two steps."""

    name = "tensorrt"
    _cudart = _runtime = _engine = _context = _stream = None
    _buffers: dict = {}

    def __init__(self, path: Path, input_name: str, output_name: str, precision: str,
                 expected_version: str | None = None, state: tuple[tuple[str, str], ...] = ()):  # fmt: skip
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
        engine = self._engine
        names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        self.state = tuple(state)
        self._inputs = [input_name, *(i for i, _ in self.state)]
        self._outputs = [output_name, *(o for _, o in self.state)]
        for name, mode in [(n, trt.TensorIOMode.INPUT) for n in self._inputs] + \
                          [(n, trt.TensorIOMode.OUTPUT) for n in self._outputs]:  # fmt: skip
            if name not in names or engine.get_tensor_mode(name) != mode or engine.get_tensor_dtype(name) != trt.DataType.FLOAT:
                kind = "input" if mode == trt.TensorIOMode.INPUT else "output"
                raise DeployError(f"{path.name} has no float32 {kind} tensor {name!r}; its tensors are {names}")
        extra = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT and n not in self._inputs]
        if extra:
            raise DeployError(f"{path.name} takes input {extra[0]!r}, which robot.yaml does not describe (a recurrent "
                              "policy's state?); re-export the bundle or rebuild the engine from its ONNX")  # fmt: skip
        self._row = {n: tuple(engine.get_tensor_shape(n))[1:] for n in self._inputs + self._outputs}  # without batch
        self.input_dim, self.output_dim = self._row[input_name][-1], self._row[output_name][-1]
        self.state_shapes = []
        """Each state tensor's shape without the batch, as the engine declares it."""
        for name_in, name_out in self.state:
            if self._row[name_in] != self._row[name_out]:
                raise DeployError(f"{path.name}'s state {name_in!r} {list(self._row[name_in])} and {name_out!r} "
                                  f"{list(self._row[name_out])} differ in shape; re-export the bundle")  # fmt: skip
            self.state_shapes.append(self._row[name_in])
        self.precision, self.input_name, self.output_name = precision, input_name, output_name
        self._context = engine.create_execution_context()
        self._cudart = _cudart()
        self._stream = _cuda(self._cudart, "cudaStreamCreate", self._cudart.cudaStreamCreate())
        self._buffers = {}
        self._capacity, self._batch = 0, -1

    def _row_bytes(self, name: str) -> int:
        return 4 * int(np.prod(self._row[name], dtype=np.int64))

    def _grow(self, batch: int) -> None:
        cudart = self._cudart
        self._free()
        for name in self._inputs + self._outputs:
            self._buffers[name] = _cuda(cudart, "cudaMalloc", cudart.cudaMalloc(batch * self._row_bytes(name)))
            self._context.set_tensor_address(name, int(self._buffers[name]))
        self._capacity = batch

    def _free(self) -> None:
        buffers, self._buffers = self._buffers, {}
        for ptr in buffers.values():
            if ptr:
                _cuda(self._cudart, "cudaFree", self._cudart.cudaFree(ptr))

    def _execute(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The engine's inputs in order (observations, then each state) -> its outputs (actions,
        then each next state), new arrays."""
        batch = arrays[0].shape[0]
        if batch > self._capacity:
            self._grow(batch)
        if batch != self._batch:
            for name in self._inputs:
                if not self._context.set_input_shape(name, (batch, *self._row[name])):
                    raise DeployError(f"batch {batch} is outside the 1..max batch this engine was built for; rebuild "
                                      "it with `python -m robolearn_deploy.tensorrt build <bundle dir> --max-batch N`")
            self._batch = batch
        outs = [np.empty((batch, *self._row[name]), np.float32) for name in self._outputs]
        cudart, kind, stream = self._cudart, self._cudart.cudaMemcpyKind, self._stream
        for name, array in zip(self._inputs, arrays):
            _cuda(cudart, "cudaMemcpyAsync", cudart.cudaMemcpyAsync(
                self._buffers[name], array.ctypes.data, array.nbytes, kind.cudaMemcpyHostToDevice, stream))
        if not self._context.execute_async_v3(int(stream)):
            raise DeployError(f"TensorRT failed to run the engine ({self._logger.last_error or 'no reason given'})")
        for name, out in zip(self._outputs, outs):
            _cuda(cudart, "cudaMemcpyAsync", cudart.cudaMemcpyAsync(
                out.ctypes.data, self._buffers[name], out.nbytes, kind.cudaMemcpyDeviceToHost, stream))
        _cuda(cudart, "cudaStreamSynchronize", cudart.cudaStreamSynchronize(stream))
        return outs

    def _batch_of(self, obs: np.ndarray) -> np.ndarray:
        obs = np.ascontiguousarray(obs, dtype=np.float32)
        if obs.ndim != 2 or obs.shape[1] != self.input_dim:
            raise DeployError(f"observation batch has shape {obs.shape}; the engine takes [batch, {self.input_dim}]")
        return obs

    def run(self, obs: np.ndarray) -> np.ndarray:
        """[B, D] float32 -> a new [B, A] float32 array."""
        if self.state:
            raise DeployError("this policy is recurrent: it needs its state with every observation (step)")
        return self._execute([self._batch_of(obs)])[0]

    def step(self, obs: np.ndarray, state: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """A recurrent policy: (obs [B, D], its state) -> (actions [B, A], the next state), new arrays."""
        obs = self._batch_of(obs)
        if len(state) != len(self.state):
            raise DeployError(f"the engine takes {len(self.state)} state array(s) with the observations, got {len(state)}")
        arrays = [obs]
        for (name, _), value in zip(self.state, state):
            value = np.ascontiguousarray(value, dtype=np.float32)
            if value.shape != (obs.shape[0], *self._row[name]):
                raise DeployError(f"state {name!r} has shape {list(value.shape)}; the engine takes "
                                  f"{[obs.shape[0], *self._row[name]]} for this batch")  # fmt: skip
            arrays.append(value)
        actions, *next_state = self._execute(arrays)
        return actions, next_state

    def close(self) -> None:
        """Free GPU memory and the stream now, not whenever the garbage collector gets to it."""
        if self._cudart is not None:
            self._free()
            if self._stream is not None:
                self._cudart.cudaStreamDestroy(self._stream)
        self._cudart = None
        self._context = self._engine = self._runtime = None
        self._stream = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # at interpreter exit cuda-python may already be gone
            pass


def _bundle_policy(bundle: Path, precision: str) -> tuple[Path, str, str, tuple[tuple[str, str], ...]]:
    """The bundle's ONNX of this precision (else its fp32 one) and the tensor names robot.yaml binds:
    observations, actions, and each (input, output) of a recurrent policy's state."""
    import yaml

    meta_path = bundle / "robot.yaml"
    if not meta_path.is_file():
        raise DeployError(f"{meta_path} does not exist; pass a bundle directory (robot.yaml and the ONNX policy)")
    try:
        meta = yaml.safe_load(meta_path.read_text())
        onnx = [a for a in meta["artifacts"] if a["kind"] == "onnx"]
        chosen = next((a for a in onnx if a.get("precision") == precision), None)
        chosen = chosen or next((a for a in onnx if a.get("precision") == "fp32"), onnx[0])
        state = tuple((s.input, s.output) for s in state_tensors(meta))
        return bundle / chosen["file"], meta["observation"]["input"], meta["action"]["output"], state
    except (yaml.YAMLError, KeyError, TypeError, IndexError) as exc:
        raise DeployError(f"{meta_path} names no ONNX artifact, observation.input or action.output "
                          f"({type(exc).__name__}: {' '.join(str(exc).split())}); re-export the bundle") from None


def _parity(engine: TensorRTEngine, onnx_path: Path, input_name: str, output_name: str, precision: str,
            max_batch: int, state: tuple[tuple[str, str], ...] = ()) -> float:
    """Max |engine - ONNX Runtime| on observations around 0 (inside the graph they are normalized); one
    line and no sidecar when it exceeds the export tolerance (1e-5 fp32, 1e-2 fp16, relative above 1).
    A recurrent policy runs 64 sequences of 50 steps twice: given ONNX Runtime's state at each step
    (that tolerance), and with each side fed its own state (the export's looser sequence tolerance,
    1e-3 fp32 / 5e-2 fp16: rounding carried from step to step; robolearn/export/onnx.py)."""
    from robolearn_deploy.engines import OnnxRuntimeEngine

    reference = OnnxRuntimeEngine(onnx_path, input_name, output_name, precision, state=state)
    rng = np.random.default_rng(0)
    per_step, fed_back = [], []
    if not state:
        obs = rng.uniform(-3, 3, (256, engine.input_dim)).astype(np.float32)
        expected = reference.run(obs)
        per_step.append((np.concatenate([engine.run(obs[i : i + max_batch]) for i in range(0, len(obs), max_batch)]),
                         expected))  # fmt: skip
    else:
        batch = min(64, max_batch)
        theirs = ours = [np.zeros((batch, *shape), np.float32) for shape in engine.state_shapes]
        for _ in range(50):
            obs = rng.uniform(-3, 3, (batch, engine.input_dim)).astype(np.float32)
            got, _ = engine.step(obs, theirs)
            expected, theirs = reference.step(obs, theirs)
            per_step.append((got, expected))
            got, ours = engine.step(obs, ours)
            fed_back.append((got, expected))
    scale = max(1.0, max(float(np.abs(b).max()) for _, b in per_step))
    for pairs, tolerance in ((per_step, {"fp32": 1e-5, "fp16": 1e-2}), (fed_back, {"fp32": 1e-3, "fp16": 5e-2})):
        diff = max((float(np.abs(a - b).max()) for a, b in pairs), default=0.0)
        if not diff < tolerance[precision] * scale:
            kind = " over sequences with the state fed back" if pairs is fed_back else ""
            raise DeployError(f"the engine differs from ONNX Runtime{kind} by {diff:.3g} (tolerance "
                              f"{tolerance[precision] * scale:.3g}); not using it")  # fmt: skip
    return max(float(np.abs(a - b).max()) for a, b in per_step)


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

        onnx_path, input_name, output_name, state = _bundle_policy(args.bundle, args.precision)
        engine_path = args.bundle / local_engine_name(args.precision)
        typed = args.precision == "fp16" and onnx_path.name.endswith(".fp16.onnx")
        info = build_engine(onnx_path, engine_path, args.precision, args.max_batch, strongly_typed=typed)
        engine = TensorRTEngine(engine_path, input_name, output_name, args.precision, state=state)
        try:  # robot.yaml's names bind, and the engine agrees with ONNX Runtime on this machine
            info["parity_max_abs_diff"] = _parity(engine, onnx_path, input_name, output_name, args.precision,
                                                  args.max_batch, state)
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
