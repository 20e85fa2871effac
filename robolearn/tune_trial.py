"""One Ray Tune trial of `robolearn tune` (tune.py): an ordinary robolearn run in its own run
directory, reporting every iteration to Tune and handing Tune its checkpoints.

Every iteration reports `objective` (objective.metric's value this iteration: what ASHA and PBT
compare) and `objective_run` (the run's objective so far, by objective.mode: what the summary
ranks by). An iteration that writes a robolearn checkpoint reports it too (the report waits for
the checkpoint): PBT's exploit restarts a lagging trial from a leader's checkpoint (weights,
optimizer, normalizers, env state), with the leader's hyperparameters perturbed (explore), and the
trial continues in its own run directory with fresh random streams (app.train's start_from). Its
own checkpoints from that point on are moved aside first, not overwritten.

A trial also writes a checkpoint at each of ASHA's rungs (the only iterations where ASHA stops a
trial), so a trial ASHA stops keeps its last iteration. When the search stops (Ctrl-C: tune.py
writes STOP_FILE into its folder), a running trial stops at its next iteration boundary with a
checkpoint, as a signal stops `robolearn train`, reports it and ends; one not yet started ends
without training.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

from robolearn import checkpoint

CHECKPOINT_FILE = "checkpoint.pt"
STOP_FILE = "stopping"
"""In the search's folder while the search stops: each trial ends at its next iteration boundary."""
SOURCE_FILE = "run_dir.txt"
"""Next to the checkpoint in Tune's copy: the run it came from (a trial restored from its own
checkpoint resumes its run; from another trial's, PBT's exploit, it continues from that one)."""


def format_value(value) -> str:
    """A sampled value as a Hydra override value."""
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(format_value(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def trial_overrides(base: list[str], config: dict, index: int, cpus: float) -> list[str]:
    """The trial's training overrides: the fixed ones, the sampled values, a seed of its own (unless
    seed is swept or given), no progress line, and its CPU share for native MuJoCo."""
    keys = {o.split("=", 1)[0] for o in base} | set(config)
    extra = []
    if "seed" not in keys:
        extra.append(f"seed={index}")
    if "runner.progress" not in keys:
        extra.append("runner.progress=false")
    if "physics.num_threads" not in keys:
        extra.append(f"physics.num_threads={max(1, int(cpus))}")
    return [*base, *(f"{k}={format_value(v)}" for k, v in config.items()), *extra]


class Reporter:
    """app.RunObserver: every metrics row to Tune; a row whose iteration wrote a checkpoint goes with it."""

    def __init__(self, metric: str, run_dir: Path, index: int, stop_file: Path | None = None, rungs: tuple[int, ...] = ()):
        self.metric, self.run_dir, self.index = metric, run_dir, index
        self.stop_file, self.rungs = stop_file, frozenset(rungs)
        self.pending: dict | None = None
        self.sent = 0

    def stop_requested(self) -> bool:
        return self.stop_file is not None and self.stop_file.exists()

    def save_at(self, iteration: int) -> bool:
        return iteration in self.rungs

    def row(self, row: dict, objective: float) -> None:
        self.flush()
        value = row.get(self.metric)
        self.pending = {"objective": float(value) if value is not None else math.nan,
                        "objective_run": objective, "iteration": row["iteration"],
                        "env_steps": row["env_steps"], "run_dir": str(self.run_dir), "trial_index": self.index}  # fmt: skip

    def last(self, objective: float) -> None:
        """A trial restored at its last iteration trains no more: report where its run stands (else
        Tune would keep the result PBT copied from the trial it exploited)."""
        from robolearn.app import read_metrics

        rows = read_metrics(self.run_dir / "metrics.jsonl")
        if not self.sent and rows:
            self.row(rows[-1], objective)
            self.flush()

    def checkpoint(self, path: Path) -> None:
        from ray import tune

        if self.pending is None:
            return
        with tempfile.TemporaryDirectory() as folder:
            shutil.copy2(path, Path(folder) / CHECKPOINT_FILE)
            (Path(folder) / SOURCE_FILE).write_text(str(self.run_dir))
            metrics, self.pending = self.pending, None
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))
            self.sent += 1

    def flush(self) -> None:
        from ray import tune

        if self.pending is not None:
            metrics, self.pending = self.pending, None
            tune.report(metrics)
            self.sent += 1


def adopt(run_dir: Path, donor: Path) -> None:
    """Before the trial continues from another trial's checkpoint: its own checkpoints from that
    iteration on and its metrics go into checkpoints/replaced_<time>/ (kept, not overwritten), and
    the donor's checkpoint becomes its own, so that the run directory's latest checkpoint is what
    it continues from (resume, export and play see it)."""
    iteration = int(checkpoint.load(donor)["iteration"])
    folder = run_dir / "checkpoints"
    later = [p for p in checkpoint.list_checkpoints(folder) if int(p.stem.split("_")[1]) >= iteration]
    metrics = run_dir / "metrics.jsonl"
    if later or metrics.is_file():
        aside = folder / f"replaced_{time.strftime('%Y%m%d-%H%M%S')}_{time.monotonic_ns() % 10**6}"
        aside.mkdir(parents=True)
        for path in later:
            path.rename(aside / path.name)
        for kept in (metrics, run_dir / "config.yaml"):  # what trained the checkpoints set aside
            if kept.is_file():
                shutil.copy2(kept, aside / kept.name)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy2(donor, checkpoint.checkpoint_path(folder, iteration))
    source = donor.with_name(SOURCE_FILE)
    if source.is_file():
        (folder / f"iter_{iteration:06d}.adopted_from.txt").write_text(source.read_text() + "\n")


def run_trial(config: dict, base: list[str], folder: str, cpus: float, rungs: tuple[int, ...] = ()) -> None:
    """Ray Tune's function trainable: compose the trial's config, train into <folder>/<trial name>
    (from a checkpoint when Tune restores the trial); `rungs`: ASHA's, where it also saves."""
    from ray import tune

    from robolearn import app
    from robolearn.compose import compose_train
    from robolearn.interrupts import Interrupted

    context = tune.get_context()
    index = int(context.get_trial_id().rsplit("_", 1)[-1])
    stopping, donor = (Path(folder) / STOP_FILE).exists(), tune.get_checkpoint()
    if stopping and donor is None:  # started while the search stops: trains nothing, listed as not started
        _report_untrained(index, not_started=True)
        return
    cfg = compose_train(trial_overrides(base, config, index, cpus))
    run_dir = Path(folder) / context.get_trial_name()
    reporter = Reporter(cfg.objective.metric, run_dir, index, Path(folder) / STOP_FILE, rungs)
    if stopping:  # a paused trial resumed (PBT) while the search stops: where its run stands
        reporter.last(run_objective(cfg, run_dir))
        return
    with donor.as_directory() if donor is not None else nullcontext(None) as received:
        start_from = None
        if received is not None and (Path(received) / SOURCE_FILE).read_text() == str(run_dir):
            if int(checkpoint.load(Path(received) / CHECKPOINT_FILE)["iteration"]) >= cfg.runner.max_iterations:
                reporter.last(run_objective(cfg, run_dir))  # paused after its last iteration: nothing to train
                return
            cfg.resume = str(run_dir)  # paused and restored (synchronous PBT): an ordinary, exact resume
        elif received is not None:
            start_from = Path(received) / CHECKPOINT_FILE
            adopt(run_dir, start_from)
        try:
            value = app.train(cfg, run_dir, observer=reporter, start_from=start_from)
        except Interrupted as stopped:
            if not reporter.stop_requested():
                raise
            if stopped.checkpoint is not None:  # the search stopped: its last iteration goes with its checkpoint
                reporter.checkpoint(stopped.checkpoint)
            reporter.flush()
            if not reporter.sent:  # stopped before its first iteration: listed as stopped at iteration 0, with its run
                _report_untrained(index, run_dir=str(run_dir))
            return
    reporter.flush()
    reporter.last(value)


def _report_untrained(index: int, **extra) -> None:
    """Tune's one result of a trial that trained no iteration (the search stopped first)."""
    from ray import tune

    tune.report({"objective": math.nan, "objective_run": math.nan, "iteration": 0, "trial_index": index, **extra})


def run_objective(cfg, run_dir: Path) -> float:
    """The objective of a run that has trained all its iterations, from its metrics (app.train's value)."""
    from robolearn.app import read_metrics
    from robolearn.objective import Objective

    objective = Objective(cfg.objective)
    for row in read_metrics(run_dir / "metrics.jsonl"):
        objective.see(row)
    return objective.value()
