"""torch policy -> ONNX (normalizer inside the graph, fixed names, dynamic batch) + parity check."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from robolearn.rl.models import InferencePolicy

INPUT_NAME = "obs"
OUTPUT_NAME = "actions"
PARITY_TOLERANCE_FP32 = 1e-5


@dataclass(frozen=True)
class ParityReport:
    random_max_abs_diff: float
    recorded_max_abs_diff: float
    samples: int
    max_abs_output: float
    """Largest |action| the torch policy produced on the probe observations."""

    @property
    def max_abs_diff(self) -> float:
        return max(self.random_max_abs_diff, self.recorded_max_abs_diff)

    @property
    def tolerance(self) -> float:
        """1e-5 for outputs up to 1; beyond that 1e-5 of the largest output. float32 keeps ~7
        digits, so an absolute 1e-5 is only a few rounding steps for an action of 20, and two
        correct fp32 implementations that sum in a different order differ by more."""
        return PARITY_TOLERANCE_FP32 * max(1.0, self.max_abs_output)

    @property
    def ok(self) -> bool:
        return self.max_abs_diff < self.tolerance


@contextlib.contextmanager
def _quiet_loggers():
    """The exporter logs its optimization passes at INFO and optional-op notes at WARNING."""
    loggers = [logging.getLogger(n) for n in ("onnxscript", "onnx_ir", "torch.onnx", "torch.export")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def export_onnx(policy: InferencePolicy, obs_dim: int, path: Path) -> Path:
    """Write a single-file ONNX graph: input `obs` [batch, obs_dim] -> output `actions` [batch, A]."""
    policy = policy.eval().cpu()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), _quiet_loggers():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            policy, (torch.zeros(2, obs_dim),), str(tmp),
            input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
            dynamic_shapes={INPUT_NAME: {0: torch.export.Dim("batch")}},
            dynamo=True, external_data=False, verbose=False,
        )  # fmt: skip
    tmp.replace(path)
    return path


def check_parity(policy: InferencePolicy, path: Path, recorded: torch.Tensor, seed: int = 0) -> ParityReport:
    """Max |onnxruntime - torch| on random observations and on observations recorded in the env."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    policy = policy.eval().cpu()
    recorded = recorded.detach().float().cpu()
    gen = torch.Generator().manual_seed(seed)
    # Random observations spread over the range the policy was trained on: up to 3 standard
    # deviations around the normalizer's mean (raw randn would probe far outside it).
    mean, std = policy.normalizer.mean, torch.sqrt(policy.normalizer.var + policy.normalizer.eps)
    random_obs = mean + std * 3.0 * (2.0 * torch.rand(1024, recorded.shape[1], generator=gen) - 1.0)

    largest = 0.0

    def max_diff(obs: torch.Tensor) -> float:
        nonlocal largest
        with torch.no_grad():
            expected = policy(obs).numpy()
        got = session.run([OUTPUT_NAME], {INPUT_NAME: obs.numpy()})[0]
        largest = max(largest, float(np.abs(expected).max()))
        return float(np.abs(got - expected).max())

    random_diff, recorded_diff = max_diff(random_obs), max_diff(recorded)
    return ParityReport(random_diff, recorded_diff, random_obs.shape[0] + recorded.shape[0], largest)
