"""torch policy -> ONNX (normalizer inside the graph, fixed names, dynamic batch) + parity check."""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from robolearn.rl.models import InferencePolicy

INPUT_NAME = "obs"
OUTPUT_NAME = "actions"
PROBE_BATCH = 256
"""Parity probes go through the engine in batches of this size (engines have a maximum batch)."""
TOLERANCE = {"fp32": 1e-5, "fp16": 1e-2}
"""Largest |artifact - torch| allowed for actions up to magnitude 1 (see ParityReport.tolerance)."""


@dataclass(frozen=True)
class ParityReport:
    random_max_abs_diff: float
    recorded_max_abs_diff: float
    samples: int
    max_abs_output: float
    """Largest |action| the torch policy produced on the probe observations."""
    precision: str = "fp32"

    @property
    def max_abs_diff(self) -> float:
        return max(self.random_max_abs_diff, self.recorded_max_abs_diff)

    @property
    def tolerance(self) -> float:
        """TOLERANCE[precision] for outputs up to 1; beyond that, that fraction of the largest
        output. float32 keeps ~7 digits, so an absolute 1e-5 is only a few rounding steps for an
        action of 20, and two correct fp32 implementations that sum in another order differ by more."""
        return TOLERANCE[self.precision] * max(1.0, self.max_abs_output)

    @property
    def ok(self) -> bool:
        return self.max_abs_diff < self.tolerance

    def as_dict(self) -> dict:
        return {"random_max_abs_diff": self.random_max_abs_diff, "recorded_max_abs_diff": self.recorded_max_abs_diff,
                "samples": self.samples, "max_abs_action": self.max_abs_output, "tolerance": self.tolerance}  # fmt: skip


class HalfPrecisionPolicy(torch.nn.Module):
    """fp16 network behind an fp32 interface: the normalizer stays fp32 (raw observations and
    their variances can exceed fp16's range), the MLP runs in fp16, actions come back as fp32."""

    def __init__(self, policy: InferencePolicy):
        super().__init__()
        self.normalizer = policy.normalizer
        self.actor = copy.deepcopy(policy.actor).half()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.normalizer(obs).half()).float()


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


def export_onnx(policy: InferencePolicy, obs_dim: int, path: Path, precision: str = "fp32") -> Path:
    """Write a single-file ONNX graph: input `obs` [batch, obs_dim] -> output `actions` [batch, A],
    both float32; precision fp16 runs the network inside in half precision."""
    policy = policy.eval().cpu()
    module = HalfPrecisionPolicy(policy) if precision == "fp16" else policy
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), _quiet_loggers():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module, (torch.zeros(2, obs_dim),), str(tmp),
            input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
            dynamic_shapes={INPUT_NAME: {0: torch.export.Dim("batch")}},
            dynamo=True, external_data=False, verbose=False,
        )  # fmt: skip
    tmp.replace(path)
    return path


def probe_observations(policy: InferencePolicy, recorded: torch.Tensor, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(random, recorded) observations to compare an artifact with torch on. The random ones spread
    over the range the policy was trained on: up to 3 standard deviations around the normalizer's
    mean (raw randn would probe far outside it)."""
    recorded = recorded.detach().float().cpu()
    gen = torch.Generator().manual_seed(seed)
    mean, std = policy.normalizer.mean, policy.normalizer.std
    random_obs = mean + std * 3.0 * (2.0 * torch.rand(1024, recorded.shape[1], generator=gen) - 1.0)
    return random_obs, recorded


def check_parity(policy: InferencePolicy, run: Callable[[np.ndarray], np.ndarray], recorded: torch.Tensor,
                 precision: str = "fp32") -> ParityReport:  # fmt: skip
    """Max |run(obs) - torch| over random and recorded observations; `run` is a deploy engine's."""
    policy = policy.eval().cpu()
    largest = 0.0

    def max_diff(obs: torch.Tensor) -> float:
        nonlocal largest
        with torch.no_grad():
            expected = policy(obs).numpy()
        got = np.concatenate([run(chunk) for chunk in np.split(obs.numpy(), range(PROBE_BATCH, len(obs), PROBE_BATCH))])
        largest = max(largest, float(np.abs(expected).max()))
        return float(np.abs(got - expected).max())

    random_obs, recorded = probe_observations(policy, recorded)
    random_diff, recorded_diff = max_diff(random_obs), max_diff(recorded)
    return ParityReport(random_diff, recorded_diff, random_obs.shape[0] + recorded.shape[0], largest, precision)
