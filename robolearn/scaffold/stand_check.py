"""Does a legged robot stand in its home pose, held there by the servos new-task gave it?

new-task's home pose is a guess (each joint at 0 inside its limits) and its gains are placeholders.
A guess can put every foot ahead of the hips (pybullet's A1: it tips back onto its thighs), and a
heavy robot can sag under 2 x its mass (AlienGo); then every episode starts falling and nothing
says why. This holds the pose for a second, as training's first steps would. Where the gains are
new-task's own and stronger ones hold the pose, the gains are raised (stand_gain); otherwise the
report warns where the robot sinks or tips, and whether stronger gains alone would hold it.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import mujoco
import numpy as np

from robolearn.scaffold.inspect_model import actuator_kind

HOLD_S = 1.0
"""How long the pose is held [s]."""

SINK = 0.25
"""A base that ends lower than this fraction of its home height below it has not stood..."""

SETTLE = 0.02
"""...unless it sank less than this [m]: a base whose frame is at the ground (TIAGo's, 5 mm up on its
wheels) settles a few millimetres, all of its height, and stands."""

TIP = np.radians(20.0)
"""A base that turns more than this from its home orientation has not stood [rad]."""

STRONGER = 4.0
"""The gain factor tried when the pose does not hold: KP x 4, KD x 2."""

RIGID = 256.0
"""A gain factor that makes the joints nearly rigid: a pose that stands with it, and not with the
factors tried before, balances, and the gains are what fail by far (MuJoCo Menagerie's Berkeley
Humanoid: its own knee and ankle kp are 1; it falls at x 1, 4 and 16, stands at x 256)."""


class Held(NamedTuple):
    """How a held pose went: the base's height at home and after HOLD_S [m], how far it turned
    [rad], and the bodies that touched the ground (a geom of the world) at the end."""

    start: float
    end: float
    turned: float
    touching: frozenset[int] = frozenset()


def hold(model: mujoco.MjModel, base: str, integrator: str | None = None, gain: float = 1.0) -> Held:
    """Hold the `home` keyframe's controls for HOLD_S, servo gains scaled by `gain` (KD by its
    square root)."""
    model = copy.deepcopy(model)
    if integrator:
        model.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}")
    servos = [a for a in range(model.nu) if actuator_kind(model, a) == "position"]
    model.actuator_gainprm[servos, 0] *= gain
    model.actuator_biasprm[servos, 1] *= gain
    model.actuator_biasprm[servos, 2] *= np.sqrt(gain)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_forward(model, data)
    data.ctrl[servos] = data.actuator_length[servos]  # each servo's target: where its joint is at home
    body = model.body(base).id
    start_z, start_r = float(data.xpos[body, 2]), data.xmat[body].reshape(3, 3).copy()
    for _ in range(int(round(HOLD_S / model.opt.timestep))):
        mujoco.mj_step(model, data)
        if not np.isfinite(data.qpos).all():
            return Held(start_z, float("nan"), float("nan"))
    turn = start_r.T @ data.xmat[body].reshape(3, 3)
    angle = float(np.arccos(np.clip((np.trace(turn) - 1) / 2, -1.0, 1.0)))
    return Held(start_z, float(data.xpos[body, 2]), angle, _touching(model, data))


def _touching(model: mujoco.MjModel, data: mujoco.MjData) -> frozenset[int]:
    """The bodies with a geom in contact with a geom of the world."""
    touching = set()
    for contact in data.contact[: data.ncon]:
        bodies = (int(model.geom_bodyid[contact.geom1]), int(model.geom_bodyid[contact.geom2]))
        if 0 in bodies:
            touching.add(max(bodies))
    return frozenset(touching - {0})


def stand_warning(model: mujoco.MjModel, base: str, integrator: str | None) -> tuple[str | None, Held]:
    """For the model's own gains: a report line where the home pose does not hold (None where it
    does), and how it went."""
    held = hold(model, base, integrator)
    if stood(held):
        return None, held
    why = (THROUGH if _through(held) else
           f"with KP x {STRONGER:g} it stands: the placeholder gains are too weak for this robot; set KP and KD in robot.py"
           if stood(hold(model, base, integrator, STRONGER)) else _why_not(model, base, integrator, STRONGER))  # fmt: skip
    return f"WARNING: holding the home pose with its servos for {HOLD_S:g} s, {_how(held)}: every episode would start falling; {why}", held


THROUGH = ("it falls through the floor: no geom of it collides with the ground (every one has contype and conaffinity 0, "
           "or a scene's <pair>s that are not in this file gave its contacts); give its feet collision geometry")
"""Why a base that ends below the ground fell (Menagerie's Apollo leaves its contacts to scene.xml's pairs)."""


def _through(held: Held) -> bool:
    """The base ended below the ground with nothing of the robot on it."""
    return held.end < 0 and not held.touching


def _why_not(model: mujoco.MjModel, base: str, integrator: str | None, tried: float) -> str:
    """Why a home pose that no factor up to `tried` holds falls: the gains by far (it stands with
    nearly rigid joints, RIGID), or the pose."""
    if stood(hold(model, base, integrator, RIGID)):
        return (f"it does not stand with KP x {tried:g} either, only with KP x {RIGID:g} (nearly rigid joints): the pose "
                "balances, and the servos' gains are far too weak for this robot; set them (robot.py's KP and KD for servos "
                "new-task added, the model's own kp and kv otherwise)")  # fmt: skip
    return (f"it does not stand with KP x {tried:g} either, nor with nearly rigid joints: the pose is off balance (e.g. the "
            "feet not around the centre of mass); set DEFAULT_POSE in robot.py (or add a `home` keyframe to the model)")  # fmt: skip

RAISES = (2.0, 4.0)
"""The factors new-task tries on the gains it gave (KP x factor, KD x its square root), least first,
where the home pose does not hold with them: 2 x the robot's mass is what the locomotion recipes
were measured with and stays where it holds; pybullet's Vision 60 (27 kg) and Unitree's G1 sag
under it."""


def stand_gain(model: mujoco.MjModel, base: str, integrator: str | None) -> tuple[float, str | None, Held]:
    """For gains new-task gave: the least factor of RAISES that holds a home pose which does not
    hold as given, with the report line that says so and how the pose went with it; (1, None, ...)
    where it holds as given; (1, the warning, ...) where no factor does."""
    held = hold(model, base, integrator)
    if stood(held):
        return 1.0, None, held
    if _through(held):  # no gain holds up a robot that nothing holds up
        return 1.0, f"WARNING: holding the home pose with its servos for {HOLD_S:g} s, {_how(held)}: {THROUGH}", held
    for factor in RAISES:
        if stood(raised := hold(model, base, integrator, factor)):
            return factor, (f"servo gains: holding the home pose for {HOLD_S:g} s with them, {_how(held)} -> "
                            f"KP x {factor:g}, KD x {np.sqrt(factor):.3g}: the least of x {', x '.join(f'{r:g}' for r in RAISES)} "
                            "that holds it (placeholders still: set your robot's gains in robot.py)"), raised  # fmt: skip
    return 1.0, (f"WARNING: holding the home pose with its servos for {HOLD_S:g} s, {_how(held)}: every episode "
                 f"would start falling; {_why_not(model, base, integrator, RAISES[-1])}"), held  # fmt: skip


def _how(held: Held) -> str:
    return ("the simulation diverges" if not np.isfinite(held.end) else
            f"the base's height goes from {held.start:.3f} to {held.end:.3f} m and it turns {np.degrees(held.turned):.0f} degrees")  # fmt: skip


def stood(held: Held) -> bool:
    """The pose held: the base neither sank more than SINK of its height (and SETTLE) nor turned more than TIP."""
    sank = held.start - held.end
    return bool(np.isfinite(held.end) and (sank <= SINK * held.start or sank <= SETTLE) and held.turned <= TIP)
