"""Native MuJoCo on CPU threads: every environment stepped by `mujoco.rollout`.

The backend owns one float64 state row per environment (MuJoCo's mjSTATE_FULLPHYSICS layout)
and hands the whole batch to `mujoco.rollout` for `substeps` steps, on the calling thread or split
over a thread pool, whichever the first steps measure faster (rollout_schedule.py). No Python
code runs per environment while stepping.

`rollout` starts each call's solver from a zero warm start (it cannot return the final one to
pass back in), so the constraint solver cold-starts every control step; for the same reason the
backend's results are independent of where a checkpoint was taken.

Per-environment model parameters need one MjModel per environment. Until the first
`set_model_field`, all environments share the nominal model (faster: one model stays in cache).
The copies are of the physics-only model where the caller can make one (physics_copy.py: without
visual meshes and textures, simulating bit for bit like the nominal one), else of the nominal model.
Writing a field copies the changed rows into those environments' models; that write, like the
sensor refresh after a reset of a model with sensors, visits only the masked environments.

When a value becomes non-finite or huge, MuJoCo resets that environment's data itself and warns
"the simulation is unstable". The backend sees the reset (the environment's clock went back) and
reports it in `unstable`, so the env resets it properly and counts it; the warnings themselves are
not printed (nor written to MUJOCO_LOG.TXT in the working directory). Other MuJoCo warnings are
printed once each.
"""

from __future__ import annotations

import copy
import os
import sys

import mujoco
import numpy as np
import torch

from robolearn.errors import one_line
from robolearn.memory import gib, require
from robolearn.physics.base import INERTIAL_FIELDS, PhysicsBackend, check_field, home_act, model_attr
from robolearn.physics.physics_copy import CopyMaker
from robolearn.physics.rollout_schedule import RolloutSchedule

_FULL = mujoco.mjtState.mjSTATE_FULLPHYSICS


_printed_warnings: set[str] = set()


def _on_mujoco_warning(message: str) -> None:
    """MuJoCo's warning hook: instability is reported per environment (`unstable`), not printed;
    any other warning is printed once."""
    if "simulation is unstable" in message or message in _printed_warnings:
        return
    _printed_warnings.add(message)
    print(f"MuJoCo warning: {message}", file=sys.stderr)


def _install_warning_hook() -> None:
    if mujoco.get_mju_user_warning() is None:  # a hook the user installed stays theirs
        mujoco.set_mju_user_warning(_on_mujoco_warning)


def _state_slice(model: mujoco.MjModel, component: mujoco.mjtState) -> slice:
    """Columns of `component` inside a FULLPHYSICS state row (components are ordered by bit)."""
    bit = int(component)
    start = mujoco.mj_stateSize(model, int(_FULL) & (bit - 1))
    return slice(start, start + mujoco.mj_stateSize(model, bit))


class MujocoBackend(PhysicsBackend):
    name = "mujoco"
    param_dtype = torch.float64

    def __init__(
        self, model: mujoco.MjModel, num_envs: int, device: torch.device | str = "cpu", num_threads: int = 0,
        physics_copy: CopyMaker | None = None, reset_sensors: str = "exact",
    ):
        """`physics_copy`: makes (the physics-only model or None, what it left out or why not),
        called at the first per-environment parameter write."""
        super().__init__(model, num_envs, torch.device(device), reset_sensors)
        self._physics_copy = physics_copy
        self.copied_model: tuple[mujoco.MjModel, str] | None = None
        """(the model each environment holds a copy of, what it leaves out or why it is the nominal
        one), once model fields are written per environment."""
        _install_warning_hook()
        self.num_threads = min(num_threads or len(os.sched_getaffinity(0)), num_envs)  # no idle threads
        self.schedule = RolloutSchedule(model, num_envs, self.num_threads)
        self._models = [model] * num_envs
        self._per_env_models = False

        data = mujoco.MjData(model)
        data.act[:] = home_act(model)
        mujoco.mj_forward(model, data)
        row = np.empty(mujoco.mj_stateSize(model, _FULL))
        mujoco.mj_getState(model, data, row, _FULL)
        self._initial_row = row  # a fresh MjData's state: also history buffers, plugin state, ...
        self._state = np.tile(row, (num_envs, 1))
        self._sensor_np = np.tile(data.sensordata, (num_envs, 1))
        self._scratch = data
        self._buffers: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._slices = {
            "time": _state_slice(model, mujoco.mjtState.mjSTATE_TIME),
            "qpos": _state_slice(model, mujoco.mjtState.mjSTATE_QPOS),
            "qvel": _state_slice(model, mujoco.mjtState.mjSTATE_QVEL),
            "act": _state_slice(model, mujoco.mjtState.mjSTATE_ACT),
        }
        self._time_before = np.zeros(num_envs)
        self._unstable_np = np.zeros(num_envs, dtype=bool)
        self._fields: dict[str, torch.Tensor] = {}
        self._field_views: dict[str, list[np.ndarray]] = {}

        def zeros(*shape: int) -> torch.Tensor:
            return torch.zeros(num_envs, *shape, dtype=torch.float32, device=self.device)

        self.qpos, self.qvel, self.act = zeros(model.nq), zeros(model.nv), zeros(model.na)
        self.sensordata, self.time = zeros(model.nsensordata), zeros()
        self._refresh()

    @property
    def host_threads(self) -> bool:
        """A thread pool of its own steps the environments (see PhysicsBackend.host_threads)."""
        return self.schedule.uses_pool

    # --- stepping -------------------------------------------------------------------------------
    def _step_buffers(self, substeps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if substeps not in self._buffers:
            n, m = self.num_envs, self.model
            self._buffers[substeps] = (
                np.zeros((n, substeps, m.nu)),
                np.zeros((n, substeps, self._state.shape[1])),
                np.zeros((n, substeps, m.nsensordata)),
            )
        return self._buffers[substeps]

    def step(self, ctrl: torch.Tensor, substeps: int) -> None:
        ctrl_buf, state_out, sensor_out = self._step_buffers(substeps)
        ctrl_np = ctrl.detach().to("cpu", torch.float64).numpy()
        ctrl_buf[:] = ctrl_np if ctrl_np.ndim == 3 else ctrl_np[:, None, :]  # rollout takes one per step
        self._time_before[:] = self._state[:, self._slices["time"].start]
        self.schedule.rollout(self._models, self._state, ctrl_buf, substeps, state_out, sensor_out)
        self._state[:] = state_out[:, -1]
        self._sensor_np[:] = sensor_out[:, -1]
        # an automatic reset inside the step restarted that environment's clock from 0
        expected = self._time_before + (substeps - 0.5) * self.model.opt.timestep
        np.less(self._state[:, self._slices["time"].start], expected, out=self._unstable_np)
        self.unstable.copy_(torch.from_numpy(self._unstable_np))
        self._refresh()

    def reset(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        m = mask.detach().cpu().numpy()
        if not m.any():
            return
        s = self._slices
        self._state[m] = self._initial_row
        self._state[m, s["qpos"]] = qpos.detach().to("cpu", torch.float64).numpy()[m]
        self._state[m, s["qvel"]] = qvel.detach().to("cpu", torch.float64).numpy()[m]
        if self.model.nsensordata:
            # Sensors of a fresh state need mj_forward; like the model-field writes below, this
            # visits only the environments being reset (one MjModel/MjData call each).
            for i in np.flatnonzero(m):
                mujoco.mj_setState(self._models[i], self._scratch, self._state[i], _FULL)
                mujoco.mj_forward(self._models[i], self._scratch)
                self._sensor_np[i] = self._scratch.sensordata
            self._sensor_np[np.ix_(m, self.blank_at_reset)] = 0.0  # physics.reset_sensors=kinematic
        self._refresh()

    def set_velocity(self, qvel: torch.Tensor, mask: torch.Tensor) -> None:
        m = mask.detach().cpu().numpy()
        if m.any():
            self._state[m, self._slices["qvel"]] = qvel.detach().to("cpu", torch.float64).numpy()[m]
            self._refresh()

    def _refresh(self) -> None:
        s = self._slices
        for name, sl in s.items():
            src = torch.from_numpy(self._state[:, sl])
            getattr(self, name).copy_(src.squeeze(1) if name == "time" else src)
        self.sensordata.copy_(torch.from_numpy(self._sensor_np))

    # --- per-environment model parameters -----------------------------------------------------
    def model_field(self, field: str) -> torch.Tensor:
        check_field(field)
        if field not in self._fields:
            nominal = self.default_model_field(field)
            self._fields[field] = nominal.expand(self.num_envs, *nominal.shape).clone()
        return self._fields[field]

    def set_model_field(self, field: str, values: torch.Tensor, mask: torch.Tensor) -> None:
        current = self.model_field(field)
        m = mask.detach().cpu().numpy()
        ids = np.flatnonzero(m)
        if ids.size == 0:
            return
        rows = values.detach().to("cpu", self.param_dtype).numpy()[ids]
        current[torch.from_numpy(ids).to(current.device)] = torch.from_numpy(rows).to(current.device)
        if not self._per_env_models:
            self._copy_models(field)
        if field not in self._field_views:  # numpy views into each model's memory, made once
            self._field_views[field] = [model_attr(m, field) for m in self._models]
        views = self._field_views[field]
        derived = field in INERTIAL_FIELDS
        for i, row in zip(ids, rows):  # only the masked environments (see module docstring)
            views[i][...] = row
            if derived:  # subtree masses, inverse weights, ... follow the new mass/inertia
                mujoco.mj_setConst(self._models[i], self._scratch)

    def _copy_models(self, field: str) -> None:
        base, note = None, "no model file to compile a physics-only copy from"
        if self._physics_copy is not None:
            try:
                base, note = self._physics_copy()
            except Exception as exc:  # the nominal model is always a correct fallback
                note = f"the physics-only copy failed: {type(exc).__name__}: {one_line(exc)}"
        kind = "physics-only MjModel" if base is not None else f"MjModel (no physics-only copy: {note})"
        base = base if base is not None else self.model
        size = mujoco.mj_sizeModel(base)
        require(self.num_envs * size, f"env.num_envs={self.num_envs} with per-environment model parameters "
                f"({field}: one {gib(size)} {kind} per environment)",
                "lower env.num_envs, or randomize no model field (randomization=none)")  # fmt: skip
        self._models = [copy.deepcopy(base) for _ in range(self.num_envs)]
        self._scratch = mujoco.MjData(base)
        self.schedule.use_model(base)
        self._per_env_models = True
        self.copied_model = (base, note)

    # --- checkpointing --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, torch.Tensor]:
        state = {"physics_state": torch.from_numpy(self._state.copy()), "sensordata": torch.from_numpy(self._sensor_np.copy())}
        state.update({f"field/{k}": v.clone() for k, v in self._fields.items()})
        return state

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self._state[:] = state["physics_state"].numpy()
        self._sensor_np[:] = state["sensordata"].numpy()
        everyone = torch.ones(self.num_envs, dtype=torch.bool)
        for key, values in state.items():
            if key.startswith("field/"):
                self.set_model_field(key.removeprefix("field/"), values, everyone)
        self._refresh()

    def close(self) -> None:
        self.schedule.close()
