"""The files `robolearn sim2sim` writes besides the bundle's run: report= (one JSON document, replaced
only where it is an earlier report) and log= (the control loop's step log, appended to only where it
is an earlier log, never inside a bundle). Checked before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

from robolearn.atomic_file import write_text_atomic
from robolearn.errors import UserError
from robolearn.run_dir import bundle_holding, check_writable
from robolearn_deploy.control_loop import is_step_log


def prepare_outputs(report: Path | None, log: Path | None) -> None:
    """Before anything runs: report= is a new file or an earlier sim2sim report (which it replaces),
    log= a new file or an earlier sim2sim log (which it appends to), outside any bundle; any other
    file is the user's and stays. Neither a folder, nor both one file. Their folders are
    checked here, so that a path that cannot be written fails now, not after the episodes."""
    if report is not None and log is not None and report.resolve() == log.resolve():
        raise UserError(f"report={report} and log={log} name the same file; valid: two different files (the report is one "
                        "JSON document, the log one JSON line per step)")  # fmt: skip
    outputs = [(name, path) for name, path in (("report", report), ("log", log)) if path is not None]
    for name, path in outputs:
        if path.is_dir():
            raise UserError(f"{name}={path} is a folder; valid: a file path (e.g. {name}=sim2sim.{'json' if name == 'report' else 'jsonl'})")
    if report is not None:
        refuse_in_bundle("report", report)
    if report is not None and report.exists() and not _is_report(report):
        raise UserError(f"report={report} exists and is not a sim2sim report; choose a new file (sim2sim replaces only its own reports)")
    if log is not None:
        check_log(log)
    for name, path in outputs:
        _check_folder(name, path)


def check_log(log: Path) -> None:
    """log= may be appended to: outside any bundle, and new or an earlier sim2sim log (the control
    loop's step log), never a user's notes, a checkpoint or a report."""
    refuse_in_bundle("log", log)
    if log.exists() and not is_step_log(log):
        raise UserError(f"log={log} exists and is not a sim2sim log; choose a new file (sim2sim appends only to its own "
                        "logs: one JSON object per line)")  # fmt: skip


def refuse_in_bundle(name: str, path: Path, bundle: Path | None = None) -> None:
    """report= or log= inside a bundle folder (`bundle`, or any folder above it, after symlinks,
    whose robot.yaml export wrote) is refused: a log could append to a file the bundle lists
    (breaking its sha256), and a new file makes the folder no longer what export wrote."""
    holder = bundle if bundle is not None and bundle.resolve() in path.resolve().parents else None
    holder = holder or bundle_holding(path)
    if holder is not None:
        example = "sim2sim.jsonl" if name == "log" else "sim2sim.json"
        raise UserError(f"{name}={path} is inside the bundle {holder}; valid: a file outside it (e.g. {name}={example})")


def _check_folder(name: str, path: Path) -> None:
    """The folder of report= or log= can be made and written (it is made when the file is written:
    a command that fails before leaves no folder behind)."""
    check_writable(path, name)


def _is_report(path: Path) -> bool:
    try:
        earlier = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(earlier, dict) and {"physics", "return_comparison", "episodes"} <= set(earlier)


def write_report(result: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(result, indent=2) + "\n")
