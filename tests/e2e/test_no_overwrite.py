"""Nothing a user has is overwritten unasked: run directories, export targets, a cut-short metrics file."""

import json

import pytest

from .conftest import robolearn
from .test_errors import FAST, one_line_error, snapshot

NO_EXPORT = [*FAST, "runner.export_onnx=false"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("no_overwrite")
    run = folder / "run"
    result = robolearn("train", *NO_EXPORT, f"hydra.run.dir={run}", cwd=folder)
    assert result.returncode == 0, result.stderr
    return run


def test_training_into_a_run_is_refused_and_leaves_it_as_it_was(run):
    before = snapshot(run)
    result = robolearn("train", *NO_EXPORT, f"hydra.run.dir={run}", cwd=run.parent)
    one_line_error(result, f"hydra.run.dir={run} already holds a run", f"resume={run}", "overwrite=true")
    assert snapshot(run) == before  # .hydra/ included: refused before Hydra writes anything


def test_a_run_that_stopped_before_its_first_checkpoint_points_at_overwrite_not_resume(tmp_path):
    """Every env step of iteration 1 diverging (a state limit nothing stays within) stops the run
    before any checkpoint: its line says so, and a second train into the folder is pointed at
    overwrite=true, since there is nothing to resume."""
    run = tmp_path / "run"
    line = one_line_error(robolearn("train", *NO_EXPORT, f"hydra.run.dir={run}", "env.state_limit=1e-9", cwd=tmp_path),
                          "iteration 1: every one of its", "no checkpoint was written")  # fmt: skip
    assert "keeps its checkpoints" not in line
    before = snapshot(run)
    line = one_line_error(robolearn("train", *NO_EXPORT, f"hydra.run.dir={run}", cwd=tmp_path),
                          "already holds a run that has no checkpoint to continue from", "overwrite=true")  # fmt: skip
    assert "resume=" not in line and snapshot(run) == before
    assert robolearn("train", *NO_EXPORT, f"hydra.run.dir={run}", "overwrite=true", cwd=tmp_path).returncode == 0


def test_overwrite_moves_the_old_run_aside_whole(tmp_path):
    run = tmp_path / "run"
    assert robolearn("train", *NO_EXPORT, f"hydra.run.dir={run}", "seed=3", cwd=tmp_path).returncode == 0
    before = snapshot(run)
    result = robolearn("train", *NO_EXPORT, f"hydra.run.dir={run}", "overwrite=true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (aside,) = tmp_path.glob("run.replaced-*")
    assert f"aside to {aside}" in result.stdout
    assert snapshot(aside) == before
    assert json.loads((run / "manifest.json").read_text())["seed"] == 0


def test_a_mistake_found_while_building_the_env_leaves_no_empty_run_behind(tmp_path):
    """Hydra makes the run folder (.hydra/, train.log) before the env is built; a mistake found there
    (a joint the model lacks) removes what the launch wrote, and a folder the user made stays."""
    bad = "task.observations.policy.terms.cart_pos.params.joints=[nope]"
    result = robolearn("train", *NO_EXPORT, bad, cwd=tmp_path)
    one_line_error(result, "no joint named 'nope' in the model; valid: slider, hinge")
    assert list((tmp_path / "runs" / "cartpole").iterdir()) == []
    result = robolearn("train", *NO_EXPORT, bad, f"hydra.run.dir={tmp_path / 'new'}", cwd=tmp_path)
    one_line_error(result, "no joint named 'nope'")
    assert not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()
    result = robolearn("train", *NO_EXPORT, bad, f"hydra.run.dir={tmp_path / 'mine'}", cwd=tmp_path)
    one_line_error(result, "no joint named 'nope'")
    assert list((tmp_path / "mine").iterdir()) == []


def test_a_file_or_a_bad_overwrite_value_is_one_line(tmp_path):
    user_file = tmp_path / "notes.txt"
    user_file.write_text("mine")
    one_line_error(robolearn("train", *NO_EXPORT, f"hydra.run.dir={user_file}", cwd=tmp_path), "is a file")
    one_line_error(robolearn("train", *NO_EXPORT, f"hydra.run.dir={user_file}/run", cwd=tmp_path),
                   f"{user_file} is a file, not a directory")  # fmt: skip
    one_line_error(robolearn("train", *NO_EXPORT, "overwrite=maybe", cwd=tmp_path), "overwrite=maybe is not valid")
    assert user_file.read_text() == "mine"


def test_export_refuses_a_users_file_or_folder_and_replaces_a_bundle(run):
    folder = run.parent
    user_file = folder / "policy.onnx"
    user_file.write_bytes(b"not mine to replace")
    one_line_error(robolearn("export", f"run={run}", f"out={user_file}", cwd=folder), f"out={user_file} is an existing file")
    assert user_file.read_bytes() == b"not mine to replace"

    user_dir = folder / "stuff"
    user_dir.mkdir()
    (user_dir / "a.txt").write_text("a")
    one_line_error(robolearn("export", f"run={run}", f"out={user_dir}", cwd=folder), "not a robolearn bundle")
    assert [p.name for p in user_dir.iterdir()] == ["a.txt"]

    description = folder / "my_robot"  # a robot description folder that has a robot.yaml of its own
    (description / "meshes").mkdir(parents=True)
    (description / "robot.yaml").write_text("name: my_robot\njoints: [hip, knee]\n")
    (description / "my_robot.urdf").write_text("<robot name='my_robot'/>")
    (description / "meshes" / "base.stl").write_bytes(b"solid base")
    before = snapshot(description)
    one_line_error(robolearn("export", f"run={run}", f"out={description}", cwd=folder),
                   "not a robolearn bundle (its robot.yaml is not a robolearn bundle's)")  # fmt: skip
    assert snapshot(description) == before

    bundle = folder / "bundle"
    for _ in range(2):  # a new path, then the bundle it made (with an engine built on the robot): replaced
        result = robolearn("export", f"run={run}", f"out={bundle}", cwd=folder)
        assert result.returncode == 0, result.stderr
        assert (bundle / "robot.yaml").is_file() and bundle.stat().st_mode & 0o777 == 0o755
        (bundle / "policy.fp16.local.engine").write_bytes(b"engine")
    assert not [p for p in folder.iterdir() if p.name.startswith(".bundle")]  # no staging left behind
    (bundle / "notes.md").write_text("my notes on this policy")  # a bundle the user added to: not replaced
    before = snapshot(bundle)
    one_line_error(robolearn("export", f"run={run}", f"out={bundle}", cwd=folder),
                   "(it holds files its robot.yaml does not list: notes.md)")  # fmt: skip
    assert snapshot(bundle) == before


def test_resume_drops_a_metrics_line_cut_short(run):
    metrics = run / "metrics.jsonl"
    metrics.write_text(metrics.read_text() + '{"iteration": 2, "mean_ep')
    result = robolearn("train", f"resume={run}", "runner.max_iterations=2", cwd=run.parent)
    assert result.returncode == 0, result.stderr
    assert "dropped its last line" in result.stderr
    assert [json.loads(line)["iteration"] for line in metrics.read_text().splitlines()] == [1, 2]


def test_a_run_being_trained_is_neither_moved_aside_nor_resumed_twice(run, tmp_path):
    """The manifest names the process training the run (host, pid): while it lives, overwrite=true
    and a second resume are refused in one line and the run is left as it was."""
    import platform
    import shutil
    import subprocess
    import sys

    busy = shutil.copytree(run, tmp_path / "busy")
    trainer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "robolearn", "train"])
    try:
        manifest = json.loads((busy / "manifest.json").read_text())
        (manifest.get("resumes") or [manifest])[-1].update(host=platform.node(), pid=trainer.pid)  # the latest start
        (busy / "manifest.json").write_text(json.dumps(manifest))
        before = snapshot(busy)
        for args in ([*NO_EXPORT, f"hydra.run.dir={busy}", "overwrite=true"], [f"resume={busy}", "runner.max_iterations=3"]):
            one_line_error(robolearn("train", *args, cwd=tmp_path), f"{busy} is being trained right now by process "
                           f"{trainer.pid} on this host")  # fmt: skip
            assert snapshot(busy) == before
    finally:
        trainer.kill()
        trainer.wait()


def test_resume_with_an_unreadable_manifest_is_one_line_and_writes_nothing(run, tmp_path):
    import shutil

    broken = shutil.copytree(run, tmp_path / "broken")
    (broken / "manifest.json").write_text("{bad")
    before = snapshot(broken)
    one_line_error(robolearn("train", f"resume={broken}", "runner.max_iterations=3", cwd=tmp_path),
                   f"{broken / 'manifest.json'} is not a readable run manifest")  # fmt: skip
    assert snapshot(broken) == before


def test_a_run_directory_is_locked_while_a_command_line_trains_into_it(tmp_path):
    """train.lock (with the pid) is held from before Hydra writes until the process exits: a second
    training started into the directory at the same moment is refused, not mixed in; a lock whose
    process is gone is taken over and removed at the end."""
    import subprocess
    import sys

    held = tmp_path / "held"
    held.mkdir()
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "robolearn", "train"])
    try:
        (held / "train.lock").write_text(f"{owner.pid}\n")
        one_line_error(robolearn("train", *NO_EXPORT, f"hydra.run.dir={held}", cwd=tmp_path),
                       f"{held} is being trained right now by process {owner.pid}")  # fmt: skip
        assert sorted(p.name for p in held.iterdir()) == ["train.lock"]  # Hydra wrote nothing
    finally:
        owner.kill()
        owner.wait()
    result = robolearn("train", *NO_EXPORT, f"hydra.run.dir={held}", cwd=tmp_path)  # the lock's process is gone
    assert result.returncode == 0, result.stderr
    assert not (held / "train.lock").exists() and (held / "manifest.json").is_file()


def test_a_lock_of_another_host_is_never_taken_over(tmp_path):
    """On a shared filesystem the process a lock names may run on another host, where this one
    cannot see it: train refuses and says how to clear a lock whose run is over."""
    held = tmp_path / "shared"
    held.mkdir()
    (held / "train.lock").write_text("4242 node-17\n")
    one_line_error(robolearn("train", *NO_EXPORT, f"hydra.run.dir={held}", cwd=tmp_path),
                   f"{held} is held by process 4242 on host node-17", f"delete {held / 'train.lock'}")  # fmt: skip
    assert sorted(p.name for p in held.iterdir()) == ["train.lock"]
    import os
    import platform

    from robolearn.run_dir import lock_run_dir, release_run_locks

    lock_run_dir(tmp_path / "own", "a test")
    try:
        assert (tmp_path / "own" / "train.lock").read_text() == f"{os.getpid()} {platform.node()}\n"
    finally:
        release_run_locks()
    assert not (tmp_path / "own" / "train.lock").exists()


def test_a_checkpoint_of_another_robot_is_not_exported_or_resumed_and_eval_says_so(run, tmp_path):
    """The checkpoint keeps the robot's fingerprint; a robot model edited since (simulated here by
    the checkpoint's fingerprint) is refused by export and resume, and noted by eval."""
    import shutil

    import torch

    other = tmp_path / "run"
    shutil.copytree(run, other)
    saved = sorted((other / "checkpoints").glob("iter_*.pt"))[-1]
    payload = torch.load(saved, weights_only=False)
    assert isinstance(payload["robot_model"], str) and len(payload["robot_model"]) == 16
    payload["robot_model"] = "0123456789abcdef"
    torch.save(payload, saved)
    before = snapshot(other)
    line = one_line_error(robolearn("export", f"run={other}", f"out={tmp_path / 'bundle'}", cwd=tmp_path),
                          f"checkpoint {saved} was trained on another robot model than task 'cartpole' builds now",
                          "fingerprint 0123456789abcdef, now ", "valid: restore the model it trained with")  # fmt: skip
    assert "gains or joints its policy never saw" in line and not (tmp_path / "bundle").exists()
    one_line_error(robolearn("train", f"resume={other}", "runner.max_iterations=3", cwd=tmp_path),
                   "was trained on another robot model", "a resume would continue on another robot")  # fmt: skip
    assert snapshot(other) == before
    result = robolearn("eval", f"run={other}", "episodes=2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "note: checkpoint" in result.stderr and "running it on the model as it is now" in result.stderr
