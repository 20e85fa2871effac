"""The model `robolearn new-task` generates for a robot, built the way training builds it: the
scripts that probe generated robots share this (scripts/foot_contact_probe.py,
scripts/servo_step_probe.py)."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Callable

import mujoco
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # robolearn from this checkout
from robolearn.scaffold import new_task  # noqa: E402


def generated_model(robot_file: Path, template: str, name: str,
                    edit: Callable[[ModuleType], None] | None = None) -> tuple[mujoco.MjModel, ModuleType, dict]:  # fmt: skip
    """new-task's package for `robot_file` (in a temporary folder), its robot.py (changed by `edit`
    first, where given) applied to the task's asset and compiled: (model, robot.py, the task's YAML)."""
    with tempfile.TemporaryDirectory() as tmp:
        made = new_task(name, template, robot=robot_file, out=Path(tmp) / "pkg")
        pkg = made.folder / name
        loader = importlib.util.spec_from_file_location(f"{name}_robot", pkg / "robot.py")
        robot = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(robot)
        task = yaml.safe_load((pkg / f"{name}.yaml").read_text())
        if edit is not None:
            edit(robot)
        spec = mujoco.MjSpec.from_file(str(pkg / task["asset"]))
        robot.apply(spec)
        return spec.compile(), robot, task


def use_task_integrator(model: mujoco.MjModel, task: dict) -> None:
    """The integrator the generated task's `sim:` sets, where it sets one (new-task's implicitfast)."""
    integrator = (task.get("sim") or {}).get("integrator")
    if integrator:
        model.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}")
