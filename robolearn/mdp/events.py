"""Event terms: f(env, mask, **params). They act only where mask [num_envs] is True.

Reset events write the next episode's initial state into env.reset_qpos / env.reset_qvel; the
env hands those to the backend once, after all reset events ran. Randomization events write
per-environment model fields through the backend.

A `[low, high]` range param may arrive as a [num_envs, 2] tensor instead of two numbers: that
is an adaptive range (automatic domain randomization), one current range per environment.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from robolearn import draws
from robolearn.errors import UserError
from robolearn.mdp.constants import constant
from robolearn.mdp.state import needs_floating_base
from robolearn.scene.entities import Actuators, FieldRows, Joints

TERM_KIND = "event"
"""Every term in this module is an event term (robolearn/mdp/kinds.py)."""


def _bounds(env, range_, ndim: int) -> tuple:
    """(low, high) as numbers, or for an adaptive range as per-env tensors shaped to broadcast
    against a [num_envs, ...] sample with `ndim` dimensions."""
    if isinstance(range_, torch.Tensor):
        view = (env.num_envs,) + (1,) * (ndim - 1)
        return range_[:, 0].reshape(view), range_[:, 1].reshape(view)
    low, high = (float(v) for v in range_)
    return low, high


def _uniform(env, shape: tuple[int, ...], range_) -> torch.Tensor:
    low, high = _bounds(env, range_, len(shape))
    if isinstance(low, float) and low <= high:  # one kernel
        return draws.uniform(env, shape, low, high)
    return low + (high - low) * draws.uniform(env, shape)


def _log(value):
    return torch.log(value) if isinstance(value, torch.Tensor) else math.log(value)


def reset_joints_uniform(
    env,
    mask: torch.Tensor,
    position_range: tuple[float, float],
    velocity_range: tuple[float, float] = (0.0, 0.0),
    joints: Joints | None = None,
    within_limits: bool = True,
    limit_fraction: float | None = None,
) -> None:
    """Initial joint positions = default + U(position_range), velocities = U(velocity_range).
    within_limits: a limited joint's position is clipped into its range (a start past a joint's
    limit is not a state the robot can be in, and MuJoCo's limit would kick it back).
    limit_fraction: a limited joint's offset from its default is drawn from position_range narrowed
    to at most this fraction of half the joint's range either side (0.5: a quarter of the range), so
    that one range suits a 3 rad hinge and a 4 cm slide alike, and from the part of that window
    inside the joint's limits (no starts pile up on a limit); unlimited joints keep position_range."""
    joints = env.scene.joints(joints)
    qadr, dadr = joints.qpos, joints.dof
    default = env.default_qpos[:, qadr]
    shape = tuple(default.shape)
    limits = env.scene.qpos_limits[qadr]
    if limit_fraction is None:
        position = default + _uniform(env, shape, position_range)
    else:
        if not 0.0 < limit_fraction <= 1.0:
            raise UserError(f"reset_joints_uniform: limit_fraction={limit_fraction} is out of range; valid: 0 < "
                            f"limit_fraction <= 1 (or null: position_range as given)")  # fmt: skip
        cap = limit_fraction * (limits[:, 1] - limits[:, 0]) / 2  # inf for an unlimited joint
        low, high = (torch.clamp(v if isinstance(v, torch.Tensor) else torch.full_like(cap, v), -cap, cap)
                     for v in _bounds(env, position_range, len(shape)))  # fmt: skip
        # and inside the joint's limits: a default near a limit draws from the part of the window
        # that is reachable instead of piling clipped starts onto the limit
        low = torch.minimum(torch.maximum(low, limits[:, 0] - default), limits[:, 1] - default)
        high = torch.maximum(torch.minimum(high, limits[:, 1] - default), low)
        position = default + low + (high - low) * draws.uniform(env, shape)
    if within_limits:
        position = torch.clamp(position, limits[:, 0], limits[:, 1])
    env.reset_qpos[:, qadr] = position
    env.reset_qvel[:, dadr] = _uniform(env, shape, velocity_range)


def randomize_model_field(
    env,
    mask: torch.Tensor,
    field: str,
    range: tuple[float, float],
    names: FieldRows | None = None,
    element: int | None = None,
    operation: str = "scale",
    distribution: str = "uniform",
    per_element: bool = False,
) -> None:
    """Draw one value per environment and entity and apply it to a model field (mass, friction, ...).

    field: one of robolearn.physics.base.RANDOMIZABLE_FIELDS; names: its entities (None: all).

    operation: `scale` (nominal * value), `add` (nominal + value) or `abs` (value).
    distribution: `uniform` or `log_uniform` (uniform in log space; for scales).
    element: a column of a multi-column field (e.g. 0 = sliding friction, gain of gainprm).
    per_element: draw each column separately (a centre-of-mass offset in x, y and z) instead of
    one value for the entity's whole row.
    """
    rows = env.scene.field_rows(field, names).rows
    nominal = env.physics.default_model_field(field)[rows]
    if element is not None:
        nominal = nominal[..., element]
    shape = (env.num_envs, *nominal.shape) if per_element else (env.num_envs, nominal.shape[0])
    if distribution == "uniform":
        sample = _uniform(env, shape, range)
    elif distribution == "log_uniform":
        low, high = _bounds(env, range, len(shape))
        sample = torch.exp(_uniform(env, shape, (0.0, 1.0)) * (_log(high) - _log(low)) + _log(low))
    else:
        raise UserError(f"randomize_model_field: unknown distribution '{distribution}'; valid: uniform, log_uniform")
    sample = sample.to(nominal.dtype).reshape(shape + (1,) * (nominal.dim() + 1 - len(shape)))
    if operation == "scale":
        values = nominal * sample
    elif operation == "add":
        values = nominal + sample
    elif operation == "abs":
        values = sample.expand((env.num_envs, *nominal.shape))
    else:
        raise UserError(f"randomize_model_field: unknown operation '{operation}'; valid: scale, add, abs")
    new = env.physics.model_field(field).clone()
    if element is None:
        new[:, rows] = values
    else:
        new[:, rows, element] = values
    env.physics.set_model_field(field, new, mask)


NONNEGATIVE_FIELDS = ("body_mass", "body_inertia", "geom_friction", "dof_damping", "dof_armature", "dof_frictionloss")
"""Model fields MuJoCo needs >= 0 (a negative mass or damping makes the simulation diverge at once)."""
POSITIVE_FIELDS = ("body_mass", "body_inertia")
"""Of those, the ones a body that has them must keep > 0: a moving body of mass or inertia 0 makes the
mass matrix singular (NaN at the first step). A massless body (the world, a frame) may stay 0."""


def _check_model_field_range(env, field: str, range: tuple[float, float], names: FieldRows | None = None,
                             element: int | None = None, operation: str = "scale", **_) -> None:  # fmt: skip
    """At build: a range that would make a field MuJoCo needs >= 0 negative anywhere (its extremes
    applied to the model's own values, ADR's widest range included) is a UserError."""
    if field not in NONNEGATIVE_FIELDS or operation not in ("scale", "add", "abs"):
        return
    low, high = (float(v) for v in range)
    nominal = env.physics.default_model_field(field)[env.scene.field_rows(field, names).rows]
    if element is not None:
        nominal = nominal[..., element]
    nominal = nominal.double()
    if operation == "scale":
        reached = torch.minimum(nominal * low, nominal * high)
    elif operation == "add":
        reached = nominal + min(low, high)
    else:
        reached = torch.full_like(nominal, min(low, high))
    worst = float(reached.min()) if reached.numel() else 0.0
    if worst < 0:
        raise UserError(f"{field} {operation} range [{low:g}, {high:g}] makes {field} {worst:.3g}; valid: a range that "
                        f"keeps it >= 0 (MuJoCo diverges on a negative {field.split('_', 1)[1]})")  # fmt: skip
    massive = reached[nominal > 0]
    if field in POSITIVE_FIELDS and massive.numel() and float(massive.min()) <= 0:
        raise UserError(f"{field} {operation} range [{low:g}, {high:g}] makes a body's {field.split('_', 1)[1]} 0; "
                        f"valid: a range that keeps it > 0 (a moving body without "
                        f"{field.split('_', 1)[1]} has a singular mass matrix)")  # fmt: skip


randomize_model_field.check_values = _check_model_field_range  # type: ignore[attr-defined]


@needs_floating_base
def reset_root_state(
    env,
    mask: torch.Tensor,
    xy_range: tuple[float, float] = (0.0, 0.0),
    yaw_range: tuple[float, float] = (-math.pi, math.pi),
    velocity_range: tuple[float, float] = (0.0, 0.0),
) -> None:
    """Floating base at its default pose on the env's tile, shifted, turned and moving at random.

    The tile is env.env_origins (the world origin without terrain); the base is shifted by
    U(xy_range) in x and y, turned by U(yaw_range) about z, and every base velocity component
    is drawn from U(velocity_range)."""
    root = env.scene.root
    q, d = root.qpos_adr, root.dof_adr
    n = env.num_envs
    position, orientation = env.reset_qpos[:, q : q + 3], env.reset_qpos[:, q + 3 : q + 7]
    position.add_(env.env_origins)
    position[:, :2].add_(_uniform(env, (n, 2), xy_range))
    half_yaw = 0.5 * _uniform(env, (n, 1), yaw_range)
    # the yaw quaternion (cos, 0, 0, sin) times the default orientation (w, x, y, z), as
    # cos * (w, x, y, z) + sin * (-z, -y, x, w): the same products and sums as written out by hand
    turned = orientation.index_select(1, constant((3, 2, 1, 0), orientation.device, torch.long))
    turned *= constant((-1.0, -1.0, 1.0, 1.0), orientation.device, orientation.dtype)
    orientation.copy_(torch.cos(half_yaw) * orientation + torch.sin(half_yaw) * turned)
    env.reset_qvel[:, d : d + 6] = _uniform(env, (n, 6), velocity_range)


def randomize_pd_gains(
    env,
    mask: torch.Tensor,
    kp_range: tuple[float, float],
    kd_range: tuple[float, float],
    actuators: Actuators | None = None,
) -> None:
    """Scale each position servo's stiffness and damping by U(kp_range) and U(kd_range).

    Drawn per env and actuator: gain and position bias move together (the servo keeps its
    target), the velocity bias separately."""
    rows = env.scene.actuators(actuators).ids
    n = env.num_envs
    gain, bias = env.physics.model_field("actuator_gainprm").clone(), env.physics.model_field("actuator_biasprm").clone()
    nominal_gain = env.physics.default_model_field("actuator_gainprm")[rows]
    nominal_bias = env.physics.default_model_field("actuator_biasprm")[rows]
    count = nominal_gain.shape[0]
    kp = _uniform(env, (n, count), kp_range).to(gain.dtype)
    kd = _uniform(env, (n, count), kd_range).to(gain.dtype)
    gain[:, rows, 0] = nominal_gain[:, 0] * kp
    bias[:, rows, 1] = nominal_bias[:, 1] * kp
    bias[:, rows, 2] = nominal_bias[:, 2] * kd
    env.physics.set_model_field("actuator_gainprm", gain, mask)
    env.physics.set_model_field("actuator_biasprm", bias, mask)


@needs_floating_base
def push_by_setting_velocity(
    env,
    mask: torch.Tensor,
    velocity_range: tuple[float, float],
    angular_range: tuple[float, float] = (0.0, 0.0),
) -> None:
    """A push: add a random velocity to the floating base, mid-episode (an interval event).

    U(velocity_range) m/s goes to its world x and y velocity and U(angular_range) rad/s to each
    of its angular velocity components."""
    d = env.scene.root.dof_adr
    qvel = env.physics.qvel.clone()
    qvel[:, d : d + 2] += _uniform(env, (env.num_envs, 2), velocity_range)
    qvel[:, d + 3 : d + 6] += _uniform(env, (env.num_envs, 3), angular_range)
    env.physics.set_velocity(qvel, mask)


class randomize_gravity:  # noqa: N801 (a term name, like the functions)
    """Tilt gravity by U(tilt_range) rad: a slope the robot cannot see, a miscalibrated IMU.

    The tilt is from the model's gravity direction, toward a uniformly drawn azimuth; the
    magnitude is kept."""

    def __init__(self, env, tilt_range: tuple[float, float]):
        # The nominal direction, two unit vectors across it and the magnitude, computed once on
        # the host (the nominal gravity never changes), so the event itself never syncs.
        g = np.asarray(env.scene.model.opt.gravity, dtype=np.float64)
        self.magnitude = float(np.linalg.norm(g))
        if self.magnitude == 0:
            raise UserError("randomize_gravity: the model has no gravity to tilt (opt.gravity is 0)")
        down = g / self.magnitude
        helper = np.array([1.0, 0.0, 0.0]) if abs(down[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        side = np.cross(down, helper)
        side /= np.linalg.norm(side)
        other = np.cross(down, side)
        dtype = env.physics.param_dtype
        self.down, self.side, self.other = (torch.tensor(v, dtype=dtype, device=env.device) for v in (down, side, other))

    def __call__(self, env, mask: torch.Tensor, tilt_range) -> None:
        tilt = _uniform(env, (env.num_envs, 1), tilt_range).to(self.down.dtype)
        azimuth = _uniform(env, (env.num_envs, 1), (0.0, 2 * math.pi)).to(self.down.dtype)
        lateral = torch.cos(azimuth) * self.side + torch.sin(azimuth) * self.other
        gravity = self.magnitude * (torch.cos(tilt) * self.down + torch.sin(tilt) * lateral)
        env.physics.set_model_field("opt.gravity", gravity, mask)

    def state_dict(self) -> dict:
        return {}  # constants of the model

    def load_state_dict(self, state: dict) -> None:
        pass


class randomize_action_delay:  # noqa: N801 (a term name, like the functions)
    """Actuator latency: each env's actions take effect U{steps[0]..steps[1]} physics steps late.

    The delay is drawn per env, bounds inclusive. At reset, an episode's first delayed steps hold
    the rest pose (the controls of a zero action)."""

    def __init__(self, env, steps: list[int]):
        self.check(steps)
        self.max_steps = int(steps[1])
        env.actions.enable_delay(self.max_steps)

    @staticmethod
    def check(steps: list[int]) -> None:
        """The params' values, without an env: also run for an event the preset does not build
        (building it would enable the delay buffers)."""
        low, high = (int(v) for v in steps)
        if not 0 <= low <= high:
            raise UserError(f"randomize_action_delay: steps must be 0 <= low <= high, got {list(steps)}")

    def __call__(self, env, mask: torch.Tensor, steps) -> None:
        low, high = _bounds(env, steps, 1)
        drawn = torch.floor(_uniform(env, (env.num_envs,), (0.0, 1.0)) * (high - low + 1) + low)
        drawn = drawn.clamp(max=self.max_steps).long()
        torch.where(mask, drawn, env.actions.delay, out=env.actions.delay)
