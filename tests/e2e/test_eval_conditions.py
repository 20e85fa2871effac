"""eval, export and play of a checkpoint run under the conditions training had reached (its command
curriculum, adaptive ranges and terrain levels), as training's own evaluation at its end does;
`eval conditions=initial` under the task's own."""

import json

import pytest
import torch
import yaml

from .conftest import robolearn

TINY = ["task=quadruped_rough", "physics=mujoco", "env.num_envs=8", "runner.num_steps_per_env=8", "runner.max_iterations=1",
        "algo.num_mini_batches=1", "runner.export_onnx=false", "runner.video_interval=0", "logger=none"]  # fmt: skip


@pytest.fixture(scope="module")
def rough_run(tmp_path_factory):
    """A one-iteration quadruped_rough run whose checkpoint says training had reached terrain level 9
    everywhere and forward commands of +-1 m/s (the task starts at levels 0-4 and +-0.5 m/s)."""
    work = tmp_path_factory.mktemp("conditions")
    run = work / "run"
    result = robolearn("train", *TINY, f"hydra.run.dir={run}", cwd=work)
    assert result.returncode == 0, result.stderr[-2000:]
    path = run / "checkpoints" / "iter_000001.pt"
    payload = torch.load(path, weights_only=False)
    payload["env"]["terrain"]["levels"][:] = 9
    payload["env"]["managers"]["commands"]["state"]["ranges"]["base_velocity"][0] = torch.tensor([-1.0, 1.0])
    # ... as its command curriculum had widened them (component 0, lin_vel_x; it sets them at every reset)
    payload["env"]["managers"]["curriculum"]["terms"]["command_ranges"]["0"]["range"][:] = torch.tensor([-1.0, 1.0])
    torch.save(payload, path)
    return work, run


def test_eval_runs_under_the_checkpoints_conditions_or_the_tasks_own(rough_run):
    work, run = rough_run
    trained = robolearn("eval", f"run={run}", "episodes=4", cwd=work)
    assert trained.returncode == 0, trained.stderr[-2000:]
    line = ("under the conditions training had reached by iteration 1: command base_velocity ranges lin_vel_x [-1, 1], "
            "lin_vel_y [-0.5, 0.5], ang_vel_z [-1, 1]; curriculum command_ranges; terrain levels (mean 9, max 9 of 0-9)")  # fmt: skip
    assert line in trained.stderr.splitlines()
    assert json.loads((run / "eval.json").read_text())["conditions"] == "trained"
    initial = robolearn("eval", f"run={run}", "episodes=4", "conditions=initial", cwd=work)
    assert initial.returncode == 0 and "under the conditions" not in initial.stderr
    assert json.loads((run / "eval.json").read_text())["conditions"] == "initial"


def test_export_evaluates_the_bundle_under_the_checkpoints_conditions(rough_run):
    """As the export at the end of training does (it evaluates in the training env itself)."""
    work, run = rough_run
    result = robolearn("export", f"run={run}", f"out={work / 'bundle'}", cwd=work)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "under the conditions training had reached by iteration 1: command base_velocity" in result.stderr
    meta = yaml.safe_load((work / "bundle" / "robot.yaml").read_text())
    assert meta["evaluation"]["episodes"] == 8 and meta["commands"]["base_velocity"]["ranges"]["lin_vel_x"] == [-1.0, 1.0]
    # sim2sim's referee draws the robot's commands from the bundle's task.yaml: the same ranges
    task = yaml.safe_load((work / "bundle" / "task.yaml").read_text())
    assert task["commands"]["base_velocity"]["ranges"] == meta["commands"]["base_velocity"]["ranges"]
