"""`robolearn play run=<dir> mode=web`: a run's policy live in a browser, for machines without a
display.

    robolearn play run=<dir> mode=web [port=8080] [host=127.0.0.1] [num_envs=1] [checkpoint=<file>]

The page (http://<host>:<port>/) draws the rollout in 3D (viser; mjviser turns the MuJoCo model
into its scene) next to a panel (web_panel.py): pause / step / reset, the speed, which environment
to look at (num_envs > 1), each reward term's weighted value as a bar, sliders that drive the
task's commands, and the run's checkpoints; with "follow newest" on, a run that is still training
is re-loaded each time it writes a checkpoint.

The simulation runs here, on the main thread, in real time (times the speed); the page only posts
requests, applied between two env steps. Ctrl+C stops the server.
"""

from __future__ import annotations

import contextlib
import io
import socket
import sys
import threading
import time
from pathlib import Path

import numpy as np

from robolearn.errors import UserError
from robolearn.interrupts import signals_set_event

DRAW_HZ = 30.0
"""How often the 3D scene is sent to the page."""
PANEL_HZ = 5.0
"""How often the status line and the reward bars are."""
LAG_S = 0.25
"""How far the simulation may fall behind the wall clock before it stops trying to catch up."""
POLL_S = 2.0
"""How often the run's checkpoints folder is looked at."""


def import_viser():
    try:
        import mjviser
        import viser
    except ImportError as exc:
        raise UserError(f"mode=web needs the browser viewer's packages ({exc.name} is missing, though robolearn "
                        "depends on it): pip install viser mjviser") from None  # fmt: skip
    return viser, mjviser


def check_port(host: str, port: int) -> None:
    """A one-line error now, rather than viser quietly moving to another port or a traceback."""
    if not 1 <= port <= 65535:
        raise UserError(f"port={port} is out of range; valid: 1..65535")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        # as the server binds (asyncio sets it): connections of a viewer just stopped, in TIME_WAIT for
        # a minute, do not hold the port; a listening socket still does
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno in (98, 48, 10048):  # EADDRINUSE on Linux, macOS, Windows
                raise UserError(f"port {port} on {host} is in use (another viewer?); choose a free one with "
                                f"port=<n>, e.g. port={_free_port(host)}") from None  # fmt: skip
            raise UserError(f"cannot serve on {host}:{port}: {exc.strerror}; use host=127.0.0.1 or another port=") from None


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


class LivePolicy:
    """A run's env and policy, the checkpoint it acts with, and the rollout's bookkeeping."""

    def __init__(self, run_dir: Path, checkpoint_file: Path | None, num_envs: int):
        from robolearn.run_policy import policy_from_run

        self.run_dir = run_dir
        from robolearn.rl.models import Controller

        self.env, self.actor_critic, payload, self.source = policy_from_run(run_dir, checkpoint_file, num_envs)
        self.policy = Controller(self.actor_critic, self.env.num_envs, self.env.device)
        self.iteration = int(payload["iteration"])
        commands = self.env.commands
        self.task_ranges = {name: commands.ranges[name].clone() for name in commands.names}
        self.returns = np.zeros(self.env.num_envs)
        self.last_end = [""] * self.env.num_envs
        self.obs = None
        found = self.checkpoints()
        self.newest = found[-1].name if found else ""
        """The newest checkpoint seen: a newer one is what "follow newest" loads."""

    def checkpoints(self) -> list[Path]:
        from robolearn.checkpoint import list_checkpoints

        return list_checkpoints(self.run_dir / "checkpoints")

    def load(self, path: Path) -> None:
        """Act with checkpoint `path` from now on; one whose policy acts NaN is a UserError and
        leaves the current policy. A robot model changed since it was written is a note."""
        import copy

        from robolearn import checkpoint
        from robolearn.run_policy import acts_nonfinite, nonfinite_policy, note_other_robot

        payload = checkpoint.load(path)
        state = checkpoint.policy_state(payload, path)
        before = copy.deepcopy(self.actor_critic.state_dict())
        try:
            checkpoint.restore(self.actor_critic, state, path)  # a mismatch may have copied part of it
            if acts_nonfinite(self.actor_critic, self.env):
                raise UserError(nonfinite_policy(path).replace("checkpoint=<name>", "another in the list"))
        except UserError:
            self.actor_critic.load_state_dict(before)
            raise
        changed = checkpoint.other_robot(payload, self.env, path)
        if changed:
            note_other_robot(changed, sys.stdout)
        self.policy.reset()  # another network's memory means nothing to this one
        self.source, self.iteration = path, int(payload["iteration"])

    def reset(self) -> None:
        import torch

        with torch.inference_mode():  # as every step: the env's tensors are inference tensors
            self.obs = self.env.reset(spread_timeouts=False)
        self.policy.reset()
        self.returns[:] = 0.0

    def step(self) -> None:
        import torch

        env = self.env
        with torch.inference_mode():
            self.obs, reward, terminated, truncated = env.step(self.policy(self.obs["policy"]))
            self.policy.reset(terminated | truncated)
        self.returns += reward.numpy()
        for i in np.flatnonzero((terminated | truncated).numpy()):
            self.last_end[i] = f"{env.end_reason(i)}, return {self.returns[i]:.1f}"
            self.returns[i] = 0.0

    def drive(self, name: str, values: list[float] | None) -> None:
        """Hold command `name` at `values` in every env from now on, or (None) give it back to the
        task's sampling within its original range."""
        import torch

        commands = self.env.commands
        if values is None:
            commands.release(name, self.task_ranges[name])
        else:
            commands.hold(name, torch.tensor(values), now=True)


def command_ranges(live: LivePolicy) -> dict[str, tuple[list[str], np.ndarray]]:
    return {name: (live.env.commands.components[name], ranges.numpy()) for name, ranges in live.task_ranges.items()}


def body_poses(model, data, qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every env's body positions [N, nbody, 3] and rotation matrices [N, nbody, 3, 3] from qpos."""
    import mujoco

    xpos = np.empty((len(qpos), model.nbody, 3))
    xmat = np.empty((len(qpos), model.nbody, 3, 3))
    for i, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        xpos[i], xmat[i] = data.xpos, data.xmat.reshape(-1, 3, 3)
    return xpos, xmat


def serve(run_dir: Path, checkpoint_file: Path | None, num_envs: int, host: str, port: int,
          duration: float | None = None) -> None:  # fmt: skip
    """Serve the page and run the policy until Ctrl+C (or `duration` seconds: for tests)."""
    import mujoco

    from robolearn.render import fit_distance
    from robolearn.web_panel import Panel

    viser, mjviser = import_viser()
    check_port(host, port)
    live = LivePolicy(run_dir, checkpoint_file, num_envs)
    env = live.env
    model = env.model
    data = mujoco.MjData(model)
    with contextlib.redirect_stdout(io.StringIO()):  # viser's own banner: the line below says it
        server = viser.ViserServer(host=host, port=port, label=f"robolearn | {env.cfg.name}", verbose=False)
    try:
        scene = mjviser.ViserMujocoScene(server, model, num_envs=env.num_envs)
        scene.show_only_selected = env.num_envs > 1  # the envs share one origin: show the chosen one
        show_geom_groups(scene, model)
        panel = Panel(server, command_ranges(live), [p.name for p in live.checkpoints()], live.source.name)
        scene.create_visualization_gui(camera_distance=fit_distance(model), camera_elevation=20.0)
        url = f"http://{'localhost' if host in ('127.0.0.1', '::1') else host}:{port}/"
        print(f"serving {env.cfg.name} ({live.source.name}, iteration {live.iteration}) at {url}; "
              "open it in a browser (from another machine: ssh -L "
              f"{port}:localhost:{port} <this host>); Ctrl+C stops", flush=True)  # fmt: skip
        with signals_set_event() as stop:
            _loop(live, scene, panel, data, duration, stop, TargetMarks(server, env))
        if stop.is_set():
            print("stopped the viewer", flush=True)
    finally:
        server.stop()
        env.close()


def show_geom_groups(scene, model) -> None:
    """Show the geom groups the videos and the native viewer draw (render.geom_groups: a robot whose
    only geoms are collision geoms in group 3 and up is drawn, not left out); the page's Geoms
    checkboxes start from them."""
    from robolearn.render import geom_groups

    groups = [bool(g) for g in geom_groups(model)]
    if groups != list(scene.geom_groups_visible):
        scene.geom_groups_visible = groups
        scene.rebuild_visual_handles()  # mjviser sets a handle's visibility when it makes it


class TargetMarks:
    """What the videos mark, on the page: the environment on show's planar base velocity as
    commanded (green) and as it is (blue), as arrows above a floating base; its reach targets
    (green) and the points reaching for them (blue), as spheres; each orientation target's tool z
    axis as commanded (green) and as it is (blue), as arrows. Placed as the videos place them
    (play_markers.py)."""

    def __init__(self, server, env):
        from robolearn.play_markers import marker_radius, orientation_targets, position_targets, velocity_command
        from robolearn.render import BLUE, GREEN
        from robolearn.scene.floating_base import floating_base_addresses

        self.env, self.targets, self.orientations = env, position_targets(env), orientation_targets(env)
        self.base, self.velocity = floating_base_addresses(env.model), velocity_command(env)
        radius = marker_radius(env.model)
        green, blue = (tuple(round(255 * c) for c in rgba[:3]) for rgba in (GREEN, BLUE))
        self.handles = [(server.scene.add_icosphere(f"/robolearn/target_{k}", radius=radius, color=green),
                         server.scene.add_icosphere(f"/robolearn/reaching_{k}", radius=0.6 * radius, color=blue))
                        for k in range(len(self.targets))]  # fmt: skip
        axis = np.array([[[0.0, 0.0, 0.0], [0.0, 0.0, 8 * radius]]])  # the tool's z axis, turned by the handle's wxyz
        arrow = dict(shaft_radius=0.15 * radius, head_radius=0.35 * radius, head_length=1.5 * radius)
        self.arrows = [(server.scene.add_arrows(f"/robolearn/orientation_target_{k}", axis, green, **arrow),
                        server.scene.add_arrows(f"/robolearn/orientation_{k}", axis, blue, **arrow))
                       for k in range(len(self.orientations))]  # fmt: skip
        self.velocity_arrows = {}  # the videos' arrow colour -> the page's arrow (its points set each frame)
        if self.base is not None:
            wide = dict(shaft_radius=0.01, head_radius=0.025, head_length=0.05)  # as thick as the videos' arrows
            unit = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]])
            self.velocity_arrows[BLUE] = server.scene.add_arrows("/robolearn/velocity", unit, blue, visible=False, **wide)
            if self.velocity:
                self.velocity_arrows[GREEN] = server.scene.add_arrows("/robolearn/velocity_command", unit, green,
                                                                      visible=False, **wide)  # fmt: skip

    def update(self, data, qpos, i: int, offset=(0.0, 0.0, 0.0), qvel=None) -> None:
        """Move the marks to environment i (qpos, qvel: every environment's [N, nq], [N, nv]);
        `offset`: where the scene moved the world (mjviser's tracking camera keeps the robot at the
        origin)."""
        import mujoco

        from robolearn.play_markers import orientation_frames, sensed_in_world, target_in_world, velocity_arrows

        if self.velocity_arrows and qvel is not None:
            command = self.env.commands.get(self.velocity)[i].numpy() if self.velocity else None
            drawn = {arrow.rgba: arrow for arrow in velocity_arrows(qpos[i], qvel[i], command, self.base)}
            for rgba, handle in self.velocity_arrows.items():  # an arrow too short to draw is hidden
                if rgba in drawn:
                    handle.points = np.array([[drawn[rgba].start + offset, drawn[rgba].end + offset]], dtype=np.float32)
                handle.visible = rgba in drawn
        if not self.targets and not self.orientations:
            return
        data.qpos[:] = qpos[i]
        mujoco.mj_kinematics(self.env.model, data)
        for target, (goal, reaching) in zip(self.targets, self.handles):
            value = self.env.commands.get(target.command)[i].numpy()
            goal.position = tuple(target_in_world(self.env.model, data, target, value) + offset)
            reaching.position = tuple(sensed_in_world(self.env.model, data, target) + offset)
        quat = np.zeros(4)
        for target, handles in zip(self.orientations, self.arrows):
            start, *frames = orientation_frames(self.env.model, data, target, self.env.commands.get(target.command)[i].numpy())
            for handle, frame in zip(handles, frames):
                mujoco.mju_mat2Quat(quat, frame.ravel())
                handle.position, handle.wxyz = tuple(start + offset), tuple(quat)


def _loop(live: LivePolicy, scene, panel, data, duration: float | None, stop: threading.Event | None = None,
          marks: TargetMarks | None = None) -> None:  # fmt: skip
    env, model = live.env, live.env.model
    weights = env.rewards.weights.numpy()
    live.reset()
    paused, steps_left, speed = False, 0, 1.0
    started = time.perf_counter()
    clock = started  # the wall time the simulation has caught up to
    drawn = shown = polled = 0.0
    while (duration is None or time.perf_counter() - started < duration) and not (stop and stop.is_set()):
        for request in panel.drain():
            if request.kind in ("pause", "resume"):
                paused = request.kind == "pause"
            elif request.kind == "step":
                paused, steps_left = True, steps_left + 1
            elif request.kind == "reset":
                live.reset()
            elif request.kind == "speed":
                speed = request.value
            elif request.kind == "drive":
                live.drive(request.name, request.value)
            elif request.kind == "checkpoint" and request.value != live.source.name:
                _load(live, live.run_dir / "checkpoints" / request.value, panel)
        now = time.perf_counter()
        if not paused or steps_left:
            clock = max(clock, now - LAG_S)  # a slow machine plays slower rather than sprinting to catch up
            if now >= clock:
                live.step()
                clock += env.dt / speed
                steps_left = max(0, steps_left - 1)
        else:
            clock = now
        if now - polled >= POLL_S:
            polled = now
            found = live.checkpoints()
            with _lost_wakeup():
                if found and found[-1].name != live.newest:
                    live.newest = found[-1].name
                    if panel.following:
                        _load(live, found[-1], panel)
                panel.set_checkpoints([p.name for p in found] or [live.source.name], live.source.name)
        if now - drawn >= 1.0 / DRAW_HZ:
            drawn = now
            qpos, qvel = env.physics.qpos.double().numpy(), env.physics.qvel.double().numpy()
            xpos, xmat = body_poses(model, data, qpos)
            with _lost_wakeup():
                scene.update_from_arrays(xpos, xmat, qpos=qpos, qvel=qvel)
                if marks is not None:
                    i = min(scene.env_idx, env.num_envs - 1)
                    marks.update(data, qpos, i, getattr(scene, "_scene_offset", np.zeros(3)), qvel)
        if now - shown >= 1.0 / PANEL_HZ:
            shown = now
            i = min(scene.env_idx, env.num_envs - 1)
            with _lost_wakeup():
                panel.show(_status(live, i, paused), env.rewards.names, env.rewards.values[:, i].numpy() * weights)
        time.sleep(max(0.0, min(clock - time.perf_counter(), 1.0 / DRAW_HZ)) if not paused else 1.0 / DRAW_HZ)


@contextlib.contextmanager
def _lost_wakeup():
    """viser queues each change of the page and then wakes its sender with asyncio.Event.set() called
    from this (the simulation's) thread. That set() walks the event's waiters while the server's
    thread may add or drop one (a page connecting, leaving, or the server stopping), and then raises
    "deque mutated during iteration". The change is queued by then and the next one wakes the sender:
    the viewer skips what was left of that frame and plays on. Any other error is raised."""
    try:
        yield
    except RuntimeError as exc:
        if "mutated during iteration" not in str(exc):
            raise


def _load(live: LivePolicy, path: Path, panel) -> None:
    """Switch the policy to another checkpoint; one that cannot be read leaves the current one."""
    try:
        live.load(path)
    except UserError as exc:
        print(f"warning: {exc}", flush=True)
        return
    print(f"now playing {path.name} (iteration {live.iteration})", flush=True)
    panel.set_checkpoints([p.name for p in live.checkpoints()] or [path.name], path.name)


def _status(live: LivePolicy, i: int, paused: bool) -> str:
    env = live.env
    lines = [f"**{env.cfg.name}** | {live.source.name} (iteration {live.iteration})",
             f"env {i} of {env.num_envs} | t {float(env.physics.time[i]):.2f} s{' | paused' if paused else ''}",
             f"return {live.returns[i]:.2f}"]  # fmt: skip
    for name in env.commands.names:
        values = ", ".join(f"{v:.2f}" for v in env.commands.get(name)[i].tolist())
        lines.append(f"{name}: [{values}]")
    if live.last_end[i]:
        lines.append(f"last episode: {live.last_end[i]}")
    return "  \n".join(lines)
