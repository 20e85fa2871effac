"""Hydra sweeps (`robolearn train --multirun ...`): each job leaves its result next to its run
(sweep_job.json), and the sweep ends with a summary table of every job (overrides -> objective,
status, run directory) in its folder, summary.md and summary.csv, best first.

Jobs may run in this process (Hydra's basic launcher), in subprocesses or on SLURM nodes
(submitit), so the table is built from the files the jobs wrote, not from return values. A Hydra
callback (`SweepFolder`, named in configs/train.yaml) records where the sweep writes, in the
process that launched it. The sweeper and launcher plugins are optional extras, checked here.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
from pathlib import Path

from hydra.experimental.callback import Callback

from robolearn.errors import UserError, one_line

RESULT = "sweep_job.json"

PLUGINS = {  # override value -> (module of the plugin, the extra that installs it)
    "hydra/sweeper=optuna": ("hydra_plugins.hydra_optuna_sweeper", "optuna"),
    "hydra/launcher=submitit_local": ("hydra_plugins.hydra_submitit_launcher", "submitit"),
    "hydra/launcher=submitit_slurm": ("hydra_plugins.hydra_submitit_launcher", "submitit"),
}

_launched: list[Path] = []
"""The folders of the sweeps Hydra started in this process (SweepFolder)."""


class SweepFolder(Callback):
    """Records the sweep folder when a multirun starts (in the launching process)."""

    def on_multirun_start(self, config, **kwargs) -> None:
        _launched.append(Path(str(config.hydra.sweep.dir)))


def check_plugins(overrides: list[str]) -> None:
    """One line for a sweeper or launcher whose extra is not installed (before Hydra starts)."""
    for arg in overrides:
        found = PLUGINS.get(arg.replace(" ", ""))
        if found is None:
            continue
        try:
            present = importlib.util.find_spec(found[0]) is not None
        except ModuleNotFoundError:
            present = False
        if not present:
            raise UserError(f"{arg} needs Hydra's plugin, an optional extra: pip install 'robolearn[{found[1]}]'")


def sweeper_direction(overrides: list[str]) -> list[str]:
    """The Optuna sweeper's direction and objective.direction (maximize unless overridden) are one:
    either given sets the other; both given must agree."""
    plain = [a.replace(" ", "") for a in overrides]
    if "hydra/sweeper=optuna" not in plain:
        return overrides
    ours = [a.split("=", 1)[1] for a in overrides if a.startswith("objective.direction=")]
    theirs = [a.split("=", 1)[1] for a in overrides if a.startswith("hydra.sweeper.direction=")]
    # beside the user's sweeper choice: Hydra's argument parser takes overrides only as one run of
    # words (one added after `--cfg job`, or before `--multirun`, it refused)
    at = plain.index("hydra/sweeper=optuna")
    if not theirs:
        return [*overrides[:at], f"hydra.sweeper.direction={ours[-1] if ours else 'maximize'}", *overrides[at:]]
    if not ours:
        return [*overrides[:at], f"objective.direction={theirs[-1]}", *overrides[at:]]
    if ours[-1] != theirs[-1]:
        raise UserError(f"hydra.sweeper.direction={theirs[-1]} and objective.direction={ours[-1]} disagree; "
                        f"set objective.direction only (the sweeper follows it)")  # fmt: skip
    return overrides


def write_job_result(run_dir: Path, job: int, overrides: list[str], objective, value: float | None,
                     error: BaseException | None) -> None:  # fmt: skip
    """The job's line of the summary, next to its run (atomically)."""
    if error is None:
        status = "finished" if value is not None and math.isfinite(value) else "no value"
    else:
        status = "interrupted" if type(error).__name__ in ("Interrupted", "KeyboardInterrupt") else "failed"
    row = {"job": job, "overrides": " ".join(overrides), "metric": objective.metric, "mode": objective.mode,
           "direction": objective.direction, "objective": value if value is not None and math.isfinite(value) else None,
           "status": status, "error": one_line(error)[:300] if error is not None else "",
           "run_dir": str(run_dir.resolve())}  # fmt: skip
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / (RESULT + ".tmp")
    tmp.write_text(json.dumps(row, indent=1) + "\n")
    tmp.replace(run_dir / RESULT)


def collect(sweep_dir: Path) -> list[dict]:
    """Every job's result under a sweep folder, best objective first (jobs without one last)."""
    rows = []
    for path in sorted(sweep_dir.glob(f"*/{RESULT}")):
        try:
            rows.append(json.loads(path.read_text()))
        except ValueError:
            continue  # a job writing it right now
    return _ranked(rows)


def _ranked(rows: list[dict]) -> list[dict]:
    sign = -1.0 if rows and rows[0]["direction"] == "maximize" else 1.0
    return sorted(rows, key=lambda r: (r["objective"] is None, sign * (r["objective"] or 0.0), r["job"]))


def write_summary(sweep_dir: Path, rows: list[dict] | None = None) -> tuple[Path, list[dict]] | None:
    """summary.md (a table to read) and summary.csv (to load) in the sweep folder, of `rows` (default:
    the results its jobs left, collect()); None when there are none."""
    rows = collect(sweep_dir) if rows is None else _ranked(rows)
    if not rows:
        return None
    first = rows[0]
    swept = _swept(rows)
    head = f"{first['metric']} ({first['mode']}, {first['direction']})"
    lines = [f"# Sweep {sweep_dir}", "", f"{len(rows)} jobs, best first by {head}.", "",
             "| rank | job | overrides | objective | status | run directory |", "|---:|---:|---|---:|---|---|"]  # fmt: skip
    for k, r in enumerate(rows, 1):
        value = "" if r["objective"] is None else f"{r['objective']:.6g}"
        status = r["status"] + (f": {r['error']}" if r["error"] else "")
        shown = " ".join(o for o in r["overrides"].split() if o.split("=", 1)[0] in swept) or "(none)"
        lines.append(f"| {k} | {r['job']} | {shown} | {value} | {status.replace('|', '/')} | "
                     f"{_relative(Path(r['run_dir']), sweep_dir) if r['run_dir'] else '-'} |")  # fmt: skip
    common = " ".join(o for o in first["overrides"].split() if o.split("=", 1)[0] not in swept)
    if common:
        lines += ["", f"Every job also had: {common}"]
    md = sweep_dir / "summary.md"
    md.write_text("\n".join(lines) + "\n")
    with open(sweep_dir / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(first))
        writer.writeheader()
        writer.writerows(rows)
    return md, rows


def summarize_launched() -> str | None:
    """Write the summary of every sweep this process launched; a line saying where, and how many
    jobs failed."""
    said = []
    while _launched:
        folder = _launched.pop(0)
        written = write_summary(folder) if folder.is_dir() else None
        if written is None:
            continue
        said.append(summary_line(*written))
    return "\n".join(said) or None


def summary_line(md: Path, rows: list[dict]) -> str:
    """Where the summary is, how many jobs failed, and the best job."""
    failed = sum(r["status"] in ("failed", "interrupted") for r in rows)
    best = rows[0]
    line = f"sweep summary: {md} ({len(rows)} jobs"
    line += f", {failed} failed" if failed else ""
    if best["objective"] is not None:
        swept = _swept(rows)
        shown = " ".join(o for o in best["overrides"].split() if o.split("=", 1)[0] in swept) or "the defaults"
        line += f"; best {best['metric']} = {best['objective']:.6g} with {shown}"
    return line + ")"


def _swept(rows: list[dict]) -> set[str]:
    """The override keys whose values differ between jobs (all of them for a single job)."""
    values: dict[str, set[str]] = {}
    for r in rows:
        for o in r["overrides"].split():
            key, _, value = o.partition("=")
            values.setdefault(key, set()).add(value)
    counts = {key: sum(key in [o.split("=", 1)[0] for o in r["overrides"].split()] for r in rows) for key in values}
    if len(rows) == 1:
        return set(values)
    return {key for key, seen in values.items() if len(seen) > 1 or counts[key] < len(rows)}


def _relative(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)
