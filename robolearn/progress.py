"""Progress of the evaluation (one episode per environment) on stderr.

On a terminal a bar: steps of the episode length, episodes ended, time elapsed. In a log or a
pipe at most four plain lines, at each quarter of the steps:

    evaluating: 25% (250/1000 steps), 12/64 episodes ended, 0:00:15 elapsed

and, when every episode ended before the episode length, a last line saying so (`all_ended`).

The number of episodes that ended lives on the device; it is read only at those checkpoints
(on a terminal at most four times a second), never every step.
"""

from __future__ import annotations

import datetime
import time

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

REFRESH_S = 0.25
"""On a terminal: the least time between two reads of the episode count."""


class EvalProgress:
    def __init__(self, label: str, total_steps: int, episodes: int, enabled: bool = True, console: Console | None = None):
        self.label, self.total, self.episodes = label, total_steps, episodes
        self.enabled = enabled
        self._console = console or Console(stderr=True)
        self._bar = None
        self._start = self._last_read = time.monotonic()
        self._marks = sorted({max(1, -(-total_steps * q // 4)) for q in (1, 2, 3, 4)})  # ceil of each quarter
        if enabled and self._console.is_terminal:
            self._bar = Progress(
                TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TextColumn("steps,"),
                TextColumn("{task.fields[ended]}/" + f"{episodes} episodes ended,"), TimeElapsedColumn(),
                console=self._console,
            )  # fmt: skip
            self._task = self._bar.add_task("", total=total_steps, ended=0)

    def __enter__(self) -> EvalProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(self, steps: int, ended: torch.Tensor) -> None:
        """`steps` of the total are done; `ended` [N] bool marks the environments whose episode ended."""
        if not self.enabled:
            return
        if self._bar is not None:
            now = time.monotonic()
            if now - self._last_read >= REFRESH_S or steps == self.total:
                self._last_read = now
                self._bar.update(self._task, completed=steps, ended=int(ended.sum()))
        elif steps in self._marks:
            elapsed = datetime.timedelta(seconds=int(time.monotonic() - self._start))
            self._console.print(
                f"{self.label}: {100 * steps // self.total}% ({steps}/{self.total} steps), "
                f"{int(ended.sum())}/{self.episodes} episodes ended, {elapsed} elapsed", highlight=False, soft_wrap=True,
            )  # fmt: skip

    def all_ended(self, steps: int) -> None:
        """Every episode ended after `steps` steps, before the episode length: the evaluation stops."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, total=steps, completed=steps, ended=self.episodes)
        else:
            elapsed = datetime.timedelta(seconds=int(time.monotonic() - self._start))
            self._console.print(f"{self.label}: all {self.episodes} episodes ended after {steps} of {self.total} steps, "
                                f"{elapsed} elapsed", highlight=False, soft_wrap=True)  # fmt: skip
