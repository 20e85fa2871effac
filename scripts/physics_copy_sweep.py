"""Check the CPU backend's physics-only model copies (robolearn/physics/physics_copy.py) on many models.

    python scripts/physics_copy_sweep.py MODEL.xml ...

For each MJCF: its size, the physics-only copy's size and what it left out (or why no copy is made),
and whether the copy and the full model, both with every body's mass scaled by 1.1 (what a mass
randomization does, constants re-derived), end 200 steps of the same random controls in bit-identical
qpos, qvel and sensor readings. Nothing is shipped with it: point it at models you have (MuJoCo
Menagerie, mjlab's asset zoo, dm_control's suite, gymnasium's MuJoCo assets). Results are recorded in
docs/authoring.md ("Mesh-heavy robots on the CPU").
"""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path

import mujoco
import numpy as np

from robolearn.errors import UserError
from robolearn.physics import load_spec
from robolearn.physics.physics_copy import physics_copy


def final_state(model: mujoco.MjModel, steps: int = 200) -> np.ndarray:
    model = copy.deepcopy(model)
    model.body_mass[1:] *= 1.1
    data = mujoco.MjData(model)
    mujoco.mj_setConst(model, data)
    if model.nkey:
        mujoco.mj_resetDataKeyframe(model, data, 0)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        data.ctrl[:] = rng.uniform(-1, 1, model.nu)
        mujoco.mj_step(model, data)
    return np.concatenate([data.qpos, data.qvel, data.sensordata])


def main() -> None:
    print(f"# mujoco {mujoco.__version__}, {time.strftime('%Y-%m-%d')}\n")
    print("| model | MjModel | copy | left out / why none | bit-identical after 200 steps |")
    print("|---|---|---|---|---|")
    for path in map(Path, sys.argv[1:]):
        try:
            nominal = load_spec(path).compile()
        except (UserError, ValueError) as exc:
            print(f"| {path.name} | does not compile: {' '.join(str(exc).split())[:80]} | | | |")
            continue
        stripped, note = physics_copy(load_spec(path), nominal)
        size = f"{mujoco.mj_sizeModel(nominal) / 2**20:.2f} MiB"
        if stripped is None:
            print(f"| {path.name} | {size} | - | {note} | - |")
            continue
        same = np.array_equal(final_state(nominal), final_state(stripped), equal_nan=True)
        print(f"| {path.name} | {size} | {mujoco.mj_sizeModel(stripped) / 2**10:.0f} KiB | {note} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
