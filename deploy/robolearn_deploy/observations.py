"""Policy input from robot readings, following the observation layout in robot.yaml.

Each term in the layout names the `source` it was computed from in training (robolearn's term
function) and its params. Here every source has a numpy twin that reads the same quantity from
a RobotState; the builder resolves names to indices once, when it is made, so each control step
costs a handful of array copies. Then the whole vector is scaled and clipped as in training.

A term with `history: K` in robot.yaml feeds the policy its last K values, oldest first, each
scaled and clipped as it was when it was the newest (training's order). The builder then writes
each tick's values into a current block of its own and shifts every history by one step with a
single preallocated gather ([previous observation | current] -> observation, the same indices
training uses). The first `build` after `reset()` fills every slot with that tick's value, as a
training episode starts; the ControlLoop resets the builder when it starts or is reset (also to
clear a watchdog trip), so a trip always restarts the history.

The robot's own sensors (the `sensor` term: accelerometers, touch pads, force/torque cells, ...)
are read from `state.signals[<sensor name>]`, each as wide as robot.yaml's `sensors` describes.

A robot-specific source (a foot contact switch, a joystick command, ...) is added with
`register_source`; a layout that names a source this runtime lacks is refused when the builder
is made, never at run time.
"""

from __future__ import annotations

import math

from collections.abc import Callable, Sequence

import numpy as np

from robolearn_deploy.bundle import Bundle, ObsTerm
from robolearn_deploy.errors import DeployError
from robolearn_deploy.robot import RobotState, driver_names

Writer = Callable[[RobotState, np.ndarray, np.ndarray], None]
"""writer(state, last_action, out) fills `out`, the term's slice of the observation."""

SourceFactory = Callable[[ObsTerm, "SourceContext"], Writer]


class SourceContext:
    """What a source factory may look up: the bundle and the robot's joint order."""

    def __init__(self, bundle: Bundle, joint_names: Sequence[str], out: np.ndarray | None = None):
        """out: a float32 [D] buffer to build into (e.g. Policy.input_buffer), else its own."""
        self.bundle = bundle
        self.joint_names = driver_names(joint_names)
        self._index = {name: i for i, name in enumerate(self.joint_names)}
        self.signals: dict[str, int] = {}
        """The signals the layout reads from `state.signals`, with their widths."""

    def need_signal(self, term: ObsTerm, name: str, width: int) -> None:
        """The layout reads `state.signals[name]`, `width` values; two terms that need it at two
        widths cannot both be right."""
        if self.signals.setdefault(name, width) != width:
            raise DeployError(f"observation '{term.name}' reads signal {name!r} as {width} values, another term as "
                              f"{self.signals[name]}: robot.yaml is inconsistent; re-export the bundle")  # fmt: skip

    def joint_indices(self, term: ObsTerm) -> np.ndarray:
        joints = term.params.get("joints")
        if not joints:
            raise DeployError(f"observation '{term.name}' ({term.source}) names no joints in robot.yaml; re-export the bundle")
        missing = [j for j in joints if j not in self._index]
        if missing:
            raise DeployError(
                f"the robot has no joint {missing[0]!r} (needed by observation '{term.name}'); robot joints: "
                f"{', '.join(self.joint_names)}"
            )
        return np.array([self._index[j] for j in joints], dtype=np.intp)

    def expect_width(self, term: ObsTerm, width: int) -> None:
        """The term's width per step (its slice over its history) must be what its source gives."""
        if term.width != width:
            per_step = " per step" if term.history > 1 else ""
            raise DeployError(
                f"observation '{term.name}' ({term.source}) has {term.width} values{per_step} in robot.yaml but "
                f"its source gives {width}: layout mismatch; re-export the bundle"
            )

    def default_pose(self, term: ObsTerm) -> np.ndarray:
        pose = self.bundle.default_pose
        joints = term.params["joints"]
        missing = [j for j in joints if j not in pose]
        if missing:
            raise DeployError(f"robot.yaml has no default pose for joint {missing[0]!r} (observation '{term.name}')")
        return np.array([pose[j] for j in joints])


def _joint_pos(term: ObsTerm, ctx: SourceContext) -> Writer:
    idx = ctx.joint_indices(term)
    ctx.expect_width(term, len(idx))
    if term.params.get("relative"):
        default = ctx.default_pose(term)

        def write(state, last_action, out):
            np.subtract(state.joint_pos[idx], default, out=out, casting="unsafe")
    else:

        def write(state, last_action, out):
            out[:] = state.joint_pos[idx]

    return write


def _joint_vel(term: ObsTerm, ctx: SourceContext) -> Writer:
    idx = ctx.joint_indices(term)
    ctx.expect_width(term, len(idx))

    def write(state, last_action, out):
        out[:] = state.joint_vel[idx]

    return write


def _joint_pos_cos_sin(term: ObsTerm, ctx: SourceContext) -> Writer:
    idx = ctx.joint_indices(term)
    k = len(idx)
    ctx.expect_width(term, 2 * k)

    def write(state, last_action, out):
        q = state.joint_pos[idx]
        np.cos(q, out=out[:k], casting="unsafe")
        np.sin(q, out=out[k:], casting="unsafe")

    return write


def _last_action(term: ObsTerm, ctx: SourceContext) -> Writer:
    ctx.expect_width(term, ctx.bundle.num_actions)

    def write(state, last_action, out):
        out[:] = last_action

    return write


def _signal(name: str | None, size: int | None = None) -> SourceFactory:
    """A source read straight from `state.signals[name]` (e.g. an IMU or an operator command);
    name None: the term's `name` param (a command: `state.signals["base_velocity"]`)."""

    def factory(term: ObsTerm, ctx: SourceContext) -> Writer:
        key = name or term.params.get("name")
        width = size
        if width is None and name is None:  # a command: as many values as it has components
            commands = ctx.bundle.meta.get("commands") or {}
            if key not in commands:
                raise DeployError(f"observation '{term.name}' reads command {key!r}, which robot.yaml does not describe")
            width = len(commands[key]["components"])
        if width is not None:
            ctx.expect_width(term, width)
        ctx.need_signal(term, key, term.width)

        def write(state, last_action, out):
            out[:] = state.signals[key]

        return write

    return factory


def quat_from_euler(roll: float, pitch: float, yaw: float, out: np.ndarray) -> None:
    """The unit quaternion (w, x, y, z), w >= 0, of roll, pitch, yaw (yaw about z, then pitch about
    y, then roll about x): training's `command_quat` (robolearn/mdp/manipulation.py)."""
    cr, cp, cy = np.cos(0.5 * roll), np.cos(0.5 * pitch), np.cos(0.5 * yaw)
    sr, sp, sy = np.sin(0.5 * roll), np.sin(0.5 * pitch), np.sin(0.5 * yaw)
    out[:] = (cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy)
    if out[0] < 0:
        np.negative(out, out=out)


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _command_quat(term: ObsTerm, ctx: SourceContext) -> Writer:
    """An orientation command (the operator's roll, pitch, yaw: `state.signals[<name>]`) as the
    quaternion the policy was trained on."""
    key = term.params.get("name")
    components = ((ctx.bundle.meta.get("commands") or {}).get(key) or {}).get("components")
    if components is None or len(components) != 3:
        raise DeployError(f"observation '{term.name}' (command_quat) reads command {key!r}, which robot.yaml does not "
                          "describe as three components (roll, pitch, yaw); re-export the bundle")  # fmt: skip
    ctx.expect_width(term, 4)
    ctx.need_signal(term, key, 3)
    near = term.params.get("near")
    ref = None
    if near is not None:  # the sign of the quaternion on near's side, as training's command_quat signs it
        if not isinstance(near, (list, tuple)) or len(near) != 3 or not all(_finite(v) for v in near):
            raise DeployError(f"observation '{term.name}' (command_quat): near must be three finite numbers, roll, pitch, "
                              "yaw; re-export the bundle")  # fmt: skip
        ref = np.zeros(4)
        quat_from_euler(*(float(v) for v in near), ref)
        ref *= np.sign(ref[np.flatnonzero(np.abs(ref) >= 0.25)[0]])  # training's rule for the reference's sign

    def write(state, last_action, out):
        roll, pitch, yaw = state.signals[key]
        quat_from_euler(roll, pitch, yaw, out)
        if ref is not None and out @ ref < 0:
            np.negative(out, out=out)

    return write


def _sensor(term: ObsTerm, ctx: SourceContext) -> Writer:
    """MJCF sensors (the `sensor` term): the robot supplies each named sensor's reading as the
    signal of its name, as wide as robot.yaml's `sensors` says; the term is their concatenation."""
    names = term.params.get("names")
    names = [names] if isinstance(names, str) else list(names or [])
    described = ctx.bundle.meta.get("sensors") or {}
    unknown = [n for n in names if not isinstance(described.get(n), dict) or "dim" not in described[n]]
    if not names or unknown:
        what = f"sensor {unknown[0]!r}, which robot.yaml's sensors do not describe" if names else "no sensors"
        raise DeployError(f"observation '{term.name}' (sensor) reads {what}; re-export the bundle")
    widths = [int(described[n]["dim"]) for n in names]
    ctx.expect_width(term, sum(widths))
    for name, width in zip(names, widths):
        ctx.need_signal(term, name, width)
    if len(names) == 1:
        (key,) = names

        def write(state, last_action, out):
            out[:] = state.signals[key]

        return write
    bounds = np.cumsum([0, *widths])
    parts = [(name, slice(int(a), int(b))) for name, a, b in zip(names, bounds[:-1], bounds[1:])]

    def write_all(state, last_action, out):
        for key, columns in parts:
            out[columns] = state.signals[key]

    return write_all


BASE_SIGNALS = ("base_ang_vel", "projected_gravity", "base_lin_vel")
"""The floating base's signals, as the robot's IMU/state estimator reports them in the base frame: gyro
[rad/s], unit gravity direction, linear velocity [m/s] (from an estimator). A sensor or a command of
one of these names would be ambiguous: export refuses it."""

SOURCES: dict[str, SourceFactory] = {
    "joint_pos": _joint_pos,
    "joint_vel": _joint_vel,
    "joint_pos_cos_sin": _joint_pos_cos_sin,
    "last_action": _last_action,
    **{name: _signal(name, 3) for name in BASE_SIGNALS},
    "command": _signal(None),  # an operator command, e.g. signals["base_velocity"] = (vx, vy, yaw rate)
    "command_quat": _command_quat,  # an orientation command (roll, pitch, yaw) as a quaternion
    "sensor": _sensor,  # MJCF sensors by name, e.g. signals["imu_acc"] = accelerometer (3 values)
}


BUILT_IN_SOURCES = frozenset(SOURCES)


def register_source(name: str, factory: SourceFactory, replace: bool = False) -> None:
    """Teach the runtime a source a task's observation uses (same name as the training term);
    `replace=True` to put another in place of one of the runtime's own (which serve every bundle)."""
    if not isinstance(name, str) or not name:
        raise DeployError(f"a source's name is {name!r}; valid: the training term's name (a non-empty string)")
    if not callable(factory):
        raise DeployError(f"source {name!r}: the factory is {type(factory).__name__}, not callable; valid: a function "
                          "(term, ctx) -> writer (observations.py)")  # fmt: skip
    if name in BUILT_IN_SOURCES and not replace:
        raise DeployError(f"source {name!r} is one of the runtime's own; valid: another name, or replace=True to put "
                          "yours in its place for every bundle")  # fmt: skip
    SOURCES[name] = factory


def register_signal_source(name: str, signal: str | None = None, replace: bool = False) -> None:
    """A source whose value the robot supplies directly as `state.signals[signal or name]`."""
    register_source(name, _signal(signal or name), replace)


class ObservationBuilder:
    def __init__(self, bundle: Bundle, joint_names: Sequence[str], out: np.ndarray | None = None):
        """out: a float32 [D] buffer to build into (e.g. Policy.input_buffer), else its own."""
        ctx = SourceContext(bundle, joint_names)
        writers: list[tuple[Writer, int]] = []
        for term in bundle.terms:
            if term.source not in SOURCES:
                raise DeployError(
                    f"observation '{term.name}' comes from '{term.source}', which this runtime cannot read from a "
                    f"robot; known sources: {', '.join(sorted(SOURCES))} (add one with register_source)"
                )
            writers.append((SOURCES[term.source](term, ctx), term.width))
        size = bundle.obs_size
        self.obs = np.zeros(size, dtype=np.float32) if out is None else out
        width = sum(t.width for t in bundle.terms)
        self._work: np.ndarray | None = None
        """With history: [previous observation D | this tick's values W] (float32)."""
        current = self.obs
        if width != size:
            self._work = np.zeros(size + width, dtype=np.float32)
            current = self._work[size:]
            self._advance, self._fill = _history_indices(bundle.terms, size)
        self._fresh = True
        """The next build is the first of an episode: every history slot takes its value."""
        self._views, at = [], 0
        for write, w in writers:
            self._views.append((write, current[at : at + w]))
            at += w
        self._current = current
        scale = np.concatenate([np.full(t.width, t.scale, np.float32) for t in bundle.terms])
        clip = np.concatenate([np.full(t.width, np.inf if t.clip is None else t.clip, np.float32) for t in bundle.terms])
        self._scale = scale if (scale != 1).any() else None
        self._clip = clip if np.isfinite(clip).any() else None
        self.last_action = np.zeros(bundle.num_actions, dtype=np.float32)
        self.signals = dict(ctx.signals)
        """Signal name -> width, for every signal the bundle's layout reads (checked by ControlLoop)."""
        self._num_joints = len(ctx.joint_names)

    def check_reading(self, state: RobotState) -> str | None:
        """Why `state` cannot be turned into an observation (None if it can): joint arrays of the
        wrong length, a signal missing or of the wrong size. Values are judged elsewhere."""
        n = self._num_joints
        if not isinstance(state, RobotState) and not hasattr(state, "joint_pos"):
            return f"reading is {type(state).__name__}, not a RobotState(joint_pos, joint_vel, signals)"
        for field in ("joint_pos", "joint_vel"):
            value = getattr(state, field, None)
            if not isinstance(value, np.ndarray) or value.shape != (n,):
                shape = value.shape if isinstance(value, np.ndarray) else type(value).__name__
                return f"reading's {field} has shape {shape}, the robot has {n} joints"
            if value.dtype.kind not in "fiu":
                return f"reading's {field} holds {value.dtype} values, not real numbers"
        signals = getattr(state, "signals", None) or {}
        for name, width in self.signals.items():
            if name not in signals:
                return f"reading lacks signal {name!r} (the policy needs {', '.join(self.signals)})"
            if np.size(signals[name]) != width:
                return f"reading's signal {name!r} has {np.size(signals[name])} values, the policy needs {width}"
        return None

    def build(self, state: RobotState, checked: bool = False) -> np.ndarray:
        """The policy input for `state` (a view of one buffer, overwritten by the next call).
        Each call is one control step: history terms move on by one value. A reading it cannot
        use (check_reading: not a RobotState, arrays of the wrong length, a signal missing) is a
        DeployError saying why, the histories left where they were; `checked`: the caller has
        checked it (the ControlLoop does, every tick)."""
        if not checked and (problem := self.check_reading(state)):
            raise DeployError(f"cannot build an observation: {problem}")
        current = self._current
        for write, out in self._views:
            write(state, self.last_action, out)
        if self._scale is not None:
            np.multiply(current, self._scale, out=current)
        if self._clip is not None:
            np.clip(current, -self._clip, self._clip, out=current)
        if self._work is not None:
            self._work[: self.obs.shape[0]] = self.obs
            np.take(self._work, self._fill if self._fresh else self._advance, out=self.obs, mode="clip")  # unbuffered
        self._fresh = False
        return self.obs

    def reset(self) -> None:
        """A new episode: last action zero; the next build fills every history with its value."""
        self.last_action[:] = 0.0
        self._fresh = True


def _history_indices(terms: Sequence[ObsTerm], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices into [previous observation (size) | current values]: `advance` shifts each history
    one step (each slot takes the next newer one, the newest takes the current value), `fill`
    puts the current value into every slot."""
    advance, fill, current = [], [], size
    for t in terms:
        w = t.width
        for j in range(t.history):
            for c in range(w):
                fill.append(current + c)
                advance.append(current + c if j == t.history - 1 else t.start + (j + 1) * w + c)
        current += w
    return np.array(advance, dtype=np.intp), np.array(fill, dtype=np.intp)
