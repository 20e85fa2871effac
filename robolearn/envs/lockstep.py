"""Two envs stepped in lockstep: which one step differs, with chaos taken out.

Two envs that should compute the same thing (graphed and eager, env.compile and not) never stay
equal for long on a GPU: a last-bit difference, from fused kernels rounding differently or from
the engine's float atomics, is amplified by contacts until one robot's foot lands a step later
and that env is O(0.1) apart. A free-running comparison cannot tell that from a fault. Here both
envs load the same snapshot (the second env's checkpoint state, envs/env_state.py) before every
step, so whatever differs after the step is that step's own doing: rounding stays small (a last
bit changed in every action: at most 4e-5 over 60 quadruped steps on warp), while a wrong random
draw, a stale buffer or a missed reset is as large as ever, at the step it happens. After the
step the two envs' whole checkpoint states are compared too (the generator's state and every
counter exactly), so a fault in state that no observation shows yet is found at once, named by its
entry.

    pair = Lockstep(compiled_env, plain_env)
    for _ in range(100):
        gap = pair.step(actions)        # StepGap: per output, per state entry, per env
        assert gap.worst() <= 1e-3, gap.describe(1e-3)

Loading a snapshot copies into the live tensors, so CUDA graphs captured before stay valid; it
costs a host round trip of the state per step (a diagnostic, not for training).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch

ENGINE_OUTPUTS = ("qacc_warmstart", "sensordata")
"""Checkpoint entries the engine recomputes every step, left out of the state comparison: the
solver's starting point (contacts amplify a last-bit change of the state there to ~1e-3) and a
backend's copy of the sensor readings (what terms read of them is compared as observations). A
fault shows in the state they are computed from."""


def flatten(state: object, prefix: str = "") -> dict[str, torch.Tensor]:
    """A nested checkpoint state as {"managers/actions/state/last": tensor, ...} (entries that are
    not tensors, such as None or a Python number, are left out)."""
    if isinstance(state, torch.Tensor):
        return {prefix: state}
    out: dict[str, torch.Tensor] = {}
    if isinstance(state, Mapping):
        items = state.items()
    elif isinstance(state, (list, tuple)):
        items = enumerate(state)
    else:
        return out
    for key, value in items:
        out.update(flatten(value, f"{prefix}/{key}" if prefix else str(key)))
    return out


def relative_gap(x: torch.Tensor, y: torch.Tensor) -> float:
    """max |x - y| / (1 + |y|) for floating tensors (gaps: the same NaN or infinity on both sides
    counts 0, a non-finite value on one side only inf); for exact entries (integers, booleans, a
    generator's state) 0 where equal, inf otherwise. `y` is the reference (the second env)."""
    if x.shape != y.shape:
        return math.inf
    if torch.equal(x, y):
        return 0.0
    if not (x.is_floating_point() and y.is_floating_point()):
        return math.inf
    delta = gaps(x, y)
    return float(delta.max()) if delta.numel() else 0.0


def gaps(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Elementwise |x - y| / (1 + |y|) in float64: 0 where both are the same NaN or infinity, inf
    where only one is finite (or they are infinities of other signs)."""
    x, y = x.double(), y.double()
    finite = torch.isfinite(x) & torch.isfinite(y)
    same = (torch.isnan(x) & torch.isnan(y)) | (x == y)
    delta = (x - y).abs() / (1 + y.abs())
    return torch.where(finite, delta, torch.where(same, 0.0, math.inf))


@dataclass
class StepGap:
    """What one lockstep step left apart (relative gaps, as relative_gap)."""

    step: int
    outputs: dict[str, float]
    """Per observation group and 'reward': the largest gap over envs."""
    state: dict[str, float]
    """Per checkpoint-state entry that differs after the step (flatten's names)."""
    ends_differ: int
    """Envs where one env's episode ended and the other's did not."""
    per_env: torch.Tensor
    """[N] the largest output gap of each env."""
    ended: torch.Tensor
    """[N] the second env's episode ends of this step."""

    def worst(self) -> float:
        return max([0.0, *self.outputs.values(), *self.state.values()])

    def worst_envs(self, tolerance: float, count: int = 8) -> list[tuple[int, float, bool]]:
        """Up to `count` envs past `tolerance`, most apart first: (env, gap, whether it ended)."""
        order = self.per_env.argsort(descending=True)[:count].tolist()
        return [(i, float(self.per_env[i]), bool(self.ended[i])) for i in order if float(self.per_env[i]) > tolerance]

    def describe(self, tolerance: float) -> str:
        """One line: the step, the outputs and state entries past `tolerance`, and the envs that
        differ most (each with its gap and whether its episode ended in this step)."""
        past = {k: f"{v:.3g}" for k, v in {**self.outputs, **self.state}.items() if not v <= tolerance}
        rows = [f"{i}: {g:.3g}{' (ended)' if ended else ''}" for i, g, ended in self.worst_envs(tolerance)]
        return (f"step {self.step}: {past or 'nothing'} past {tolerance:g}; "
                f"ends differ in {self.ends_differ}; envs {rows}")

    def as_row(self, tolerance: float) -> dict:
        """For a JSON line: the entries past `tolerance` and the envs that differ most (an exact
        entry that differs, or a value finite on one side only, as "inf": standard JSON)."""
        plain = lambda v: v if math.isfinite(v) else "inf"  # noqa: E731
        return {"step": self.step, "ends_differ": self.ends_differ,
                "outputs": {k: plain(v) for k, v in self.outputs.items() if not v <= tolerance},
                "state": {k: plain(v) for k, v in self.state.items() if not v <= tolerance},
                "envs": [[i, plain(g), ended] for i, g, ended in self.worst_envs(tolerance)]}  # fmt: skip


class Lockstep:
    """`first` and `second` (same task, env count and device; built alike but for what is being
    compared) step from the same snapshot each time: the second env's state after its last step.
    Gaps are relative to the second env's values."""

    def __init__(self, first, second):
        if first.num_envs != second.num_envs or first.device != second.device:
            raise ValueError("lockstep needs two envs with the same env.num_envs and device")
        self.first, self.second = first, second
        self.steps = 0
        self._snapshot = second.state_dict()

    def step(self, action: torch.Tensor) -> StepGap:
        for env in (self.first, self.second):
            env.load_state_dict(self._snapshot)
        (obs_a, reward_a, term_a, trunc_a) = self.first.step(action)
        outputs_a = {**obs_a, "reward": reward_a}  # the first env's own buffers: untouched until its next step
        ended_a = term_a | trunc_a
        (obs_b, reward_b, term_b, trunc_b) = self.second.step(action)
        outputs_b = {**obs_b, "reward": reward_b}
        ended_b = term_b | trunc_b
        per_env = torch.zeros(self.second.num_envs, device=reward_b.device, dtype=torch.float64)
        outputs = {}
        for name, y in outputs_b.items():
            x = outputs_a[name]
            outputs[name] = relative_gap(x, y)
            if x.shape != y.shape:  # an output shaped otherwise: every env apart
                per_env.fill_(math.inf)
                continue
            per_env = torch.maximum(per_env, gaps(x, y).reshape(x.shape[0], -1).amax(1))
        after_a = flatten(self.first.state_dict())
        self._snapshot = self.second.state_dict()
        after_b = flatten(self._snapshot)
        state = {name: relative_gap(after_a[name], y) for name, y in after_b.items()
                 if name in after_a and name.rsplit("/", 1)[-1] not in ENGINE_OUTPUTS}  # fmt: skip
        state.update({name: math.inf for name in after_a.keys() ^ after_b.keys()})
        gap = StepGap(self.steps, outputs, {k: v for k, v in state.items() if v > 0}, int((ended_a != ended_b).sum()),
                      per_env, ended_b.clone())  # fmt: skip
        self.steps += 1
        return gap
