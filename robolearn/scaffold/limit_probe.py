"""How hard a model's joint limits are against its motors: new-task's locomotion templates end an
episode where the deploy watchdog would stop the robot (0.1 rad past a joint's range), which only
trains where the limits hold. A model whose limits are soft for its motors (gymnasium's Walker2d:
100 N m motors push its feet 0.3 rad past their MJCF range in a tenth of a second) would end nearly every
early episode within 2-3 control steps, and its policy learns to end them sooner (measured:
docs/benchmarks.md, 2026-11-29). Such a task is generated without that termination."""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.physics.contact_budget import unstable_quietly

PROBE_S = 0.1
"""How long every actuator pushes at the end of its control range: the first five control steps of
an episode at 50 Hz."""


PATTERNS = 16
"""Sign patterns tried: every actuator at the top of its range, at the bottom, and 14 random mixes
(seeded: the same model gives the same task): what a policy's first, random actions do, which
saturate most actuators."""


def limit_overshoot(model: mujoco.MjModel, joints: list[str], seconds: float = PROBE_S,
                    scale: float | np.ndarray = 1.0) -> dict[str, float]:  # fmt: skip
    """How far past its range each limited joint of `joints` goes [rad or m] while every actuator is
    held at the top or the bottom of its control range (times `scale`) for `seconds` from the model's
    `home` keyframe (else qpos0): the median over PATTERNS such pushes of each one's farthest.
    Unlimited controls push at +-1."""
    ids = [(name, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)) for name in joints]
    limited = [(name, model.jnt_qposadr[j], model.jnt_range[j]) for name, j in ids if j >= 0 and model.jnt_limited[j]]
    if not limited or not model.nu:
        return {}
    worst = [dict.fromkeys((name for name, *_ in limited), 0.0) for _ in range(PATTERNS)]
    for push, data in _pushes(model, seconds, scale):
        for name, adr, (low, high) in limited:
            q = data.qpos[adr]
            worst[push][name] = max(worst[push][name], low - q, q - high)
    return {name: sorted(float(run[name]) for run in worst)[PATTERNS // 2] for name in worst[0]}


def _pushes(model: mujoco.MjModel, seconds: float, scale: float | np.ndarray, patterns: int = PATTERNS):
    """(push, data) after each step of each push (`patterns` sign patterns, PATTERNS by default, at
    `scale` x the ends of the control ranges), from the `home` keyframe (else qpos0), MuJoCo's
    warnings off."""
    data = mujoco.MjData(model)
    home = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")
    bounded = model.actuator_ctrllimited.astype(bool)
    top = scale * np.where(bounded, model.actuator_ctrlrange[:, 1], 1.0)
    bottom = scale * np.where(bounded, model.actuator_ctrlrange[:, 0], -1.0)
    rng = np.random.default_rng(0)
    signs = [np.ones(model.nu, bool), np.zeros(model.nu, bool), *(rng.random((PATTERNS - 2, model.nu)) < 0.5)]
    with unstable_quietly():
        for push, up in enumerate(signs[:patterns]):
            if home >= 0:
                mujoco.mj_resetDataKeyframe(model, data, home)
            else:
                mujoco.mj_resetData(model, data)
            data.ctrl[:] = np.where(up, top, bottom)
            for _ in range(max(1, round(seconds / model.opt.timestep))):
                mujoco.mj_step(model, data)
                yield push, data


STABLE_SCALES = (0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 3e-4, 1e-4)
"""The action scales tried, largest first, where full effort makes the simulation diverge."""


def stable_scale(model: mujoco.MjModel, seconds: float = PROBE_S) -> float:
    """1.0 where holding every actuator at the ends of its control range for `seconds` (PATTERNS
    pushes) keeps the simulation finite; else the largest of STABLE_SCALES at which it does (0.0
    where none does). robosuite's GR1 has motors of +-20000 N m: a policy's first actions blew it up."""
    for scale in (1.0, *STABLE_SCALES):
        if not any(_diverged(data) for _, data in _pushes(model, seconds, scale)):
            return scale
    return 0.0


def motor_scales(model: mujoco.MjModel, whole: float, seconds: float = PROBE_S) -> np.ndarray:
    """Each actuator's action scale where full effort makes the simulation diverge and `whole`
    (stable_scale, < 1) keeps it finite for all. One scale is what the lightest link allows: robosuite's
    GR1 diverges above 0.0003 x through its wrists (1e-7 kg m^2 under +-20000 N m motors), which left
    its legs +-6 N m, too weak to stand. Each actuator is pushed alone (the others at 0) at its cap and
    each of STABLE_SCALES below it, and keeps the largest that stays finite; then all are pushed
    together (PATTERNS), and where that diverges every scale is multiplied by the largest of
    STABLE_SCALES that does not. The cap is the torque that holds the whole robot at arm's length
    (its weight times the model's extent): a motor far stronger is a model's placeholder, not a robot's."""
    peak = np.where(model.actuator_ctrllimited.astype(bool), np.abs(model.actuator_ctrlrange).max(axis=1), 1.0)
    peak = peak * np.abs(model.actuator_gear[:, 0])
    arm = float(model.body_mass.sum() * np.linalg.norm(model.opt.gravity) * model.stat.extent)
    cap = np.minimum(1.0, arm / np.maximum(peak, 1e-12)) if arm > 0 else np.ones(model.nu)
    alone = np.minimum(whole, cap)
    for a in range(model.nu):
        for trial in sorted({float(cap[a]), *(s for s in STABLE_SCALES if s < cap[a])}, reverse=True):
            if trial <= alone[a]:
                break
            tried = np.zeros(model.nu)
            tried[a] = trial
            if not any(_diverged(data) for _, data in _pushes(model, seconds, tried, patterns=2)):
                alone[a] = trial
                break
    floor = np.minimum(whole, cap)  # what holds for all at once (stable_scale), capped
    for factor in (1.0, *STABLE_SCALES):
        scales = np.maximum(alone * factor, floor)
        if not any(_diverged(data) for _, data in _pushes(model, seconds, scales)):
            return scales
    return floor


def diverging_line(model: mujoco.MjModel, scale: float, scales: np.ndarray | None = None) -> str:
    """The report line where the motors at full effort make the simulation diverge (stable_scale),
    with the actuators' own scales where they differ (motor_scales)."""
    span = np.abs(model.actuator_ctrlrange).max(axis=1) * np.abs(model.actuator_gear[:, 0])
    strongest = int(np.argmax(span))
    named = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, strongest) or f"actuator {strongest}"
    if scale == 0.0:
        return (f"WARNING: motors: held at the ends of their control ranges the simulation diverges within {PROBE_S:g} s, "
                f"even at {STABLE_SCALES[-1]:g} x (the strongest: {named}, {span[strongest]:g} at full action): the "
                "task is unlikely to train; check the model's ctrlrange and gear, and its lightest links (armature, "
                "timestep)")  # fmt: skip
    start = (f"motors: held at the ends of their control ranges the simulation diverges within {PROBE_S:g} s (the strongest: "
             f"{named}, {span[strongest]:g} at full action) -> ")  # fmt: skip
    if scales is None or (len({float(v) for v in scales}) == 1 and float(scales[0]) == scale):
        return (f"{start}the motors' actions scaled by {scale:g}, the largest of {', '.join(f'{s:g}' for s in STABLE_SCALES)} "
                "at which it does not (a policy's first actions saturate)")  # fmt: skip
    groups: dict[float, list[int]] = {}
    for a in np.argsort(-scales, kind="stable"):
        groups.setdefault(float(scales[a]), []).append(int(a))
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a) or f"actuator {a}" for a in range(model.nu)]
    parts = [f"{factor:.2g} x for {len(group)} ({', '.join(names[a] for a in group[:3])}{', ...' if len(group) > 3 else ''}: "
             f"{float(span[group].max() * factor):.3g} at full action)" for factor, group in groups.items()]  # fmt: skip
    return (f"{start}each motor's actions scaled by the largest factor at which it stays finite, pushed alone and then with "
            f"the others (at most the torque that holds the whole robot at arm's length): {'; '.join(parts)}")  # fmt: skip


def _diverged(data: mujoco.MjData) -> bool:
    """MuJoCo found a bad acceleration (and reset the state) or the state is no longer finite."""
    return data.warning[int(mujoco.mjtWarning.mjWARN_BADQACC)].number > 0 or not np.isfinite(data.qpos).all()


WATCHDOG_MARGIN = 0.1
"""How far past its range [rad or m] a joint trips the deploy watchdog: the locomotion templates'
past_joint_limits margin."""
SOFT = 0.75 * WATCHDOG_MARGIN
"""A limit is soft for its motors where full effort takes the joint more than this far past it (the
median push): a policy's first, random actions then reach the watchdog's margin so often that the
termination ends nearly every early episode, and the policy learns to end them sooner. Measured with
new-task's locomotion task as generated, 30 iterations of 512 envs (docs/benchmarks.md, 2026-11-30):
with overshoots of 0.0985 (gymnasium's Ant), 0.173 (dm_control's walker) and 0.33 rad (gymnasium's
Walker2d) past_joint_limits ended 80-100 % of the episodes in every iteration, and the episodes shrank
or fell back; with 0.000 (gymnasium's Hopper), 0.041 (half_cheetah) and 0.050 (dm_control's hopper) it
ended 4 % or fewer from iteration 12 on (the half_cheetah's 39 % at first fell as its episodes grew).
The threshold sits between the two groups."""


def soft_limits(model: mujoco.MjModel, joints: list[str], scale: float | np.ndarray = 1.0) -> dict[str, float]:
    """The joints of `joints` whose limits are soft for their motors (SOFT) at `scale` x full
    effort (one factor, or one per actuator), with how far past."""
    return {name: past for name, past in limit_overshoot(model, joints, scale=scale).items() if past > SOFT}
