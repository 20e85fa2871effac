"""`robolearn play bundle=<dir>`: an exported bundle run by the deploy runtime on the MuJoCo stand-in
robot, exactly what the robot runs, scored by the task's terms as sim2sim scores it. mode=video
writes the episodes back to back into one mp4; mode=viewer opens MuJoCo's viewer (native_viewer.py)."""

from __future__ import annotations

import time
from pathlib import Path

from robolearn.errors import UserError
from robolearn.play import PlayCfg, frame_rate, output_path, overlay, scripted
from robolearn.play_markers import Marks
from robolearn.render import FrameRenderer, Mp4Writer


def play_bundle(bundle_dir: Path, cfg: PlayCfg) -> Path | None:
    from robolearn.sim2sim import open_sim

    if cfg.mode == "web":
        raise UserError("mode=web plays a run's policy (run=<dir>); a bundle plays as mode=video or mode=viewer")
    cfg.check()
    if cfg.num_envs != 1:
        raise UserError("num_envs= is for run=; a bundle plays one robot (the deploy runtime runs one)")
    policy, robot, referee, loop = open_sim(bundle_dir, seed=cfg.seed, realtime=cfg.mode == "viewer")
    try:
        if cfg.mode == "viewer":
            from robolearn.native_viewer import view_bundle

            return view_bundle(robot, referee, loop)
        return _record(BundleClip(bundle_dir, cfg, policy, robot, referee, loop))
    finally:
        loop.close()
        referee.close()


def _record(clip: BundleClip) -> Path:
    """Open the renderer (camera= is checked before any folder is made) and the video, and play
    episodes until the clip is full; a clip that fails leaves no half-written file."""
    cfg = clip.cfg
    renderer = FrameRenderer(clip.robot.model, cfg.camera, cfg.width, cfg.height)
    out = output_path(cfg, Path.cwd() / f"{clip.bundle_dir.resolve().name}_play.mp4")
    writer = Mp4Writer(out, cfg.width, cfg.height, clip.fps)
    started = time.perf_counter()
    try:
        while clip.ticks_done < clip.ticks:
            clip.episode(renderer, writer)
    except BaseException:
        writer.close()
        out.unlink(missing_ok=True)
        raise
    finally:
        writer.close()
        renderer.close()
    print(f"wrote {out} ({writer.frames} frames at {frame_rate(cfg.fps, clip.every, clip.period)}, "
          f"{writer.frames / clip.fps:.1f} s; "
          f"made in {time.perf_counter() - started:.1f} s)")  # fmt: skip
    return out


class BundleClip:
    """A bundle's clip, tick by tick: the episodes as sim2sim runs them (a start state drawn by the
    task, scored by its terms), one frame every `every` control ticks, the first command scripted by
    command= where given. A task without a command refuses command= before any file is opened."""

    def __init__(self, bundle_dir: Path, cfg: PlayCfg, policy, robot, referee, loop):
        self.bundle_dir, self.cfg, self.robot, self.referee, self.loop = bundle_dir, cfg, robot, referee, loop
        self.period = policy.bundle.control_period_s
        self.every = max(1, round(1.0 / (cfg.fps * self.period)))
        self.fps = 1.0 / (self.every * self.period)  # the video's: a frame every `every` ticks
        self.ticks = max(1, round(cfg.duration / self.period))
        inputs = referee.commands()
        self.command = next(iter(inputs), None)
        if cfg.command is not None:
            if self.command is None:
                raise UserError("command=: the bundle's task has no command")
            cfg.command.check_width(len(inputs[self.command]), self.command)
        self.marks = Marks(referee.env)
        self.weights = referee.env.rewards.weights.numpy()
        self.title = f"{policy.bundle.meta.get('task', bundle_dir.name)} | bundle {bundle_dir.name} (deploy runtime)"
        self.ticks_done = 0
        self.note = ("", -1.0)  # how the last episode ended, and when

    def episode(self, renderer: FrameRenderer, writer: Mp4Writer) -> None:
        """One episode, to its end or to the end of the clip."""
        from robolearn.sim2sim import EpisodeScore

        robot, referee, limit = self.robot, self.referee, self.referee.env.max_episode_length
        robot.reset(*referee.initial_state())
        robot.inputs = self._commands(referee.commands())
        self.loop.reset()
        score = EpisodeScore(referee, robot)

        def on_step(step) -> bool:
            ended = score.tick(step)
            t = (self.ticks_done + 1) * self.period
            if ended or score.episode.length >= limit:
                self.note = (f"episode ended ({score.ended_by()}), return {score.episode.ret:.1f}", t)
            if self.ticks_done % self.every == 0:
                writer.write(self._frame(renderer, score.episode, t))
            self.ticks_done += 1
            if ended or self.ticks_done >= self.ticks or score.episode.length >= limit:
                return True
            robot.inputs = self._commands(referee.advance_commands())  # the next tick's
            return False

        self.loop.run(self.ticks - self.ticks_done, on_step)
        referee.end_episode()

    def _commands(self, drawn: dict) -> dict:
        return scripted(self.cfg.command, self.command, self.ticks_done * self.period, drawn)

    def _frame(self, renderer: FrameRenderer, episode, t: float):
        env, robot = self.referee.env, self.robot
        terms = env.rewards.values[:, 0].numpy() * self.weights if episode.length else self.weights * 0
        lines = overlay(self.title, t, episode.ret, env.rewards.names, terms, robot.inputs, self.note)
        arrows, markers = self.marks.draw(robot.model, robot.data, robot.inputs)
        return renderer.render(robot.data, arrows, lines, markers)
