"""Which sensor readings a reset environment's first observation needs, and so how much of the
sensor refresh after resets (physics.refresh: a forward of every world on MuJoCo Warp) the step
must run.

Between a reset and the next physics step the env runs its managers' resets, interval events,
commands, observations and the next action mapping; only what those read of `sensordata` must be
current. `probe` runs that window once from a saved state (and puts the env back), watching every
torch operation for inputs that alias the sensordata buffer, views included (a term that kept a
view of some columns since its construction is seen too), and returns the columns read. `plan`
turns them into what the step runs:

    none   nothing reads a sensor there: no refresh
    blank  only sensors that physics.reset_sensors=kinematic zeroes at a reset are read: nothing
           to run either (write_reset leaves the reset rows at 0, physics/base.py)
    full   the backend's refresh (a forward, or its position and velocity stages)

With none or blank the backend is told that the reset rows are stale (`mark_stale`): the first read
of `sensordata` from outside the step refreshes them, so code that looks at the readings between
steps still sees those of the new state. The plan is made once, like the CUDA graphs' captured
step: a term whose reads change later (a Python flag) must read from the first step on.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

PLANS = ("none", "blank", "full")
INDEXING = {torch.ops.aten.index.Tensor, torch.ops.aten.index_select.default, torch.ops.aten.gather.default}
"""Operations that read only the elements their index arguments pick (replayed on element ids)."""


class SensorReads(TorchDispatchMode):
    """Records the columns of `sensordata` [N, S] that operations read while active (views do not
    read; the operation that consumes one does)."""

    def __init__(self, sensordata: torch.Tensor):
        super().__init__()
        self._storage = sensordata.untyped_storage().data_ptr()
        self._first, self._row = sensordata.storage_offset(), sensordata.stride(0)
        self._end = self._first + sensordata.shape[0] * self._row
        self.columns = np.zeros(sensordata.shape[1], dtype=bool)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not func.is_view:
            for k, arg in enumerate(pytree.tree_leaves((args, kwargs))):
                if isinstance(arg, torch.Tensor) and arg.untyped_storage().data_ptr() == self._storage:
                    self._mark(self._elements(arg, func if k == 0 else None, args))
        return func(*args, **kwargs)

    def _elements(self, view: torch.Tensor, func, args) -> torch.Tensor:
        """Storage offsets of the elements an operation reads from `view`: all of them, or for an
        indexing operation on it (its first argument) the ones its indices pick."""
        size = view.untyped_storage().nbytes() // view.element_size()
        ids = torch.arange(size, device=view.device).as_strided(view.size(), view.stride(), view.storage_offset())
        if func in INDEXING:
            ids = func(ids, *args[1:])
        return ids.flatten().cpu()

    def _mark(self, offsets: torch.Tensor) -> None:
        inside = offsets[(offsets >= self._first) & (offsets < self._end)] - self._first
        cols = (inside % self._row).numpy()
        self.columns[cols[cols < len(self.columns)]] = True


def probe(env) -> np.ndarray:
    """The sensordata columns env's post-reset window reads (module docstring), from one run of it
    with every env reset, on compiled terms as eager; the env's state is put back afterwards."""
    physics = env.physics
    saved, readings = env.state_dict(), physics.sensordata.clone()
    everyone = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
    with torch.compiler.set_stance("force_eager"), SensorReads(physics.sensordata) as reads:
        env._reset_managers(everyone)
        env._next_observations()
        env._apply_action(torch.zeros(env.num_envs, env.num_actions, device=env.device))
    env.load_state_dict(saved)
    physics.sensordata.copy_(readings)  # loading a state refreshes every world's sensors
    return reads.columns


def plan(read: np.ndarray, blank_at_reset: np.ndarray) -> str:
    """What the step runs after resets, given the columns read and those kinematic mode zeroes."""
    if not read.any():
        return "none"
    return "full" if (read & ~blank_at_reset).any() else "blank"
