"""Ctrl-C and SIGTERM stop training at an iteration boundary with a checkpoint that resumes exactly;
a second signal stops at once without corrupting what is on disk."""

import json
import signal
import subprocess
import sys
import time

import pytest
import torch

from robolearn import checkpoint

from .conftest import metrics, robolearn
from .test_errors import FAST

LONG = [*FAST, "runner.export_onnx=false", "runner.max_iterations=100000", "runner.save_interval=100000", "seed=7"]


def start(run, *args):
    keys = {a.split("=")[0] for a in args}
    base = [a for a in LONG if a.split("=")[0] not in keys]
    return subprocess.Popen([sys.executable, "-m", "robolearn.cli", "train", *base, *args, f"hydra.run.dir={run}"],
                            cwd=run.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def wait_for_rows(run, count, proc, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        path = run / "metrics.jsonl"
        if path.is_file() and len(path.read_text().splitlines()) >= count:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("training produced no metrics")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_checkpoints_the_last_iteration_and_resume_continues_exactly(tmp_path, sig):
    run = tmp_path / "run"
    proc = start(run)
    wait_for_rows(run, 3, proc)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    last = metrics(run)[-1]["iteration"]
    saved = checkpoint.checkpoint_path(run / "checkpoints", last)
    assert lines[0] == (f"robolearn train: stopped by {sig.name} after iteration {last}, checkpoint {saved}; "
                        f"continue with: robolearn train resume={run}")  # fmt: skip

    resumed = robolearn("train", f"resume={run}", f"runner.max_iterations={last + 2}", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    straight = tmp_path / "straight"
    args = [a for a in LONG if not a.startswith("runner.max_iterations")]
    done = robolearn("train", *args, f"runner.max_iterations={last + 2}", f"hydra.run.dir={straight}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    a = torch.load(checkpoint.latest(run), weights_only=False)
    b = torch.load(checkpoint.latest(straight), weights_only=False)
    assert a["iteration"] == b["iteration"] == last + 2
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
    assert [r["iteration"] for r in metrics(run)] == list(range(1, last + 3))


def test_a_second_signal_stops_at_once_and_leaves_the_run_resumable(tmp_path):
    run = tmp_path / "run"
    # long iterations (4,000 steps each) so that the second signal lands inside one
    proc = start(run, "runner.num_steps_per_env=4000", "runner.save_interval=1")
    wait_for_rows(run, 1, proc)
    time.sleep(0.5)  # inside iteration 2 (~3 s)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "stopped at once" in stderr and "Traceback" not in stderr, stderr
    assert not list((run / "checkpoints").glob("*.tmp"))
    for path in checkpoint.list_checkpoints(run / "checkpoints"):
        torch.load(path, weights_only=False)  # each one whole
    last = checkpoint.latest(run)
    resumed = robolearn("train", f"resume={run}", f"runner.max_iterations={int(last.stem.split('_')[1]) + 1}",
                        "runner.num_steps_per_env=4000", cwd=tmp_path)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(1, len(rows) + 1))


def test_a_signal_before_the_first_iteration_says_there_is_nothing_to_resume(tmp_path):
    from robolearn.interrupts import Interrupted

    stopped = Interrupted(signal.SIGTERM, tmp_path, 0, None)
    assert stopped.exit_code == 143
    assert "no checkpoint to resume from" in stopped.line() and "resume=" not in stopped.line()


def test_a_signal_that_came_while_the_bundle_was_moved_into_place_says_it_was_written(tmp_path):
    """install() lets a signal act once the bundle is in place: the line then says so, not 'no new bundle'."""
    from robolearn.interrupts import Interrupted

    (tmp_path / "export").mkdir()
    stopped = Interrupted(signal.SIGINT, tmp_path, 300, tmp_path / "checkpoints" / "iter_000300.pt", exporting=True)
    (tmp_path / "export" / "robot.yaml").write_text("trained_to: {iteration: 200, checkpoint: iter_000200.pt}\n")
    assert "no new bundle was written (export/ keeps the bundle it held)" in stopped.line()  # an earlier run's
    (tmp_path / "export" / "robot.yaml").write_text("trained_to: {iteration: 300, checkpoint: iter_000300.pt}\n")
    assert stopped.line() == (f"stopped by SIGINT after the last iteration (300, checkpoint {stopped.checkpoint}) and "
                              f"its export: the bundle in {tmp_path / 'export'} is this policy's")  # fmt: skip


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_training_starts_is_one_line_and_leaves_no_empty_run(tmp_path, sig):
    """Stopped after the run's folder was claimed (its lock written), before the first iteration (the
    quadruped's env is still being built): one line, 128 + the signal, and the folder goes again.
    SIGTERM used to end the process there without a word, leaving a folder with a stale lock."""
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "robolearn.cli", "train", "task=quadruped_flat", *FAST,
                             f"hydra.run.dir={run}"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    deadline = time.time() + 120
    while not (run / "train.lock").exists():  # claimed: Hydra then composes, the env is built
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, (stdout, stderr)
    assert "iteration 1" not in stdout, stdout  # it stopped while starting
    assert stderr.strip().splitlines() == ["robolearn train: stopped at once (a second signal, or outside training); "
                                           "only checkpoints written before can be resumed"], stderr  # fmt: skip
    assert not run.exists(), sorted(p.name for p in run.iterdir())


SIGNAL_AT_LOCK = """
import os, sys
from robolearn import cli, run_dir
real_open = os.open
def open_then_signal(path, flags, *args):
    fd = real_open(path, flags, *args)
    if str(path).endswith(run_dir.LOCK):
        os.kill(os.getpid(), int(sys.argv[1]))
    return fd
run_dir.os.open = open_then_signal
sys.exit(cli.main(["train", "task=quadruped_flat", "hydra.run.dir=" + sys.argv[2]]))
"""


def _train_signalled_at_lock(run, sig):
    """`robolearn train` into `run`, sent `sig` as soon as its lock exists (os.open wrapped: CI once caught
    SIGTERM between the lock's creation and its note as this process's, which left the lock behind)."""
    return subprocess.run([sys.executable, "-c", SIGNAL_AT_LOCK, str(int(sig)), str(run)], cwd=run.parent,
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_train_stopped_while_it_locks_its_folder_leaves_no_folder(tmp_path, sig):
    run = tmp_path / "run"
    result = _train_signalled_at_lock(run, sig)
    assert result.returncode == 128 + sig, result.stderr
    assert result.stderr.strip().splitlines() == ["robolearn train: stopped at once (a second signal, or outside "
                                                  "training); only checkpoints written before can be resumed"]  # fmt: skip
    assert not run.exists(), sorted(p.name for p in run.iterdir())


def test_a_user_folder_stopped_while_locked_is_kept_empty_as_it_was(tmp_path):
    run = tmp_path / "mine"
    run.mkdir()
    result = _train_signalled_at_lock(run, signal.SIGTERM)
    assert result.returncode == 143, result.stderr
    assert run.is_dir() and not any(run.iterdir())


NATIVE_WAIT = """
import numpy as np
from robolearn import interrupts
interrupts.GRACE_S = 1.0
matrix = np.random.default_rng(0).random((4000, 4000))
with interrupts.stop_on_signals():
    print("ready", flush=True)
    np.linalg.eigvals(matrix)  # ~15 s in LAPACK: Python runs no signal handler until it returns
    print("returned", flush=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_stops_at_once_while_native_code_runs(sig):
    """Like MuJoCo Warp's first-step kernel compile: the main thread is in native code for a long
    time; the second signal still ends the process within the grace period (1 s here)."""
    proc = subprocess.Popen([sys.executable, "-c", NATIVE_WAIT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    started = time.monotonic()
    proc.send_signal(sig)
    time.sleep(0.2)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - started < 6, "the second signal waited for the native call"
    assert proc.returncode == 128 + sig and "returned" not in out, (proc.returncode, out, err)
    assert f"stopped by a second {sig.name} while native code was running" in err, err


def test_a_block_left_for_a_message_keeps_sigterm_away_until_it_is_printed():
    """A torchrun rank that lost its peers leaves the training block with an error; torchrun then
    sends it SIGTERM, which must not end it before it prints why (it is ignored from then on)."""
    from robolearn import interrupts

    before = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(RuntimeError), interrupts.stop_on_signals() as stop:
            stop.ignore_sigterm_after = True
            raise RuntimeError("lost the other ranks")
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        with interrupts.stop_on_signals():  # an ordinary block restores what it found
            pass
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_trained_policy_is_exported_says_how_to_export(tmp_path, sig):
    """Training has ended; the export's evaluation (512 pendulum episodes of 500 steps) is running:
    the signal stops it with the export's own cleanup (no staging folder, the run's lock released),
    one line that says training ended and which command writes the bundle, and that command works."""
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "robolearn.cli", "train", "task=pendulum", "runner.max_iterations=1",
                             "env.num_envs=512", "runner.num_steps_per_env=8", "algo.num_mini_batches=1",
                             "runner.video_interval=0", f"hydra.run.dir={run}"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        for line in proc.stderr:
            if line.startswith("evaluating: 25%"):
                break
        proc.send_signal(sig)
        stderr = proc.stderr.read()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    saved = checkpoint.checkpoint_path(run / "checkpoints", 1)
    assert lines == [f"robolearn train: stopped by {sig.name} while the trained policy was evaluated and exported, after "
                     f"the last iteration (1, checkpoint {saved}); no new bundle was written: robolearn export "
                     f"run={run} writes it"], stderr  # fmt: skip
    assert saved.is_file() and not (run / "export").exists() and not (run / "train.lock").exists()
    assert not [p.name for p in run.iterdir() if "staging" in p.name]
    exported = robolearn("export", f"run={run}", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert (run / "export" / "policy.onnx").is_file()
