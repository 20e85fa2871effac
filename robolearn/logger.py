"""Per-iteration outputs of a run: metrics.jsonl, the loggers (log_sinks.py: TensorBoard, W&B),
training clips (train_clips.py) and a live progress line.

On a terminal the progress is a bar; piped into a file, a plain line every 1/20 of the run (and at
least once a minute):

    iteration 40/200 | 12,345 steps/s | return 1.23 | length 45.0 | 0:01:10 elapsed, ETA 0:04:40 | runs/cartpole/...
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from robolearn.log_sinks import Sink, scalar_values


def episode_summary(row: dict) -> str:
    """The rolling episode means of a metrics row, or that none has finished yet."""
    if "mean_episode_return" not in row:
        return "no episode finished yet"
    return f"return {row['mean_episode_return']:.2f} | length {row['mean_episode_length']:.1f}"


WARN_EVERY = 100
"""Iterations between two warnings about diverged environments."""
INSTANT_END = 2.0
"""Steps: episodes this short on average end before a policy could act on them (RunLogger's warning)."""


def clock(seconds: float) -> str:
    """H:MM:SS."""
    return str(datetime.timedelta(seconds=round(seconds)))


def shown_path(path: Path) -> str:
    """`path` relative to the working directory where it lies below it, else absolute."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


PLAIN_EVERY_S = 60.0
"""A plain progress line at least this often, however long the run (1/20 of a huge one is days)."""


class RunLogger:
    """`sinks`: the loggers (log_sinks.open_sinks); `clips`: a train_clips.ClipRecorder or None."""

    def __init__(self, run_dir: Path, total_iterations: int, start_iteration: int, progress: bool = True,
                 sinks: Sequence[Sink] = (), clips=None):  # fmt: skip
        self.metrics_path = run_dir / "metrics.jsonl"
        self._metrics = open(self.metrics_path, "a", encoding="utf-8")
        self._sinks, self._clips = list(sinks), clips
        self._clip_warned = False
        self._run_dir = shown_path(run_dir)
        self._started, self._start_iteration = time.perf_counter(), start_iteration
        self._training = True
        self._console = Console(stderr=True)
        self._total = total_iterations
        self._progress = None
        self._every = max(1, total_iterations // 20)
        self._last_plain = self._started
        if progress and self._console.is_terminal:
            self._progress = Progress(
                TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.description}"),
                console=self._console,
            )  # fmt: skip
            self._task = self._progress.add_task("", total=total_iterations, completed=start_iteration)
            self._progress.start()
        self._show_plain = progress and self._progress is None
        self._iteration = start_iteration
        self._diverged = 0.0  # non-finite resets not yet reported ...
        self._diverged_of = 0.0  # ... and the env steps they happened in
        self._warned_at: int | None = None
        self._warned_instant = False

    def log(self, row: dict) -> None:
        self._metrics.write(json.dumps(row) + "\n")
        self._metrics.flush()
        it = row["iteration"]
        values = scalar_values(row)
        for sink in self._sinks:
            sink.scalars(values, it)
        self._watch_divergence(row)
        self._watch_instant_ends(row)
        if self._clips is not None:
            self._hand_out(self._clips.finished(), it)
        summary = f"{row['steps_per_s']:,.0f} steps/s | {episode_summary(row)}"
        if self._progress is not None:
            self._progress.update(self._task, completed=it, description=summary)
        elif self._show_plain and self._plain_due(it, now := time.perf_counter()):
            self._last_plain = now
            self._console.print(f"iteration {it}/{self._total} | {summary} | {self._timing(it, now)} | {self._run_dir}",
                                highlight=False, soft_wrap=True)  # fmt: skip

    def _plain_due(self, it: int, now: float) -> bool:
        """A plain line every 1/20 of the run, at its end, and after a minute without one."""
        return it % self._every == 0 or it == self._total or now - self._last_plain > PLAIN_EVERY_S

    def _timing(self, it: int, now: float) -> str:
        """Elapsed time of this process, and the ETA from its mean iteration time so far."""
        elapsed = now - self._started
        done = it - self._start_iteration
        eta = elapsed / done * (self._total - it) if done > 0 else 0.0
        return f"{clock(elapsed)} elapsed, ETA {clock(eta)}"

    def _hand_out(self, clips: list, step: int) -> None:
        """Finished clips to the loggers; a renderer that failed, in one warning line."""
        for clip in clips:
            for sink in self._sinks:
                sink.video(clip, step)
        if self._clips.error is not None and not self._clip_warned:
            self._clip_warned = True
            self.message(f"warning: training clips are off: {self._clips.error}")

    def evaluation(self, metrics: dict, step: int) -> None:
        """The end-of-training evaluation (export's), as eval/<key>."""
        values = scalar_values({f"eval/{k}": v for k, v in metrics.items()})
        for sink in self._sinks:
            sink.final(values, step)

    def _watch_divergence(self, row: dict) -> None:
        """One warning line when environments diverge (envs/health.py), then at most one per
        WARN_EVERY iterations with the rate since the last line."""
        # the env steps of this iteration (steps_per_s is measured over collection and learning)
        self._diverged_of += round(row.get("steps_per_s", 0.0) * (row.get("collection_s", 0.0) + row.get("learning_s", 0.0)))
        self._diverged += row.get("health/nonfinite_resets", 0.0)
        it = self._iteration = row["iteration"]
        if self._diverged and (self._warned_at is None or it - self._warned_at >= WARN_EVERY):
            self._warn_divergence(it)

    def _warn_divergence(self, it: int) -> None:
        count, steps = self._diverged, self._diverged_of
        rate = f" of {steps:,.0f} env steps ({100 * count / steps:.3g}%)" if steps else ""
        since = "" if self._warned_at is None else f" since iteration {self._warned_at}"
        self.message(f"warning: iteration {it}: {count:,.0f}{rate}{since} diverged (non-finite state, reward or "
                     f"observation, or beyond env.state_limit) and were reset without being learned from; "
                     f"see health/nonfinite_resets")  # fmt: skip
        self._diverged = self._diverged_of = 0.0
        self._warned_at = it

    def _watch_instant_ends(self, row: dict) -> None:
        """One warning line, once, for an iteration whose episodes ended within INSTANT_END steps on
        average by a termination (not a time-out): nothing is learned from them, and no other number
        says why (a diverging start is reset by the termination before health/ sees it)."""
        length, ended = row.get("mean_episode_length"), row.get("episodes", 0.0)
        if self._warned_instant or not ended or not isinstance(length, (int, float)) or length > INSTANT_END:
            return
        fractions = {k.removeprefix("termination/"): v for k, v in row.items() if k.startswith("termination/")}
        name, fraction = max(fractions.items(), key=lambda kv: kv[1], default=(None, 0.0))
        if not fraction:
            return  # time-outs: an episode length the task asked for
        self._warned_instant = True
        self.message(f"warning: iteration {row['iteration']}: episodes end after {length:.1f} steps on average, "
                     f"{100 * fraction:.0f}% of them by termination '{name}': a start state that trips it at once "
                     "(the reset pose, the term's threshold, a contact the robot rests on), or a policy that ends "
                     "its episodes on purpose (rewards below zero and no termination penalty)")  # fmt: skip

    def message(self, text: str) -> None:
        self._console.print(text, highlight=False, soft_wrap=True)  # one line stays one line in a log

    def end_training(self) -> None:
        """After the last iteration: the last warning, the bar gone, the last clips handed out.
        The loggers stay open for the evaluation."""
        if not self._training:
            return
        self._training = False
        if self._diverged:
            self._warn_divergence(self._iteration)
        if self._progress is not None:
            self._progress.stop()
        if self._clips is not None:
            self._hand_out(self._clips.close(), self._iteration)

    def close(self) -> None:
        try:
            self.end_training()
        finally:
            for sink in self._sinks:
                sink.close()
            self._metrics.close()
