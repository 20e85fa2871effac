"""Whether the foot touch sensors `robolearn new-task` adds read what their feet carry.

    python scripts/foot_contact_probe.py ROBOT.xml [ROBOT.xml ...] [--seconds 4] [--seed 0]

For each model: generate the locomotion task into a temporary folder, build the edited model as
training does (robot.py's `apply`), start from its `home` keyframe and drive every actuator with
random controls across its range (a new draw each 0.1 s; back to `home` if the state blows up).
After each step (and a forward pass, so that contacts and sensors describe one state), per added
sensor: whether its foot body presses on the world (a contact with a positive normal force) and
whether the sensor reads more than zero. Prints, per robot, the steps with a foot pressing on the
world, the share of them its sensor read, and the steps a sensor read a force with no world contact
(the foot touching the robot's own parts: MuJoCo's touch sensor counts every contact of its body).
A foot whose other parts touch the ground (a shin that carries the foot sphere, kneeling) is read
only where those parts lie within the sensor's site.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mujoco
import numpy as np

from generated_robot import generated_model


def probe(robot_xml: Path, seconds: float, seed: int) -> str:
    model, robot, _ = generated_model(robot_xml, "locomotion", "probe_feet")
    added = getattr(robot, "NEW_FOOT_SENSORS", {})
    if not added:
        return f"{robot_xml.name}: no foot sensors added (the model has its own, or no feet were found)"
    data = mujoco.MjData(model)
    feet = {sensor: model.body(body).id for sensor, (body, _, _) in added.items()}
    rng, force = np.random.default_rng(seed), np.zeros(6)
    low, high = model.actuator_ctrlrange.T
    home = model.key("home").id
    mujoco.mj_resetDataKeyframe(model, data, home)
    pressing = read = stray = 0
    for step in range(int(seconds / model.opt.timestep)):
        if step % max(1, round(0.1 / model.opt.timestep)) == 0:
            data.ctrl[:] = rng.uniform(low, high)
        mujoco.mj_step(model, data)
        if not np.isfinite(data.qpos).all():
            mujoco.mj_resetDataKeyframe(model, data, home)
            continue
        mujoco.mj_forward(model, data)  # an RK4 step keeps its last stage's contacts, not the sensors' state
        on_world = set()
        for j, contact in enumerate(data.contact[: data.ncon]):
            bodies = int(model.geom_bodyid[contact.geom1]), int(model.geom_bodyid[contact.geom2])
            mujoco.mj_contactForce(model, data, j, force)
            if force[0] > 0 and 0 in (int(model.body_rootid[bodies[0]]), int(model.body_rootid[bodies[1]])):
                on_world.update(bodies)
        for sensor, body in feet.items():
            reads = data.sensor(sensor).data[0] > 0
            pressing += body in on_world
            read += body in on_world and reads
            stray += body not in on_world and reads
    share = f"{100 * read / pressing:.1f} %" if pressing else "-"
    radii = sorted({round(radius, 3) for _, _, radius in added.values()})
    return (f"{robot_xml.name}: {len(feet)} feet, {pressing} foot-steps pressing on the world, read {share}; "
            f"{stray} foot-steps read with no world contact; site radii {radii} m")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("robots", nargs="+", type=Path, help="MJCF files of legged robots")
    parser.add_argument("--seconds", type=float, default=4.0, help="simulated time per robot [s]")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for robot_xml in args.robots:
        print(probe(robot_xml.resolve(), args.seconds, args.seed), flush=True)


if __name__ == "__main__":
    main()
