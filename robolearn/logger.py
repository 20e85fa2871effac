"""Per-iteration outputs of a run: metrics.jsonl, TensorBoard events and a live progress line."""

from __future__ import annotations

import json
import math
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def episode_summary(row: dict) -> str:
    """The rolling episode means of a metrics row, or that none has finished yet."""
    if "mean_episode_return" not in row:
        return "no episode finished yet"
    return f"return {row['mean_episode_return']:.2f} | length {row['mean_episode_length']:.1f}"


WARN_EVERY = 100
"""Iterations between two warnings about diverged environments."""


class RunLogger:
    def __init__(self, run_dir: Path, total_iterations: int, start_iteration: int, progress: bool = True):
        from torch.utils.tensorboard import SummaryWriter

        self.metrics_path = run_dir / "metrics.jsonl"
        self._metrics = open(self.metrics_path, "a", encoding="utf-8")
        # purge_step drops events a crashed run wrote after its last checkpoint.
        self._tb = SummaryWriter(str(run_dir / "tensorboard"), purge_step=start_iteration + 1 if start_iteration else None)
        self._console = Console(stderr=True)
        self._total = total_iterations
        self._progress = None
        self._every = max(1, total_iterations // 20)
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

    def log(self, row: dict) -> None:
        self._metrics.write(json.dumps(row) + "\n")
        self._metrics.flush()
        it = row["iteration"]
        for key, value in row.items():
            if key != "iteration" and isinstance(value, (int, float)) and math.isfinite(value):
                self._tb.add_scalar(key if "/" in key else f"train/{key}", value, it)
        self._watch_divergence(row)
        summary = f"{row['steps_per_s']:,.0f} steps/s | {episode_summary(row)}"
        if self._progress is not None:
            self._progress.update(self._task, completed=it, description=summary)
        elif self._show_plain and (it % self._every == 0 or it == self._total):
            self._console.print(f"iteration {it}/{self._total} | {summary}", highlight=False)

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

    def message(self, text: str) -> None:
        self._console.print(text, highlight=False, soft_wrap=True)  # one line stays one line in a log

    def close(self) -> None:
        if self._diverged:
            self._warn_divergence(self._iteration)
        if self._progress is not None:
            self._progress.stop()
        self._tb.close()
        self._metrics.close()
