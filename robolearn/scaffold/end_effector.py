"""An arm's end effector, as new-task finds it in a robot model: a site or a fixed link whose name
says so (tcp_site, panda_hand_tcp, tool0, gripper_frame_link), else the body that ends the longest
joint chain, with the point of it the reach targets are for. Where that chain ends in a gripper's
finger (MuJoCo Menagerie's Panda without its sites: `hand` carries `left_finger` and `right_finger`
on slides), the hand is the end effector, at the middle of its fingers' tips."""

from __future__ import annotations

import re
from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.scaffold.model_query import obj_name
from robolearn.scene.geometry import geom_corners, subtree


@dataclass(frozen=True)
class Tip:
    body: str | None
    site: str | None
    """A site on the body (the named one where a site's name made it the end effector)."""
    point: tuple[float, float, float] | None
    """The far end of the body's geometry in its frame; None: its origin (a frame's, or no geometry)."""
    named: bool
    """A site's or a fixed link's name says end effector; False: the longest chain's tip."""
    fingers: tuple[str, ...] = ()
    """Where the longest chain ends in a gripper: its fingers' bodies (the tip is the hand they branch
    from, the point the middle of their tips)."""


END_EFFECTOR_WORDS = ("tcp", "ee", "eef", "endeffector", "end_effector", "grasp", "grasptarget", "pinch", "tool", "attachment",
                      "gripper", "flange")  # fmt: skip
"""Words in a site's or a fixed link's name (split at _, -, ., /, spaces and camelCase humps, trailing
digits dropped, or the whole name) that make it the end effector, most telling first: tcp_site,
panda_hand_tcp, ee_link, grasp (dm_control's manipulator), tool0, attachment_site (MuJoCo
Menagerie's arms), gripper_frame_link, left/gripper (a prefix MJCF attach gives: ALOHA's)."""


def end_effector_rank(name: str) -> int | None:
    """Where a name's most telling word stands in END_EFFECTOR_WORDS; None if it names no end effector
    (a touch sensor's site on a finger, dm_control's thumbtip_touch, does not)."""
    parts = [p for p in re.split(r"[_\-./ ]+|(?<=[a-z0-9])(?=[A-Z])", name) if p]
    words = {name.lower(), name.lower().replace("_", ""), *(p.lower() for p in parts), *(p.lower().rstrip("0123456789") for p in parts)}
    if "touch" in words:
        return None
    ranks = [k for k, word in enumerate(END_EFFECTOR_WORDS) if word in words]
    return min(ranks) if ranks else None


def end_effector_sites(model: mujoco.MjModel, sites: list[int]) -> dict[int, int]:
    """Of `sites`, those whose name says end effector, each with its rank in END_EFFECTOR_WORDS."""
    ranks = {s: end_effector_rank(obj_name(model, mujoco.mjtObj.mjOBJ_SITE, s)) for s in sites}
    return {s: rank for s, rank in ranks.items() if rank is not None}


def end_effector(model: mujoco.MjModel, data: mujoco.MjData, base: int, robot: list[int], children: dict,
                 geoms: list[int]) -> Tip | None:  # fmt: skip
    """The end effector of the robot's bodies `robot` under `base` (collision `geoms`, kinematics in
    `data`): a site or fixed link whose name says so, else the tip of the longest joint chain; a
    site on it; and the far end of its geometry along the line from the chain's root (the origin of
    a link named as a frame, such as tool0). None where the robot has no leaf body."""

    def chain_length(b: int) -> int:
        n = 0
        while b and b != base:
            n += int(model.body_jntnum[b])
            b = int(model.body_parentid[b])
        return n

    leaves = [b for b in robot if not children[b]]
    if not leaves:
        return None
    tip = max(leaves, key=lambda b: (chain_length(b), -b))
    wrapped = {int(model.wrap_objid[w]) for w in range(model.nwrap) if int(model.wrap_type[w]) == int(mujoco.mjtWrap.mjWRAP_SITE)}
    # a site a tendon or muscle path runs through (MyoSuite's TRIlong-P5) is not an end effector
    bodies = set(robot)
    named = end_effector_sites(model, [s for s in range(model.nsite) if int(model.site_bodyid[s]) in bodies and s not in wrapped])
    # a fixed link that a URDF names as the tool's frame (panda_hand_tcp, tool0, gripper_frame_link): a
    # body without joints of its own, not in a gripper's finger (Baxter's r_gripper_l_finger_tip), whose
    # chain ends past it
    grippers = _grippers(model, base, robot, children, chain_length)
    frames = {b: end_effector_rank(obj_name(model, mujoco.mjtObj.mjOBJ_BODY, b)) for b in robot
              if b != base and not int(model.body_jntnum[b]) and chain_length(b) and _gripper_of(model, b, grippers) is None}  # fmt: skip
    frames = {b: rank for b, rank in frames.items() if rank is not None}
    at_origin = False
    if named:  # a site the model names as the end effector (tcp_site, grasp, attachment_site) beats the guess
        best = max(named, key=lambda s: (-named[s], chain_length(int(model.site_bodyid[s])), -s))
        tip = int(model.site_bodyid[best])
    elif frames:
        tip = max(frames, key=lambda b: (-frames[b], chain_length(b), _depth(model, b), -b))  # Baxter's right_gripper
        # (the grasp frame) below right_gripper_base_link: the deeper of two frames
        at_origin = END_EFFECTOR_WORDS[frames[tip]] != "gripper"  # a frame (tcp, ee_link, tool0): its origin is the point
    origin = data.xpos[base] if base else np.zeros(3)
    palm = None if named or frames else _gripper_of(model, tip, grippers)
    if palm is not None:  # the middle of the fingers' tips (the deepest body of each), in the hand's frame
        fingers = [max((b for b in subtree(children, c) if not children[b]), key=lambda b: (chain_length(b), -b))
                   for c in grippers[palm]]  # fmt: skip
        tips = [_far_end(model, data, f, geoms, data.xpos[palm]) for f in fingers]  # each finger's end away from the hand
        middle = np.mean([t if t is not None else data.xpos[f] for t, f in zip(tips, fingers)], axis=0)
        local = data.xmat[palm].reshape(3, 3).T @ (middle - data.xpos[palm])
        return Tip(obj_name(model, mujoco.mjtObj.mjOBJ_BODY, palm) or None, None, tuple(round(float(v), 4) for v in local),
                   False, tuple(obj_name(model, mujoco.mjtObj.mjOBJ_BODY, f) for f in fingers))  # fmt: skip
    tip_sites = [best] if named else [s for s in range(model.nsite) if int(model.site_bodyid[s]) == tip and s not in wrapped]
    site = obj_name(model, mujoco.mjtObj.mjOBJ_SITE, tip_sites[0]) or None if tip_sites else None
    point = None
    far = None if at_origin else _far_end(model, data, tip, geoms, origin)
    if far is not None:
        local = data.xmat[tip].reshape(3, 3).T @ (far - data.xpos[tip])
        point = tuple(round(float(v), 4) for v in local)
    return Tip(obj_name(model, mujoco.mjtObj.mjOBJ_BODY, tip) or None, site, point, bool(named or frames))


def _depth(model: mujoco.MjModel, body: int) -> int:
    """How many bodies `body` hangs below."""
    n = 0
    while body:
        body, n = int(model.body_parentid[body]), n + 1
    return n


def _far_end(model: mujoco.MjModel, data: mujoco.MjData, body: int, geoms: list[int], origin: np.ndarray) -> np.ndarray | None:
    """The far end of `body`'s geometry (of `geoms`) along the line from `origin` (the chain's root),
    in the world frame; None where the body has none."""
    own = [g for g in geoms if int(model.geom_bodyid[g]) == body]
    if not own:
        return None
    g = max(own, key=lambda g: np.linalg.norm(data.geom_xpos[g] - origin))
    center = data.geom_xpos[g]
    u = (center - origin) / max(np.linalg.norm(center - origin), 1e-9)
    return center + u * float(((geom_corners(model, data, g) - center) @ u).max())


def _grippers(model: mujoco.MjModel, base: int, robot: list[int], children: dict, chain_length) -> dict[int, list[int]]:
    """The robot's grippers: each body (not the base) that carries two jointed branches or more, each
    with fewer joints than the chain up to it (a Panda's fingers one each, its arm seven), with the
    first body of each branch. A Shadow hand's thumb (5 joints) on its wrist (2) is not a gripper's
    finger, nor are two arms on one torso."""

    def joints_below(b: int) -> int:  # the most joints on a path from b down, b's own included
        return int(model.body_jntnum[b]) + max((joints_below(c) for c in children[b]), default=0)

    found = {}
    for hand in robot:
        branches = [c for c in children[hand] if joints_below(c)]
        if hand != base and len(branches) >= 2 and max(joints_below(c) for c in branches) < chain_length(hand):
            found[hand] = branches
    return found


def _gripper_of(model: mujoco.MjModel, body: int, grippers: dict[int, list[int]]) -> int | None:
    """The gripper whose finger `body` is in: the nearest hand above it, None where it is in none."""
    b = body
    while b:
        parent = int(model.body_parentid[b])
        if parent in grippers and b in grippers[parent]:
            return parent
        b = parent
    return None
