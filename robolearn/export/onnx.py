"""torch policy -> ONNX (normalizer inside the graph, fixed names, dynamic batch) + parity check.

A recurrent policy's graph also takes its state and returns the next one: inputs `obs`, `h_in`
(and `c_in` for an LSTM), outputs `actions`, `h_out` (`c_out`), states [batch, layers, hidden]
float32. Its parity is checked over sequences, the states fed back step after step as the robot
runs it, not on single steps from the zero state."""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from robolearn.errors import UserError
from robolearn.rl.models import PolicyGraph
from robolearn_deploy.engines import SEQUENCE_TOLERANCE, TOLERANCE

INPUT_NAME = "obs"
OUTPUT_NAME = "actions"


def state_input(name: str) -> str:
    """The graph input carrying recurrent state `name` ('h', 'c'); its next value is state_output."""
    return f"{name}_in"


def state_output(name: str) -> str:
    return f"{name}_out"


SEQUENCES = 64
"""A recurrent policy's parity runs this many sequences side by side (random, and recorded ones)."""
PROBE_BATCH = 256
"""Parity probes go through the engine in batches of this size (engines have a maximum batch)."""


@dataclass(frozen=True)
class ParityReport:
    """|artifact - torch| on random and recorded observations. For a recurrent policy these are
    per step, the artifact given torch's own state at every step (so the function is checked to
    the same tolerance as a feed-forward one), and `sequence_max_abs_diff` is over the sequences
    with each side fed its own state, as on the robot (the state's round trip)."""

    random_max_abs_diff: float
    recorded_max_abs_diff: float
    samples: int
    max_abs_output: float
    """Largest |action| the torch policy produced on the probe observations."""
    precision: str = "fp32"
    sequence_max_abs_diff: float | None = None
    """Recurrent policies: the largest difference over the fed-back sequences (None feed-forward)."""

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
    def sequence_tolerance(self) -> float:
        """SEQUENCE_TOLERANCE[precision], scaled like `tolerance`. Fed its own state, each side
        carries its rounding from step to step, and a recurrent core can amplify it: a trained
        pendulum GRU's actions (up to 10) drifted 1.6e-4 between torch and ONNX Runtime over 200
        steps while every single step agreed to 1e-5. A lost, swapped or unreset state is off by
        a sizeable fraction of the actions."""
        return SEQUENCE_TOLERANCE[self.precision] * max(1.0, self.max_abs_output)

    @property
    def failure(self) -> str | None:
        """What failed, in words (None: it passed)."""
        if not self.max_abs_diff < self.tolerance:
            return f"max abs difference {self.max_abs_diff:.3g} >= tolerance {self.tolerance:.3g}"
        if self.sequence_max_abs_diff is not None and not self.sequence_max_abs_diff < self.sequence_tolerance:
            return (f"max abs difference over sequences with the state fed back {self.sequence_max_abs_diff:.3g} >= "
                    f"tolerance {self.sequence_tolerance:.3g}")  # fmt: skip
        return None

    @property
    def ok(self) -> bool:
        return self.failure is None

    def as_dict(self) -> dict:
        out = {"random_max_abs_diff": self.random_max_abs_diff, "recorded_max_abs_diff": self.recorded_max_abs_diff,
               "samples": self.samples, "max_abs_action": self.max_abs_output, "tolerance": self.tolerance}  # fmt: skip
        if self.sequence_max_abs_diff is not None:
            out.update(sequence_max_abs_diff=self.sequence_max_abs_diff, sequence_tolerance=self.sequence_tolerance)
        return out


class HalfPrecisionPolicy(torch.nn.Module):
    """fp16 network behind an fp32 interface: the normalizer stays fp32 (raw observations and
    their variances can exceed fp16's range), the recurrent core and the MLP run in fp16, actions
    and states come back as fp32 (the robot keeps the state in fp32 between steps)."""

    def __init__(self, policy: PolicyGraph):
        super().__init__()
        self.normalizer = policy.normalizer
        self.memory = None if policy.memory is None else copy.deepcopy(policy.memory).half()
        self.actor = copy.deepcopy(policy.actor).half()

    def forward(self, obs: torch.Tensor, h_in: torch.Tensor | None = None, c_in: torch.Tensor | None = None):
        x = self.normalizer(obs).half()
        if self.memory is None:
            return self.actor(x).float()
        state = tuple(s.half() for s in ((h_in,) if c_in is None else (h_in, c_in)))
        x, state = self.memory(x, state)
        return (self.actor(x).float(), *(s.float() for s in state))


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


def export_onnx(policy: PolicyGraph, obs_dim: int, path: Path, precision: str = "fp32") -> Path:
    """Write a single-file ONNX graph: input `obs` [batch, obs_dim] -> output `actions` [batch, A]
    (+ the recurrent state in and out), all float32; precision fp16 runs the network inside in half
    precision."""
    policy = policy.eval().cpu()
    module = HalfPrecisionPolicy(policy) if precision == "fp16" else policy
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    batch = torch.export.Dim("batch")
    states = policy.initial_state(2)
    names = policy.state_names
    dynamic = {INPUT_NAME: {0: batch}, **{state_input(n): {0: batch} for n in names}}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), _quiet_loggers():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module, (torch.zeros(2, obs_dim), *states), str(tmp),
            input_names=[INPUT_NAME, *map(state_input, names)], output_names=[OUTPUT_NAME, *map(state_output, names)],
            dynamic_shapes=dynamic,
            dynamo=True, external_data=False, verbose=False,
        )  # fmt: skip
    tmp.replace(path)
    return path


def probe_observations(policy: PolicyGraph, recorded: torch.Tensor, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(random, recorded) observations to compare an artifact with torch on, shaped like `recorded`
    [T, N, D] with 1024 random observations (feed-forward: flattened to [samples, D]; recurrent: 64
    sequences of 100 random steps next to the recorded sequences). The random ones spread over the
    range the policy was trained on: up to 3 standard deviations around the normalizer's mean (raw
    randn would probe far outside it)."""
    recorded = recorded.detach().float().cpu()
    gen = torch.Generator().manual_seed(seed)
    mean, std = policy.normalizer.mean, policy.normalizer.std
    shape = (1024, recorded.shape[-1]) if not policy.state_names else (100, SEQUENCES, recorded.shape[-1])
    random_obs = mean + std * 3.0 * (2.0 * torch.rand(*shape, generator=gen) - 1.0)
    return random_obs, recorded.flatten(0, 1) if not policy.state_names else recorded[:, :SEQUENCES]


def check_parity(policy: PolicyGraph, engine, recorded: torch.Tensor, precision: str = "fp32") -> ParityReport:
    """Max |engine - torch| over random and recorded observations (recorded [T, N, D]); `engine` is
    a deploy engine (`run(obs)`, and `step(obs, state)` for a recurrent policy, whose sequences
    run twice: given torch's state at each step, and with each side's own state fed back, as on
    the robot; see ParityReport)."""
    policy = policy.eval().cpu()
    largest = 0.0

    def compare(expected: np.ndarray, got: np.ndarray) -> float:
        nonlocal largest
        if not np.isfinite(expected).all():
            raise UserError("the policy's actions are not finite for some observations (its weights diverged in "
                            "training, e.g. with too large a learning rate); there is nothing to export")  # fmt: skip
        largest = max(largest, float(np.abs(expected).max()))
        return float(np.abs(got - expected).max())

    def max_diff(obs: torch.Tensor) -> float:
        with torch.no_grad():
            expected = policy(obs).numpy()
        got = np.concatenate([engine.run(chunk) for chunk in np.split(obs.numpy(), range(PROBE_BATCH, len(obs), PROBE_BATCH))])
        return compare(expected, got)

    fed_back = 0.0

    def max_step_diff(obs: torch.Tensor) -> float:
        """Per step with torch's state given to both; the fed-back sequence's worst goes to fed_back."""
        nonlocal fed_back
        ours, theirs = policy.initial_state(obs.shape[1]), [s.numpy() for s in policy.initial_state(obs.shape[1])]
        worst = 0.0
        for x in obs:
            got, _ = engine.step(x.numpy(), [s.numpy() for s in ours])
            with torch.no_grad():
                expected, *ours = policy(x, *ours)
            worst = max(worst, compare(expected.numpy(), got))
            got, theirs = engine.step(x.numpy(), theirs)
            fed_back = max(fed_back, compare(expected.numpy(), got))
        return worst

    random_obs, recorded = probe_observations(policy, recorded)
    diff = max_step_diff if policy.state_names else max_diff
    random_diff, recorded_diff = diff(random_obs), diff(recorded)
    samples = random_obs.shape[:-1].numel() + recorded.shape[:-1].numel()
    return ParityReport(random_diff, recorded_diff, samples, largest, precision,
                        fed_back if policy.state_names else None)  # fmt: skip
