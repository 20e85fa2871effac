"""How many contacts and constraint rows a model needs per environment: MuJoCo Warp allocates
fixed buffers for them (nconmax, njmax), and a world that needs more overflows.

MuJoCo Warp's own default is one size for almost every model (45 contacts, 53 rows without
height fields), ample for a quadruped on its feet and too small for a humanoid or a dog on the
ground (a falling Unitree G1 reaches 145 rows). So before the buffers are made, native MuJoCo
runs the model briefly from each of its starting states (qpos0 and every keyframe) under random
controls, which is where a policy starts too: the robot flails, falls and lies on the ground.
One such run varies a lot (the G1's most rows in three 1.5 s runs: 74, 145, 65), so it is
repeated ROLLOUTS times. The buffers are raised above MuJoCo Warp's default only where those
runs needed more, to MARGIN times the most they saw.
"""

from __future__ import annotations

import contextlib
import math

import mujoco
import numpy as np

SECONDS = 1.5
"""Simulated time of one run."""
ROLLOUTS = 16
"""Runs from each starting state (G1: ~1 s of CPU time in all)."""
MARGIN = 2.0
"""Buffers are this much larger than the most the runs saw."""


@contextlib.contextmanager
def unstable_quietly():
    """MuJoCo's warnings off while the probe runs: random controls may make a model blow up
    (MuJoCo resets it and the probe goes on), which is worth neither a warning nor a
    MUJOCO_LOG.TXT in the user's folder. A hook already installed (the user's, or the mujoco
    backend's) stays in place."""
    if mujoco.get_mju_user_warning() is not None:
        yield
        return
    mujoco.set_mju_user_warning(lambda message: None)
    try:
        yield
    finally:
        mujoco.set_mju_user_warning(None)


def probe(model: mujoco.MjModel, seconds: float = SECONDS, rollouts: int = ROLLOUTS, seed: int = 0) -> tuple[int, int]:
    """(most contacts, most constraint rows) of one environment over `rollouts` runs of `seconds`
    from each start, under controls drawn uniformly within ctrlrange (±1 where unlimited),
    redrawn every 0.1 s."""
    gen = np.random.default_rng(seed)
    data = mujoco.MjData(model)
    low, high = np.full(model.nu, -1.0), np.full(model.nu, 1.0)
    limited = model.actuator_ctrllimited.astype(bool)
    low[limited], high[limited] = model.actuator_ctrlrange[limited, 0], model.actuator_ctrlrange[limited, 1]
    steps, hold = max(1, round(seconds / model.opt.timestep)), max(1, round(0.1 / model.opt.timestep))
    ncon = nefc = 0
    with unstable_quietly():
        for key in [k for k in range(-1, model.nkey) for _ in range(rollouts)]:
            if key < 0:
                mujoco.mj_resetData(model, data)
            else:
                mujoco.mj_resetDataKeyframe(model, data, key)
            for step in range(steps):
                if step % hold == 0:
                    data.ctrl[:] = gen.uniform(low, high)
                mujoco.mj_step(model, data)
                ncon, nefc = max(ncon, data.ncon), max(nefc, data.nefc)
    return ncon, nefc


def buffer_sizes(model: mujoco.MjModel, defaults: dict[str, int], keep: set[str] = frozenset()) -> tuple[dict[str, int], str | None]:
    """({"nconmax": .., "njmax": ..}, why): the defaults, each raised where the probe needs more
    (except those in `keep`: the user's own settings); `why` says what was raised and from what
    (None when nothing was)."""
    ncon, nefc = probe(model)
    sizes, raised = dict(defaults), []
    for name, needed in (("nconmax", ncon), ("njmax", nefc)):
        if name not in keep and needed > defaults[name]:
            sizes[name] = math.ceil(MARGIN * needed)
            raised.append(f"{name} {defaults[name]} -> {sizes[name]}")
    why = None
    if raised:
        why = (f"MuJoCo Warp buffers per environment: {', '.join(raised)} (a short random-control run of the model "
               f"reached {ncon} contacts and {nefc} constraint rows; physics.nconmax / physics.njmax set them)")  # fmt: skip
    return sizes, why
