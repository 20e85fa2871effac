"""`robolearn play`: watch a policy. From a run (its checkpoint's torch policy in the task's env) or
from a bundle (the deploy runtime on the MuJoCo stand-in robot: exactly what the robot runs;
play_bundle.py).

    robolearn play run=<dir> [checkpoint=<file>] [mode=video] [out=<file.mp4>] [duration=10] [fps=30]
                   [num_envs=1] [camera=track|fixed|free] [distance=] [elevation=] [azimuth=]
                   [command=[0.8,0,0] | command=[[0,0,0,0],[2,0.8,0,0]]] [width=640] [height=480] [seed=0]
    robolearn play bundle=<dir> ...

mode=video writes an H.264 mp4 (several environments side by side with num_envs=), with a floor
grid, the commanded and the actual base velocity as arrows (green, blue) for velocity commands, each
reach target and the point reaching for it as spheres (green, blue), an orientation target's tool
axis as commanded and as it is (green, blue; play_markers.py), and
a text overlay: time, return, the largest reward terms, each command, and how each episode ended
(or the watchdog's reason). mode=viewer opens MuJoCo's interactive viewer where there is a
display; mode=web serves a run's policy live to a browser (web_viewer.py). `command=` scripts the
task's first command (command_script.py): one value for the whole clip, or a schedule.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robolearn.command_script import CommandScript
from robolearn.errors import UserError
from robolearn.play_markers import Marks
from robolearn.render import CameraCfg, FrameRenderer, Mp4Writer, set_state, tile
from robolearn.run_dir import check_writable

MODES = ("video", "viewer", "web")
MAX_DURATION_S = 3600.0
MAX_FPS = 240.0
MAX_DISTANCE_M = 1000.0
"""The farthest a camera stands from the robot (beyond, a robot is a pixel or none)."""
END_NOTE_S = 1.0
"""How long an 'episode ended' line stays on the overlay."""


@dataclass
class PlayCfg:
    mode: str = "video"
    out: Path | None = None
    duration: float = 10.0
    fps: float = 30.0
    num_envs: int = 1
    camera: CameraCfg = field(default_factory=CameraCfg)
    command: CommandScript | None = None
    width: int = 640
    height: int = 480
    seed: int = 0
    port: int = 8080
    host: str = "127.0.0.1"

    def check(self) -> None:
        if self.mode not in MODES:
            raise UserError(f"mode={self.mode} is not a play mode; valid: {', '.join(MODES)}")
        if not 0 < self.duration <= MAX_DURATION_S:  # also refuses nan
            raise UserError(f"duration={self.duration} is out of range; valid: 0 < duration <= {MAX_DURATION_S:g} (seconds)")
        if not 1 <= self.fps <= MAX_FPS:
            raise UserError(f"fps={self.fps} is out of range; valid: 1..{MAX_FPS:g} (frames a second)")
        if self.mode == "video" and self.duration * self.fps < 2:  # one frame is a still, and some players refuse it
            raise UserError(f"duration={self.duration:g} at fps={self.fps:g} makes fewer than 2 frames; valid: "
                            f"duration >= {2 / self.fps:g} s at fps={self.fps:g} (2 frames)")  # fmt: skip
        if self.seed < 0:
            raise UserError(f"seed={self.seed} is out of range; valid: an integer >= 0")
        cam = self.camera
        if cam.distance is not None and not 0 < cam.distance <= MAX_DISTANCE_M:
            raise UserError(f"distance={cam.distance} is out of range; valid: 0 < distance <= {MAX_DISTANCE_M:g} "
                            "(metres), or auto")  # fmt: skip
        if not -90 <= cam.elevation <= 90:
            raise UserError(f"elevation={cam.elevation} is out of range; valid: -90..90 (degrees)")
        if not math.isfinite(cam.azimuth):
            raise UserError(f"azimuth={cam.azimuth} is out of range; valid: a finite angle (degrees)")
        if not 1 <= self.num_envs <= 16:
            raise UserError(f"num_envs={self.num_envs} is out of range; valid: 1..16 (tiled side by side)")
        if not (16 <= self.width <= 3840 and 16 <= self.height <= 2160):
            raise UserError(f"width={self.width} height={self.height} is out of range; valid: 16..3840 x 16..2160")
        self.width, self.height = self.width // 2 * 2, self.height // 2 * 2  # H.264 4:2:0 wants even sizes
        if self.mode == "viewer" and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            raise UserError("mode=viewer needs a display (neither DISPLAY nor WAYLAND_DISPLAY is set); "
                            "use mode=video for an mp4, or run it where there is a screen")  # fmt: skip
        if self.mode == "viewer":  # a display is named: does it open?
            from robolearn.native_viewer import check_display

            check_display()
        if self.mode == "web":
            from robolearn.web_viewer import check_port, import_viser

            if self.command is not None:
                raise UserError("command= scripts videos and the native viewer; in mode=web drive the command "
                                "with the page's sliders")  # fmt: skip

            import_viser()
            check_port(self.host, self.port)


def free_path(path: Path) -> Path:
    """`path`, or `<stem>-2<suffix>`, ... if it exists: a video never replaces a file."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


def output_path(cfg: PlayCfg, default: Path) -> Path:
    if cfg.out is None:
        path = free_path(default)
    else:
        path = cfg.out
        if path.exists():
            raise UserError(f"out={path} already exists; choose a new file (play never replaces one)")
        if path.suffix.lower() != ".mp4":
            raise UserError(f"out={path} must end in .mp4")
    check_writable(path, "out")  # the nearest folder that exists, and no file on the way
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


# --- text --------------------------------------------------------------------------------------
def fmt(values) -> str:
    return "[" + ", ".join(f"{v:.2f}" for v in np.asarray(values).ravel()) + "]"


# --- a run's policy in the task's env --------------------------------------------------------
def play_run(run_dir: Path, checkpoint_file: Path | None, cfg: PlayCfg) -> Path:
    import torch

    from robolearn.run_policy import policy_from_run

    cfg.check()
    if cfg.mode == "web":
        from robolearn.web_viewer import serve

        return serve(run_dir, checkpoint_file, cfg.num_envs, cfg.host, cfg.port)
    if cfg.mode == "video" and cfg.out is None and checkpoint_file is not None:
        from robolearn import checkpoint

        checkpoint.refuse_another_runs(run_dir, checkpoint.named(run_dir, checkpoint_file), "play files its video",
                                       "play run={owner} checkpoint={name}, or give out=<file.mp4>")  # fmt: skip
    env, actor_critic, payload, source = policy_from_run(run_dir, checkpoint_file, cfg.num_envs, seed=cfg.seed)
    try:
        if cfg.command is not None:
            if not env.commands.names:
                raise UserError(f"command=: task '{env.cfg.name}' has no command")
            name = env.commands.names[0]
            cfg.command.check_width(env.commands.get(name).shape[1], name)
            env.commands.hold(name, torch.tensor(cfg.command.at(0.0)))
        if cfg.mode == "viewer":
            from robolearn.native_viewer import view_run

            return view_run(env, actor_critic, cfg.command)
        every = max(1, round(1.0 / (cfg.fps * env.dt)))
        renderers = [FrameRenderer(env.model, cfg.camera, *_tile_size(cfg)) for _ in range(cfg.num_envs)]  # camera= checked
        out = output_path(cfg, run_dir / "videos" / f"play_{source.stem}.mp4")  # its folder made only now
        clip = Clip(renderers, Mp4Writer(out, *_tiled(cfg), 1.0 / (every * env.dt)),
                    f"{env.cfg.name} | {source.name} (iteration {payload['iteration']})", every,
                    max(1, round(cfg.duration / env.dt)), cfg.command)  # fmt: skip
        try:
            _record(env, actor_critic, clip)
        except BaseException:
            clip.writer.close()
            out.unlink(missing_ok=True)  # no half-written video left behind
            raise
        clip.writer.close()
        for renderer in clip.renderers:
            renderer.close()
    finally:
        env.close()
    print(f"wrote {out} ({clip.writer.frames} frames at {frame_rate(cfg.fps, every, env.dt)}, "
          f"{clip.writer.frames * every * env.dt:.1f} s)")
    return out


def frame_rate(asked: float, every: int, period: float) -> str:
    """A video's frame rate in words: a frame is drawn every `every` control steps of `period` s, so
    the rate asked for (fps=) is rounded to one the control rate divides; the words say so where
    the two differ (30 asked at 50 Hz control is a frame every 2 steps: 25 fps)."""
    fps = 1.0 / (every * period)
    if abs(fps - asked) < 0.01 * asked:
        return f"{fps:.3g} fps"
    steps = "every control step" if every == 1 else f"every {every} control steps"
    return f"{fps:.3g} fps (fps={asked:g} asked; a frame {steps} of {period:g} s)"


@dataclass
class Clip:
    """What a run's clip is drawn with: one renderer per env (tiled), the writer, the title line,
    every how many control steps a frame is drawn, how many steps the clip lasts, and the scripted
    command (None: the task samples it)."""

    renderers: list[FrameRenderer]
    writer: Mp4Writer
    title: str
    every: int
    steps: int
    script: CommandScript | None = None


def _record(env, actor_critic, clip: Clip) -> None:
    """Step the env with the policy's mean action and write every `clip.every`-th step's frame."""
    import mujoco
    import torch

    from robolearn.rl.models import Controller

    model, n = env.model, env.num_envs
    data = mujoco.MjData(model)
    weights, marks = env.rewards.weights.numpy(), Marks(env)
    commands = list(env.commands.names)
    returns = np.zeros(n)
    notes: list[tuple[str, float]] = [("", -1.0)] * n
    policy = Controller(actor_critic, n, env.device)
    with torch.inference_mode():
        obs = env.reset(spread_timeouts=False)
        for step in range(clip.steps):
            if clip.script is not None:
                clip.script.apply(env, step * env.dt)
            obs, reward, terminated, truncated = env.step(policy(obs["policy"]))
            policy.reset(terminated | truncated)
            returns += reward.numpy()
            t = (step + 1) * env.dt
            for i in np.flatnonzero((terminated | truncated).numpy()):
                notes[i] = (f"episode ended ({env.end_reason(i)}), return {returns[i]:.1f}", t)
                returns[i] = 0.0
            if step % clip.every:
                continue
            frames = []
            for i, renderer in enumerate(clip.renderers):
                set_state(model, data, env.physics.qpos[i].double().numpy(), env.physics.qvel[i].double().numpy())
                values = {name: env.commands.get(name)[i].numpy() for name in commands}
                lines = overlay(clip.title if i == 0 else f"env {i}", t, returns[i], env.rewards.names,
                                env.rewards.values[:, i].numpy() * weights, values, notes[i])  # fmt: skip
                arrows, markers = marks.draw(model, data, values)
                frames.append(renderer.render(data, arrows, lines, markers))
            clip.writer.write(frames[0] if len(frames) == 1 else tile(frames))


def overlay(title: str, t: float, ret: float, names: list[str], terms: np.ndarray, commands: dict,
            note: tuple[str, float]) -> list[str]:  # fmt: skip
    """What a frame of play shows: the title, the time and the episode's return, the three largest
    weighted reward terms, each command, and how the last episode ended (`note`: text and time) for
    END_NOTE_S after it did."""
    top = sorted(zip(names, terms), key=lambda nv: -abs(nv[1]))[:3]
    lines = [title, f"t {t:5.2f} s | return {ret:8.2f}", "reward: " + "  ".join(f"{n} {v:+.2f}" for n, v in top)]
    lines += [f"{name} {fmt(value)}" for name, value in commands.items()]
    if note[0] and t - note[1] < END_NOTE_S:
        lines.append(note[0][:100])
    return lines


def scripted(command: CommandScript | None, name: str | None, t: float, commands: dict[str, np.ndarray]) -> dict:
    """The task's commands at time t, the first one (`name`) scripted by command= where given (the
    others as the task draws them)."""
    if command is None:
        return commands
    return {**commands, name: np.asarray(command.at(t), dtype=np.float32)}


def _tiled(cfg: PlayCfg) -> tuple[int, int]:
    cols = int(np.ceil(np.sqrt(cfg.num_envs)))
    rows = int(np.ceil(cfg.num_envs / cols))
    w, h = _tile_size(cfg)
    return cols * w, rows * h


def _tile_size(cfg: PlayCfg) -> tuple[int, int]:
    if cfg.num_envs == 1:
        return cfg.width, cfg.height
    cols = int(np.ceil(np.sqrt(cfg.num_envs)))
    return max(16, cfg.width // cols // 2 * 2), max(16, cfg.height // cols // 2 * 2)
