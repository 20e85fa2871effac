"""Where a run or a bundle may be written: nothing a user already has is overwritten unasked.

- A training run goes into a directory that does not exist, is empty, or holds only what
  Hydra wrote at launch. One that already holds a run is refused unless `resume=` names it, or
  `overwrite=true` moves it aside first (`<dir>.replaced-<time>`; nothing is deleted).
- An export goes to a new path, an empty directory or an existing bundle (replaced as a whole):
  a directory whose robot.yaml is a bundle's and which holds only the files that robot.yaml lists
  (and engines built on the robot from them). Any other file or directory is refused: a robot
  description folder with its own robot.yaml is not a bundle.
- A file where a directory should be, or a place that cannot be written, is one line, not a
  traceback.
- While a command line trains or resumes a run, its directory holds train.lock (the process id and
  host; a lock of another host, on a shared filesystem, is never taken over):
  a second training or resume into it is refused, even when both start at the same moment.
"""

from __future__ import annotations

import atexit
import datetime
import os
import platform
import re
import shutil
import tempfile
import time
from pathlib import Path

import yaml

from robolearn.errors import UserError
from robolearn.interrupts import signals_deferred
from robolearn.manifest import alive, busy_line, read_manifest, refuse_if_training

RUN_CONTENTS = ("config.yaml", "manifest.json", "metrics.jsonl", "checkpoints", "export", "tensorboard")
"""What a training run writes; any of it in a directory means a run lives there."""
LOCK = "train.lock"
"""Held by the process that trains or resumes a run from the command line ("<pid> <host>"), removed at its exit."""
HYDRA_LAUNCH = (".hydra", "train.log", LOCK)
"""What Hydra writes into the run directory at launch, before the run's own files (and the lock)."""


def check_writable(path: Path, what: str, file: bool = False) -> None:
    """Fail in one line if `path` cannot be created or written (a file on the way, no permission;
    with `file`, a folder where the file goes)."""
    if file and path.is_dir():
        raise UserError(f"{path} is a folder, where {what} writes a file; move it aside, then try again")
    holder = bundle_holding(path)
    if holder is not None:
        raise UserError(f"{what}={path} is inside the bundle {holder}; valid: a path outside it (a bundle holds only the "
                        "files its robot.yaml lists: export would no longer replace it)")  # fmt: skip
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe != path and not probe.is_dir():
        raise UserError(f"{what}={path}: {probe} is a file, not a directory")
    if not os.access(probe, os.W_OK | os.X_OK if probe.is_dir() else os.W_OK):  # a file to replace needs no X
        raise UserError(f"{what}={path}: {probe} is not writable (permission denied)")
    if probe.is_dir() and not can_create_in(probe):
        raise UserError(f"{what}={path}: no file can be created in {probe} (permission denied or a read-only file system)")


def can_create_in(folder: Path) -> bool:
    """Whether a file can be made in `folder`, tried: os.access says yes to root on a read-only or
    special file system (/sys, a read-only mount), where the write would fail after the work."""
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".robolearn-write-check-")
    except OSError:
        return False
    os.close(fd)
    os.unlink(name)
    return True


_held: list[Path] = []
"""The run locks this process holds (release_run_locks, or at exit)."""


def release_run_locks() -> None:
    """Remove the locks this process took (the train verb does when it returns or fails)."""
    while _held:
        try:
            _held.pop().unlink(missing_ok=True)
        except OSError:
            pass


atexit.register(release_run_locks)


def lock_run_dir(path: Path, what: str) -> None:
    """Hold `path` for this process until it exits (train.lock, with its pid): a second training or
    resume started into it meanwhile is refused in one line, even when both start at once (the
    manifest that also tells is written only once training starts). A lock left by a process that
    no longer runs is taken over, by one process only where several find it at once."""
    path.mkdir(parents=True, exist_ok=True)
    lock = path / LOCK
    here = platform.node()
    for _ in range(3):
        with signals_deferred():  # made, written and noted as ours together: a signal between left a stale lock
            if _take(lock, here):
                return
        owner = _lock_owner(lock, here)
        if owner is None:  # released meanwhile
            continue
        pid, host, seen = owner
        if pid and host != here:  # a shared filesystem: that process cannot be checked from here
            raise UserError(f"{path} is held by process {pid} on host {host} ({lock}): {what} would mix two "
                            f"trainings in one run; if that process has ended, delete {lock}")  # fmt: skip
        if pid and alive(pid):
            raise UserError(busy_line(path, pid, what))
        with signals_deferred():
            _remove_stale(lock, seen)  # its process is gone
    raise UserError(f"{path}: cannot take {LOCK} (another process keeps making it); try again")


def _take(lock: Path, host: str) -> bool:
    """Make `lock` holding this process's id and host, and note it as held; False if it exists."""
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    _held.append(lock)
    with os.fdopen(fd, "w") as f:
        f.write(f"{os.getpid()} {host}\n")
    return True


def _lock_owner(lock: Path, here: str) -> tuple[int, str, tuple] | None:
    """The process id and host a lock names (0 if none can be read: a stale lock) and what tells
    that very file (_identity); None if it is gone. An empty lock is one another process has just
    made and is about to write its id into: read again for a second before taking it for stale."""
    for _ in range(50):
        seen = _identity(lock)
        if seen is None:
            return None
        if seen[-1]:
            break
        time.sleep(0.02)
    pid, _, host = seen[-1].strip().partition(" ")
    try:
        return int(pid or 0), host or here, seen  # a lock of an older robolearn holds the pid alone
    except ValueError:
        return 0, here, seen


def _identity(lock: Path) -> tuple | None:
    """(inode, modification time, text) of the file at `lock`, None if there is none: a lock made
    anew differs in one of them, even where its inode is the one a removed lock had."""
    try:
        stat = lock.stat()
        return stat.st_ino, stat.st_mtime_ns, lock.read_text()
    except FileNotFoundError:
        return None
    except OSError:  # unreadable: a stale lock to take over
        return (0, 0, "")


def _remove_stale(lock: Path, seen: tuple) -> None:
    """Remove `lock` if it is still the stale one read as `seen`. Another process that found the same
    stale lock may have removed it and made its own meanwhile (a plain unlink here took that one
    away, and both trained into the run): the file is moved aside first, and put back if it is not
    the stale one."""
    aside = lock.with_name(f".{LOCK}.stale-{os.getpid()}")
    try:
        os.rename(lock, aside)
    except FileNotFoundError:
        return
    if _identity(aside) != seen:
        try:
            os.link(aside, lock)  # another process's lock, back in place
        except FileExistsError:  # a third one made a lock meanwhile: that one stands
            pass
    aside.unlink(missing_ok=True)


def discard_launch(path: Path, keep_dir: bool) -> None:
    """After a run that stopped before it wrote anything of its own (a mistake found while building
    its env): remove what Hydra and the lock put there at launch and, unless `keep_dir` (a folder
    the user had), the folder, so that a mistake leaves no empty run behind. A folder holding
    anything else is left as it is."""
    if not path.is_dir() or any(p.name not in HYDRA_LAUNCH for p in path.iterdir()):
        return
    release_run_locks()
    shutil.rmtree(path / ".hydra", ignore_errors=True)
    (path / "train.log").unlink(missing_ok=True)
    if not keep_dir:
        try:
            path.rmdir()
        except OSError:  # something appeared meanwhile: leave it
            pass


def check_run_writable(run_dir: Path, what: str) -> None:
    """Fail in one line, before any work, if the run directory or a folder in it that `what` (e.g.
    resume=...) writes to is read-only."""
    for folder in (run_dir, *(run_dir / name for name in ("checkpoints", "tensorboard", "export", "videos"))):
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            raise UserError(f"{what}: {folder} is not writable (permission denied)")


def holds_run(path: Path) -> list[str]:
    """The names in `path` that a training run writes (empty if none, or if `path` is not a dir)."""
    if not path.is_dir():
        return []
    return sorted(name for name in RUN_CONTENTS if (path / name).exists())


def refuse_existing_run(path: Path) -> None:
    """One line when `path` already holds a run and nothing asked to continue or replace it."""
    found = holds_run(path)
    if found and not _has_checkpoint(path):
        raise UserError(f"{path} already holds a run that has no checkpoint to continue from ({', '.join(found)}); "
                        "add overwrite=true to move it aside and start anew")  # fmt: skip
    if found:
        raise UserError(f"{path} already holds a run ({', '.join(found)}); continue it with resume={path}")


def _has_checkpoint(path: Path) -> bool:
    return any((path / "checkpoints").glob("iter_*.pt"))


def claim_run_dir(path: Path, overwrite: bool = False) -> Path | None:
    """Check that a new run may be written into `path`. With `overwrite`, an existing run there is
    moved aside first; returns where it went (None if nothing was moved)."""
    if path.exists() and not path.is_dir():
        raise UserError(f"hydra.run.dir={path} is a file; choose a directory for the run")
    check_writable(path, "hydra.run.dir")
    found = holds_run(path)
    if not found:
        others = sorted(p.name for p in path.iterdir() if p.name not in HYDRA_LAUNCH) if path.is_dir() else []
        if others:
            raise UserError(f"hydra.run.dir={path} holds files that are not a run's ({', '.join(others[:3])}"
                            f"{', ...' if len(others) > 3 else ''}); choose a new or empty directory for the run")  # fmt: skip
        return None
    if not overwrite:
        if not _has_checkpoint(path):  # a run that stopped before its first checkpoint
            raise UserError(f"hydra.run.dir={path} already holds a run that has no checkpoint to continue from "
                            f"({', '.join(found)}); add overwrite=true to move it aside and start anew, or choose "
                            "another directory")  # fmt: skip
        raise UserError(
            f"hydra.run.dir={path} already holds a run ({', '.join(found)}); continue it with resume={path}, "
            f"choose another directory, or add overwrite=true to move the old run aside"
        )
    refuse_if_training(path, "overwrite=true")
    aside = _free_name(path, "replaced-" + time.strftime("%Y%m%d-%H%M%S"))
    path.rename(aside)
    return aside


_LOCAL_ENGINE = re.compile(r"policy\.[A-Za-z0-9]+\.local\.engine(\.yaml)?")
"""Engines built on the robot from a bundle's ONNX, and their sidecars (robolearn_deploy.tensorrt)."""


def bundle_meta(folder: Path) -> dict | None:
    """The robot.yaml of `folder` where it is a robolearn bundle's (export or import wrote it: a
    bundle_format and the files it lists), else None (none, or a robot project's own robot.yaml)."""
    try:
        meta = yaml.safe_load((folder / "robot.yaml").read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    if not isinstance(meta, dict) or "bundle_format" not in meta or not isinstance(meta.get("files"), dict):
        return None
    return meta


def bundle_holding(path: Path) -> Path | None:
    """The bundle folder `path` lies inside (after `..` and links), None where it lies in none."""
    return next((folder for folder in path.resolve().parents if bundle_meta(folder) is not None), None)


def _not_a_bundle(out: Path) -> str | None:
    """Why the directory `out` is not a bundle export may replace (None: it is one)."""
    meta = bundle_meta(out)
    if meta is None:
        return "its robot.yaml is not a robolearn bundle's" if (out / "robot.yaml").exists() else "no robot.yaml"
    listed = {"robot.yaml", *map(str, meta["files"])}
    other = [rel for rel in (p.relative_to(out).as_posix() for p in sorted(out.rglob("*")) if not p.is_dir())
             if rel not in listed and not _LOCAL_ENGINE.fullmatch(rel)]  # fmt: skip
    if other:
        return f"it holds files its robot.yaml does not list: {', '.join(other[:3])}{', ...' if len(other) > 3 else ''}"
    return None


def check_export_target(out: Path, task: str | None = None) -> None:
    """Refuse an export path that is not new, an empty directory or a robolearn bundle (of `task`,
    where given: a bundle of another task is another policy, not an older one of this)."""
    if out.is_file() or out.is_symlink() and not out.is_dir():
        raise UserError(f"out={out} is an existing file; choose a new path (or an existing bundle to replace)")
    inside = next((folder for folder in out.resolve().parents if folder.name == "checkpoints"
                   and (folder.parent / "config.yaml").is_file()), None)  # fmt: skip
    if inside is not None:  # a bundle named iter_000250.pt there would stop the run when it saves that checkpoint
        raise UserError(f"out={out} is inside the checkpoints/ folder of the run {inside.parent}, which train, eval, "
                        f"export and resume read checkpoints from; choose a path outside it, e.g. {inside.parent / 'export'}")  # fmt: skip
    why = _not_a_bundle(out) if out.is_dir() and any(out.iterdir()) else None
    if why:
        raise UserError(f"out={out} is a directory that is not a robolearn bundle ({why}); choose a new path "
                        "(or an existing bundle to replace)")  # fmt: skip
    held = (bundle_meta(out) or {}).get("task") if task is not None else None
    if held is not None and held != task:
        raise UserError(f"out={out} holds a bundle of task '{held}', not of {task}; choose a new path (a bundle is "
                        "replaced only by one of its own task)")  # fmt: skip
    check_writable(out, "out")
    if out.is_dir() and not os.access(out, os.W_OK | os.X_OK):
        raise UserError(f"out={out} is not writable (permission denied)")


def _free_name(path: Path, suffix: str) -> Path:
    candidate = path.with_name(f"{path.name}.{suffix}")
    n = 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.{suffix}-{n}")
    return candidate


RUNS = Path("runs")
"""Where `robolearn train` puts runs by default (hydra.run.dir in configs/train.yaml)."""


TIMED_FOLDER = re.compile(r"^(\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2})(?:_\d{6})?(?:_(.+))?$")
"""A run folder's name as train gives it: its start time (local), microseconds, then the run_name if
one was given (a folder moved aside by overwrite=true keeps its time: `<name>.replaced-<time>`)."""


def started_at(run: Path) -> datetime.datetime:
    """When a run started: the time its folder is named with (runs/<task>/<time>[_<name>], or the
    sweep's folder of multirun/<time>/<job>_<task>), else manifest.json's start (a folder named
    with hydra.run.dir), else the folder's modification time."""
    match = TIMED_FOLDER.match(run.name) or TIMED_FOLDER.match(run.parent.name)
    if match:
        return datetime.datetime.strptime(match.group(1), "%Y-%m-%d_%H-%M-%S")
    try:
        started = (read_manifest(run) or {}).get("started")
        if isinstance(started, str):
            return datetime.datetime.fromisoformat(started).astimezone().replace(tzinfo=None)
    except (UserError, ValueError, OSError):
        pass
    try:
        return datetime.datetime.fromtimestamp(run.stat().st_mtime)
    except OSError:
        return datetime.datetime.min


def resolve_run(value: str, what: str = "run") -> Path:
    """A run directory as given, or `latest` / `<task>/latest` (also written runs/<task>/latest): the
    newest run under ./runs (by its start time, `started_at`, as `robolearn runs` orders them) that
    holds a config.yaml; a trailing / changes nothing."""
    if value.rstrip("/") and value.rstrip("/") != value:  # `cartpole/latest/`, as a shell completes it
        value = value.rstrip("/")
    if value != "latest" and not value.endswith("/latest"):
        return Path(value).expanduser()
    parts = Path(value[: -len("latest")].strip("/")).parts  # Path drops a leading ./
    if parts[:1] == (RUNS.name,) and not (RUNS / Path(*parts)).is_dir():  # runs/cartpole/latest: the path from here
        parts = parts[1:]
    task = "/".join(parts)
    base = RUNS / task if task else RUNS
    pattern = "*/config.yaml" if task else "*/*/config.yaml"
    found = sorted((p.parent for p in base.glob(pattern) if p.parent.parent.name != "multirun"),
                   key=lambda p: (started_at(p), str(p)))  # fmt: skip
    if not found:
        where = f"{base}/<time>" if task else f"{RUNS}/<task>/<time>"
        raise UserError(f"{what}={value}: no run in {where} (relative to {Path.cwd()}); give the run directory instead")
    return found[-1]
