"""Sweeps: `robolearn train` returns its objective (so Hydra's Optuna sweeper can rank trials), a
failing job fails the sweep under every launcher (submitit included), and every sweep ends with a
summary table in its folder."""

import csv
import math

import pytest
import yaml

from robolearn import app, sweeps
from robolearn.compose import compose_train
from robolearn.errors import UserError

from .conftest import metrics, robolearn

SMALL = ["env.num_envs=32", "runner.num_steps_per_env=16", "algo.num_mini_batches=2", "runner.export_onnx=false",
         "runner.progress=false", "runner.video_interval=0", "logger=none"]  # fmt: skip


@pytest.mark.parametrize("mode", ["final", "best", "last10"])
def test_train_returns_the_objective_of_its_metrics(tmp_path, mode):
    cfg = compose_train(["runner.max_iterations=12", f"objective.mode={mode}", *SMALL])
    value = app.train(cfg, tmp_path / "run")
    returns = [r["mean_episode_return"] for r in metrics(tmp_path / "run")]
    expected = {"final": returns[-1], "best": max(returns), "last10": sum(returns[-10:]) / 10}[mode]
    assert value == pytest.approx(expected, rel=1e-12)


def test_a_minimized_term_and_an_evaluation_metric(tmp_path):
    cfg = compose_train(["runner.max_iterations=4", "objective.metric=episode_reward/effort", "objective.mode=best",
                         "objective.direction=minimize", *SMALL])  # fmt: skip
    assert app.train(cfg, tmp_path / "a") == min(r["episode_reward/effort"] for r in metrics(tmp_path / "a"))
    eval_length = ["runner.max_iterations=2", "objective.metric=eval/episode_length_mean", *SMALL]
    value = app.train(compose_train([*eval_length, "runner.export_onnx=true"]), tmp_path / "b")
    assert value == yaml.safe_load((tmp_path / "b" / "export" / "robot.yaml").read_text())["evaluation"][
        "episode_length_mean"]  # the export's evaluation  # fmt: skip
    value = app.train(compose_train(eval_length), tmp_path / "c")  # export off: the run evaluates for it
    assert math.isfinite(value) and 1 <= value <= 5.0 / 0.02


def test_an_unknown_objective_metric_is_one_line_before_the_run_starts(tmp_path):
    cfg = compose_train(["objective.metric=mean_episode_reward", *SMALL])
    with pytest.raises(UserError, match="objective.metric=mean_episode_reward is not a metric of this run; valid: "
                                        "iteration, .*mean_episode_return.*episode_reward/upright"):  # fmt: skip
        app.train(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()
    cfg = compose_train(["objective.metric=eval/tracking", *SMALL])
    with pytest.raises(UserError, match="valid: eval/episodes, eval/return_mean"):
        app.train(cfg, tmp_path / "run")


def test_an_optuna_sweep_ranks_its_trials(tmp_path):
    result = robolearn("train", "--multirun", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=3",
                       "hydra.sweeper.sampler.seed=1", "algo.learning_rate=tag(log,interval(1e-4,1e-2))",
                       "runner.max_iterations=3", *SMALL, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Directions: ['maximize']" in result.stderr + result.stdout  # objective.direction reached Optuna
    (sweep,) = (tmp_path / "runs" / "multirun").iterdir()
    rows = list(csv.DictReader(open(sweep / "summary.csv")))
    assert len(rows) == 3 and all(r["status"] == "finished" for r in rows)
    for row in rows:  # each trial's objective is its run's last mean return, best first
        assert float(row["objective"]) == pytest.approx(metrics(sweep / row["run_dir"])[-1]["mean_episode_return"])
    values = [float(r["objective"]) for r in rows]
    assert values == sorted(values, reverse=True)
    table = (sweep / "summary.md").read_text()
    assert "| rank | job | overrides | objective | status | run directory |" in table
    assert table.count("algo.learning_rate=") == 3 and "Every job also had: runner.max_iterations=3" in table
    assert f"sweep summary: {sweep.relative_to(tmp_path)}/summary.md (3 jobs; best mean_episode_return" in result.stdout


def test_the_optuna_direction_follows_the_objective_and_a_conflict_is_one_line(tmp_path):
    assert sweeps.sweeper_direction(["--multirun", "hydra/sweeper=optuna", "objective.direction=minimize"]) == [
        "--multirun", "hydra.sweeper.direction=minimize", "hydra/sweeper=optuna", "objective.direction=minimize"]
    assert sweeps.sweeper_direction(["hydra/sweeper=optuna", "hydra.sweeper.direction=minimize", "--cfg", "job"]) == [
        "objective.direction=minimize", "hydra/sweeper=optuna", "hydra.sweeper.direction=minimize", "--cfg", "job"]
    # beside the sweeper choice: appended after `--cfg job`, Hydra's argument parser refused it
    printed = robolearn("train", "hydra/sweeper=optuna", "--cfg", "job", cwd=tmp_path)
    assert printed.returncode == 0 and "direction: maximize" in printed.stdout, printed.stderr
    result = robolearn("train", "--multirun", "hydra/sweeper=optuna", "hydra.sweeper.direction=minimize",
                       "objective.direction=maximize", "seed=1,2", *SMALL, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2 and not (tmp_path / "runs").exists()
    assert result.stderr.strip().splitlines() == [
        "robolearn train: error: hydra.sweeper.direction=minimize and objective.direction=maximize disagree; "
        "set objective.direction only (the sweeper follows it)"]  # fmt: skip


@pytest.mark.parametrize("launcher", ["basic", "submitit_local"])
def test_a_failing_job_fails_the_sweep_and_the_summary_says_which(tmp_path, launcher):
    """A job that fails once its env is built (an episode shorter than one control step: its config
    composes, so the sweep's up-front check lets it through) fails the sweep; the other job runs."""
    chosen = [] if launcher == "basic" else [f"hydra/launcher={launcher}"]
    result = robolearn("train", "--multirun", *chosen, "task.episode_length_s=1.0,0.001", "runner.max_iterations=2",
                       *SMALL, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == (
        "robolearn train: error: task.episode_length_s=0.001 is shorter than one control step (0.02 s: the model's "
        "timestep x task.decimation); valid: >= 0.02")  # fmt: skip
    (sweep,) = (tmp_path / "runs" / "multirun").iterdir()
    rows = {r["overrides"].split()[0]: r for r in csv.DictReader(open(sweep / "summary.csv"))}
    assert rows["task.episode_length_s=1.0"]["status"] == "finished"  # the other job ran to its end
    assert rows["task.episode_length_s=0.001"]["status"] == "failed"
    assert "shorter than one control step" in rows["task.episode_length_s=0.001"]["error"]
    assert "(2 jobs, 1 failed" in result.stderr


def test_a_bad_value_in_any_job_is_refused_before_the_first_job_runs(tmp_path):
    result = robolearn("train", "--multirun", "algo.learning_rate=1e-3,-1", "runner.max_iterations=2", *SMALL, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().splitlines() == [
        "robolearn train: error: job 1 (algo.learning_rate=-1): algo.learning_rate=-1.0 is out of range; valid: "
        "0 < learning_rate <= 1; no job has run"]  # fmt: skip
    assert not (tmp_path / "runs").exists()


def test_a_sweeper_or_launcher_without_its_extra_is_one_line(monkeypatch):
    real = sweeps.importlib.util.find_spec
    monkeypatch.setattr(sweeps.importlib.util, "find_spec", lambda name: None if "submitit" in name else real(name))
    with pytest.raises(UserError, match=r"hydra/launcher=submitit_slurm needs Hydra's plugin, an optional extra: "
                                        r"pip install 'robolearn\[submitit\]'"):  # fmt: skip
        sweeps.check_plugins(["seed=1,2", "hydra/launcher=submitit_slurm"])
    sweeps.check_plugins(["hydra/sweeper=optuna"])  # installed here


@pytest.mark.parametrize(("sweep", "line"), [
    ("seed=range(3,0)", "seed=range(3,0) sweeps no value; valid: range(start, stop[, step]) with start < stop (start > "
                        "stop with a negative step), e.g. seed=range(0,3)"),
    ("seed=sort(range(3,0))", "seed=sort(range(3,0)) sweeps no value; valid: range(start, stop[, step])"),
    ("seed=choice()", "seed=choice() sweeps no value; valid: one value or more, e.g. seed=choice(1,2) or seed=1,2"),
    ("seed=range(0,3,0)", "seed=range(0,3,0): a range() step of 0 sweeps nothing; valid: range(start, stop[, step])"),
    ("seed=glob(*)", "seed=glob(*): glob() sweeps the options of a config group (task, algo, physics, randomization), "
                     "and seed is not one"),
    ("task=glob(zz*)", "task=glob(zz*) matches no task option; valid: arm_pose, arm_reach, cartpole"),
])  # fmt: skip
def test_a_sweep_of_no_value_is_one_line_not_a_sweep_of_no_job(tmp_path, sweep, line):
    """Hydra launches no job for an empty range and succeeds: nothing trained, no summary."""
    result = robolearn("train", "--multirun", "runner.max_iterations=2", sweep, f"hydra.sweep.dir={tmp_path / 'sweep'}",
                       *SMALL, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"robolearn train: error: {line}"), result.stderr
    assert not (tmp_path / "sweep").exists() and not (tmp_path / "runs").exists()


def test_multirun_between_overrides_sweeps(tmp_path):
    """`a=1 -m b=2,3`: argparse (Python 3.11) would call the overrides after -m unrecognized."""
    result = robolearn("train", "runner.max_iterations=1", "-m", "seed=1,2", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                       *SMALL, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "sweep" / "summary.csv")))
    assert sorted(r["overrides"].split()[1] for r in rows) == ["seed=1", "seed=2"]
    assert [r["status"] for r in rows] == ["finished", "finished"]


def test_a_glob_sweeps_the_options_of_a_group(tmp_path):
    """`task=glob(cart*)`: Hydra's sweep over a group's options (the check before launch expands it
    as Hydra's sweeper does; it said "ConfigLoader is not set")."""
    result = robolearn("train", "--multirun", "runner.max_iterations=1", "task=glob(cart*)",
                       f"hydra.sweep.dir={tmp_path / 'sweep'}", *SMALL, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "sweep" / "summary.csv")))
    assert [r["status"] for r in rows] == ["finished"] and "task=cartpole" in rows[0]["overrides"]
