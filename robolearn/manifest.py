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


def write_manifest(run_dir: Path, entry: dict) -> Path:
    """First start writes the manifest; each resume is appended to its `resumes` list."""
    path = run_dir / "manifest.json"
    if path.is_file() and entry.get("resumed_from_iteration") is not None:
        manifest = json.loads(path.read_text())
        manifest.setdefault("resumes", []).append(entry)
    else:
        manifest = entry
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(path)
    return path
