"""Robots modelled with another axis than z up. URDF's convention is z up (REP 103) and MuJoCo's
gravity is -z, but models from animation tools and CAD exports are often Y-up: pybullet's Laikago
(its +y up, +z forward). As modelled, such a robot lies on its side or sits on its rear legs, and
new-task's home pose falls over at any gain.

Where the locomotion template's guessed home pose does not stand on its feet (stand_check.py: it
falls over, or lies still on its body) and the model has no keyframe of its own, new-task plans the
robot again with each other axis of the model as up (+y, -y, +x, -x: the feet, the stance and the
home height all depend on it) and keeps one where the robot stands on its feet: the pose holds for
a second touching the ground with its feet only. A robot lying still on its side or its back does
not stand; pairs of legs that reach the ground do fit where the guessed pose is too weak to hold
(_on_its_legs). Upside down (-z up) is not tried: no tool writes models so, and a guessed pose with
the legs pointing up (pybullet's Minitaur, its motors at 0) would stand on them upside down.

Then forward: for a robot on three feet or more the axis its feet spread furthest along (a
quadruped's length), for a biped the one across the line between its feet; the model's positive
direction of that axis. robot.py turns what the base carries (turn_upright), so the base's own
frame, which the task's terms read, is z up and x forward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import mujoco
import numpy as np

from robolearn.errors import UserError
from robolearn.scaffold.inspect_model import ModelInfo
from robolearn.scaffold.legged_plan import STANDING
from robolearn.scaffold.model_query import chain_joints, separate_legs
from robolearn.scaffold.plan import RobotPlan, const, tuple_text
from robolearn.scaffold.stand_check import Held, stood

AXES = {"+x": (1, 0, 0), "-x": (-1, 0, 0), "+y": (0, 1, 0), "-y": (0, -1, 0), "+z": (0, 0, 1), "-z": (0, 0, -1)}
UPS = ("+y", "-y", "+x", "-x")
"""The model's axes tried as up, after its +z."""


@dataclass(frozen=True)
class Turn:
    up: str
    """The model's axis that points up once turned ("+y")."""
    forward: str
    """The model's axis that points forward (the base's x) once turned."""

    @property
    def rotation(self) -> np.ndarray:
        """Model coordinates to the turned base's: rows forward, left, up."""
        up, forward = np.array(AXES[self.up], float), np.array(AXES[self.forward], float)
        return np.array([forward, np.cross(up, forward), up])

    @property
    def quat(self) -> tuple[float, ...]:
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, self.rotation.flatten())
        return tuple(float(v) + 0.0 for v in np.round(quat, 9))


def first_turn(up: str) -> Turn:
    """The turn tried first for `up`: forward is the model's +x, or its +z where x is up or down."""
    return Turn(up, "+z" if up[1] == "x" else "+x")


@dataclass
class Planned:
    """A robot planned for a template, with what new-task found checking it."""

    info: ModelInfo
    plan: RobotPlan
    model: mujoco.MjModel
    """The model the plan read (turned, where `turn` is set)."""
    edited: mujoco.MjModel
    """The model with robot.py's edits."""
    lines: list[str] = field(default_factory=list)
    """The report's lines."""
    held: Held | None = None
    """How the home pose held with the servos (the gains raised where they were), None: not checked."""
    turn: Turn | None = None


def needs_turning(planned: Planned) -> bool:
    """A free-base robot on servos whose guessed home pose (no keyframe of the model's) does not stand
    on its feet: it falls over, or lies still on other links too (a Y-up quadruped on its side)."""
    if planned.held is None or planned.info.has_home or planned.model.nkey or planned.turn is not None:
        return False
    return not on_its_feet(planned)


def _on_its_base(planned: Planned) -> bool:
    """The base, or a body fixed to it, touched the ground at the end of the hold."""
    model = planned.edited
    base = int(model.body_weldid[model.body(planned.plan.base).id])
    return any(int(model.body_weldid[b]) == base for b in planned.held.touching)


def on_its_feet(planned: Planned) -> bool:
    """The home pose held, and what touches the ground at the end is the robot's feet, every one of
    them (two or more), and nothing else: a robot on its side, its back or its rear end can lie
    still, and it does not stand. A foot is the body the plan found and the bodies fixed to it."""
    if planned.held is None or not stood(planned.held):
        return False
    model = planned.edited
    feet = {int(model.body_weldid[model.body(f.body).id]) for f in planned.info.feet}
    return len(feet) >= 2 and {int(model.body_weldid[b]) for b in planned.held.touching} == feet


def stand_up(as_is: Planned, plan_turned: Callable[[Turn], Planned]) -> Planned:
    """The best of the turned plans (module doc), `as_is` where none fits (its stand warning then
    says that no other axis stood it). A turn fits where the robot stands on its feet, no fewer than
    as modelled (not a rover on the two wheels of its side), or where it is on its legs
    (_on_its_legs: its guessed pose may still not hold, as pybullet's laikago.urdf's, whose lower
    legs are its feet); the best stands, on the most feet, tallest. A turn whose plan fails is left
    out: the model as given is the user's, the turns are guesses."""
    found = len(as_is.info.feet)

    def attempt(turn: Turn) -> Planned | None:
        try:
            return plan_turned(turn)
        except (UserError, ValueError):  # MuJoCo refuses the turned model: the guess is dropped, not the task
            return None

    tried = [p for p in (attempt(first_turn(up)) for up in UPS) if p is not None]
    fits = [p for p in tried if _footprint(p) and ((on_its_feet(p) and len(p.info.feet) >= found) or _on_its_legs(p, found))]
    if not fits:
        as_is.lines = [f"{line}; no other axis of the model as up ({', '.join(UPS)}) stood it either"
                       if line.startswith("WARNING: holding the home pose") else line for line in as_is.lines]  # fmt: skip
        return as_is

    def rank(planned: Planned) -> tuple:
        return on_its_feet(planned), len(planned.info.feet), planned.held.start if planned.held else 0.0

    best = max(fits, key=rank)
    forward = _forward(best)
    if forward != best.turn.forward:
        turned = attempt(Turn(best.turn.up, forward))
        if turned is not None and _footprint(turned) and rank(turned)[:2] >= rank(best)[:2]:
            best = turned
    _announce(best, as_is, found)
    return best


def _on_its_legs(planned: Planned, found: int) -> bool:
    """Legs stand under the robot: two pairs or more reach the ground, more feet than as modelled
    (`found`), each on a leg of its own (no joint between the base and one foot moves another: not a
    hand's fingers), each leg pointing down from its first joint more than sideways (not a robot on
    its side with its legs out: pybullet's Minitaur, whose legs point up at 0), and the base at
    least STANDING of the robot's size above the ground. A quadruped on its feet whatever its
    guessed pose does, not a humanoid on hands and feet (an odd count, or lying low)."""
    model = planned.edited
    feet = [model.body(f.body).id for f in planned.info.feet]
    if len(feet) < 4 or len(feet) % 2 or len(feet) <= found or planned.plan.base_height < STANDING * planned.info.size:
        return False
    base = model.body(planned.plan.base).id
    chains = [chain_joints(model, foot, base, None) for foot in feet]
    if not all(chains) or not separate_legs([(foot, None, chain) for foot, chain in zip(feet, chains)]):
        return False
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_kinematics(model, data)
    legs = [data.xpos[foot] - data.xanchor[model.joint(chain[-1]).id] for foot, chain in zip(feet, chains)]
    return all(-leg[2] > np.linalg.norm(leg[:2]) for leg in legs)


FOOTPRINT = 0.25
"""Three feet or more stand spread both ways: the narrower side of their footprint at least this
fraction of the longer. A quadruped on its rear end stands on its hind feet only (pybullet's
Minitaur on the two pairs of its hind legs' five-bar links: 3 cm by 20 cm), a quadruped on its
feet on a footprint like Laikago's, 23 by 45 cm."""


def _footprint(planned: Planned) -> bool:
    """Two feet, or three and more spread both ways (FOOTPRINT), in the home pose."""
    if len(planned.info.feet) < 2:
        return False
    spread = np.sort(_feet_spread(planned))
    return len(planned.info.feet) < 3 or spread[0] >= FOOTPRINT * spread[1]


def _feet_spread(planned: Planned) -> np.ndarray:
    """How far the feet spread along the base's x and y in the home pose [m]."""
    model = planned.edited
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_kinematics(model, data)
    return np.ptp(np.array([data.xpos[model.body(f.body).id, :2] for f in planned.info.feet]), axis=0)


def _forward(planned: Planned) -> str:
    """The model's axis to face forward (module doc), from the feet of a plan turned with its first
    turn: positive, along the turned base's x or y."""
    feet = len(planned.info.feet)
    if feet < 2:
        return planned.turn.forward
    spread = _feet_spread(planned)
    along_x = spread[0] >= spread[1]
    if (feet >= 3) == along_x:
        return planned.turn.forward
    lateral = planned.turn.rotation[1]  # the model's axis along the turned base's y
    axis = "xyz"[int(np.argmax(np.abs(lateral)))]
    return f"+{axis}"


def add_turn(plan: RobotPlan, turn: Turn) -> None:
    """robot.py's first edit turns the base's contents (templates/robot/turn_upright.py.tmpl)."""
    plan.steps.insert(0, "turn_upright")
    plan.constants.insert(0, const("UP_TURN", tuple_text(turn.quat),
                                   f"The turn (w, x, y, z) of what the base carries: the model's {turn.up} axis up, its "
                                   f"{turn.forward} forward (new-task's guess: with the model's +z up it fell over)."))  # fmt: skip


def _announce(planned: Planned, as_is: Planned, found: int) -> None:
    """The report's first line (and robot.py's): which way is up, and why."""
    turn, held, feet = planned.turn, as_is.held, len(planned.info.feet)
    was = (f"the home pose fell over (the base {held.start:.3f} -> {held.end:.3f} m, turned {np.degrees(held.turned):.0f} "
           "degrees)" if not stood(held) else
           f"it lies still on more than its feet ({found} found{'; its base on the ground' if _on_its_base(as_is) else ''})")  # fmt: skip
    why = (f"it stands on its {feet} feet" if on_its_feet(planned) else
           f"its {feet} feet reach the ground (as modelled, {found}), the tallest way up that does; its guessed pose "
           "does not hold yet (the warning below)")  # fmt: skip
    line = (f"up axis: with the model's +z up {was}; with its {turn.up} up {why} -> robot.py turns what the base "
            f"carries (UP_TURN): {turn.up} up, {turn.forward} forward; check it in a video (robolearn play)")  # fmt: skip
    planned.lines.insert(0, line)
    planned.plan.lines.insert(0, line)
