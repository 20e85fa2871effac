"""How the position servos `robolearn new-task` adds to a robot without actuators answer a step.

    python scripts/servo_step_probe.py ROBOT [ROBOT ...] [--step 0.4] [--seconds 2] [--kd-ratio R]

For each model (URDF or MJCF, fixed to the world: an arm, a robot on rails): generate the minimal
template into a temporary folder, build the edited model as training does (robot.py's `apply`, the
task's integrator), hold every joint at its target in the stance (the `home` keyframe) for 1 s, then move one joint's
target by --step (rad or m) and follow that joint for --seconds. Per joint: KP and KD, where it
settled (the step, plus or minus what gravity takes or gives), the overshoot past that as a share
of the motion, and the 2 % settling time. --kd-ratio R replaces the generated KD by KP / R (new-task's
rule before session 47 was R = 40) to compare. Results: docs/benchmarks.md, "Servo damping".
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mujoco
import numpy as np

from generated_robot import generated_model, use_task_integrator


def build(robot_file: Path, kd_ratio: float | None) -> tuple[mujoco.MjModel, object]:
    def with_ratio(robot) -> None:
        kp = robot.KP if isinstance(robot.KP, dict) else dict.fromkeys(robot.JOINTS, robot.KP)
        robot.KD = {joint: gain / kd_ratio for joint, gain in kp.items()}

    model, robot, task = generated_model(robot_file, "minimal", "servo_probe", with_ratio if kd_ratio else None)
    use_task_integrator(model, task)
    return model, robot


def step_response(model: mujoco.MjModel, joint: str, step: float, seconds: float) -> tuple[float, float, float]:
    """(where the joint settled relative to where it started, the overshoot past that as a share of
    it, the 2 % settling time [s])."""
    data = mujoco.MjData(model)
    if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home") >= 0:  # the stance the gains were planned in
        mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_forward(model, data)
    for a in range(model.nu):  # every servo holds the stance it starts in
        data.ctrl[a] = data.qpos[model.jnt_qposadr[model.actuator_trnid[a, 0]]]
    for _ in range(int(1.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
    address = model.jnt_qposadr[model.joint(joint).id]
    start = data.qpos[address]
    data.ctrl[model.actuator(joint).id] += step
    path = []
    for _ in range(int(seconds / model.opt.timestep)):
        mujoco.mj_step(model, data)
        path.append(data.qpos[address] - start)
    path = np.asarray(path) * np.sign(step)
    final = path[-1]
    overshoot = max(0.0, (path.max() - final) / final) if final > 0 else float("nan")
    outside = np.nonzero(np.abs(path - final) > 0.02 * abs(final))[0]
    settle = (outside[-1] + 1) * model.opt.timestep if len(outside) else 0.0
    return final * np.sign(step), overshoot, settle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("robots", nargs="+", type=Path, help="URDF or MJCF files of robots fixed to the world")
    parser.add_argument("--step", type=float, default=0.4, help="how far each joint's target moves (rad or m)")
    parser.add_argument("--seconds", type=float, default=2.0, help="how long each step is followed")
    parser.add_argument("--kd-ratio", type=float, default=None, help="KD = KP / this instead of the generated KD")
    args = parser.parse_args()
    for robot_file in args.robots:
        model, robot = build(robot_file, args.kd_ratio)
        print(f"{robot_file.name} ({'KD = KP / ' + str(args.kd_ratio) if args.kd_ratio else 'generated KD'}, "
              f"timestep {model.opt.timestep} s)")  # fmt: skip
        for joint in robot.JOINTS:
            if joint not in [model.actuator(a).name for a in range(model.nu)]:
                continue
            a = model.actuator(joint).id
            kp, kd = model.actuator_gainprm[a, 0], -model.actuator_biasprm[a, 2]
            final, overshoot, settle = step_response(model, joint, args.step, args.seconds)
            print(f"  {joint:18s} KP {kp:7.1f} KD {kd:7.3f}  settled at {final:+.3f}  overshoot {100 * overshoot:5.1f} %  "
                  f"2 % settling {settle:.3f} s")  # fmt: skip


if __name__ == "__main__":
    main()
