"""manifest.json: how a run was made (command, seed, code version, package versions, device) and
which process trains it (host, pid)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from robolearn.atomic_file import write_text_atomic

_PACKAGES = ("robolearn", "torch", "numpy", "mujoco", "mujoco-core", "hydra-core", "omegaconf", "onnx", "onnxruntime")


def _git(source: Path) -> dict:
    def run(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(source), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = run("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": bool(run("status", "--porcelain", "--untracked-files=no"))}


def _versions() -> dict:
    found = {}
    for name in _PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def describe_run(seed: int, task: str, backend: str, device: str, resumed_from: int | None, ranks: int = 1,
                 checkpoint: str | None = None) -> dict:  # fmt: skip
    import robolearn

    return {
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seed": seed,
        "task": task,
        "physics_backend": backend,
        "device": device,  # rank 0's; under torchrun each rank has its own
        "ranks": ranks,
        "resumed_from_iteration": resumed_from,
        "resumed_from_checkpoint": checkpoint,  # another run's (PBT's exploit), or None: this run's own
        "git": _git(Path(robolearn.__file__).resolve().parent),
        "versions": _versions(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": platform.node(),
        "pid": os.getpid(),  # with host: `robolearn runs` tells a run still training from a stopped one
    }


def read_manifest(run_dir: Path) -> dict | None:
    """The run's manifest.json (None if it has none); one that does not parse is a UserError."""
    from robolearn.errors import UserError

    path = run_dir / "manifest.json"
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text())
        if not isinstance(manifest, dict):
            raise ValueError("not a JSON object")
        resumes = manifest.get("resumes", [])
        if not isinstance(resumes, list) or not all(isinstance(entry, dict) for entry in resumes):
            raise ValueError("its 'resumes' is not a list of objects")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{path} is not a readable run manifest ({' '.join(str(exc).split())}); it records how the run "
                        "was made: move it aside, then try again") from None  # fmt: skip
    return manifest


def latest_start(manifest: dict) -> dict:
    """The entry of the process that last trained the run: its first start or its last resume."""
    resumes = manifest.get("resumes")
    latest = resumes[-1] if isinstance(resumes, list) and resumes else manifest
    return latest if isinstance(latest, dict) else {}


def trainer_pid(manifest: dict) -> int | None:
    """The id of the process on this host that is training the run now, None if none is."""
    latest = latest_start(manifest)
    pid = latest.get("pid")
    if isinstance(pid, int) and latest.get("host") == platform.node() and alive(pid):
        return pid
    return None


def alive(pid: int) -> bool:
    """A process with this id runs and, where /proc tells, it is a robolearn one (not a new
    process that got the id of a run that stopped)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    cmdline = Path(f"/proc/{pid}/cmdline")
    try:
        return b"robolearn" in cmdline.read_bytes()
    except OSError:
        return not cmdline.parent.parent.is_dir()  # no /proc (macOS): trust the id


def refuse_if_training(run_dir: Path, what: str) -> None:
    """One line if a process on this host is training `run_dir` now (`what`: the refused action)."""
    from robolearn.errors import UserError

    manifest = read_manifest(run_dir)
    pid = trainer_pid(manifest) if manifest else None
    if pid is not None:
        raise UserError(busy_line(run_dir, pid, what))


def busy_line(run_dir: Path, pid: int, what: str) -> str:
    """The one line that refuses `what` because process `pid` trains `run_dir` now."""
    return (f"{run_dir} is being trained right now by process {pid} on this host: {what} would mix two trainings in "
            f"one run; wait for it or stop it first (Ctrl-C, or kill -INT {pid}: it saves a checkpoint)")


def write_manifest(run_dir: Path, entry: dict) -> Path:
    """First start writes the manifest; each resume is appended to its `resumes` list."""
    path = run_dir / "manifest.json"
    earlier = read_manifest(run_dir) if entry.get("resumed_from_iteration") is not None else None
    if earlier is not None:
        manifest = earlier
        manifest.setdefault("resumes", []).append(entry)
    else:
        manifest = entry
    write_text_atomic(path, json.dumps(manifest, indent=2) + "\n")
    return path
