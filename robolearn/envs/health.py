"""Non-finite containment: an environment whose simulation diverges is reset, not learned from.

Each step an environment's transition is *invalid* when
  - its state after the physics is not finite or exceeds `state_limit` (|qpos| or |qvel|;
    env.state_limit, 1e6 by default: far beyond any physical robot, far below MuJoCo's own 1e10),
  - the engine itself reset it during the step (native MuJoCo's automatic reset after a
    "simulation is unstable" warning; `PhysicsBackend.unstable`),
  - a reward term returned a non-finite value for it (RewardManager.compute), or
  - the observation it acted on was not finite (that row was replaced by zeros when it was made,
    so the policy and the normalizers never see it).
An invalid environment is terminated and reset in the same step, its reward is 0, and the learner
masks the transition out of the normalizers, the advantages and the loss (`env.invalid`).
`nonfinite_resets` counts them on the device; the env reports and zeroes the count once per
iteration (`health/nonfinite_resets`). Everything here is tensor ops: no host reads per step.
"""

from __future__ import annotations

import numpy as np
import torch


_max, _all, _any = np.maximum.reduce, np.logical_and.reduce, np.logical_or.reduce  # no Python wrappers: ~1 us each


def _worst(x: torch.Tensor) -> float:
    """max |x| of a CPU tensor through numpy (NaN if any is NaN): ~3 us where torch takes ~10."""
    return _max(np.abs(x.numpy()), axis=None) if x.numel() else 0.0


def _finite(x: torch.Tensor) -> bool:
    """Whether every value of a CPU tensor is finite (not through a sum: inf - inf, or a sum past float32,
    made numpy print a RuntimeWarning, and the latter a false alarm)."""
    return bool(_all(np.isfinite(x.numpy()), axis=None))


class EnvHealth:
    """On an accelerator every check is a few tensor ops per step, with no host read. On the CPU,
    where reading is free but each small torch op costs microseconds, one numpy test per tensor
    decides whether anything is wrong, and the masked work runs only when something is
    (`maybe_invalid`)."""

    def __init__(self, num_envs: int, device: torch.device, state_limit: float):
        if not state_limit > 0:
            raise ValueError(f"state_limit must be > 0, got {state_limit}")
        self.state_limit = float(state_limit)
        self.invalid = torch.zeros(num_envs, dtype=torch.bool, device=device)
        """Whether this step's transition must not be learned from, [N] (see the module docstring)."""
        self.pending = torch.zeros_like(self.invalid)
        """Envs whose last observation was not finite: invalid at their next step."""
        self.nonfinite_resets = torch.zeros((), dtype=torch.long, device=device)
        """Invalid transitions since the last `pop`."""
        self._host = self.invalid.device.type == "cpu"
        self.maybe_invalid = True
        """False only where the host knows that no env is invalid this step (the CPU)."""
        self._maybe_pending = True
        self._finite = _finite

    def exclude_host_reads_from_compile(self) -> None:
        """For env.compile: the reward check's numpy read runs outside torch.compile's tracing
        (traced under inference mode it trips a Dynamo guard bug, torch 2.13). Not done at import:
        torch.compiler loads Dynamo, ~1.5 s of every start-up."""
        import torch.compiler

        self._finite = torch.compiler.disable(_finite)

    def check_state(self, physics) -> torch.Tensor:
        """Start this step's `invalid` from the physics state, the engine's own resets and the
        observations flagged by the last step; returns it (the reward check adds to it)."""
        inv = self.invalid
        if self._host:
            limit = self.state_limit  # a NaN compares False
            state_ok = _worst(physics.qpos) <= limit and _worst(physics.qvel) <= limit
            if state_ok and not self._maybe_pending and not _any(physics.unstable.numpy()):
                if self.maybe_invalid:
                    inv.zero_()
                self.maybe_invalid = False
                return inv
        self.maybe_invalid = True
        torch.logical_or(self.pending, physics.unstable, out=inv)
        for state in (physics.qpos, physics.qvel):
            if state.shape[1]:
                # NaN compares False, so a NaN row is caught by the same test as a huge one
                inv |= ~(state.abs().amax(1) <= self.state_limit)
        return inv

    def check_rewards(self, values: torch.Tensor) -> None:
        """values [K, N] (each reward term's): an env with a non-finite term becomes invalid, and
        every invalid env's terms become 0 (its reward and episode sums take no NaN)."""
        if self._host:
            if not self.maybe_invalid and self._finite(values):
                return
            self.maybe_invalid = True
        self.invalid |= ~torch.isfinite(values.sum(0))
        values.masked_fill_(self.invalid, 0.0)

    def count(self) -> None:
        if self.maybe_invalid:
            self.nonfinite_resets += self.invalid.sum()

    def check_observations(self, buffers: dict[str, torch.Tensor]) -> None:
        """Zero each observation row that is not finite; that env is invalid at its next step."""
        if self._host and all(map(self._finite, buffers.values())):
            if self._maybe_pending:
                self.pending.zero_()
            self._maybe_pending = False
            return
        self._maybe_pending = True
        self.pending.zero_()
        for buf in buffers.values():
            bad = ~torch.isfinite(buf.sum(1))  # one reduction: a NaN or an inf anywhere in the row
            self.pending |= bad
            buf.masked_fill_(bad.unsqueeze(1), 0.0)

    def pop(self) -> torch.Tensor:
        """The count since the last call, as a device scalar (the caller reads it with the rest)."""
        count = self.nonfinite_resets.clone()
        self.nonfinite_resets.zero_()
        return count

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"pending": self.pending.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.pending.copy_(state["pending"])
        self._maybe_pending = True


LARGEST_OBSERVATION = 1e18
"""Larger observation values overflow the normalizer: it squares them, and float32 ends at 3.4e38."""
LARGEST_REWARD = 1e16
"""Larger step rewards overflow the value loss: it squares a return error, and a discounted return
sums up to 1 / (1 - gamma) (100 at gamma 0.99) such rewards."""


def _observation_too_large(env) -> str:
    """The first observation term (as the policy got it: scaled, clipped) past LARGEST_OBSERVATION."""
    for group, buffer in env.observations.buffers.items():
        for part in (p for p in env.observations.layout[group] if p.stop > p.start):
            worst = buffer[:, part.start : part.stop].abs().max().item()
            if worst > LARGEST_OBSERVATION:  # NaN is not: a non-finite row was replaced by zeros
                return (f"observation term '{part.name}' of group '{group}' reaches {worst:.1e} (scaled and clipped), "
                        f"which the observation normalizer cannot square in float32; valid: |values| <= "
                        f"{LARGEST_OBSERVATION:.0e} (lower its scale or give it a clip)")  # fmt: skip
    return ""


def update_failure_cause(env) -> str:
    """Why no minibatch's loss was finite although the transitions were: an observation term too
    large for the normalizer, or a reward term whose weighted step value (the last step's) is too
    large for the value loss; '' where neither shows."""
    cause = _observation_too_large(env)
    if cause:
        return cause
    rewards = env.rewards
    for k, term in enumerate(rewards.terms):
        worst = (rewards.values[k] * rewards.weights[k]).abs().max().item()
        if worst > LARGEST_REWARD:
            return (f"reward term '{term.name}' reaches {worst:.1e} per step (weight x value), which the value loss "
                    f"cannot square in float32 once summed into a return; valid: |weight x value| <= "
                    f"{LARGEST_REWARD:.0e} (lower its weight)")  # fmt: skip
    return ""


def divergence_cause(env) -> str:
    """What makes every transition invalid, read once where a run stops for it (the env is not
    stepped again, so a class term's state may change here), in the order one causes the next:
    the physics state; an observation term (as the policy got it: scaled, clipped) too large for
    the normalizer or not finite; the policy's actions; the first reward or observation term whose
    values are not finite now; '' where none shows in this state."""
    physics = env.physics
    if not (torch.isfinite(physics.qpos).all() and torch.isfinite(physics.qvel).all()):
        return "the simulation's state is not finite (a model or an action that makes the physics diverge)"
    cause = _observation_too_large(env)
    if cause:
        return cause
    if not torch.isfinite(env.actions.action).all():
        return "the policy's actions are not finite (its observations or its weights hold NaN or inf)"
    managers = [("reward", env.rewards.terms)] + [("observation", env.observations.terms)]
    for kind, terms in managers:
        for term in terms:
            try:
                value = term.func(env, **term.params)
            except Exception:  # a term that fails here reports itself when it runs
                continue
            if isinstance(value, torch.Tensor) and value.is_floating_point() and not torch.isfinite(value).all():
                return f"{kind} term '{term.name}' ({term.source}) returns values that are not finite"
    return ""
