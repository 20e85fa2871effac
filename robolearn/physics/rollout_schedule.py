"""How the mujoco backend spreads one batch step over threads: chosen by timing, once per backend.

`mujoco.rollout`'s thread pool pays a fixed cost per call to wake its threads and join them
(~40-50 µs on the 2-core VM, more while PyTorch's own threads still spin after an op). A cheap
model at a few environments (cartpole, 16 envs: ~65 µs of physics per control step) is faster
on the calling thread; an expensive one (the quadruped: ~100 µs per environment) is faster on
every core; and how many environments a thread takes at a time (the chunk) matters in between
(cartpole, 32 envs, 2 threads: 184 µs in chunks of 4, 101 µs in chunks of 16).

The choice changes speed only, never results: every environment is stepped on its own from its
state row with a fresh solver warm start, whichever thread and MjData run it (tested bit for bit).
So the first calls try each candidate in turn and every later call uses the one with the lowest
median time.
"""

from __future__ import annotations

import statistics
import time

import mujoco
import numpy as np
from mujoco import rollout

_CTRL_SPEC = int(mujoco.mjtState.mjSTATE_CTRL)


class RolloutSchedule:
    ROUNDS = 5
    """Timed calls per candidate before choosing."""

    def __init__(self, model: mujoco.MjModel, num_envs: int, num_threads: int):
        self._datas = [mujoco.MjData(model) for _ in range(max(1, num_threads))]
        self._runners = [rollout.Rollout(nthread=0)]
        self.candidates: list[tuple[rollout.Rollout, int, int]] = [(self._runners[0], 1, num_envs)]
        """(runner, how many of the MjDatas it uses, envs per chunk): the calling thread first, then
        the pool's chunkings."""
        if num_threads > 1:
            pool = rollout.Rollout(nthread=num_threads)
            self._runners.append(pool)
            for chunk in sorted({max(1, num_envs // (4 * num_threads)), -(-num_envs // num_threads)}):
                self.candidates.append((pool, len(self._datas), chunk))
        self._times: list[list[float]] = [[] for _ in self.candidates]
        self._calls = 0
        self.chosen: int | None = 0 if len(self.candidates) == 1 else None
        """Index of the candidate every call uses (None while timing)."""

    @property
    def uses_pool(self) -> bool:
        """Steps run on the pool's threads (while timing: some do)."""
        return len(self.candidates) > 1 and self.chosen != 0

    def rollout(self, models: list, state: np.ndarray, ctrl: np.ndarray, nstep: int,
                state_out: np.ndarray, sensor_out: np.ndarray) -> None:  # fmt: skip
        """`nstep` physics steps of every environment from `state` under `ctrl` [envs, nstep, nu]."""
        if self.chosen is not None:
            self._run(self.chosen, models, state, ctrl, nstep, state_out, sensor_out)
            return
        i = self._calls % len(self.candidates)
        start = time.perf_counter()
        self._run(i, models, state, ctrl, nstep, state_out, sensor_out)
        self._times[i].append(time.perf_counter() - start)
        self._calls += 1
        if self._calls == self.ROUNDS * len(self.candidates):
            medians = [statistics.median(t) for t in self._times]
            self.chosen = medians.index(min(medians))

    def use_model(self, model: mujoco.MjModel) -> None:
        """Step with MjDatas made for `model` (the environments' models are now copies of it)."""
        self._datas = [mujoco.MjData(model) for _ in self._datas]

    def _run(self, i: int, models, state, ctrl, nstep, state_out, sensor_out) -> None:
        runner, ndata, chunk = self.candidates[i]
        runner.rollout(models, self._datas[:ndata], state, ctrl, control_spec=_CTRL_SPEC, skip_checks=True, nstep=nstep,
                       state=state_out, sensordata=sensor_out, chunk_size=chunk)  # fmt: skip

    def close(self) -> None:
        for runner in self._runners:
            runner.close()
