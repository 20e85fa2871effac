"""Progress of the evaluation (one episode per environment) on stderr.

On a terminal a bar: steps of the episode length, episodes ended, time elapsed. In a log or a
pipe a plain line at each quarter of the steps, and one a minute in between (a long evaluation:
65,536 quadruped episodes on a CPU take hours), with the time left at the pace so far:

    evaluating: 25% (250/1000 steps), 12/64 episodes ended, 0:00:15 elapsed, ~0:00:45 left

and, when every episode ended before the episode length, a last line saying so (`all_ended`).
sim2sim counts episodes (one after another) the same way, with `unit="episodes"` and no count
of ended ones.

The number of episodes that ended lives on the device; it is read only at those lines (on a
terminal at most four times a second), never every step.
"""

from __future__ import annotations

import datetime
import time

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

REFRESH_S = 0.25
"""On a terminal: the least time between two reads of the episode count."""
PLAIN_EVERY_S = 60.0
"""In a log: the most time between two lines."""


class EvalProgress:
    def __init__(self, label: str, total_steps: int, episodes: int | None, enabled: bool = True,
                 console: Console | None = None, unit: str = "steps"):  # fmt: skip
        """`episodes`: how many run at once (their ended count is shown), None where the units are
        the episodes themselves (sim2sim)."""
        self.label, self.total, self.episodes, self.unit = label, total_steps, episodes, unit
        self.enabled = enabled
        self._console = console or Console(stderr=True)
        self._bar = None
        self._start = self._last_read = self._last_line = time.monotonic()
        self._marks = sorted({max(1, -(-total_steps * q // 4)) for q in (1, 2, 3, 4)})  # ceil of each quarter
        if enabled and self._console.is_terminal:
            ended = [TextColumn("{task.fields[ended]}/" + f"{episodes} episodes ended,")] if episodes is not None else []
            self._bar = Progress(
                TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TextColumn(f"{unit},"), *ended,
                TimeElapsedColumn(), console=self._console,
            )  # fmt: skip
            self._task = self._bar.add_task("", total=total_steps, ended=0)

    def __enter__(self) -> EvalProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(self, steps: int, ended: torch.Tensor | None = None) -> None:
        """`steps` of the total are done; `ended` [N] bool marks the environments whose episode ended."""
        if not self.enabled:
            return
        now = time.monotonic()
        if self._bar is not None:
            if now - self._last_read >= REFRESH_S or steps == self.total:
                self._last_read = now
                fields = {} if ended is None else {"ended": int(ended.sum())}
                self._bar.update(self._task, completed=steps, **fields)
        elif steps in self._marks or now - self._last_line >= PLAIN_EVERY_S:
            self._last_line = now
            elapsed = now - self._start
            left = f", ~{_clock(elapsed * (self.total - steps) / steps)} left" if steps < self.total else ""
            count = "" if ended is None else f", {int(ended.sum())}/{self.episodes} episodes ended"
            self._console.print(
                f"{self.label}: {100 * steps // self.total}% ({steps}/{self.total} {self.unit}){count}, "
                f"{_clock(elapsed)} elapsed{left}", highlight=False, soft_wrap=True,
            )  # fmt: skip

    def all_ended(self, steps: int) -> None:
        """Every episode ended after `steps` steps, before the episode length: the evaluation stops."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, total=steps, completed=steps, ended=self.episodes)
        else:
            self._console.print(f"{self.label}: all {self.episodes} episodes ended after {steps} of {self.total} steps, "
                                f"{_clock(time.monotonic() - self._start)} elapsed", highlight=False, soft_wrap=True)  # fmt: skip


def _clock(seconds: float) -> str:
    return str(datetime.timedelta(seconds=int(seconds)))
