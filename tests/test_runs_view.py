"""`robolearn runs` over hand-made run directories: columns, states, order, filters, damaged files."""

import json
import platform
import subprocess
import sys
import zipfile

import pytest

from robolearn.cli import main
from robolearn.runs import list_runs


def make_run(folder, task="cartpole", max_iterations=100, returns=(), checkpoints=(), exported=False, pid=None,
             config=None, metrics_tail=""):  # fmt: skip
    """A run directory as `robolearn train` leaves it: config.yaml, manifest.json, one metrics row
    per value in `returns` (None: no episode finished yet), checkpoints, export/."""
    folder.mkdir(parents=True)
    if config is None:
        config = f"task:\n  name: {task}\nrunner:\n  max_iterations: {max_iterations}\n  save_interval: 50\n"
    (folder / "config.yaml").write_text(config)
    manifest = {"started": "2026-01-01T00:00:00+00:00", "task": task, "host": platform.node()}
    if pid is not None:
        manifest["pid"] = pid
    (folder / "manifest.json").write_text(json.dumps(manifest))
    rows = [{"iteration": i, **({} if r is None else {"mean_episode_return": r})} for i, r in enumerate(returns, 1)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + metrics_tail)
    (folder / "checkpoints").mkdir()
    for it in checkpoints:  # a zip file, as torch.save writes (runs reads none: it checks the file is whole)
        with zipfile.ZipFile(folder / "checkpoints" / f"iter_{it:06d}.pt", "w") as z:
            z.writestr("archive/data.pkl", b"")
    if exported:
        (folder / "export").mkdir()
        (folder / "export" / "robot.yaml").write_text("task: x\n")
    return folder


@pytest.fixture
def stopped_pid():
    """The id of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def rows(capsys, *args):
    assert main(["runs", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_columns_states_and_newest_first(tmp_path, capsys, stopped_pid):
    root = tmp_path / "runs"
    make_run(root / "cartpole" / "2026-01-01_10-00-00_000001", returns=[1.0, 5.0, 3.0], max_iterations=3,
             checkpoints=[3], exported=True, pid=stopped_pid)  # fmt: skip
    make_run(root / "cartpole" / "2026-01-02_10-00-00_000001_nodeploy", returns=[2.0, 4.0], max_iterations=2,
             checkpoints=[2], pid=stopped_pid)  # fmt: skip
    make_run(root / "pendulum" / "2026-01-03_10-00-00_000001_cut", task="pendulum", returns=[-9.0, -4.5, -6.0],
             checkpoints=[2], pid=stopped_pid)  # fmt: skip
    make_run(root / "pendulum" / "2026-01-04_10-00-00_000001_old", task="pendulum", returns=[None, -7.0],
             checkpoints=[2])  # no pid in its manifest: written before runs recorded one  # fmt: skip
    make_run(root / "cartpole" / "2026-01-05_10-00-00_000001", returns=[None], pid=stopped_pid)
    out = rows(capsys, f"root={root}")
    assert out[0].split() == ["started", "task", "name", "iterations", "best", "return", "last", "state", "path"]
    assert [line.split()[:5] for line in out[1:]] == [  # newest first
        ["2026-01-05", "10:00:00", "cartpole", "-", "1/100"],
        ["2026-01-04", "10:00:00", "pendulum", "old", "2/100"],
        ["2026-01-03", "10:00:00", "pendulum", "cut", "3/100"],
        ["2026-01-02", "10:00:00", "cartpole", "nodeploy", "2/2"],
        ["2026-01-01", "10:00:00", "cartpole", "-", "3/3"],
    ]
    assert "  -  " in out[1] and " no checkpoint " in out[1]  # no return yet
    assert " -7 " in out[2] and "stopped or running at it 2 " in out[2]
    assert " -4.5 " in out[3] and " -6 " in out[3] and "stopped at it 3, checkpoint 2 " in out[3]  # best, last
    assert "finished, not exported" in out[4]
    assert " 5 " in out[5] and " 3 " in out[5] and "finished, exported" in out[5]
    assert out[5].endswith("2026-01-01_10-00-00_000001")  # the path


def test_a_live_run_is_running(tmp_path, capsys):
    script = "import time; print('ready', flush=True); time.sleep(60)"
    live = subprocess.Popen([sys.executable, "-c", script, "robolearn", "train"], stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline() == "ready\n"  # started (not a fork that has yet to exec)
        make_run(tmp_path / "cartpole" / "2026-01-01_10-00-00_000001", returns=[1.0], checkpoints=[1], pid=live.pid)
        (run,) = list_runs(tmp_path)
        assert run.state == f"running (pid {live.pid})"
    finally:
        live.kill()
        live.wait()
    (run,) = list_runs(tmp_path)
    assert run.state == "stopped at it 1"


def test_task_filter_multirun_jobs_and_a_run_given_as_root(tmp_path, capsys, stopped_pid):
    make_run(tmp_path / "cartpole" / "2026-01-01_10-00-00_000001", pid=stopped_pid)
    make_run(tmp_path / "multirun" / "2026-01-02_10-00-00_000001" / "0_pendulum", task="pendulum", pid=stopped_pid)
    make_run(tmp_path / "multirun" / "2026-01-02_10-00-00_000001" / "1_pendulum", task="pendulum", pid=stopped_pid)
    (tmp_path / "cartpole" / "2026-01-03_10-00-00_000001").mkdir()  # Hydra's launch folder of a run that never started
    (tmp_path / "cartpole" / "2026-01-03_10-00-00_000001" / "train.log").write_text("")
    assert [r.task for r in list_runs(tmp_path)] == ["pendulum", "pendulum", "cartpole"]
    out = rows(capsys, "task=pendulum", f"root={tmp_path}")
    assert len(out) == 3 and all("pendulum" in line for line in out[1:])
    assert out[1].endswith("1_pendulum") and out[2].endswith("0_pendulum")
    (run,) = list_runs(tmp_path / "cartpole" / "2026-01-01_10-00-00_000001")
    assert run.task == "cartpole" and run.state == "no checkpoint"


def test_a_run_reached_by_links_is_listed_once_by_its_own_path(tmp_path, stopped_pid):
    run = make_run(tmp_path / "cartpole" / "2026-01-01_10-00-00_000001", pid=stopped_pid)
    (tmp_path / "here").symlink_to(".")  # a link to the folder itself, and one to a run
    (tmp_path / "cartpole" / "best").symlink_to(run.name)
    (tmp_path / "loop").symlink_to("loop")  # a link that leads nowhere
    assert [r.path for r in list_runs(tmp_path)] == [run]


def test_damaged_runs_are_listed_with_a_note(tmp_path, capsys, stopped_pid):
    make_run(tmp_path / "cartpole" / "2026-01-01_10-00-00_000001", config="task: [unclosed\n", returns=[1.0, 2.0],
             checkpoints=[2], pid=stopped_pid)  # fmt: skip
    make_run(tmp_path / "cartpole" / "2026-01-02_10-00-00_000001", returns=[1.0, 2.0], checkpoints=[2],
             pid=stopped_pid, metrics_tail='{"iteration": 3, "mean_episo')  # a line cut short  # fmt: skip
    (tmp_path / "cartpole" / "2026-01-02_10-00-00_000001" / "manifest.json").write_text("{not json")
    out = rows(capsys, f"root={tmp_path}")
    assert len(out) == 6
    assert "2/100" in out[1] and "stopped or running at it 2" in out[1]  # the manifest is unreadable
    assert out[2].startswith("  note: metrics.jsonl: line 3 not a metrics row")
    assert out[3].startswith("  note: manifest.json is unreadable")
    assert "cartpole" in out[4] and "2/?" in out[4]  # the task from the folder; max_iterations unknown
    assert out[5].startswith("  note: config.yaml is unreadable")


def test_a_damaged_checkpoint_or_bundle_and_missing_files_are_notes(tmp_path, capsys, stopped_pid):
    """Files deleted or cut short after training: the newest checkpoint not a whole zip, no checkpoint
    at all, a bundle without its policy.onnx, no metrics.jsonl. Each run says so; none is 'exported'."""
    runs = {name: make_run(tmp_path / "cartpole" / f"2026-01-0{k}_10-00-00_000001", max_iterations=2, returns=[1.0, 2.0],
                           checkpoints=[1, 2], exported=True, pid=stopped_pid)
            for k, name in enumerate(("cut", "none", "onnx", "metrics"), 1)}  # fmt: skip
    newest = runs["cut"] / "checkpoints" / "iter_000002.pt"
    newest.write_bytes(newest.read_bytes()[:40])
    for path in (runs["none"] / "checkpoints").iterdir():
        path.unlink()
    for run in runs.values():
        (run / "export" / "robot.yaml").write_text("files:\n  policy.onnx: {sha256: abc}\n")
        (run / "export" / "policy.onnx").write_bytes(b"onnx")
    (runs["onnx"] / "export" / "policy.onnx").unlink()
    (runs["metrics"] / "metrics.jsonl").unlink()
    out = rows(capsys, f"root={tmp_path}")
    notes = {line.strip() for line in out if line.startswith("  note:")}
    assert notes == {"note: checkpoints/iter_000002.pt is damaged (not a whole checkpoint file)",
                     "note: no checkpoint in checkpoints/: it cannot be resumed, evaluated or exported",
                     "note: export/ lacks policy.onnx (its robot.yaml lists it): export again",
                     "note: no metrics.jsonl"}, out  # fmt: skip
    onnx_row = next(line for line in out if "2026-01-03" in line)
    assert "finished, not exported" in onnx_row, out


def test_a_bundle_older_than_the_newest_checkpoint_is_a_note(tmp_path, capsys, stopped_pid):
    """robot.yaml's trained_to: a bundle of iteration 2 beside a checkpoint of iteration 4 (an export
    stopped after a resume trained on, or an older checkpoint exported on purpose) is still exported,
    with a note; one of the newest iteration, or one that does not say (older bundles), has none."""
    runs = {it: make_run(tmp_path / "cartpole" / f"2026-01-0{k}_10-00-00_000001", max_iterations=4,
                         returns=[1.0, 2.0, 3.0, 4.0], checkpoints=[2, 4], exported=True, pid=stopped_pid)
            for k, it in enumerate((2, 4, None), 1)}  # fmt: skip
    for it, run in runs.items():
        if it is not None:
            (run / "export" / "robot.yaml").write_text(f"trained_to: {{iteration: {it}, checkpoint: iter_{it:06d}.pt}}\n")
    out = rows(capsys, f"root={tmp_path}")
    notes = [line.strip() for line in out if line.startswith("  note:")]
    assert notes == ["note: export/ holds the policy of iteration 2, the newest checkpoint is of iteration 4: export "
                     "again to deploy the newest"], out  # fmt: skip
    assert sum("finished, exported" in line for line in out) == 3, out


def test_no_runs_is_one_line_and_success(tmp_path, capsys):
    (tmp_path / "nothing").mkdir()
    out = rows(capsys, f"root={tmp_path / 'nothing'}")
    assert len(out) == 1 and out[0].startswith("no runs under ") and "robolearn train task=" in out[0]
    # a root that is not there is a typo, not an empty folder of runs (the default, outputs/, may not exist yet)
    assert main(["runs", f"root={tmp_path / 'nothign'}"]) == 2
    assert f"root={tmp_path / 'nothign'} does not exist; valid: a folder of runs" in capsys.readouterr().err
    out = rows(capsys, "task=pendulum", f"root={tmp_path}")
    assert len(out) == 1 and out[0].startswith("no pendulum runs") and out[0].endswith("robolearn train task=pendulum")


def test_runs_help_and_mistakes(tmp_path, capsys):
    assert main(["runs", "--help"]) == 0
    assert "runs [task=<name>] [root=runs]" in capsys.readouterr().out
    assert main(["runs", "tasks=x"]) == 2
    assert "unexpected argument 'tasks=x'; runs takes task=..., root=..." in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main(["runs", f"root={tmp_path / 'file'}"]) == 2
    assert "is a file, not a folder of runs" in capsys.readouterr().err


def test_listing_runs_does_not_load_torch(tmp_path, stopped_pid):
    """`robolearn runs` reads files only: without torch's ~2 s import it answers in a fraction of a second."""
    make_run(tmp_path / "cartpole" / "2026-01-01_10-00-00_000001", returns=[1.0], checkpoints=[1], pid=stopped_pid)
    script = (f"import sys; from robolearn.cli import main; assert main(['runs', 'root={tmp_path}']) == 0; "
              "assert 'torch' not in sys.modules, 'torch was imported'")  # fmt: skip
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "cartpole" in result.stdout


def test_latest_is_the_run_that_runs_lists_first(tmp_path, monkeypatch):
    """`latest` orders runs by start time, as `robolearn runs` does, not by folder name: a folder
    named with hydra.run.dir (letters sort after digits) and one that overwrite=true moved aside
    (`<name>.replaced-<time>` sorts after `<name>`) are older than a run started after them."""
    from robolearn.run_dir import resolve_run

    monkeypatch.chdir(tmp_path)
    root = tmp_path / "runs"
    named = make_run(root / "cartpole" / "baseline")
    (named / "manifest.json").write_text(json.dumps({"started": "2026-01-01T09:00:00+00:00", "task": "cartpole"}))
    make_run(root / "cartpole" / "2026-01-02_10-00-00_000001.replaced-20260103-100000")  # started 2026-01-02
    newest = make_run(root / "cartpole" / "2026-01-03_10-00-00_000001")
    make_run(root / "pendulum" / "2026-01-02_11-00-00_000001", task="pendulum")
    assert resolve_run("latest").resolve() == newest.resolve()
    assert resolve_run("cartpole/latest").resolve() == newest.resolve()
    # the same written as the path from here
    assert resolve_run("runs/cartpole/latest").resolve() == resolve_run("./runs/latest").resolve() == newest.resolve()
    assert list_runs(root)[0].path.resolve() == newest.resolve()
    # the newest run is the named one once it started last
    (named / "manifest.json").write_text(json.dumps({"started": "2026-01-04T09:00:00+00:00", "task": "cartpole"}))
    assert resolve_run("cartpole/latest").resolve() == named.resolve() == list_runs(root)[0].path.resolve()
