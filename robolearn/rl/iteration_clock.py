"""Where an iteration's time goes: collecting the rollout vs learning from it.

On the CPU the host's clock says it. On a CUDA device it does not: the rollout only enqueues work
(nothing in it waits for the device), so when the host reaches the update the GPU may still be
steps behind, and timing the update from the host would charge it with the rest of the rollout
(bench rows of 2026-11-24 showed a "learner share" of 58 % that way). There the clock records a
CUDA event at each mark and reads the device's own timestamps once the iteration's results have
been read back (which waits for the device anyway), so it adds no host synchronization.
"""

from __future__ import annotations

import time

import torch


class IterationClock:
    """`mark(name)` at the start and after each phase; `phases()` once the device has finished the
    marked work: {phase: seconds} between consecutive marks, named by the later mark."""

    def __init__(self, device: torch.device | str):
        self._cuda = torch.device(device).type == "cuda"
        self._marks: list[tuple[str, object]] = []

    def mark(self, name: str) -> None:
        if self._cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self._marks.append((name, event))
        else:
            self._marks.append((name, time.perf_counter()))

    def phases(self) -> dict[str, float]:
        marks, self._marks = self._marks, []
        if len(marks) < 2:
            return {}
        if self._cuda:
            marks[-1][1].synchronize()  # already complete where the caller read results back
            return {b: a_event.elapsed_time(b_event) / 1000.0 for (_, a_event), (b, b_event) in zip(marks, marks[1:])}
        return {b: b_time - a_time for (_, a_time), (b, b_time) in zip(marks, marks[1:])}
