"""Running a TensorRT engine (the robot's side): whether TensorRT can run here, and TensorRTEngine.

tensorrt and cuda-python are imported inside functions: importing this module needs neither.
Building engines is robolearn_deploy/tensorrt.py.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np

from robolearn_deploy.engines import NEEDS_STATE
from robolearn_deploy.errors import DeployError

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


def compute_capability() -> str | None:
    """This machine's GPU compute capability ("8.7" on a Jetson Orin), None without a usable GPU."""
    if unavailable_reason() is not None:
        return None
    cudart = _cudart()
    props = _cuda(cudart, "cudaGetDeviceProperties",
                  cudart.cudaGetDeviceProperties(_cuda(cudart, "cudaGetDevice", cudart.cudaGetDevice())))
    return f"{props.major}.{props.minor}"


class TensorRTEngine:
    """A built engine on one CUDA stream. Device buffers grow to the largest batch seen and are then reused,
    so a control loop at a fixed batch size allocates nothing and sets no shape after its first step.

    A recurrent policy's engine (`state`: the (input, output) tensor names of each state tensor) takes
    its state with the observations and returns the next one (`step`), like OnnxRuntimeEngine; the
    state goes to the GPU and back each step with the observations and actions (a few hundred bytes
    at batch 1), so the caller owns it and can reset it between any two steps."""

    name = "tensorrt"
    _cudart = _runtime = _engine = _context = _stream = None

    def __init__(self, path: Path, input_name: str, output_name: str, precision: str,
                 expected_version: str | None = None, state: tuple[tuple[str, str], ...] = ()):  # fmt: skip
        self._buffers: dict[str, int] = {}
        """Device pointer of each I/O tensor's buffer (sized for `_capacity` rows)."""
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
        extra = [n for n in names if n not in self._inputs + self._outputs]
        if extra:
            kind = "takes input" if engine.get_tensor_mode(extra[0]) == trt.TensorIOMode.INPUT else "gives output"
            raise DeployError(f"{path.name} {kind} {extra[0]!r}, which robot.yaml does not describe (a recurrent "
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
            raise DeployError(NEEDS_STATE)
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
