"""task=isaaclab:<id>: robolearn's learner, checkpoints, export, play and sim2sim on an Isaac Lab task.

These run where Isaac Lab 3 is importable: the environment scripts/isaaclab/make_venv.sh builds
(Python 3.11 with --ignore-requires-python: works, unsupported upstream). The main suite skips them
and says why; tests/isaaclab/test_without_isaaclab.py checks the one-line refusal there instead.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("isaaclab", reason="Isaac Lab is not installed here; run these in the environment "
                    "scripts/isaaclab/make_venv.sh builds: <venv>/bin/python -m pytest tests/isaaclab")  # fmt: skip

TASK = "task=isaaclab:RoboLearn-Velocity-Flat-Quadruped"
SHORT = ["env.num_envs=16", "runner.num_steps_per_env=8", "algo.num_mini_batches=2", "runner.video_interval=0",
         "device=cpu", 'isaaclab.overrides=["env.episode_length_s=1.0"]']  # fmt: skip
FIXTURES = Path(__file__).parents[1] / "fixtures" / "interop"


def robolearn(*args, cwd, timeout=900):
    return subprocess.run([sys.executable, "-m", "robolearn.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """2 iterations of the offline example, then resumed to 3 (train exports the bundle at the end)."""
    work = tmp_path_factory.mktemp("isaaclab")
    run_dir = work / "run"
    first = robolearn("train", TASK, *SHORT, "runner.max_iterations=2", "runner.export_onnx=false",
                      f"hydra.run.dir={run_dir}", cwd=work)  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    before = rows(run_dir)
    second = robolearn("train", f"resume={run_dir}", "runner.max_iterations=3", "runner.export_onnx=true", cwd=work)
    assert second.returncode == 0, second.stderr[-3000:]
    return work, run_dir, before, second


def test_train_logs_checkpoints_and_takes_the_task_recipe(trained):
    work, run_dir, before, _ = trained
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert cfg["task"]["name"] == "isaaclab:RoboLearn-Velocity-Flat-Quadruped"
    # the task's rsl_rl runner config is its recipe: hidden [128, 128], entropy 0.01 (robolearn's default is 64x64, 0.005)
    assert cfg["algo"]["actor_hidden_dims"] == [128, 128] and cfg["algo"]["entropy_coef"] == 0.01
    assert cfg["algo"]["normalizer_schedule"] == "step"  # obs_normalization=True: rsl_rl's per-step merge
    assert cfg["isaaclab"]["overrides"] == ["env.episode_length_s=1.0"]
    assert [r["iteration"] for r in before] == [1, 2]
    # 1 s episodes at 50 Hz, 16 envs x 8 steps per iteration: episodes end in every iteration
    assert before[-1]["episodes"] > 0 and 0 < before[-1]["mean_episode_length"] <= 50
    assert any(k.startswith("isaaclab/Episode_Reward/") for k in before[-1])
    assert all(np.isfinite(r["mean_episode_return"]) for r in before if "mean_episode_return" in r)
    assert (run_dir / "checkpoints" / "iter_000002.pt").is_file()


def test_resume_continues_the_learner(trained):
    work, run_dir, before, second = trained
    after = rows(run_dir)
    assert [r["iteration"] for r in after] == [1, 2, 3]
    assert after[:2] == before  # the rows of the first run are kept as they were
    assert "every environment starts a new episode" in second.stderr
    import torch

    two = torch.load(run_dir / "checkpoints" / "iter_000002.pt", weights_only=False)
    three = torch.load(run_dir / "checkpoints" / "iter_000003.pt", weights_only=False)
    assert three["env_steps"] == 3 * 16 * 8 and two["env_steps"] == 2 * 16 * 8
    # the normalizer's count went on from the checkpoint's (not restarted)
    count = [k for k in two["model"] if k.endswith("count")][0]
    assert three["model"][count] > two["model"][count]


def test_export_layout_matches_the_isaac_lab_run_import(trained):
    """The bundle robolearn exports from the live managers describes the robot as `robolearn import`
    reads the real Isaac Lab run of the same task (made by Isaac Lab's own trainer)."""
    work, run_dir, _, _ = trained
    meta = yaml.safe_load((run_dir / "export" / "robot.yaml").read_text())
    parity = meta["artifacts"][0]["parity"]  # the ONNX through the deploy engine vs the torch policy
    # 1e-5 of the largest action, at least 1e-5 (onnx.ParityReport.tolerance)
    assert max(parity["random_max_abs_diff"], parity["recorded_max_abs_diff"]) < parity["tolerance"]
    assert parity["tolerance"] == pytest.approx(1e-5 * max(1.0, parity["max_abs_action"]))
    out = work / "imported"
    imported = robolearn("import", f"run={FIXTURES / 'isaaclab_quadruped_run'}",
                         f"robot={FIXTURES.parents[2] / 'assets' / 'quadruped.xml'}", f"out={out}", cwd=work)  # fmt: skip
    assert imported.returncode == 0, imported.stderr[-2000:]
    theirs = yaml.safe_load((out / "robot.yaml").read_text())
    for key in ("control_period_s", "physics_dt_s", "decimation", "default_pose", "commands"):
        assert meta[key] == theirs[key], key
    strip = lambda acts: [{k: a[k] for k in ("joint", "action_scale", "action_offset", "kp", "kd", "effort_range")} for a in acts]
    assert strip(meta["actuators"]) == strip(theirs["actuators"])
    layout = lambda m: [(t["name"], t["start"], t["stop"], t["source"], t["scale"], t["clip"]) for t in m["observation"]["terms"]]
    assert layout(meta) == layout(theirs)
    assert meta["isaaclab"]["task"] == "RoboLearn-Velocity-Flat-Quadruped" and meta["model_file"] == "quadruped.xml"


def test_sim2sim_and_play_of_the_exported_policy(trained):
    work, run_dir, _, _ = trained
    sim = robolearn("sim2sim", f"bundle={run_dir / 'export'}", "episodes=1", cwd=work)
    assert sim.returncode == 0, sim.stderr[-2000:]
    assert "no training evaluation with this task's rewards" in sim.stdout
    out = work / "play.mp4"
    play = robolearn("play", f"run={run_dir}", "num_envs=1", "duration=0.5", f"out={out}", cwd=work)
    assert play.returncode == 0, play.stderr[-2000:]
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(out))
    size = next(reader)["size"]
    frames = np.stack([np.frombuffer(f, np.uint8).reshape(size[1], size[0], 3) for f in reader])
    assert frames.shape[0] >= 10 and frames.std() > 10  # a drawn scene, not a blank frame


@pytest.mark.parametrize("task, expected", [
    ("isaaclab:No-Such-Task", "unknown Isaac Lab task 'No-Such-Task'; valid:"),
    ("isaaclab:Isaac-Velocity-Flat-AnymalD", "from NVIDIA's asset store"),
    ("isaaclab:no_such_module:Some-Task", "cannot import no_such_module"),
])  # fmt: skip
def test_bad_tasks_end_in_one_line(tmp_path, task, expected):
    result = robolearn("train", f"task={task}", "device=cpu", cwd=tmp_path, timeout=300)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("robolearn train: error:")]
    assert len(errors) == 1 and expected in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "runs").exists()


def test_velocity_tasks_report_robolearns_tracking_errors():
    """A base-velocity command gives evaluation lin_vel_error/ang_vel_error per step: equal to what
    Isaac Lab's own command term adds to its episode sums each step (its Metrics/ logs)."""
    import torch

    from robolearn.evaluate import evaluate
    from robolearn.isaaclab.env import IsaacLabEnv

    forward = [f"env.commands.base_velocity.{k}" for k in ("ranges.lin_vel_x=[0.5,0.5]", "ranges.lin_vel_y=[0.0,0.0]",
               "ranges.ang_vel_z=[0.0,0.0]", "heading_command=false", "rel_standing_envs=0.0")]  # fmt: skip
    env = IsaacLabEnv("RoboLearn-Velocity-Flat-Quadruped", 4, "cpu", 0, ["env.episode_length_s=0.5", *forward])
    try:
        assert env.metrics.names == ["lin_vel_error", "ang_vel_error"]
        term = env.metrics.term
        env.reset(spread_timeouts=False)
        assert torch.equal(term.vel_command_b, torch.tensor([[0.5, 0.0, 0.0]]).expand(4, 3))
        env.track_metrics(True)
        for _ in range(5):
            xy, yaw = term._error_xy_sum.clone(), term._error_yaw_sum.clone()
            env.step(torch.zeros(4, env.num_actions))
            torch.testing.assert_close(env.metrics.values[0], term._error_xy_sum - xy, rtol=0, atol=1e-6)
            torch.testing.assert_close(env.metrics.values[1], term._error_yaw_sum - yaw, rtol=0, atol=1e-6)
        assert env.metrics.values[0].min() > 0  # the robot is not tracking 0.5 m/s standing still
        env.track_metrics(False)
        metrics, _ = evaluate(env, lambda obs: torch.zeros(obs.shape[0], env.num_actions), progress=False)
        assert 0 < metrics["lin_vel_error"] <= 0.5 + 1.0 and metrics["episode_length_mean"] == 25
    finally:
        env.close()
