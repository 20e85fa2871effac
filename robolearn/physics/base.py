"""The physics backend contract: N copies of one MuJoCo model, stepped together.

A backend is built from an `MjModel`, a number of environments and a torch device. Everything it
exposes is a torch tensor on that device with a leading [num_envs] dimension, current after
every `step` and `reset` (read the attributes each time: a backend may re-bind them):

    qpos        [N, nq]          generalized positions
    qvel        [N, nv]          generalized velocities
    act         [N, na]          actuator activations (empty when na == 0)
    sensordata  [N, nsensordata] sensor readings: after a step, those MuJoCo computed in the last
                                 substep (before its integration); after a reset, of the new state
                                 (under physics.reset_sensors=kinematic, sensors that need the
                                 constraint solve read 0 there: RESET_SENSORS)
    time        [N]              simulation time of each environment
    unstable    [N] bool         the engine itself reset this environment during the last step
                                 (native MuJoCo's automatic reset after a non-finite or huge value;
                                 engines that let the value through leave it False)

State tensors are float32 (the learner's dtype) whatever the engine computes in; an engine that
integrates in float64 keeps its own float64 state, so stepping never round-trips through float32.

Per-environment model parameters (domain randomization) are whole MjModel fields, written with
`set_model_field(field, values[N, *shape], mask)`: only environments where `mask` is True change.
`opt.gravity` is one of them (a per-environment gravity vector, [N, 3]).

Controls are held for the whole decimated step ([N, nu]) or given per physics step
([N, substeps, nu]): that is how the env delays actions by a whole number of physics steps
(actuator latency) identically on every backend.

Resets and parameter writes take a boolean mask, not a list of indices, so the caller never has
to synchronize with the host to find which environments ended.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import mujoco
import numpy as np
import torch

from robolearn.errors import UserError, one_line

# MjModel fields a backend can vary per environment. Each is indexed by one kind of model entity.
RANDOMIZABLE_FIELDS: dict[str, mujoco.mjtObj] = {
    "body_mass": mujoco.mjtObj.mjOBJ_BODY,
    "body_ipos": mujoco.mjtObj.mjOBJ_BODY,
    "body_inertia": mujoco.mjtObj.mjOBJ_BODY,
    "geom_friction": mujoco.mjtObj.mjOBJ_GEOM,
    "dof_damping": mujoco.mjtObj.mjOBJ_JOINT,
    "dof_armature": mujoco.mjtObj.mjOBJ_JOINT,
    "dof_frictionloss": mujoco.mjtObj.mjOBJ_JOINT,
    "jnt_stiffness": mujoco.mjtObj.mjOBJ_JOINT,
    "actuator_gainprm": mujoco.mjtObj.mjOBJ_ACTUATOR,
    "actuator_biasprm": mujoco.mjtObj.mjOBJ_ACTUATOR,
    "actuator_forcerange": mujoco.mjtObj.mjOBJ_ACTUATOR,
    "opt.gravity": None,  # a model option, not an entity's row: [3] per environment
}
# Of those, the fields MuJoCo derives other model constants from (subtree masses, inverse
# weights, actuator acc0): writing them requires mj_setConst / mujoco_warp's set_const.
INERTIAL_FIELDS = frozenset({"body_mass", "body_inertia", "body_ipos", "dof_armature"})

RESET_SENSORS = ("exact", "kinematic")
"""physics.reset_sensors: what a reset environment's sensors read before its next step. exact: the
readings of a full forward of the new state. kinematic: position- and velocity-stage sensors as
exact; the sensors that need the constraint solve (touch, accelerometer, force, ...) read 0 until
the environment's next physics step, which spares MuJoCo Warp the solver at every reset."""


def home_act(model: mujoco.MjModel) -> np.ndarray:
    """The actuator activations an episode starts with [na]: those of the model's keyframe named
    `home` (where its qpos comes from: scene.default_pose), e.g. an intvelocity actuator's target
    or a muscle's activation; else 0, as in a fresh MjData."""
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")
    return model.key_act[key].copy() if key >= 0 and model.na else np.zeros(model.na)


def solver_sensors(model: mujoco.MjModel) -> list[int]:
    """The sensors whose readings need MuJoCo's acceleration stage (forces, accelerations, contact)."""
    return [i for i in range(model.nsensor) if model.sensor_needstage[i] == mujoco.mjtStage.mjSTAGE_ACC]


def unsupported_model(backend: str, exc: Exception) -> UserError:
    """A model feature an engine does not implement (it raises NotImplementedError), as one line."""
    return UserError(f"physics={backend} cannot run this model, which uses what it does not implement "
                     f"({one_line(exc).rstrip('.')}); physics=mujoco runs every model MuJoCo compiles (a task's sim: "
                     "options can change the solver, integrator or cone)")  # fmt: skip


class PhysicsBackend(ABC):
    """N environments of one model; see the module docstring for the tensors it exposes."""

    name: str = "abstract"

    param_dtype: torch.dtype = torch.float32
    """dtype of model-field tensors (the engine's own precision)."""
    host_threads: bool = False
    """Steps the environments on this machine's CPU cores with its own thread pool. PyTorch's CPU
    threads spin for a while after each parallel op and take cores from such a pool, so the
    runner collects rollouts with one PyTorch thread when this is true (rl/runner.py)."""
    fields_traceable: bool = False
    """set_model_field is torch work that torch.compile can trace (fields other than the inertial
    ones, whose derived constants the engine recomputes): env.compile then compiles the reset
    events too."""
    graph_safe: bool = False
    """write_reset/set_model_field can be captured in a torch CUDA graph, and step and refresh can
    run between graph replays (no host syncs, fixed buffers): the env then replays its own work
    as graphs."""

    def __init__(self, model: mujoco.MjModel, num_envs: int, device: torch.device, reset_sensors: str = "exact"):
        if reset_sensors not in RESET_SENSORS:
            raise UserError(f"physics.reset_sensors={reset_sensors} is not valid; valid: {', '.join(RESET_SENSORS)}")
        self._nominal_fields: dict[str, torch.Tensor] = {}
        self.model = model
        """The nominal host model (names, sizes, default parameter values)."""
        self.num_envs = num_envs
        self.device = torch.device(device)
        self.qpos: torch.Tensor
        self.qvel: torch.Tensor
        self.act: torch.Tensor
        self.sensordata: torch.Tensor
        self.time: torch.Tensor
        self.unstable = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        self.reset_sensors = reset_sensors
        self.blank_at_reset = np.zeros(model.nsensordata, dtype=bool)
        """sensordata columns that read 0 right after a reset (physics.reset_sensors=kinematic)."""
        if reset_sensors == "kinematic":
            for i in solver_sensors(model):
                self.blank_at_reset[model.sensor_adr[i] : model.sensor_adr[i] + model.sensor_dim[i]] = True

    @abstractmethod
    def step(self, ctrl: torch.Tensor, substeps: int) -> None:
        """Advance every environment `substeps` physics steps: hold ctrl [N, nu] for all of them,
        or apply ctrl[:, k] [N, substeps, nu] during physics step k."""

    @abstractmethod
    def reset(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """Where mask [N] is True: the state of a fresh MjData (time 0, empty actuator-delay
        history) with the given qpos/qvel ([N, nq], [N, nv]) and the home keyframe's activations
        (home_act: zero without one)."""

    def write_reset(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """reset() in two halves for the env's CUDA graphs: the new state here, what is derived from
        it (sensors) in refresh(mask). A backend that splits them (`refreshes`) leaves the masked
        rows of sensordata at 0 until then: what kinematic mode gives solver-stage sensors, so the
        env skips the refresh where its terms read only those (envs/sensor_reads.py). A backend
        whose reset does both at once needs no refresh."""
        self.reset(mask, qpos, qvel)

    refreshes: bool = False
    """refresh() has work to do (write_reset leaves derived quantities for it)."""

    def refresh(self, mask: torch.Tensor) -> None:
        """After write_reset: recompute what observations read from the state (sensor readings) in
        the worlds where mask is True, leaving the others' readings as they were."""

    def mark_stale(self, mask: torch.Tensor) -> None:
        """Instead of refresh(mask), at the end of an env step whose terms read none of what it
        would compute (envs/sensor_reads.py): a backend that refreshes lazily does it at the next
        read of `sensordata` before its next step; this one refreshes now."""
        self.refresh(mask)

    def refresh_stale(self) -> None:
        """Do now what mark_stale left for the next read (nothing here)."""

    @abstractmethod
    def set_velocity(self, qvel: torch.Tensor, mask: torch.Tensor) -> None:
        """Where mask [N] is True, replace the generalized velocities with qvel [N, nv] and keep
        the rest of the state (time, warm start, actuator history): a push. Velocity-dependent
        sensors show the change after the next step."""

    @abstractmethod
    def model_field(self, field: str) -> torch.Tensor:
        """Current per-environment values of an MjModel field, [N, *field_shape]."""

    @abstractmethod
    def set_model_field(self, field: str, values: torch.Tensor, mask: torch.Tensor) -> None:
        """Write values [N, *field_shape] into the environments where mask is True."""

    @abstractmethod
    def state_dict(self) -> dict[str, torch.Tensor]:
        """Everything needed to continue bit-exactly: physics state (positions, velocities,
        activations, time, warmstart, actuator-delay history, applied forces, mocap poses) and
        the per-environment model fields."""

    @abstractmethod
    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore what `state_dict` returned."""

    def close(self) -> None:
        """Release threads or device memory; the backend is unusable afterwards."""

    def health(self) -> str | None:
        """None, or why the simulation can no longer be trusted (e.g. a buffer overflowed) and
        which setting fixes it. May synchronize with the device: call it once per iteration."""
        return None

    def default_model_field(self, field: str) -> torch.Tensor:
        """The nominal (MJCF) value of a field, [*field_shape], on the device. Do not modify."""
        if field not in self._nominal_fields:
            check_field(field)
            self._nominal_fields[field] = torch.as_tensor(
                model_attr(self.model, field), dtype=self.param_dtype, device=self.device
            )
        return self._nominal_fields[field]


def model_attr(model, field: str):
    """model.<field> for a dotted field name ('opt.gravity'); works on MjModel and its Warp/MJX
    counterparts, and returns a writable view where the model is a MuJoCo one."""
    value = model
    for part in field.split("."):
        value = getattr(value, part)
    return value


def check_field(field: str) -> None:
    if not isinstance(field, str) or field not in RANDOMIZABLE_FIELDS:
        valid = ", ".join(RANDOMIZABLE_FIELDS)
        raise UserError(f"model field '{field}' cannot be randomized per environment; valid: {valid}")
