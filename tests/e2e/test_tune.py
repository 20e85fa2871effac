"""`robolearn tune` on a local Ray instance (2 CPUs, tiny budgets): trials are ordinary runs,
ASHA stops the one that lags, PBT exploits through robolearn checkpoints; bad input is one line
before Ray starts."""

import csv
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import torch
import yaml

from .conftest import metrics, robolearn

SMALL = ["env.num_envs=32", "runner.num_steps_per_env=16", "algo.num_mini_batches=2", "runner.export_onnx=false",
         "logger=none", "runner.video_interval=0", "algo.schedule=fixed"]  # fmt: skip
LOCAL = ["tune.num_cpus=2"]


def summary(folder):
    return list(csv.DictReader(open(folder / "summary.csv")))


def test_asha_stops_the_trial_that_lags(tmp_path):
    folder = tmp_path / "search"
    result = robolearn("tune", *LOCAL, "tune.scheduler=asha", "tune.num_samples=1", "tune.max_concurrent=1",
                       "tune.grace_period=2", "tune.reduction_factor=2", f"tune.dir={folder}",
                       "algo.learning_rate=1e-2,1e-9", "runner.max_iterations=8",
                       *(a for a in SMALL if a != "runner.export_onnx=false"), cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {r["overrides"]: r for r in summary(folder)}
    assert rows["algo.learning_rate=0.01"]["status"] == "finished"
    assert rows["algo.learning_rate=1e-09"]["status"].startswith("stopped at iteration")
    assert float(rows["algo.learning_rate=0.01"]["objective"]) > float(rows["algo.learning_rate=1e-09"]["objective"])
    for row in rows.values():  # each trial is an ordinary run directory
        run = folder / row["run_dir"] if not os.path.isabs(row["run_dir"]) else row["run_dir"]
        cfg = yaml.safe_load(open(f"{run}/config.yaml"))
        assert f"algo.learning_rate={cfg['algo']['learning_rate']!r}" == row["overrides"]  # the trial's own config
        assert json.load(open(f"{run}/manifest.json"))["task"] == "cartpole"
        if row["status"] != "finished":  # where it stopped, as the run's own metrics say (Tune's last report lags)
            last = metrics(Path(run))[-1]["iteration"]
            assert row["status"] == f"stopped at iteration {last}", row["status"]
            assert last in (2, 4, 8) and (Path(run) / "checkpoints" / f"iter_{last:06d}.pt").is_file()  # a rung: saved
    finished = folder / rows["algo.learning_rate=0.01"]["run_dir"]
    assert [r["iteration"] for r in metrics(finished)] == list(range(1, 9))
    assert (finished / "checkpoints" / "iter_000008.pt").is_file()
    assert (finished / "export" / "robot.yaml").is_file()  # the finished trial ends itself: evaluated and exported
    assert "sweep summary:" in result.stdout and "best mean_episode_return" in result.stdout


def test_pbt_exploits_through_robolearn_checkpoints(tmp_path):
    folder = tmp_path / "search"
    result = robolearn("tune", *LOCAL, "tune.scheduler=pbt", "tune.num_samples=1", "tune.perturbation_interval=2",
                       "tune.quantile_fraction=0.5", "tune.synch=true", f"tune.dir={folder}", "algo.learning_rate=3e-3,1e-9",
                       "runner.max_iterations=6", *SMALL, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = summary(folder)
    assert len(rows) == 2 and all(r["status"] == "finished" for r in rows)
    runs = [folder / r["run_dir"] for r in rows]
    # the lagging trial continued from the leader's checkpoint: a resume in its manifest, its own
    # later checkpoints and metrics set aside (not overwritten), and the leader's rate, perturbed
    # synchronous PBT with 2 trials: at each perturbation (iterations 2, 4) the lower one continues from
    # the other's checkpoint (and the upper one resumes its own run)
    exploits = [entry for run in runs for entry in json.load(open(run / "manifest.json")).get("resumes", [])
                if entry["resumed_from_checkpoint"]]  # fmt: skip
    assert {2, 4} <= {e["resumed_from_iteration"] for e in exploits}, result.stdout[-3000:]
    assert len(list(folder.glob("*/checkpoints/replaced_*/metrics.jsonl"))) == len(exploits)
    for run in runs:  # an adopted checkpoint is the donor's own, byte for byte, and says whose it was
        for record in (run / "checkpoints").glob("iter_*.adopted_from.txt"):
            donor = Path(record.read_text().strip())
            name = record.name.replace(".adopted_from.txt", ".pt")
            assert donor != run and (donor / "checkpoints" / name).read_bytes() == (run / "checkpoints" / name).read_bytes()
    assert list(folder.glob("*/checkpoints/iter_*.adopted_from.txt"))
    for run in runs:
        assert [r["iteration"] for r in metrics(run)] == list(range(1, 7))
        assert sorted(p.name for p in (run / "checkpoints").glob("iter_*.pt"))[-1] == "iter_000006.pt"
        # the last iteration (6, a multiple of the interval) is not exploited: each trial ends with its own policy
        assert not (run / "checkpoints" / "iter_000006.adopted_from.txt").exists()
    assert 6 not in {e["resumed_from_iteration"] for e in exploits}


@pytest.mark.parametrize(
    "args, expected",
    [
        (["runner.max_iterations=4"], "robolearn tune needs a search space: sweep at least one override"),
        (["tune.scheduler=hyperband", "seed=1,2"], "tune.scheduler=hyperband is not valid; valid: pbt, asha, fifo"),
        (["tune.samples=3", "seed=1,2"], "unknown option 'tune.samples=3'; valid: tune.scheduler=,"),
        (["tune.num_samples=0", "seed=1,2"], "tune.num_samples=0 is out of range; valid: an integer >= 1"),
        (["--multirun", "seed=1,2"], "robolearn tune does not take '--multirun'"),
        (["objective.metric=eval/return_mean", "seed=1,2"], "objective.metric=eval/return_mean: Tune's schedulers"),
        (["objective.metric=return", "seed=1,2"], "objective.metric=return is not a metric of this run"),
        (["tune.scheduler=pbt", "tune.perturbation_interval=3", "runner.save_interval=2", "seed=1,2"],
         "tune.perturbation_interval=3 is not a multiple of runner.save_interval=2"),
        (["algo.learning_rate=tag(log,interval(0,1))"], "a log interval needs a start above 0"),
        (["tune.scheduler=pbt", "algo.learning_rate=1e-3,3e-3"], "PBT searching algo.learning_rate needs algo.schedule=fixed"),
        (["tune.scheduler=pbt", "tune.quantile_fraction=0.9", "algo.entropy_coef=0,0.01"],
         "tune.quantile_fraction=0.9 is out of range; valid: a number from 0 to 0.5"),
        (["tune.resample_probability=2", "seed=1,2"], "tune.resample_probability=2 is out of range; valid: a number from 0 to 1"),
        (["tune.synch=maybe", "seed=1,2"], "tune.synch=maybe is not valid; valid: true or false"),
        (["tune.cpus_per_trial=4096", "seed=1,2"], "tune.cpus_per_trial=4096 is more than this machine's"),
        (["tune.gpus_per_trial=4096", "seed=1,2"], "tune.gpus_per_trial=4096 is more than this machine's"
         if torch.cuda.device_count() else "tune.gpus_per_trial=4096 asks for a GPU and this machine has none"),
        (["algo.learning_rate=interval(1e-2,1e-4)"], "the interval's start 0.01 is not below its end 0.0001"),
        (["algo.learning_rate=tag(log,interval(1e-2,1e-4))"], "the interval's start 0.01 is not below its end"),
        (["seed=range(5,1)"], "seed=range(5,1): the range has no values"),
        # every value of a whole-number search is checked, not one random draw: 5 of 1..8 does not divide 3072
        (["algo.num_mini_batches=tag(int,interval(1,8))"], "algo.num_mini_batches=5 does not divide"),
        (["algo.num_mini_batches=range(1,9)"], "a value the search over algo.num_mini_batches may give"),
        (["algo.num_mini_batches=choice(1,abc,4)"], "algo.num_mini_batches=abc"),
        (["algo.learning_rate=tag(lg,interval(1e-4,1e-2))"], "unknown tag 'lg'; valid: log, int"),
        (["seed=tag(int,choice(1,2,3))"], "tags (int) shape an interval()"),
        (["seed=range(1,5,0)"], "seed=range(1,5,0): range() arg 3 must not be zero; valid: range(start,stop)"),
        (["tune.dir=", "seed=1,2"], "tune.dir= is empty; valid: the search's folder"),
        (["tune.address=", "seed=1,2"], "tune.address= is empty; valid: a Ray cluster"),
        (["tune.dir=notes.txt/search", "seed=1,2"], "tune.dir=notes.txt/search: notes.txt is a file, not a directory"),
        (["tune.scheduler=pbt", "tune.scheduler=asha", "seed=1,2"],
         "tune.scheduler= is given twice (tune.scheduler=pbt, tune.scheduler=asha); give it once"),
    ],
)
def test_bad_input_is_one_line_before_ray_starts(tmp_path, args, expected):
    (tmp_path / "notes.txt").write_text("my notes\n")
    result = robolearn("tune", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("robolearn tune: error: ") and expected in lines[0], lines
    assert not (tmp_path / "runs").exists()


def test_no_cluster_at_the_address_is_one_line(tmp_path):
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:9"}
    # a cluster's resources are Ray's to count: no check against this machine's CPUs and GPUs
    result = subprocess.run([sys.executable, "-m", "robolearn", "tune", "seed=1,2", "runner.max_iterations=1",
                             "tune.cpus_per_trial=4096", "tune.gpus_per_trial=4096"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "robolearn tune: error: cannot reach the Ray cluster at 127.0.0.1:9 (Connection refused); start it with ray "
        "start --head, or give its address with tune.address= or RAY_ADDRESS"]  # fmt: skip
    assert not (tmp_path / "runs").exists()


def test_without_ray_it_names_the_extra(tmp_path):
    shadow = tmp_path / "shadow" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "shadow")}
    result = subprocess.run([sys.executable, "-m", "robolearn", "tune", "seed=1,2"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == ("robolearn tune: error: robolearn tune needs Ray Tune, an optional extra: "
                                     "pip install 'robolearn[tune]'")  # fmt: skip


def test_the_same_command_runs_on_a_ray_cluster(tmp_path):
    """A cluster started on its own (`ray start --head`, here with this machine as its only node): the
    driver connects through RAY_ADDRESS and the trials run on the cluster's workers."""
    import shutil

    ray = shutil.which("ray", path=os.path.dirname(sys.executable))
    port = 6400 + os.getpid() % 500
    started = subprocess.run([ray, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false"],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert started.returncode == 0, started.stderr[-2000:]
    try:
        env = {**os.environ, "RAY_ADDRESS": "auto"}  # the cluster this node belongs to
        folder = tmp_path / "search"
        result = subprocess.run([sys.executable, "-m", "robolearn", "tune", "tune.scheduler=fifo", "tune.num_samples=1",
                                 f"tune.dir={folder}", "seed=1,2", "runner.max_iterations=2", *SMALL],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("tuning cartpole")]
    assert " on the Ray cluster at " in line and line.endswith(f":{port}")  # the cluster started above
    assert [r["status"] for r in summary(folder)] == ["finished", "finished"]


def marked(mark: str) -> list[int]:
    """The processes whose environment carries `mark` (the tune command and the Ray processes it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:  # ended meanwhile, or another user's
            pass
    return found


def test_ctrl_c_ends_the_search_with_one_line_and_keeps_the_runs(tmp_path):
    """SIGINT while the second trial trains: exit 130, one line saying where the runs are (the summary
    ranks the trial that finished, the one stopped and the one never started), no Ray process left
    behind. The stopped trial ends its iteration and saves it, as `robolearn train` stops (its
    save_interval, 50, is far away), so resume= continues from where it was."""
    folder, token = tmp_path / "search", uuid.uuid4().hex
    mark = f"ROBOLEARN_TUNE_TEST={token}"
    proc = subprocess.Popen([sys.executable, "-m", "robolearn.cli", "tune", *LOCAL, "tune.scheduler=fifo",
                             "tune.num_samples=1", "tune.max_concurrent=1", f"tune.dir={folder}",
                             "runner.max_iterations=2,100000,3", *SMALL], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "ROBOLEARN_TUNE_TEST": token})  # fmt: skip
    try:
        deadline = time.time() + 300
        while sum(bool(p.read_text().strip()) for p in folder.glob("run_trial_*/metrics.jsonl")) < 2:  # the second trial's first iteration is done
            assert proc.poll() is None and time.time() < deadline, proc.communicate()
            time.sleep(0.2)
        assert len(marked(mark)) > 1  # the Ray processes carry the mark too
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
        deadline = time.time() + 30
        while (left := marked(mark)) and time.time() < deadline:
            time.sleep(0.5)
        for pid in left:  # none should be left; if some are, not to leave them running
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr[-3000:]
    shown = stderr[-3000:] + ((folder / "summary.md").read_text() if (folder / "summary.md").is_file() else "")
    assert not any(text in stderr for text in ("Traceback", "Tuner.restore", "FileNotFoundError")), shown
    assert [line for line in stderr.splitlines() if line.startswith("robolearn")] == [stderr.strip().splitlines()[-1]]
    assert stderr.strip().splitlines()[-1] == (
        f"robolearn tune: stopped by SIGINT: 1 of 3 trials finished, 1 stopped part-way, 1 not started; every "
        f"trial's run so far is in {folder}, ranked in {folder}/summary.md; robolearn train resume=<run_dir> "
        "continues a stopped one")  # fmt: skip
    assert not left, f"Ray processes left running: {left}"
    rows = {r["overrides"]: r for r in summary(folder)}
    assert rows["runner.max_iterations=2"]["status"] == "finished"
    assert rows["runner.max_iterations=3"]["status"] == "not started" and rows["runner.max_iterations=3"]["run_dir"] == ""
    assert "| runner.max_iterations=3 |  | not started | - |" in (folder / "summary.md").read_text()
    stopped = rows["runner.max_iterations=100000"]
    last = metrics(Path(stopped["run_dir"]))[-1]["iteration"]
    assert stopped["status"] == f"stopped at iteration {last}"
    assert [p.name for p in (Path(stopped["run_dir"]) / "checkpoints").glob("iter_*.pt")] == [f"iter_{last:06d}.pt"]
    assert not (folder / "stopping").exists()
    assert (Path(rows["runner.max_iterations=2"]["run_dir"]) / "checkpoints" / "iter_000002.pt").is_file()
