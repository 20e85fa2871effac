"""Test stand-in for NVIDIA's `tensorrt` package (TensorRT 10 Python API, the part robolearn_deploy
uses). See tests/fakes/README.md for what it checks and what it cannot show.

A serialized engine is a header (magic, JSON: tensors, profile, flags) followed by the ONNX bytes;
executing it runs the ONNX graph on ONNX Runtime, reading inputs from and writing outputs to the
fake CUDA runtime's allocations at the addresses the caller set.
"""

from __future__ import annotations

import enum
import json

import numpy as np

__version__ = "10.99.0+fake"

_MAGIC = b"FAKETRT1"


class ILogger:
    class Severity(enum.IntEnum):
        INTERNAL_ERROR = 0
        ERROR = 1
        WARNING = 2
        INFO = 3
        VERBOSE = 4

    def __init__(self):
        pass

    def log(self, severity, msg):  # subclasses override
        pass


class DataType(enum.IntEnum):
    FLOAT = 0
    HALF = 1
    INT32 = 3


class TensorIOMode(enum.IntEnum):
    NONE = 0
    INPUT = 1
    OUTPUT = 2


class NetworkDefinitionCreationFlag(enum.IntEnum):
    STRONGLY_TYPED = 1


class BuilderFlag(enum.IntEnum):
    FP16 = 0
    TF32 = 7


class MemoryPoolType(enum.IntEnum):
    WORKSPACE = 0


class Dims(tuple):
    """TensorRT's shape type (a sequence of ints, -1 for a dynamic dimension)."""


class ITensor:
    def __init__(self, name: str, shape, dtype: DataType = DataType.FLOAT):
        self.name, self.shape, self.dtype = name, Dims(shape), dtype


class INetworkDefinition:
    def __init__(self, flags: int):
        self.flags = flags
        self._inputs: list[ITensor] = []
        self._outputs: list[ITensor] = []
        self._onnx: bytes | None = None

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    def get_input(self, index: int) -> ITensor:
        return self._inputs[index]

    def get_output(self, index: int) -> ITensor:
        return self._outputs[index]


class _ParserError:
    def __init__(self, text: str):
        self._text = text

    def desc(self) -> str:
        return self._text


_DTYPES = {1: DataType.FLOAT, 10: DataType.HALF, 6: DataType.INT32}  # ONNX TensorProto elem types


class OnnxParser:
    def __init__(self, network: INetworkDefinition, logger: ILogger):
        self._network, self._logger, self._errors = network, logger, []

    @property
    def num_errors(self) -> int:
        return len(self._errors)

    def get_error(self, index: int) -> _ParserError:
        return self._errors[index]

    def parse(self, model: bytes, path: str | None = None) -> bool:
        import onnx

        try:
            proto = onnx.load_from_string(bytes(model))
            onnx.checker.check_model(proto)
        except Exception as exc:
            self._errors.append(_ParserError(f"ModelImporter: failed to parse the ONNX model: {exc}"))
            return False

        def tensor(value_info) -> ITensor:
            t = value_info.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
            return ITensor(value_info.name, dims, _DTYPES.get(t.elem_type, DataType.INT32))

        initializers = {i.name for i in proto.graph.initializer}
        self._network._inputs = [tensor(v) for v in proto.graph.input if v.name not in initializers]
        self._network._outputs = [tensor(v) for v in proto.graph.output]
        self._network._onnx = bytes(model)
        return True


class IOptimizationProfile:
    def __init__(self):
        self.shapes: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {}

    def set_shape(self, input: str, min, opt, max) -> None:
        lo, mid, hi = (tuple(int(d) for d in s) for s in (min, opt, max))
        if not (len(lo) == len(mid) == len(hi)) or any(not (a <= b <= c) for a, b, c in zip(lo, mid, hi)):
            raise ValueError(f"invalid profile for {input}: min {lo}, opt {mid}, max {hi}")
        self.shapes[input] = (lo, mid, hi)


class IBuilderConfig:
    def __init__(self):
        self.flags: set[BuilderFlag] = {BuilderFlag.TF32}  # on by default, as in TensorRT
        self.profiles: list[IOptimizationProfile] = []
        self.pool_limits: dict[MemoryPoolType, int] = {}

    def set_memory_pool_limit(self, pool: MemoryPoolType, size: int) -> None:
        self.pool_limits[pool] = int(size)

    def set_flag(self, flag: BuilderFlag) -> None:
        self.flags.add(flag)

    def clear_flag(self, flag: BuilderFlag) -> None:
        self.flags.discard(flag)

    def get_flag(self, flag: BuilderFlag) -> bool:
        return flag in self.flags

    def add_optimization_profile(self, profile: IOptimizationProfile) -> int:
        self.profiles.append(profile)
        return len(self.profiles) - 1


class Builder:
    def __init__(self, logger: ILogger):
        self._logger = logger

    def create_network(self, flags: int = 0) -> INetworkDefinition:
        return INetworkDefinition(flags)

    def create_builder_config(self) -> IBuilderConfig:
        return IBuilderConfig()

    def create_optimization_profile(self) -> IOptimizationProfile:
        return IOptimizationProfile()

    def build_serialized_network(self, network: INetworkDefinition, config: IBuilderConfig) -> bytes | None:
        """None (and an error to the logger) where TensorRT's build fails on the same input."""
        def error(text: str) -> None:
            self._logger.log(ILogger.Severity.ERROR, text)

        if network._onnx is None:
            error("Network must have at least one output")
            return None
        profile = config.profiles[0] if config.profiles else None
        for t in network._inputs:
            if -1 not in t.shape:
                continue
            if profile is None or t.name not in profile.shapes:
                error(f"IBuilder::buildSerializedNetwork: Error Code 4: Network has dynamic or shape inputs, but no "
                      f"optimization profile has been defined for {t.name}.")
                return None
            for s in profile.shapes[t.name]:
                if len(s) != len(t.shape) or any(d != -1 and d != v for d, v in zip(t.shape, s)):
                    error(f"{t.name}: profile shape {s} does not match the network's {tuple(t.shape)}")
                    return None
        header = json.dumps({
            "inputs": [[t.name, list(t.shape), int(t.dtype)] for t in network._inputs],
            "outputs": [[t.name, list(t.shape), int(t.dtype)] for t in network._outputs],
            "profile": {k: [list(s) for s in v] for k, v in (profile.shapes if profile else {}).items()},
            "fp16": config.get_flag(BuilderFlag.FP16),
        }).encode()
        return _MAGIC + len(header).to_bytes(4, "little") + header + network._onnx


class Runtime:
    def __init__(self, logger: ILogger):
        self._logger = logger

    def deserialize_cuda_engine(self, data: bytes) -> ICudaEngine | None:
        data = bytes(data)
        if not data.startswith(_MAGIC):
            self._logger.log(ILogger.Severity.ERROR, "IRuntime::deserializeCudaEngine: Error Code 1: Serialization "
                             "(Serialization assertion magicTagRead == kMAGIC_TAG failed.)")  # fmt: skip
            return None
        size = int.from_bytes(data[8:12], "little")
        return ICudaEngine(json.loads(data[12 : 12 + size]), data[12 + size :], self._logger)


class ICudaEngine:
    def __init__(self, header: dict, onnx_bytes: bytes, logger: ILogger):
        self._logger = logger
        self._tensors = {name: (TensorIOMode.INPUT, Dims(shape), DataType(dtype)) for name, shape, dtype in header["inputs"]}
        self._tensors.update({name: (TensorIOMode.OUTPUT, Dims(shape), DataType(dtype))
                              for name, shape, dtype in header["outputs"]})  # fmt: skip
        self._profile = {k: tuple(tuple(s) for s in v) for k, v in header["profile"].items()}
        self._onnx = onnx_bytes
        self._session = None

    @property
    def num_io_tensors(self) -> int:
        return len(self._tensors)

    def get_tensor_name(self, index: int) -> str:
        return list(self._tensors)[index]

    def get_tensor_mode(self, name: str) -> TensorIOMode:
        return self._tensors[name][0] if name in self._tensors else TensorIOMode.NONE

    def get_tensor_shape(self, name: str) -> Dims:
        return self._tensors[name][1]

    def get_tensor_dtype(self, name: str) -> DataType:
        return self._tensors[name][2]

    def get_tensor_profile_shape(self, name: str, profile_index: int) -> list[Dims]:
        return [Dims(s) for s in self._profile[name]]

    def create_execution_context(self) -> IExecutionContext:
        if self._session is None:
            import onnxruntime as ort

            self._session = ort.InferenceSession(self._onnx, providers=["CPUExecutionProvider"])
        return IExecutionContext(self)


_NUMPY = {DataType.FLOAT: np.float32, DataType.HALF: np.float16, DataType.INT32: np.int32}


class IExecutionContext:
    def __init__(self, engine: ICudaEngine):
        self._engine = engine
        self._shapes: dict[str, tuple[int, ...]] = {}
        self._addresses: dict[str, int] = {}

    def _error(self, text: str) -> bool:
        self._engine._logger.log(ILogger.Severity.ERROR, text)
        return False

    def set_input_shape(self, name: str, shape) -> bool:
        shape = tuple(int(d) for d in shape)
        if self._engine.get_tensor_mode(name) != TensorIOMode.INPUT:
            return self._error(f"IExecutionContext::setInputShape: Error Code 3: {name} is not an input tensor")
        lo, _, hi = self._engine._profile.get(name, (self._engine.get_tensor_shape(name),) * 3)
        if len(shape) != len(lo) or any(not (a <= d <= b) for a, d, b in zip(lo, shape, hi)):
            return self._error(f"IExecutionContext::setInputShape: Error Code 3: {name} shape {shape} is outside "
                               f"the optimization profile [{lo}, {hi}]")  # fmt: skip
        self._shapes[name] = shape
        return True

    def set_tensor_address(self, name: str, ptr: int) -> bool:
        if self._engine.get_tensor_mode(name) == TensorIOMode.NONE:
            return self._error(f"IExecutionContext::setTensorAddress: Error Code 3: no tensor named {name}")
        self._addresses[name] = int(ptr)
        return True

    def get_tensor_shape(self, name: str) -> Dims:
        if name in self._shapes:
            return Dims(self._shapes[name])
        declared = self._engine.get_tensor_shape(name)
        batch = next(iter(self._shapes.values()), (-1,))[0]  # the policy graphs share one batch dimension
        return Dims(batch if d == -1 else d for d in declared)

    def execute_async_v3(self, stream_handle: int) -> bool:
        from cuda.bindings import runtime

        if int(stream_handle) not in runtime._STREAMS:
            return self._error("IExecutionContext::enqueueV3: Error Code 1: invalid stream")
        engine, feeds = self._engine, {}
        for name, (mode, _, dtype) in engine._tensors.items():
            if name not in self._addresses:
                return self._error(f"IExecutionContext::enqueueV3: Error Code 3: address of tensor {name} is not set")
            if mode == TensorIOMode.INPUT:
                if name not in self._shapes:
                    return self._error(f"IExecutionContext::enqueueV3: Error Code 3: shape of input {name} is not set")
                shape, np_type = self._shapes[name], _NUMPY[dtype]
                view = runtime.device_view(self._addresses[name], int(np.prod(shape)) * np.dtype(np_type).itemsize)
                if view is None:
                    return self._error(f"IExecutionContext::enqueueV3: Error Code 1: {name} is not in device memory")
                feeds[name] = view.view(np_type).reshape(shape).copy()
        outputs = [name for name, (mode, _, _) in engine._tensors.items() if mode == TensorIOMode.OUTPUT]
        for name, value in zip(outputs, engine._session.run(outputs, feeds)):
            value = np.ascontiguousarray(value, dtype=_NUMPY[engine.get_tensor_dtype(name)])
            view = runtime.device_view(self._addresses[name], value.nbytes)
            if view is None:
                return self._error(f"IExecutionContext::enqueueV3: Error Code 1: output {name} {value.shape} does not "
                                   "fit the device memory at its address")  # fmt: skip
            view[:] = value.view(np.uint8).reshape(-1)
        return True
