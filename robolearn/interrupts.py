"""Ctrl-C and SIGTERM (a cluster's preemption) during training stop it at the next iteration
boundary, where a checkpoint is exactly as good as a periodic one. A second signal stops at once:
checkpoints are written atomically and a metrics line cut short is dropped on resume, so nothing
already on disk is corrupted.

"At once" holds while native code holds the main thread too (a Warp kernel or XLA compile, a
long physics call), when Python runs no signal handler until that code returns, minutes later:
MuJoCo Warp's first step compiles for up to 80 s on a CPU. The C-level handler still writes each
signal's number to a wakeup pipe; a thread reading it ends the process on the second signal if
the main thread has not ended it within GRACE_S.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE_S = 5.0
"""How long the main thread has to act on a second signal before the watcher ends the process."""


class Interrupted(BaseException):
    """Training stopped on a signal (a BaseException, like KeyboardInterrupt: Hydra passes it on).
    `checkpoint` is the one to resume from, None if the run stopped before it had one."""

    def __init__(self, signum: int, run_dir: Path, iteration: int, checkpoint: Path | None, ranks: int = 1,
                 exporting: bool = False):  # fmt: skip
        self.signum, self.run_dir, self.iteration, self.checkpoint = signum, run_dir, iteration, checkpoint
        self.ranks = ranks
        """How many torchrun ranks trained (the resume needs as many)."""
        self.exporting = exporting
        """Stopped after the last iteration, while the policy was evaluated and exported."""
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def line(self) -> str:
        name = signal.Signals(self.signum).name
        if self.exporting and self._bundle_written():  # the signal came while the bundle was moved into place
            return (f"stopped by {name} after the last iteration ({self.iteration}, checkpoint {self.checkpoint}) and its "
                    f"export: the bundle in {self.run_dir / 'export'} is this policy's")  # fmt: skip
        if self.exporting:
            earlier = " (export/ keeps the bundle it held)" if (self.run_dir / "export" / "robot.yaml").is_file() else ""
            return (f"stopped by {name} while the trained policy was evaluated and exported, after the last iteration "
                    f"({self.iteration}, checkpoint {self.checkpoint}); no new bundle was written{earlier}: "
                    f"robolearn export run={self.run_dir} writes it")  # fmt: skip
        if self.checkpoint is None:
            return f"stopped by {name} before the first iteration ended; no checkpoint to resume from in {self.run_dir}"
        if self.ranks > 1:
            how = f"the same torchrun launch ({self.ranks} ranks) of robolearn train resume={self.run_dir}"
        else:
            how = f"robolearn train resume={self.run_dir}"
        return f"stopped by {name} after iteration {self.iteration}, checkpoint {self.checkpoint}; continue with: {how}"

    def _bundle_written(self) -> bool:
        """Whether export/ holds the bundle of the checkpoint training stopped at."""
        import yaml

        try:
            trained = yaml.safe_load((self.run_dir / "export" / "robot.yaml").read_text()).get("trained_to") or {}
        except (OSError, yaml.YAMLError, AttributeError):
            return False
        return (self.checkpoint is not None and trained.get("iteration") == self.iteration
                and trained.get("checkpoint") == self.checkpoint.name)  # fmt: skip


class Terminated(BaseException):
    """SIGTERM outside training (terminate_raises): raised where the program is, so its cleanup runs
    (play removes a half-written video, export rolls the earlier bundle back) before exit 143."""

    def __init__(self, signum: int = signal.SIGTERM):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


@contextlib.contextmanager
def terminate_raises():
    """SIGTERM raises Terminated in the block instead of ending the process where it is, which left
    a truncated mp4 or a half-moved bundle behind (main thread only; elsewhere nothing changes)."""
    def handle(signum, frame):
        raise Terminated(signum)

    with _sigterm_handled_by(handle):
        yield


@contextlib.contextmanager
def signals_deferred():
    """SIGINT and SIGTERM wait until the block ends; then the first that came acts as it would have
    (the handler before the block runs): for a few file operations that must happen together or not
    at all, such as taking a run's lock and noting it as ours (a signal between the two left a lock
    nothing removed). Main thread only; elsewhere nothing changes. Blocks nest. Not for use inside
    stop_on_signals, whose watcher would count the signal raised again as a second one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def note(signum, frame):
        pending.append(signum)

    previous = {}
    try:
        for s in SIGNALS:  # one at a time inside the try: a signal between leaves none of them swapped
            if signal.getsignal(s) is not None:  # a native handler (None) cannot be put back from Python
                previous[s] = signal.signal(s, note)
        yield
    finally:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)  # none lands while the handlers go back
        try:
            for s, handler in previous.items():
                signal.signal(s, handler)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if pending:
            signal.raise_signal(pending[0])  # the restored handler runs here (KeyboardInterrupt, Terminated, ...)


@contextlib.contextmanager
def signals_set_event():
    """Ctrl+C (SIGINT) or SIGTERM sets the event a viewer's loop checks each tick, so neither lands
    inside a call that holds the viewer's lock (the viewer's close then waited forever: MuJoCo's
    passive viewer on SIGTERM, viser on Ctrl+C); a second one interrupts at once, as usual."""
    stop = threading.Event()

    def request_stop(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {s: signal.signal(s, request_stop) for s in SIGNALS}
    try:
        yield stop
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def sigterm_ends_at_once():
    """SIGTERM ends the process where it is, inside terminate_raises too: for a block that writes
    nothing, so has nothing to clean up (MuJoCo's passive viewer: closed from the exception it
    crashed or hung in 2 of 5 tries under Xvfb, before native_viewer.passive_viewer waited for the
    window's thread; Ctrl+C closes it through that wait)."""
    with _sigterm_handled_by(signal.SIG_DFL):
        yield


@contextlib.contextmanager
def _sigterm_handled_by(handler):
    """`handler` for SIGTERM in the block, the one before restored after (main thread only; elsewhere
    nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, saved)


class StopRequest:
    """The first signal sets `signum`; the second raises KeyboardInterrupt where the program is."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.ignore_sigterm_after = False
        """Leave SIGTERM ignored after the block: the process is about to end with a message that a
        teardown SIGTERM (torchrun ending the other ranks of a failed job) must not cut short."""

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
        with _second_signal_ends_native_waits():
            yield request
    finally:
        for s, handler in saved.items():
            signal.signal(s, signal.SIG_IGN if s == signal.SIGTERM and request.ignore_sigterm_after else handler)


@contextlib.contextmanager
def _second_signal_ends_native_waits():
    """The wakeup-pipe watcher (module docstring); nothing where another wakeup fd is in use
    (an event loop's), which stays untouched."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:  # not the main thread of the main interpreter
        previous = None
    if previous is None or previous != -1:
        if previous is not None:
            signal.set_wakeup_fd(previous)
        os.close(read)
        os.close(write)
        yield
        return
    left = threading.Event()
    threading.Thread(target=_watch, args=(read, left), name="robolearn-second-signal", daemon=True).start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(-1)  # before the watcher may close its end
        left.set()
        os.close(write)  # the watcher reads the end of the pipe and returns


def _watch(read: int, left: threading.Event) -> None:
    """Count SIGINT/SIGTERM bytes on the pipe; after the second, unless the main thread has left
    the block within GRACE_S, end the process with the signal's exit code."""
    seen = 0
    try:
        while data := os.read(read, 64):
            for signum in data:
                if signum in SIGNALS:
                    seen += 1
                    if seen >= 2:
                        if left.wait(GRACE_S):  # the main thread's own handler acted
                            return
                        name = signal.Signals(signum).name
                        sys.stderr.write(f"robolearn: stopped by a second {name} while native code was running "
                                         "(a compile or a physics call); checkpoints already written are intact\n")
                        sys.stderr.flush()
                        os._exit(128 + signum)
    finally:
        os.close(read)
