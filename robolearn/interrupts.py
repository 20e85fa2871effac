"""Ctrl-C and SIGTERM (a cluster's preemption) during training stop it at the next iteration
boundary, where a checkpoint is exactly as good as a periodic one. A second signal stops at once:
checkpoints are written atomically and a metrics line cut short is dropped on resume, so nothing
already on disk is corrupted.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from pathlib import Path

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """Training stopped on a signal (a BaseException, like KeyboardInterrupt: Hydra passes it on).
    `checkpoint` is the one to resume from, None if the run stopped before it had one."""

    def __init__(self, signum: int, run_dir: Path, iteration: int, checkpoint: Path | None, ranks: int = 1):
        self.signum, self.run_dir, self.iteration, self.checkpoint = signum, run_dir, iteration, checkpoint
        self.ranks = ranks
        """How many torchrun ranks trained (the resume needs as many)."""
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def line(self) -> str:
        name = signal.Signals(self.signum).name
        if self.checkpoint is None:
            return f"stopped by {name} before the first iteration ended; no checkpoint to resume from in {self.run_dir}"
        if self.ranks > 1:
            how = f"the same torchrun launch ({self.ranks} ranks) of robolearn train resume={self.run_dir}"
        else:
            how = f"robolearn train resume={self.run_dir}"
        return f"stopped by {name} after iteration {self.iteration}, checkpoint {self.checkpoint}; continue with: {how}"


class StopRequest:
    """The first signal sets `signum`; the second raises KeyboardInterrupt where the program is."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def __call__(self) -> bool:
        return self.signum is not None

    def _handle(self, signum, frame) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum


@contextlib.contextmanager
def stop_on_signals():
    """Install the handlers for the block (main thread only; elsewhere nothing is installed)."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return
    saved = {s: signal.signal(s, request._handle) for s in SIGNALS}
    try:
        yield request
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
