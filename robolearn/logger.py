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

    def log(self, row: dict) -> None:
        self._metrics.write(json.dumps(row) + "\n")
        self._metrics.flush()
        it = row["iteration"]
        for key, value in row.items():
            if key != "iteration" and isinstance(value, (int, float)) and math.isfinite(value):
                self._tb.add_scalar(key if "/" in key else f"train/{key}", value, it)
        summary = f"{row['steps_per_s']:,.0f} steps/s | {episode_summary(row)}"
        if self._progress is not None:
            self._progress.update(self._task, completed=it, description=summary)
        elif self._show_plain and (it % self._every == 0 or it == self._total):
            self._console.print(f"iteration {it}/{self._total} | {summary}", highlight=False)

    def message(self, text: str) -> None:
        self._console.print(text, highlight=False)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
        self._tb.close()
        self._metrics.close()
