"""Pictures of a bundle's policy: run it through the deploy runtime on the MuJoCo stand-in robot
(as `robolearn sim2sim` does) and save frames, an animated GIF and a contact sheet.

    MUJOCO_GL=egl python scripts/render_bundle.py <bundle dir> <out dir> [--seconds 4] [--fps 10]
        [--command 0.8 0 0] [--size 480 320] [--seed 0]

--command fixes the task's first command (e.g. base velocity x, y, yaw rate) for the whole clip;
without it the task's own command schedule runs. The camera follows the model's first body.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")  # headless; must be set before mujoco is imported

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from robolearn.sim2sim import open_sim  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundle", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--fps", type=float, default=10.0)
    parser.add_argument("--command", type=float, nargs="*", default=None)
    parser.add_argument("--size", type=int, nargs=2, default=(480, 320))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    policy, robot, referee, loop = open_sim(args.bundle, seed=args.seed)
    qpos, qvel = referee.initial_state()
    robot.reset(qpos, qvel)
    robot.inputs = referee.commands()
    fixed = None
    if args.command is not None and robot.inputs:
        name = next(iter(robot.inputs))
        fixed = {name: np.asarray(args.command, dtype=np.float32)}
        robot.inputs = dict(fixed)

    width, height = args.size
    robot.model.vis.headlight.ambient[:] = 0.35  # models without lights render black otherwise
    robot.model.vis.headlight.diffuse[:] = 0.6
    robot.model.vis.map.znear = 0.05 / robot.model.stat.extent  # clip planes scale with the extent (a big terrain)
    renderer = mujoco.Renderer(robot.model, height, width)
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    camera.trackbodyid, camera.distance, camera.elevation, camera.azimuth = 1, 1.6, -20.0, 135.0
    period = policy.bundle.control_period_s
    every = max(1, round(1.0 / (args.fps * period)))
    ticks = round(args.seconds / period)
    frames: list[Image.Image] = []

    def on_step(step) -> bool:
        if step.index % every == 0:
            renderer.update_scene(robot.data, camera)
            frames.append(Image.fromarray(renderer.render()))
        robot.inputs = dict(fixed) if fixed is not None else referee.advance_commands()
        return step.tripped is not None

    loop.reset()
    try:
        loop.run(ticks, on_step)
    finally:
        loop.close()
        referee.close()
    args.out.mkdir(parents=True, exist_ok=True)
    for k, frame in enumerate(frames):
        frame.save(args.out / f"frame_{k:03d}.png")
    frames[0].save(args.out / "clip.gif", save_all=True, append_images=frames[1:], duration=round(1000 / args.fps), loop=0)
    picks = [frames[i] for i in np.linspace(0, len(frames) - 1, min(8, len(frames))).astype(int)]
    sheet = Image.new("RGB", (width * 4 // 2, height * ((len(picks) + 3) // 4) // 2))
    for k, frame in enumerate(picks):
        sheet.paste(frame.resize((width // 2, height // 2)), ((k % 4) * width // 2, (k // 4) * height // 2))
    sheet.save(args.out / "contact_sheet.png")
    print(f"wrote {len(frames)} frames, clip.gif and contact_sheet.png to {args.out}")


if __name__ == "__main__":
    main()
