"""`robolearn runs`: the training runs under ./runs, newest first, read from what is on disk.

A run directory (run_dir.holds_run) is found at any depth up to three below the root:
runs/<task>/<time>[_<name>]/ and runs/multirun/<time>/<job>_<task>/. Each is summarized from its
files only: config.yaml (task, runner.max_iterations), metrics.jsonl (iterations done, mean
episode return), checkpoints/, export/ and manifest.json (when it started; the process that wrote
it, to tell a live run from a stopped one). A damaged file is a note under the run's row; it never
stops the listing.
"""

from __future__ import annotations

import datetime
import json
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from robolearn.checkpoint import list_checkpoints
from robolearn.cli_args import key_values, optional_path
from robolearn.errors import UserError, one_line
from robolearn.manifest import latest_start, read_manifest, trainer_pid
from robolearn.run_dir import RUNS, TIMED_FOLDER, holds_run, started_at
_DEPTH = 3


@dataclass
class RunSummary:
    path: Path
    task: str = "?"
    name: str = ""
    started: datetime.datetime | None = None
    iterations: int = 0
    """The last iteration in metrics.jsonl."""
    max_iterations: int | None = None
    best_return: float | None = None
    last_return: float | None = None
    checkpoint: int | None = None
    """The iteration of the newest checkpoint (what a resume continues from)."""
    exported: bool = False
    pid: int | None = None
    """The process that trains it, if it still runs on this machine."""
    pid_known: bool = False
    """The manifest names the process that last trained it (runs before that cannot tell)."""
    notes: list[str] = field(default_factory=list)

    @property
    def state(self) -> str:
        if self.max_iterations is not None and self.iterations >= self.max_iterations:
            return "finished, exported" if self.exported else "finished, not exported"
        if self.pid is not None:
            return f"running (pid {self.pid})"
        if self.checkpoint is None:
            return "no checkpoint" if self.pid_known else "no checkpoint (stopped or running)"
        at = f" at it {self.iterations}" + (f", checkpoint {self.checkpoint}" if self.checkpoint != self.iterations else "")
        return f"stopped{at}" if self.pid_known else f"stopped or running{at}"


def find_runs(root: Path) -> list[Path]:
    """Directories at most three levels below `root` (or `root` itself) that hold a run; each once,
    however many links lead to it (a link to `.` or to a folder above would list it again)."""
    found, pending, seen = [], [(root, 0)], set()
    while pending:
        folder, depth = pending.pop()
        try:
            real = folder.resolve()
        except OSError:  # a link loop
            continue
        if real in seen:
            continue
        seen.add(real)
        if holds_run(folder):
            found.append(folder)
            continue
        if depth < _DEPTH:
            try:
                children = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
            except OSError:
                continue
            children.sort(key=lambda p: not p.is_symlink())  # its own children are popped first, links last
            pending += [(child, depth + 1) for child in children]
    return found


def summarize(run: Path, root: Path) -> RunSummary:
    """What the files of one run say; whatever cannot be read becomes a note."""
    summary = RunSummary(run, started=started_at(run))
    match = TIMED_FOLDER.match(run.name)
    summary.name = (match.group(2) or "") if match else run.name
    for step in (_read_config, _read_metrics, _read_manifest, _read_outputs):
        try:
            step(run, summary)
        except Exception as exc:  # a permission error, a file that vanished mid-read, ...
            summary.notes.append(f"cannot read its {step.__name__[6:]}: {type(exc).__name__}: {one_line(exc)[:160]}")
    if summary.task == "?" and run.parent.parent == root and run.parent.name != "multirun":
        summary.task = run.parent.name  # runs/<task>/<time>
    return summary


def _read_config(run: Path, s: RunSummary) -> None:
    path = run / "config.yaml"
    if not path.is_file():
        s.notes.append("no config.yaml")
        return
    try:
        cfg = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
        where = f"line {mark.line + 1}: {problem}" if mark is not None and problem else one_line(exc)[:160]
        s.notes.append(f"config.yaml is unreadable ({where})")
        return
    if not isinstance(cfg, dict):
        s.notes.append("config.yaml is not a training config")
        return
    task, runner = cfg.get("task"), cfg.get("runner")
    if isinstance(task, dict) and isinstance(task.get("name"), str):
        s.task = task["name"]
    if isinstance(runner, dict) and isinstance(runner.get("max_iterations"), int):
        s.max_iterations = runner["max_iterations"]
    else:
        s.notes.append("config.yaml has no runner.max_iterations")


def _read_metrics(run: Path, s: RunSummary) -> None:
    path = run / "metrics.jsonl"
    if not path.is_file():
        return
    bad = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            try:
                row = json.loads(line)
                iteration = row["iteration"]
            except (ValueError, KeyError, TypeError):
                if line.strip():
                    bad.append(number)
                continue
            if not isinstance(iteration, int):
                bad.append(number)
                continue
            s.iterations = max(s.iterations, iteration)
            value = row.get("mean_episode_return")
            if isinstance(value, (int, float)) and math.isfinite(value):
                s.best_return = value if s.best_return is None else max(s.best_return, value)
                s.last_return = value
    if bad:
        where = f"line {bad[0]}" if len(bad) == 1 else f"{len(bad)} lines (first: line {bad[0]})"
        s.notes.append(f"metrics.jsonl: {where} not a metrics row (cut short when the run stopped?)")


def _read_manifest(run: Path, s: RunSummary) -> None:
    """Whether the process that last trained the run (its first start or its last resume) still
    runs here."""
    try:
        manifest = read_manifest(run)
    except UserError:
        s.notes.append("manifest.json is unreadable")
        return
    if manifest is None:
        return
    if isinstance(latest_start(manifest).get("pid"), int):
        s.pid_known = True
        s.pid = trainer_pid(manifest)


def _read_outputs(run: Path, s: RunSummary) -> None:
    """The newest checkpoint and the bundle, each looked at without loading it: a checkpoint that is
    not a whole zip file (torch's format; cut short, or empty), a finished run without a
    checkpoint, a bundle missing a file its robot.yaml lists, and no metrics.jsonl are notes."""
    checkpoints = list_checkpoints(run / "checkpoints")
    if checkpoints:
        s.checkpoint = int(checkpoints[-1].stem.split("_")[1])
        if not zipfile.is_zipfile(checkpoints[-1]):
            s.notes.append(f"{checkpoints[-1].relative_to(run)} is damaged (not a whole checkpoint file)")
        if not (run / "metrics.jsonl").is_file():
            s.notes.append("no metrics.jsonl")
    elif s.max_iterations is not None and s.iterations >= s.max_iterations:  # a finished run saves its last
        s.notes.append("no checkpoint in checkpoints/: it cannot be resumed, evaluated or exported")
    s.exported = (run / "export" / "robot.yaml").is_file()
    if s.exported:
        missing, iteration = _read_bundle(run / "export")
        if missing:
            s.exported = False
            s.notes.append(f"export/ lacks {missing} (its robot.yaml lists it): export again")
        elif iteration is not None and s.checkpoint is not None and iteration < s.checkpoint:
            s.notes.append(f"export/ holds the policy of iteration {iteration}, the newest checkpoint is of iteration "
                           f"{s.checkpoint}: export again to deploy the newest")  # fmt: skip


def _read_bundle(bundle: Path) -> tuple[str | None, int | None]:
    """The first file a bundle's robot.yaml lists that is not there (None: all are, or it lists none),
    and the training iteration of the policy it holds (None: not recorded, as before 2026-11-29)."""
    try:
        meta = yaml.safe_load((bundle / "robot.yaml").read_text())
        files = meta.get("files") or {}
    except (OSError, yaml.YAMLError, AttributeError):
        return "a readable robot.yaml", None
    trained = meta.get("trained_to")
    iteration = trained.get("iteration") if isinstance(trained, dict) else None
    missing = next((name for name in files if not (bundle / name).is_file()), None)
    return missing, iteration if isinstance(iteration, int) else None


def list_runs(root: Path, task: str | None = None) -> list[RunSummary]:
    """Every run under `root` (of `task` only, if given), newest first."""
    if root.exists() and not root.is_dir():
        raise UserError(f"root={root} is a file, not a folder of runs")
    runs = [summarize(run, root) for run in find_runs(root)] if root.is_dir() else []
    if task is not None:
        runs = [r for r in runs if r.task == task]
    return sorted(runs, key=lambda r: (r.started, str(r.path)), reverse=True)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def format_runs(runs: list[RunSummary]) -> str:
    """One aligned row per run, each note on its own line below."""
    header = ("started", "task", "name", "iterations", "best return", "last", "state", "path")
    rows = [
        (r.started.strftime("%Y-%m-%d %H:%M:%S"), r.task, r.name or "-",
         f"{r.iterations}/{'?' if r.max_iterations is None else r.max_iterations}",
         _number(r.best_return), _number(r.last_return), r.state, _relative(r.path))
        for r in runs
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for k, row in enumerate([header, *rows]):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1])
        if k:
            lines += [f"  note: {note}" for note in runs[k - 1].notes]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def no_runs_line(root: Path, task: str | None) -> str:
    what = f"no {task} runs" if task else "no runs"
    start = f"robolearn train task={task}" if task else "robolearn train task=<name> (robolearn list shows the tasks)"
    return f"{what} under {root}/ (relative to {Path.cwd()}); start one with: {start}\n"


def runs_verb(args: list[str]) -> int:
    """`robolearn runs [task=NAME] [root=DIR]`: the table, or the one line saying there are none."""
    opts = key_values(args, {"task": None, "root": None}, "runs")
    root = optional_path(opts["root"]) or RUNS
    if opts["root"] and not root.exists():  # a typo is not "no runs" (the default folder may not exist yet)
        raise UserError(f"root={opts['root']} does not exist; valid: a folder of runs (robolearn train writes them "
                        f"under {RUNS}/ unless hydra.run.dir says otherwise)")  # fmt: skip
    runs = list_runs(root, opts["task"] or None)
    if not runs and opts["task"]:
        from robolearn.registry import discover_tasks

        tasks = discover_tasks()
        if opts["task"] not in tasks:  # no run of it here, and no such task to start one with
            raise UserError(f"no runs of task '{opts['task']}' under {root}/, and no such task is installed; valid: "
                            f"{', '.join(sorted(tasks))}")  # fmt: skip
    print(format_runs(runs) if runs else no_runs_line(root, opts["task"] or None), end="")
    return 0
