"""MuJoCo's native viewer for `robolearn play mode=viewer` (where there is a display): a run's
policy on env 0 of its task's env, or a bundle through the deploy runtime on the stand-in robot.
The camera follows the robot; space pauses and resumes, backspace starts a new episode.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time

from robolearn.command_script import CommandScript
from robolearn.errors import UserError, one_line
from robolearn.interrupts import sigterm_ends_at_once
from robolearn.play_markers import Marks
from robolearn.render import set_state


class ViewerKeys:
    """The keys the passive viewer hands to us (it steps nothing itself): space pauses and resumes,
    backspace resets."""

    SPACE, BACKSPACE = 32, 259  # GLFW key codes

    def __init__(self):
        self.paused = False
        self.reset = False

    def __call__(self, key: int) -> None:
        if key == self.SPACE:
            self.paused = not self.paused
        elif key == self.BACKSPACE:
            self.reset = True


def check_display() -> None:
    """One line where the display DISPLAY (or WAYLAND_DISPLAY) names does not open: MuJoCo's viewer
    printed GLFW's errors, wrote MUJOCO_LOG.TXT into the working folder and ended the process."""
    import glfw

    named = "DISPLAY" if os.environ.get("DISPLAY") else "WAYLAND_DISPLAY"
    reporting, glfw.ERROR_REPORTING = glfw.ERROR_REPORTING, "raise"
    try:
        if not glfw.init():
            raise RuntimeError("glfwInit failed")
    except Exception as exc:
        reason = re.sub(r"^\(\d+\) b?'(.*)'$", r"\1", one_line(exc))  # GLFW's "(65550) b'X11: ...'"
        raise UserError(f"mode=viewer cannot open the display {named}={os.environ.get(named)} ({reason}); use "
                        "mode=video for an mp4, or set DISPLAY to a display that is running") from None  # fmt: skip
    finally:
        glfw.ERROR_REPORTING = reporting
    glfw.terminate()


CLOSE_WAIT_S = 10.0
"""How long leaving the viewer waits for its window's thread to end."""


@contextlib.contextmanager
def passive_viewer(model, data, keys: ViewerKeys):
    """MuJoCo's passive viewer for the block, closed when the block ends (the window closed, Ctrl+C,
    an error) and its window's thread waited for: that thread is a daemon, and one still drawing
    while the interpreter shut down crashed the process (a segmentation fault after every close
    under Xvfb, MuJoCo 4.0.0)."""
    import mujoco.viewer

    before = set(threading.enumerate())
    viewer = mujoco.viewer.launch_passive(model, data, key_callback=keys)
    window = [t for t in threading.enumerate() if t not in before]
    try:
        yield viewer
    finally:
        viewer.close()
        for thread in window:
            thread.join(timeout=CLOSE_WAIT_S)


def view_run(env, actor_critic, script: CommandScript | None) -> None:
    """MuJoCo's viewer on env 0, live, at real time, until the window is closed (space: pause,
    backspace: reset). The viewer shows a copy of env 0's state, so a mouse push does not reach
    the simulation here; it does with bundle= (view_bundle)."""
    import mujoco
    import torch

    from robolearn.rl.models import Controller

    data = mujoco.MjData(env.model)
    policy = Controller(actor_critic, env.num_envs, env.device)
    keys = ViewerKeys()
    marks = Marks(env)
    with sigterm_ends_at_once(), passive_viewer(env.model, data, keys) as viewer, torch.inference_mode():
        aim(viewer, env.model)
        obs = env.reset(spread_timeouts=False)
        started = time.perf_counter()
        while viewer.is_running():
            tick = time.perf_counter()
            if keys.reset:
                obs, keys.reset, started = env.reset(spread_timeouts=False), False, tick
                policy.reset()
            if not keys.paused:
                if script is not None:
                    script.apply(env, tick - started)
                obs, _, terminated, truncated = env.step(policy(obs["policy"]))
                policy.reset(terminated | truncated)
            else:
                started += env.dt  # the script's clock stands still while paused
            set_state(env.model, data, env.physics.qpos[0].double().numpy(), env.physics.qvel[0].double().numpy())
            mark(viewer, env.model, data, marks, {c: env.commands.get(c)[0].numpy() for c in marks.commands})
            viewer.sync()
            time.sleep(max(0.0, env.dt - (time.perf_counter() - tick)))


def aim(viewer, model) -> None:
    """The viewer's camera follows the robot from a distance that fits it, as the videos' does
    (the mouse still turns and zooms it; double-click a body and ctrl + drag to push it)."""
    import mujoco

    from robolearn.render import fit_distance, geom_groups

    with viewer.lock():
        if model.nbody > 1:
            viewer.cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING
            viewer.cam.trackbodyid = 1
        viewer.cam.distance = fit_distance(model)
        viewer.opt.geomgroup[:] = geom_groups(model)  # a robot of collision geoms alone is drawn too
        viewer.cam.elevation, viewer.cam.azimuth = -20.0, 135.0


def mark(viewer, model, data, marks: Marks, values: dict) -> None:
    """What the videos draw beside the robot (play_markers.Marks: velocity arrows, reach targets and
    the points reaching for them, orientation targets' tool axes), in the viewer's own scene;
    `values`: the commands' values for the robot on show."""
    if not marks.commands:
        return
    from robolearn.render import add_arrow, add_sphere

    arrows, markers = marks.draw(model, data, values)
    with viewer.lock():
        viewer.user_scn.ngeom = 0
        for arrow in arrows:
            add_arrow(viewer.user_scn, arrow)
        for marker in markers:
            add_sphere(viewer.user_scn, marker)


def view_bundle(robot, referee, loop) -> None:
    """MuJoCo's viewer on the stand-in robot's own MjData, stepped in real time by the control loop:
    a mouse perturbation (double-click a body, ctrl + drag) pushes the robot the policy controls.
    Space pauses (the control loop waits), backspace starts a new episode."""
    qpos, qvel = referee.initial_state()
    robot.reset(qpos, qvel)
    robot.inputs = referee.commands()
    keys = ViewerKeys()
    with sigterm_ends_at_once(), passive_viewer(robot.model, robot.data, keys) as viewer:
        aim(viewer, robot.model)
        loop.reset()

        marks = Marks(referee.env)

        def on_step(step) -> bool:
            mark(viewer, robot.model, robot.data, marks, robot.inputs)
            viewer.sync()
            robot.inputs = referee.advance_commands()
            return keys.paused or keys.reset or not viewer.is_running()

        while viewer.is_running():
            loop.run(referee.env.max_episode_length, on_step)  # an episode, or until a key
            paused = keys.paused
            while keys.paused and not keys.reset and viewer.is_running():
                time.sleep(0.05)  # the loop is stopped: no late ticks for its watchdog to trip on
                viewer.sync()
            if keys.reset or not paused:  # backspace, or the episode ended: a new one
                robot.reset(*referee.initial_state())
            keys.reset = False
            loop.reset()
