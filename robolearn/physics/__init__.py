"""Physics backends behind one contract (base.PhysicsBackend), chosen by name.

`physics=auto` picks the fastest backend installed for the device: MuJoCo Warp on CUDA, then MJX
on CUDA, then native MuJoCo on CPU threads. Backends not written yet are simply absent here.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import mujoco
import torch

from robolearn.errors import UserError, one_line
from robolearn.model_files import loaded_files
from robolearn.model_numbers import refuse_non_finite_model, refuse_non_finite_text
from robolearn.physics.base import RANDOMIZABLE_FIELDS, PhysicsBackend, solver_sensors
from robolearn.physics.physics_copy import CopyMaker


@dataclass(frozen=True)
class BackendInfo:
    name: str
    summary: str
    available: Callable[[torch.device], str | None]
    """Returns None when usable on the device, else the reason it is not."""
    build: Callable[..., PhysicsBackend]
    native: str = "cpu"
    """Where its state lives: 'cpu' or 'cuda'. device=auto puts the learner there too."""


def _importable(*modules: str, extra: str) -> Callable[[torch.device], str | None]:
    def check(device: torch.device) -> str | None:
        for module in modules:
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed (pip install robolearn[{extra}])"
        return None

    return check


def _build_mujoco(model, num_envs, device, cfg, physics_copy) -> PhysicsBackend:
    from robolearn.physics.mujoco_cpu import MujocoBackend

    return MujocoBackend(model, num_envs, device, num_threads=cfg.get("num_threads", 0), physics_copy=physics_copy,
                         reset_sensors=cfg.get("reset_sensors", "exact"))


# Warp and MJX hold one model for all worlds (per-world fields are batched arrays): no copies.
def _build_warp(model, num_envs, device, cfg, physics_copy) -> PhysicsBackend:
    from robolearn.physics.warp_backend import WarpBackend

    return WarpBackend(model, num_envs, device, nconmax=cfg.get("nconmax", 0), njmax=cfg.get("njmax", 0),
                       deterministic=bool(cfg.get("deterministic", False)),
                       reset_sensors=cfg.get("reset_sensors", "exact"))  # fmt: skip


def _build_mjx(model, num_envs, device, cfg, physics_copy) -> PhysicsBackend:
    from robolearn.physics.mjx_backend import MjxBackend

    return MjxBackend(model, num_envs, device, reset_sensors=cfg.get("reset_sensors", "exact"))


# In order of preference for physics=auto (which takes a 'cuda' backend only on a CUDA device).
BACKENDS: dict[str, BackendInfo] = {
    "warp": BackendInfo("warp", "MuJoCo Warp: batched worlds, CUDA graphs (Warp's CPU device without a GPU)",
                        _importable("mujoco_warp", "warp", extra="warp"), _build_warp, native="cuda"),
    "mjx": BackendInfo("mjx", "MuJoCo XLA (JAX): jit + vmap, decimation in one lax.scan",
                       _importable("jax", "mujoco.mjx", extra="mjx"), _build_mjx, native="cuda"),
    "mujoco": BackendInfo("mujoco", "native MuJoCo on CPU threads (mujoco.rollout)", lambda device: None,
                          _build_mujoco),
}


def resolve_backend(name: str, device: torch.device) -> str:
    """Map a configured backend name (or 'auto') to an installed, usable backend."""
    if name == "auto":
        for candidate, info in BACKENDS.items():
            if info.available(device) is None and (info.native == "cpu" or device.type == "cuda"):
                return candidate
        raise UserError("no physics backend is usable on this machine")
    if name not in BACKENDS:
        raise UserError(f"unknown physics backend '{name}'; valid: auto, {', '.join(BACKENDS)}")
    reason = BACKENDS[name].available(device)
    if reason is not None:
        raise UserError(f"physics backend '{name}' is not usable here: {reason}")
    return name


def resolve_placement(physics: str, device: str) -> tuple[str, torch.device]:
    """(backend, learner device) for the configured names; 'auto' device = where the physics runs."""
    cuda = torch.cuda.is_available()
    if device == "auto":
        backend = resolve_backend(physics, torch.device("cuda" if cuda else "cpu"))
        return backend, torch.device("cuda" if cuda and BACKENDS[backend].native == "cuda" else "cpu")
    learner = learner_device(device)
    return resolve_backend(physics, learner), learner


def learner_device(device: str) -> torch.device:
    """The torch device a config's `device` names; auto: cuda where there is one, else cpu."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        learner = torch.device(device)
    except RuntimeError:
        raise UserError(f"unknown device '{device}'; valid: auto, cpu, cuda, cuda:N") from None
    if learner.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device '{device}' requested but CUDA is not available; use device=cpu or device=auto")
    return learner


def make_backend(
    name: str, model: mujoco.MjModel, num_envs: int, device: torch.device, settings: Mapping | None = None,
    physics_copy: CopyMaker | None = None,
) -> PhysicsBackend:
    """Build a backend; `settings` are the physics config's engine knobs (num_threads, nconmax, ...);
    `physics_copy` makes the model a backend copies per environment (Scene.physics_copy), if any."""
    resolved = resolve_backend(name, device)
    if num_envs < 1:
        raise UserError(f"env.num_envs must be at least 1, got {num_envs}")
    backend = BACKENDS[resolved].build(model, num_envs, device, dict(settings or {}), physics_copy)
    if backend.blank_at_reset.any():
        sensor = mujoco.mjtObj.mjOBJ_SENSOR
        names = [mujoco.mj_id2name(model, sensor, i) or f"sensor {i}" for i in solver_sensors(model)]
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        print(f"robolearn: physics.reset_sensors=kinematic: {shown} (they need the constraint solve) read 0 in an "
              "env's first observation after a reset", file=sys.stderr)  # fmt: skip
    return backend


def _model_kind(path: Path) -> str:
    return "URDF" if path.suffix.lower() == ".urdf" else "MJCF"


def _missing_file(path: Path) -> str | None:
    """Why a model that did not compile cannot find a mesh/texture/heightfield file, in words: a
    ROS package:// URI, a path that does not exist where MuJoCo looks (the model's folder + meshdir
    or texturedir; with strippath only the file name is kept), or a file this user may not read.
    None when every file is there."""
    try:
        spec = mujoco.MjSpec.from_file(str(path))
    except ValueError:
        return None
    kind = _model_kind(path)
    inside = " inside <robot>" if kind == "URDF" else ""
    for item, attr, what in loaded_files(spec):
        folder = getattr(spec, attr) or ""
        file = Path(item.file).name if spec.strippath else item.file
        if "://" in file:
            return (f"{what} file '{file}' is a URI (ROS package://), which MuJoCo does not resolve; keep only the "
                    f'file name with <mujoco><compiler strippath="true" {attr}="<its folder, relative to the '
                    f'{kind}>"/></mujoco>{inside}')  # fmt: skip
        where = path.parent / folder / file
        if not where.is_file():
            stripped = '; strippath="true" keeps only the file name' if spec.strippath else ""
            return (f"{what} file '{file}' not found at {where}; a relative path is looked up from the {kind}'s "
                    f"folder and {attr}='{folder}' (set by <mujoco><compiler {attr}=.../></mujoco>{inside}{stripped})")
        try:  # MuJoCo reports a file it may not open as an empty one
            with open(where, "rb"):
                pass
        except OSError as exc:
            return f"{what} file '{file}' at {where} cannot be read ({(exc.strerror or str(exc)).lower()}); valid: a file this user may read"
    return None


def _require_file(path: Path) -> None:
    if not path.is_file():
        raise UserError(f"{_model_kind(path)} file not found: {path}" + (" (that is a directory)" if path.is_dir() else ""))


def load_spec(path: Path, edit: Callable[[mujoco.MjSpec], None] | None = None) -> mujoco.MjSpec:
    """The spec of an MJCF or URDF file after `edit` (a task plugin's edit_spec); a missing or broken
    file is a UserError naming the file, a failing edit one naming the edit."""
    _require_file(path)
    refuse_non_finite_text(path)
    try:
        spec = mujoco.MjSpec.from_file(str(path))
    except ValueError as exc:
        raise UserError(f"cannot load {_model_kind(path)} {path}: {_missing_file(path) or one_line(exc)}") from None
    if edit is not None:
        try:
            edit(spec)
        except (UserError, ValueError):
            raise
        except Exception as exc:  # a plugin's own bug (a joint name its model lacks, ...): one line
            raise UserError(f"the task's edit_spec failed on {path.name}: {type(exc).__name__}: {one_line(exc)}") from None
    return spec


def load_model(path: Path, edit: Callable[[mujoco.MjSpec], None] | None = None) -> mujoco.MjModel:
    """Compile an MJCF or URDF file, after `edit` changed its spec (a task plugin's edit_spec); a
    missing or broken file, or a mesh it cannot find, is a UserError naming the file."""
    _require_file(path)
    refuse_non_finite_text(path)
    try:
        model = mujoco.MjModel.from_xml_path(str(path)) if edit is None else load_spec(path, edit).compile()
    except ValueError as exc:
        raise UserError(f"cannot load {_model_kind(path)} {path}: {_missing_file(path) or one_line(exc)}") from None
    refuse_non_finite_model(model, path)
    return model


__all__ = ["BACKENDS", "RANDOMIZABLE_FIELDS", "PhysicsBackend", "load_model", "load_spec", "make_backend", "resolve_backend",
           "resolve_placement"]
