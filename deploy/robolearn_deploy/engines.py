"""Inference engines: observation batch [B, D] float32 -> action batch [B, A] float32; a
recurrent policy's engine also takes its state and gives the next one (`step`).

ONNX Runtime is always available; TensorRT (tensorrt.py) is optional and imported only when asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from robolearn_deploy.errors import DeployError


TOLERANCE = {"fp32": 1e-5, "fp16": 1e-2}
"""Largest |engine - reference| allowed for actions up to magnitude 1, beyond that this fraction of
the largest action: the export's parity check against torch and the TensorRT build's against ONNX
Runtime (robolearn/export/onnx.py ParityReport says why)."""
SEQUENCE_TOLERANCE = {"fp32": 1e-3, "fp16": 5e-2}
"""The same over a recurrent policy's sequences with each side fed its own state (rounding carried
from step to step)."""
NEEDS_STATE = "this policy is recurrent: it needs its state with every observation (step)"


class Engine(Protocol):
    name: str
    precision: str

    def run(self, obs: np.ndarray) -> np.ndarray:
        """[B, D] float32 -> [B, A] float32 (a new array)."""


class OnnxRuntimeEngine:
    """ONNX Runtime on the CPU. Batch-1 calls go through an IO binding into preallocated buffers,
    which skips the output allocation and name lookups of `session.run` (see run_one)."""

    name = "onnxruntime"

    def __init__(self, path: Path, input_name: str, output_name: str, precision: str = "fp32", threads: int = 1,
                 state: tuple[tuple[str, str], ...] = ()):  # fmt: skip
        """state: (input name, output name) of each recurrent state tensor (a recurrent policy)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 4  # fatal only: every error reaches the caller as an exception (DeployError)
        try:
            self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
            message = " ".join(str(exc).split())
            raise DeployError(f"onnxruntime cannot load {path.name}: {message}") from None
        self.precision = precision
        self.input_name, self.output_name = input_name, output_name
        self.input_dim = self._fixed_dim(self.session.get_inputs(), input_name, "input")
        self.output_dim = self._fixed_dim(self.session.get_outputs(), output_name, "output")
        self.state = tuple(state)
        graph_in = {a.name: a.shape for a in self.session.get_inputs()}
        graph_out = {a.name: a.shape for a in self.session.get_outputs()}
        extra = [n for n in graph_in if n != input_name and n not in {i for i, _ in self.state}]
        if extra:
            raise DeployError(f"the ONNX graph takes input {extra[0]!r}, which robot.yaml does not describe (a recurrent "
                              "policy's state?); re-export the bundle")  # fmt: skip
        self.state_shapes = []
        """Each state tensor's shape without the batch, as the graph declares it."""
        for name_in, name_out in self.state:
            self._fixed_dim(self.session.get_inputs(), name_in, "input")
            self._fixed_dim(self.session.get_outputs(), name_out, "output")
            if graph_in[name_in][1:] != graph_out[name_out][1:]:
                raise DeployError(f"the ONNX graph's state {name_in!r} {graph_in[name_in]} and {name_out!r} "
                                  f"{graph_out[name_out]} differ in shape; re-export the bundle")  # fmt: skip
            self.state_shapes.append(tuple(graph_in[name_in][1:]))
        self._outputs = [output_name, *(o for _, o in self.state)]
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
        if self.state:
            raise DeployError(NEEDS_STATE)
        return self.session.run([self.output_name], {self.input_name: obs})[0]

    def step(self, obs: np.ndarray, state: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """A recurrent policy: (obs [B, D], its state) -> (actions [B, A], the next state)."""
        feeds = {self.input_name: obs, **{name: s for (name, _), s in zip(self.state, state)}}
        actions, *state = self.session.run(self._outputs, feeds)
        return actions, state

    def bind(self, obs: np.ndarray, out: np.ndarray, state_in: list[np.ndarray] = (),
             state_out: list[np.ndarray] = ()) -> None:  # fmt: skip
        """Run batch 1 from `obs` [1, D] (and state_in) into `out` [1, A] (and state_out) in place on
        every `run_bound()`; the arrays are used by ONNX Runtime directly (no copies), so they must
        stay alive."""
        binding = self.session.io_binding()
        binding.bind_cpu_input(self.input_name, obs)
        binding.bind_output(self.output_name, "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
        for (name_in, name_out), s_in, s_out in zip(self.state, state_in, state_out):
            binding.bind_cpu_input(name_in, s_in)
            binding.bind_output(name_out, "cpu", 0, np.float32, list(s_out.shape), s_out.ctypes.data)
        self._binding = (binding, obs, out, state_in, state_out)

    def run_bound(self) -> None:
        self.session.run_with_iobinding(self._binding[0])
