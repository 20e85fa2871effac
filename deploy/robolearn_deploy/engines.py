"""Inference engines: observation batch [B, D] float32 -> action batch [B, A] float32.

ONNX Runtime is always available; TensorRT (tensorrt.py) is optional and imported only when asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from robolearn_deploy.errors import DeployError


class Engine(Protocol):
    name: str
    precision: str

    def run(self, obs: np.ndarray) -> np.ndarray:
        """[B, D] float32 -> [B, A] float32 (a new array)."""


class OnnxRuntimeEngine:
    """ONNX Runtime on the CPU. Batch-1 calls go through an IO binding into preallocated buffers,
    which skips the output allocation and name lookups of `session.run` (see run_one)."""

    name = "onnxruntime"

    def __init__(self, path: Path, input_name: str, output_name: str, precision: str = "fp32", threads: int = 1):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
            message = " ".join(str(exc).split())
            raise DeployError(f"onnxruntime cannot load {path.name}: {message}") from None
        self.precision = precision
        self.input_name, self.output_name = input_name, output_name
        self.input_dim = self._fixed_dim(self.session.get_inputs(), input_name, "input")
        self.output_dim = self._fixed_dim(self.session.get_outputs(), output_name, "output")
        self._binding = None

    @staticmethod
    def _fixed_dim(args, name: str, kind: str) -> int:
        found = {a.name: a.shape for a in args}
        if name not in found:
            raise DeployError(f"the ONNX graph has no {kind} named '{name}' (it has {', '.join(found)}); re-export the bundle")
        dim = found[name][-1]
        if not isinstance(dim, int):
            raise DeployError(f"the ONNX graph's {kind} '{name}' has no fixed feature size ({found[name]})")
        return dim

    def run(self, obs: np.ndarray) -> np.ndarray:
        return self.session.run([self.output_name], {self.input_name: obs})[0]

    def bind(self, obs: np.ndarray, out: np.ndarray) -> None:
        """Run batch 1 from `obs` [1, D] into `out` [1, A] in place on every `run_bound()`; both
        arrays are used by ONNX Runtime directly (no copies), so they must stay alive."""
        binding = self.session.io_binding()
        binding.bind_cpu_input(self.input_name, obs)
        binding.bind_output(self.output_name, "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
        self._binding = (binding, obs, out)

    def run_bound(self) -> None:
        self.session.run_with_iobinding(self._binding[0])
