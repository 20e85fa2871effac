"""File steps that must happen together: a run's lock made and noted as this process's, a stale lock
taken over, a bundle swapped for the one it replaces. A signal that lands inside acts once they are
done; two processes at once do not both win.

CI once caught SIGTERM between train.lock being made and being noted as this process's: the
process stopped with its one line, and the folder kept a lock nothing removed. These tests put the
signal exactly there (os.open or a rename, wrapped, sends it). The same through `robolearn train`:
tests/e2e/test_interrupts.py."""

import os
import signal
import subprocess
import sys

import pytest

from robolearn import run_dir
from robolearn.interrupts import signals_deferred


def test_a_signal_in_a_deferred_block_acts_when_the_block_ends():
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            reached.append("after the signal")  # still inside: nothing was raised here
    assert reached == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler before is back


def test_deferred_blocks_nest_and_the_signal_acts_once_at_the_outer_end():
    order = []
    with pytest.raises(KeyboardInterrupt):
        with signals_deferred():
            with signals_deferred():
                os.kill(os.getpid(), signal.SIGINT)
            order.append("inner ended")
        order.append("not reached")
    assert order == ["inner ended"]


def _signal_when_lock_made(monkeypatch, signum):
    real_open = os.open

    def open_then_signal(path, flags, *args):
        fd = real_open(path, flags, *args)
        if str(path).endswith(run_dir.LOCK):
            os.kill(os.getpid(), signum)
        return fd

    monkeypatch.setattr(run_dir.os, "open", open_then_signal)


def test_a_signal_just_after_the_lock_is_made_leaves_it_noted_and_removed(tmp_path, monkeypatch):
    _signal_when_lock_made(monkeypatch, signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        run_dir.lock_run_dir(tmp_path / "run", "a test")
    lock = tmp_path / "run" / run_dir.LOCK
    assert lock.read_text().split()[0] == str(os.getpid())  # written whole before the signal acted
    run_dir.release_run_locks()
    assert not lock.exists()


def test_an_empty_lock_is_read_again_before_it_is_taken_for_stale(tmp_path):
    """Another process has just made the lock and not yet written its id: that is a live run."""
    import platform
    import threading

    lock = tmp_path / run_dir.LOCK
    lock.touch()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "robolearn", "train"])
    try:
        threading.Timer(0.05, lambda: lock.write_text(f"{other.pid} {platform.node()}\n")).start()
        with pytest.raises(run_dir.UserError, match=f"process {other.pid}"):
            run_dir.lock_run_dir(tmp_path, "a test")
    finally:
        other.kill()
        other.wait()
    assert lock.read_text().split()[0] == str(other.pid)  # not taken over


def test_a_signal_while_a_bundle_is_swapped_waits_until_the_new_one_is_in_place(tmp_path, monkeypatch):
    from pathlib import Path

    from robolearn.export.bundle import install

    out, staging = tmp_path / "export", tmp_path / ".export.staging-1"
    out.mkdir()
    (out / "robot.yaml").write_text("old")
    staging.mkdir()
    (staging / "robot.yaml").write_text("new")
    real_rename = Path.rename

    def rename_then_signal(self, target):
        moved = real_rename(self, target)
        if self == out:  # the earlier bundle has just gone aside
            os.kill(os.getpid(), signal.SIGINT)
        return moved

    monkeypatch.setattr(Path, "rename", rename_then_signal)
    with pytest.raises(KeyboardInterrupt) as stopped:
        install(staging, out)
    assert (out / "robot.yaml").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # nothing left aside under a hidden name
    assert stopped.value.bundle_written == out  # so the verb's line can say the bundle is whole


def test_the_stopped_line_of_export_says_when_its_bundle_was_in_place(capsys, tmp_path):
    from robolearn.cli import _stopped

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}  # _stopped ignores further signals
    try:
        assert _stopped("export", signal.SIGTERM, tmp_path / "bundle") == 143
        assert capsys.readouterr().err == (f"robolearn export: stopped (SIGTERM) once the bundle was in place: "
                                           f"{tmp_path / 'bundle'} is complete\n")  # fmt: skip
        assert _stopped("import") == 130
        assert capsys.readouterr().err == "robolearn import: stopped (Ctrl+C)\n"
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)


def test_a_stale_lock_is_taken_over_by_one_of_two_processes_that_find_it(tmp_path):
    """Both read the lock of a process that is gone; the first removes it and makes its own; the
    second, removing what it read, must not take the first one's lock away (both trained)."""
    import platform

    lock = tmp_path / run_dir.LOCK
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock.write_text(f"{gone.stdout.strip()} {platform.node()}\n")
    pid, _, seen = run_dir._lock_owner(lock, platform.node())  # the second process reads it ...
    assert pid == int(gone.stdout) and not run_dir.alive(pid)
    lock.unlink()  # ... while the first takes it over
    lock.write_text(f"{os.getpid() + 1} {platform.node()}\n")
    first = lock.read_text()
    run_dir._remove_stale(lock, seen)  # the second's takeover
    assert lock.read_text() == first  # the first's lock stands
    assert sorted(p.name for p in tmp_path.iterdir()) == [run_dir.LOCK]
    run_dir._remove_stale(lock, run_dir._lock_owner(lock, platform.node())[2])  # what it read is what is there
    assert not lock.exists()
