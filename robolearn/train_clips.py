"""Clips of env 0 while a policy trains (runner.video_interval), without stopping training.

The clip that ends at iteration N (every video_interval-th one) is recorded during the rollouts of
the iterations leading up to N: every few env steps (a video frame rate) env 0's qpos and qvel are
copied into a buffer on the env's device, which reads nothing back to the host. When the buffer is
full it goes to the host once, and a worker process (this module, run with `python -m`) draws the
frames (render.py), writes <run>/videos/train_it<N>.mp4 and a small GIF for TensorBoard while
training goes on; RunLogger hands finished clips to the loggers. A process, not a thread: drawing
holds no lock that training waits for (the GIL), and it runs at a lower priority. It starts with
the first clip: a run too short for one starts none. Iterations outside a clip's window do
nothing extra.

Where nothing can render offscreen (no EGL or OSMesa), RunLogger warns once and training goes on
without clips.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from robolearn.errors import one_line
from robolearn.log_sinks import Clip

if TYPE_CHECKING:  # the worker process imports this module: it stays free of torch
    import torch

    from robolearn.config import RunnerCfg
    from robolearn.envs.batched_env import BatchedEnv

CLIP_FPS = 30.0
"""The most frames a second a clip draws (fewer where the env step is longer than 1/CLIP_FPS)."""
GIF_FPS = 10.0
GIF_WIDTH = 160
GIF_COLORS = 64
WORKER_NICENESS = 10
"""The worker process yields the CPU to training where both want it."""
CLOSE_TIMEOUT_S = 120.0
"""How long the end of training waits for the last clips."""


class ClipRecorder:
    def __init__(self, env: BatchedEnv, cfg: RunnerCfg, out_dir: Path, title: str):
        self.interval = cfg.video_interval
        self.length_s = cfg.video_length_s
        self.every = max(1, round(1.0 / (CLIP_FPS * env.dt)))  # env steps per frame
        self.fps = 1.0 / (self.every * env.dt)
        self.frames = max(2, round(cfg.video_length_s * self.fps))
        self.span = math.ceil(self.frames * self.every / cfg.num_steps_per_env)  # iterations a clip takes
        self._physics = env.physics  # its qpos/qvel, read at each step (mjx binds new tensors each step)
        self._buffers: tuple[torch.Tensor, torch.Tensor] | None = None
        self._ends: int | None = None  # the iteration the clip being recorded ends at
        self._step = self._frame = 0
        self.error: str | None = None
        size = (cfg.video_width // 2 * 2, cfg.video_height // 2 * 2)  # H.264 4:2:0 wants even sizes
        self._settings = (env.model, size, self.fps, title, str(out_dir.resolve()))
        self._outbox: queue.Queue = queue.Queue()  # to the worker: its settings, then clips' states
        self._inbox: queue.Queue = queue.Queue()  # from the worker: clips, an error, its exit
        self._worker: subprocess.Popen | None = None  # started with the first clip

    def schedule_note(self, iterations: int) -> str | None:
        """What to tell a user whose interval is shorter than the iterations a clip takes to record
        (clips then end only at the multiples of the interval the previous clip has left free)."""
        if self.span <= self.interval:
            return None
        first = -(-self.span // self.interval) * self.interval  # the first multiple a whole clip fits before
        none = f"; this run of {iterations} iterations records none" if first > iterations else ""
        return (f"a {self.length_s:g} s training clip takes {self.span} iterations to record, so with "
                f"runner.video_interval={self.interval} clips end at iteration {first} at the earliest, and only at "
                f"multiples of the interval the previous clip has left free{none} (shorten runner.video_length_s or "
                "widen the interval)")  # fmt: skip

    def _start_worker(self) -> None:
        source = str(Path(__file__).resolve().parents[1])
        path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
        env = {"LP_NUM_THREADS": "1", **os.environ, "PYTHONPATH": path}  # Mesa's software GL: one core
        self._worker = subprocess.Popen([sys.executable, "-m", "robolearn.train_clips"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                                        env=env)  # fmt: skip
        self._outbox.put(self._settings)
        # Two threads that wait on the pipes (no Python work to speak of): training never blocks on them.
        self._receiver = threading.Thread(target=self._receive, name="clips-receive", daemon=True)
        threading.Thread(target=self._send, name="clips-send", daemon=True).start()
        self._receiver.start()

    # --- the runner's side (runner.StepRecorder) ------------------------------------------------
    def recording(self, iteration: int) -> bool:
        """Whether `iteration` (about to run) records: from `span` iterations before every
        interval-th one until the clip has its frames."""
        ends = iteration + self.span - 1
        if self._ends is None and self.error is None and ends % self.interval == 0 and ends >= self.interval:
            self._ends, self._step, self._frame = ends, 0, 0
            if self._worker is None:
                self._start_worker()
        return self._ends is not None

    def record(self) -> None:
        """After each env step of a recording iteration: keep env 0's state every `every` steps."""
        if self._ends is None:
            return
        if self._step % self.every == 0:
            qpos, qvel = self._physics.qpos, self._physics.qvel
            if self._buffers is None:
                self._buffers = (qpos.new_empty((self.frames, qpos.shape[1])), qvel.new_empty((self.frames, qvel.shape[1])))
            self._buffers[0][self._frame].copy_(qpos[0])
            self._buffers[1][self._frame].copy_(qvel[0])
            self._frame += 1
            if self._frame == self.frames:  # one host read per clip
                qpos, qvel = (b.to("cpu", copy=True).double().numpy() for b in self._buffers)
                self._outbox.put((self._ends, qpos, qvel))
                self._ends = None
        self._step += 1

    # --- RunLogger's side -----------------------------------------------------------------------
    def finished(self) -> list[Clip]:
        """The clips drawn since the last call (never waits); a failure sets `error`."""
        clips = []
        while not self._inbox.empty():
            kind, *rest = self._inbox.get()
            if kind == "clip":
                iteration, path, gif, gif_size, frames = rest
                clips.append(Clip(iteration, Path(path), gif, gif_size, frames, self.fps))
            elif self.error is None and (kind == "error" or rest[0] != 0):
                self.error = rest[0] if kind == "error" else f"the clip worker stopped (exit code {rest[0]})"
        return clips

    def close(self) -> list[Clip]:
        """Wait for the clips already recorded (a clip cut short by the end of training is
        dropped) and return the ones not handed out yet."""
        self._ends = None
        if self._worker is None:
            return []
        self._outbox.put(None)
        self._receiver.join(CLOSE_TIMEOUT_S)
        if self._receiver.is_alive():
            self._worker.kill()
            self._inbox.put(("error", f"the clip worker did not finish within {CLOSE_TIMEOUT_S:.0f} s"))
        return self.finished()

    def _send(self) -> None:
        try:
            while (message := self._outbox.get()) is not None:
                pickle.dump(message, self._worker.stdin)
                self._worker.stdin.flush()
            self._worker.stdin.close()
        except OSError:  # the worker is gone; _receive reports how it ended
            pass

    def _receive(self) -> None:
        try:
            while True:
                self._inbox.put(pickle.load(self._worker.stdout))
        except (EOFError, pickle.UnpicklingError, OSError):
            pass
        self._inbox.put(("exit", self._worker.wait()))


# --- the worker process ---------------------------------------------------------------------------
def _worker() -> None:
    """Read the settings, then one clip's states at a time from stdin; answer on stdout."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else printed goes where stderr goes, not into the answers
    inbox = sys.stdin.buffer

    def answer(*message) -> None:
        pickle.dump(message, answers)
        answers.flush()

    try:
        os.nice(WORKER_NICENESS)
    except (AttributeError, OSError):
        pass
    try:
        import mujoco

        from robolearn.render import CameraCfg, FrameRenderer

        model, size, fps, title, out_dir = pickle.load(inbox)
        renderer = FrameRenderer(model, CameraCfg(), *size, fast=True)
        data = mujoco.MjData(model)
        while True:
            try:
                job = pickle.load(inbox)
            except EOFError:
                break
            iteration, qpos, qvel = job
            path, gif, gif_size = _draw(renderer, data, Path(out_dir), fps, title, iteration, qpos, qvel)
            answer("clip", iteration, str(path), gif, gif_size, len(qpos))
        renderer.close()
    except Exception as exc:  # no EGL/OSMesa, a full disk: no more clips, training goes on
        answer("error", one_line(exc))


def _draw(renderer, data, out_dir: Path, fps: float, title: str, iteration: int, qpos, qvel) -> tuple:
    """videos/train_it<iteration>.mp4 (written whole or not at all): (its path, its GIF, the GIF's size)."""
    from PIL import Image

    from robolearn.render import Mp4Writer, set_state

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"train_it{iteration:06d}.mp4"
    partial = path.with_name(f".{path.stem}.partial.mp4")
    writer = Mp4Writer(partial, renderer.width, renderer.height, fps, fast=True)
    take = max(1, round(fps / GIF_FPS))
    gif_size = (GIF_WIDTH, max(2, round(GIF_WIDTH * renderer.height / renderer.width)))
    small = []
    try:
        for k in range(len(qpos)):
            set_state(renderer.model, data, qpos[k], qvel[k])
            image = renderer.render(data, lines=[f"{title} | iteration {iteration}"])
            writer.write(image)
            if k % take == 0:
                frame = Image.fromarray(image).resize(gif_size, Image.Resampling.BILINEAR)
                small.append(frame.quantize(GIF_COLORS, Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE))  # compresses
    finally:
        writer.close()
    partial.replace(path)
    return path, gif_bytes(small, fps / take), gif_size


def gif_bytes(frames: list, fps: float) -> bytes:
    """PIL images as a looping animated GIF."""
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=round(1000 / fps), loop=0)
    return out.getvalue()


if __name__ == "__main__":
    _worker()
