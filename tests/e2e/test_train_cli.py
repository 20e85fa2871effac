"""`robolearn train` end to end: it learns, writes a complete run directory, resumes exactly."""

import json
import re
import sys
from pathlib import Path

import pytest
import torch
import yaml

from .conftest import metrics, robolearn

SMALL = ["env.num_envs=32", "runner.num_steps_per_env=16", "algo.num_mini_batches=2", "runner.export_onnx=false"]


def test_cartpole_learns_to_balance(trained_cartpole):
    run_dir, _ = trained_cartpole
    rows = metrics(run_dir)
    assert [r["iteration"] for r in rows] == list(range(1, 101))
    max_length = 5.0 / 0.02
    assert rows[0]["mean_episode_length"] < 0.95 * max_length  # it did not start out balancing
    assert rows[-1]["mean_episode_length"] >= 0.95 * max_length, [r["mean_episode_length"] for r in rows[-10:]]
    for key in ("env_steps", "wall_time_s", "steps_per_s", "mean_episode_return", "mean_episode_length",
                "collection_s", "learning_s", "learning_rate", "kl", "entropy", "episode_reward/upright"):
        assert key in rows[-1], key
    assert rows[-1]["env_steps"] == 100 * 128 * 24  # the cartpole recipe: 128 envs


def test_run_directory_is_complete(trained_cartpole):
    run_dir, result = trained_cartpole
    assert (run_dir / "config.yaml").is_file() and (run_dir / ".hydra" / "config.yaml").is_file()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["seed"] == 1 and manifest["physics_backend"] == "mujoco" and manifest["device"] == "cpu"
    assert set(manifest["git"]) == {"commit", "dirty"} and manifest["versions"]["mujoco"] == "4.0.0"
    assert "robolearn" in manifest["command"] and "seed=1" in manifest["command"]
    assert [p.name for p in sorted((run_dir / "checkpoints").iterdir())] == ["iter_000050.pt", "iter_000100.pt"]
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))
    meta = yaml.safe_load((run_dir / "export" / "robot.yaml").read_text())
    assert meta["observation"]["size"] == 4 and (run_dir / "export" / "policy.onnx").is_file()
    assert meta["trained_to"] == {"iteration": 100, "checkpoint": "iter_000100.pt"}
    assert "policy.onnx" in result.stdout and "parity max abs diff" in result.stdout and "latency" in result.stdout


def test_export_command_rewrites_the_bundle(trained_cartpole, tmp_path):
    run_dir, _ = trained_cartpole
    result = robolearn("export", f"run={run_dir}", f"out={tmp_path / 'bundle'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "iter_000100.pt" in result.stdout and "recorded" in result.stdout
    found = re.search(r"random ([0-9.e+-]+) recorded ([0-9.e+-]+)", result.stdout)
    assert found and max(float(found.group(1)), float(found.group(2))) < 1e-5, result.stdout
    assert (tmp_path / "bundle" / "policy.onnx").is_file() and (tmp_path / "bundle" / "robot.yaml").is_file()
    trained_to = yaml.safe_load((tmp_path / "bundle" / "robot.yaml").read_text())["trained_to"]
    assert trained_to == {"iteration": 100, "checkpoint": "iter_000100.pt"}
    assert re.search(r"batch-1 latency median [0-9.]+ us, p99 [0-9.]+ us", result.stdout), result.stdout


def test_sim2sim_keeps_the_training_return(trained_cartpole, tmp_path):
    """The trained, exported policy, run by the deploy runtime against the CPU MuJoCo stand-in,
    keeps >= 90 % of its training evaluation return."""
    run_dir, _ = trained_cartpole
    report = tmp_path / "sim2sim.json"
    result = robolearn("sim2sim", f"bundle={run_dir / 'export'}", "episodes=5", f"report={report}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "training eval" in result.stdout and "episodes ended by the watchdog: 0 of 5" in result.stdout
    assert re.search(r"return: .*(than|equal to) the training evaluation", result.stdout), result.stdout
    summary = json.loads(report.read_text())
    assert summary["episodes"] == 5 and summary["ended_by_watchdog"] == 0
    assert summary["training_evaluation"]["return_mean"] > 400  # the policy learned (max ~500)
    assert summary["return_comparison"]["ratio"] >= 0.9, summary


def test_sim2sim_with_another_integrator_and_timestep(trained_cartpole, tmp_path):
    run_dir, _ = trained_cartpole
    report = tmp_path / "s.json"
    result = robolearn("sim2sim", f"bundle={run_dir / 'export'}", "episodes=2", "timestep=0.005", "integrator=rk4",
                       f"report={report}", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads(report.read_text())
    assert summary["physics"] == {"timestep": 0.005, "integrator": "rk4", "realtime": False}
    assert summary["return_comparison"]["ratio"] >= 0.9, summary


def test_eval_writes_metrics(trained_cartpole, tmp_path):
    run_dir, _ = trained_cartpole
    result = robolearn("eval", f"run={run_dir}", "episodes=8", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    progress = result.stderr.splitlines()  # piped: a line at each quarter of the steps
    assert len(progress) <= 5 and progress[-1].startswith("evaluating: 100% (250/250 steps), 8/8 episodes ended"), progress
    metrics = json.loads((run_dir / "eval.json").read_text())
    assert metrics["episodes"] == 8 and metrics["checkpoint"] == "iter_000100.pt"
    assert metrics["episode_length_mean"] == 250 and metrics["return_mean"] > 400
    assert set(metrics) >= {"termination/pole_fell", "termination/cart_out", "terminated_fraction", "return_std"}
    again = robolearn("eval", f"run={run_dir}", "episodes=4", cwd=tmp_path)  # eval replaces its own eval.json
    assert again.returncode == 0, again.stderr
    assert json.loads((run_dir / "eval.json").read_text())["episodes"] == 4


def final_state(run_dir: Path) -> dict:
    return torch.load(run_dir / "checkpoints" / "iter_000006.pt", weights_only=True)


@pytest.mark.parametrize("network", [[], ["algo.policy=gru", "algo.critic_network=lstm", "algo.rnn_hidden_size=8"],
                                     ["algo.normalizer_schedule=step"]], ids=["mlp", "recurrent", "step_normalizers"])
def test_resume_ends_with_the_same_parameters_as_an_uninterrupted_run(tmp_path, network):
    """Also for recurrent networks: the checkpoint holds where each environment's memory stands."""
    common = [*SMALL, "seed=5", "runner.save_interval=3", *network]
    full, part = tmp_path / "full", tmp_path / "part"
    assert robolearn("train", *common, "runner.max_iterations=6", f"hydra.run.dir={full}", cwd=tmp_path).returncode == 0
    first = robolearn("train", *common, "runner.max_iterations=3", f"hydra.run.dir={part}", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    resumed = robolearn("train", f"resume={part}", "runner.max_iterations=6", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr

    a, b = final_state(full), final_state(part)
    assert a["iteration"] == b["iteration"] == 6 and a["env_steps"] == b["env_steps"]
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
    for key in ("lr", "step", "exp_avg", "exp_avg_sq"):
        assert torch.equal(a["algorithm"]["optimizer"][key], b["algorithm"]["optimizer"][key]), key
    assert torch.equal(a["env"]["physics"]["physics_state"], b["env"]["physics"]["physics_state"])
    for key in ("actor_state", "critic_state") if "algo.policy=gru" in network else ():
        assert all(torch.equal(x, y) for x, y in zip(a["algorithm"][key], b["algorithm"][key], strict=True)), key
        assert any(x.abs().max() > 0 for x in a["algorithm"][key])
    timing = {"wall_time_s", "steps_per_s", "collection_s", "learning_s"}
    strip = lambda rows: [{k: v for k, v in r.items() if k not in timing} for r in rows]  # noqa: E731
    assert strip(metrics(part)) == strip(metrics(full))  # iterations 1-3, then 4-6 after the resume
    manifest = json.loads((part / "manifest.json").read_text())
    assert manifest["resumes"][0]["resumed_from_iteration"] == 3


def test_multirun_sweeps_seeds(tmp_path):
    result = robolearn("train", "--multirun", "seed=1,2", "runner.max_iterations=2", *SMALL, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    jobs = sorted((tmp_path / "runs" / "multirun").glob("*/*_cartpole"))
    assert [j.name for j in jobs] == ["0_cartpole", "1_cartpole"]
    seeds = [json.loads((j / "manifest.json").read_text())["seed"] for j in jobs]
    assert seeds == [1, 2] and all((j / "checkpoints" / "iter_000002.pt").is_file() for j in jobs)


def test_cfg_job_shows_the_task_recipe_under_the_command_line(tmp_path):
    result = robolearn("train", "task=quadruped_flat", "algo.learning_rate=3e-4", "--cfg", "job", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    cfg = yaml.safe_load(result.stdout)
    assert cfg["algo"]["learning_rate"] == 3e-4
    assert cfg["algo"]["actor_hidden_dims"] != [64, 64]  # the quadruped's own network sizes
    assert "algo" not in cfg["task"] and not (tmp_path / "runs").exists()


def test_help_lists_each_groups_options_without_the_schemas(tmp_path):
    result = robolearn("train", "--help", "task=pendulum", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    listing, config = result.stdout.split("== Config ==")
    groups = dict(line.split(": ", 1) for line in listing.splitlines() if ": " in line)
    assert groups["physics"].split(", ") == ["auto", "mjx", "mujoco", "warp"]
    assert groups["algo"] == "ppo" and "cartpole" in groups["task"].split(", ")
    assert "_schema" not in result.stdout and "name: pendulum" in config  # the config, as composed
    assert not (tmp_path / "runs").exists()


def test_hydra_help_lists_the_flags_train_takes(tmp_path):
    """Hydra's own list offers shell completion (-sc), -cp and -cn, which train refuses."""
    result = robolearn("train", "--hydra-help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    flags = result.stdout.split("== Flags ==")[1].split("== Configuration groups ==")[0]
    listed = {f for line in flags.splitlines() if " : " in line for f in line.split(" : ")[0].split()[0].split(",")}
    from robolearn.train_flags import HYDRA_FLAGS

    assert listed == set(HYDRA_FLAGS) | {"key=value"}
    assert "hydra/sweeper: basic" in result.stdout and not (tmp_path / "runs").exists()


def test_list_prints_tasks_and_backends(tmp_path):
    script = Path(sys.executable).with_name("robolearn")
    assert script.is_file(), "the console script is installed"
    result = robolearn("list", cwd=tmp_path)
    assert result.returncode == 0
    for word in ("cartpole", "pendulum", "mujoco", "auto"):
        assert word in result.stdout


def test_quadruped_trains_exports_and_runs_sim2sim_through_the_cli(tmp_path):
    run = tmp_path / "quad"
    result = robolearn("train", "task=quadruped_flat", "env.num_envs=16", "runner.max_iterations=3",
                       "runner.num_steps_per_env=8", "algo.num_mini_batches=1", f"hydra.run.dir={run}", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = metrics(run)
    assert [r["iteration"] for r in rows] == [1, 2, 3] and rows[-1]["env_steps"] == 3 * 16 * 8
    report = tmp_path / "s.json"
    result = robolearn("sim2sim", f"bundle={run / 'export'}", "episodes=1", f"report={report}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(report.read_text())
    assert summary["task"] == "quadruped_flat" and 0 < summary["episode_length_mean"] <= 1000
    for metric in ("lin_vel_error", "yaw_rate_error", "energy_per_meter"):  # next to the training evaluation's
        assert summary[metric] > 0 and summary["training_evaluation"][metric] > 0
    result = robolearn("eval", f"run={run}", "episodes=4", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics_ = json.loads((run / "eval.json").read_text())
    assert metrics_["episodes"] == 4 and 0 <= metrics_["terminated_fraction"] <= 1 and metrics_["lin_vel_error"] > 0


def test_rough_quadruped_with_sim2real_randomization_trains_exports_and_runs_sim2sim(tmp_path):
    run = tmp_path / "rough"
    small = ["task.terrain.num_levels=3", "task.terrain.num_cols=4", "task.terrain.tile_size=4.0", "task.terrain.border=1.0",
             "task.terrain.max_init_level=1"]
    result = robolearn("train", "task=quadruped_rough", "randomization=sim2real", *small, "env.num_envs=16",
                       "runner.max_iterations=2", "runner.num_steps_per_env=8", "algo.num_mini_batches=1",
                       f"hydra.run.dir={run}", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    row = metrics(run)[-1]
    assert row["iteration"] == 2
    assert "adr/push/velocity_range/group0/high" in row and "curriculum/terrain_level_mean" in row
    assert 'hfield name="terrain_0_0"' in next((run / "export").glob("*.xml")).read_text()  # the ground, in blocks
    report = tmp_path / "s.json"
    result = robolearn("sim2sim", f"bundle={run / 'export'}", "episodes=1", f"report={report}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(report.read_text())["task"] == "quadruped_rough"


def test_a_robot_no_bundle_can_carry_trains_and_says_so_at_the_start(tmp_path):
    """An unnamed tendon-driven actuator cannot be handed to a robot driver (which gets its ctrl by
    name): training says so before the first iteration, trains, keeps its checkpoints and exits 0
    without a bundle."""
    xml = (Path(__file__).parents[2] / "assets" / "cartpole.xml").read_text()
    xml = xml.replace('<motor name="slide" joint="slider"', '<motor tendon="rope"')
    xml = xml.replace("<actuator>", '<tendon><fixed name="rope"><joint joint="slider" coef="1"/></fixed></tendon><actuator>')
    (tmp_path / "rope.xml").write_text(xml)
    run_dir = tmp_path / "run"
    result = robolearn("train", f"task.asset={tmp_path / 'rope.xml'}", "task.action.actuators=[]", "~task.events.actuator_gain",
                       "runner.max_iterations=2", *SMALL[:3],
                       "runner.export_onnx=true", "runner.progress=false", f"hydra.run.dir={run_dir}", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    note = [line for line in result.stdout.splitlines() if line.startswith("note: no deploy bundle")]
    assert len(note) == 1 and "actuator 0 (tendon 'rope', gear 10) has no name" in note[0], result.stdout
    assert result.stdout.index(note[0]) < result.stdout.index("training cartpole into")  # before any iteration
    assert (run_dir / "checkpoints" / "iter_000002.pt").is_file() and not (run_dir / "export").exists()
