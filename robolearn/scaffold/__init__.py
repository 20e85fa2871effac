"""`robolearn new-task NAME [--robot model.xml|model.urdf] [--template minimal|locomotion|reach|pose] [--out DIR]`:
write an installable task plugin package.

    <out>/pyproject.toml        the project: entry point `NAME = "NAME:TASK"`, package data (YAML, model files)
    <out>/README.md             install, train, play, export; where to edit; what was found in the model
    <out>/NAME/__init__.py      the TaskPlugin
    <out>/NAME/NAME.yaml        the task config, with its training recipe
    <out>/NAME/terms.py         the task's own term functions (used by the YAML)
    <out>/NAME/robot.py         the robot's constants and the model edits (only when the model needs edits)
    <out>/NAME/<model>          the robot model and its files (a URDF's meshes under meshes/)
    <out>/tests/test_NAME.py    a smoke test: builds, steps, trains two iterations

Everything is written into a hidden staging folder next to <out> and renamed into place at the
end, so a failure leaves nothing behind; an existing <out> is never touched. The generated model
edit is applied and compiled before the package is moved into place.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import keyword
import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import mujoco
import numpy as np

from robolearn.errors import UserError, one_line
from robolearn.model_files import outside_files, write_compiled
from robolearn.paths import assets_dir
from robolearn.physics.physics_copy import physics_copy
from robolearn.registry import ENTRY_POINT_GROUP
from robolearn.scaffold.inspect_model import inspect_model
from robolearn.scaffold.limit_probe import PROBE_S, diverging_line, motor_scales, soft_limits, stable_scale
from robolearn.scaffold.plan import TEMPLATES, render, run_step, short
from robolearn.scaffold.robot_edits import plan_robot
from robolearn.scaffold.robot_files import compile_spec, inertia_hint, load_spec, model_files
from robolearn.scaffold.servo_gains import raise_gains
from robolearn.scaffold.stand_check import stand_gain, stand_warning
from robolearn.scaffold.task_text import TEMPLATE_FOLDER, num_envs, task_yaml
from robolearn.scaffold.upright import Planned, Turn, add_turn, needs_turning, stand_up
from robolearn.scaffold.urdf_package import copy_urdf

TEMPLATE_NAMES = ("minimal", "locomotion", "reach", "pose")
BUILTIN_MODELS = {"locomotion": "quadruped.xml", "reach": "arm.xml", "pose": "arm.xml"}
"""Without --robot: the template's model, copied from robolearn's assets (minimal ships its own)."""
NAME = re.compile(r"[a-z][a-z0-9_]*")
MAX_NAME = 64
"""A task name's most characters (it names a folder, a package and a distribution)."""
SUMMARY = {
    "minimal": "Drive a robot's joints to a commanded target pose.",
    "locomotion": "A legged robot tracks a commanded base velocity (forward, lateral, yaw rate).",
    "reach": "An arm brings its end effector to a commanded position.",
    "pose": "An arm brings its end effector to a commanded position and orientation.",
    "planar": "A planar legged robot tracks a commanded forward speed.",
}


@dataclass
class NewTask:
    folder: Path
    name: str
    template: str
    lines: list[str] = field(default_factory=list)
    """What was found in the model and what was added (the report new-task prints)."""


def check_request(name: str, template: str, robot: Path | None, out: Path) -> None:
    """Every mistake new-task can see before writing anything: one UserError line each."""
    if keyword.iskeyword(name):
        raise UserError(f"invalid task name '{name}': a Python keyword cannot name the task's package; valid: another "
                        f"name, e.g. {name}_task")  # fmt: skip
    if not NAME.fullmatch(name) or len(name) > MAX_NAME:
        shown = f"'{name}'" if len(name) <= MAX_NAME else f"'{name[:20]}...' ({len(name)} characters)"
        raise UserError(f"invalid task name {shown}; valid: up to {MAX_NAME} lowercase letters, digits and '_', starting "
                        "with a letter (it is the task's name and its Python package's), e.g. my_robot_walk")  # fmt: skip
    if template not in TEMPLATE_NAMES:
        raise UserError(f"unknown template '{template}'; valid: {', '.join(TEMPLATE_NAMES)}")
    if out.exists() or out.is_symlink():
        raise UserError(f"{out} already exists; new-task never writes into an existing folder: remove it or choose "
                        "another with --out DIR")  # fmt: skip
    if not out.parent.is_dir():
        why = "is a file, not a folder" if out.parent.exists() else "does not exist"
        raise UserError(f"cannot create {out}: {out.parent} {why}; valid: --out DIR in a folder that exists")
    if robot is not None:
        if not robot.is_file():
            raise UserError(f"robot model not found: {robot}" + (" (that is a folder)" if robot.is_dir() else ""))
        if robot.suffix.lower() == ".xacro":
            raise UserError(f"robot model {robot.name} is a xacro file, which writes a URDF; valid: an MJCF file (.xml) or "
                            f"a URDF (.urdf): run `xacro {robot.name} > robot.urdf` (pip install xacro) and pass robot.urdf")  # fmt: skip
        if robot.suffix.lower() not in (".xml", ".urdf"):
            raise UserError(f"robot model {robot.name}: expected an MJCF file (.xml) or a URDF (.urdf)")
    if importlib.util.find_spec(name) is not None:
        raise UserError(f"a Python module named '{name}' is already installed; the task's package would clash "
                        "with it: choose another name")  # fmt: skip
    if name in {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}:  # names only: no plugin is imported
        raise UserError(f"a task named '{name}' is already installed (robolearn list); choose another name")


def new_task(name: str, template: str = "minimal", robot: Path | None = None, out: Path | None = None) -> NewTask:
    """Write the task package `name` into `out` (default ./<name>) and return what was done."""
    out = Path(out if out is not None else name).expanduser()
    robot = robot.expanduser() if robot is not None else None
    check_request(name, template, robot, out)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-task-", dir=out.parent))
    try:
        with mujoco_warnings() as said:
            result = _write(staging, name, template, robot, said)
        if out.exists():  # appeared meanwhile: still never touched
            raise UserError(f"{out} already exists; new-task never writes into an existing folder")
        staging.chmod(0o777 & ~_umask())  # mkdtemp made it private; the package is an ordinary folder
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    result.folder = out
    return result


@contextlib.contextmanager
def mujoco_warnings():
    """MuJoCo's warnings while new-task reads and checks a model, collected (not printed, not written
    to MUJOCO_LOG.TXT in the user's folder): the report gets them in one line. The probes' blow-ups
    ("the simulation is unstable") are expected and left out. A hook installed before (the mujoco
    backend's, a user's) is put back afterwards. MjSpec.compile warns through Python's `warnings`
    (a UserWarning): those are collected too, any other warning is shown as before."""
    said: list[str] = []

    def keep(message: str) -> None:
        if "Nan, Inf or huge value" not in message:
            said.append(message)

    def shown(message, category, filename, lineno, file=None, line=None):  # MjSpec.compile warns in Python
        if issubclass(category, UserWarning):
            keep(str(message))
        else:
            passed_on(message, category, filename, lineno, file, line)

    before = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(keep)
    with warnings.catch_warnings():
        warnings.simplefilter("always", UserWarning)
        passed_on, warnings.showwarning = warnings.showwarning, shown
        try:
            yield said
        finally:
            mujoco.set_mju_user_warning(before)


def _unstaged(message: str) -> str:
    """`message` with new-task's staging folder left out of its paths (`<staging>/<package>/meshes/a.obj`
    -> `meshes/a.obj`): the folder is gone when the message is read."""
    return re.sub(r"(?:[^\s']*/)?\.[^/\s']*\.new-task-[^/\s']*/[^/\s']*/", "", message)


def _warnings_line(said: list[str]) -> str:
    unique = list(dict.fromkeys(_unstaged(message.strip()) for message in said))
    return f"MuJoCo's warnings on the model ({len(unique)}): {short(unique, 3)}"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _copy_model(source: Path, package: Path) -> tuple[Path, str | None]:
    """Copy an MJCF and the files it loads (relative paths kept) into the package; the model's path
    there, and a report line where the model reached outside its folder (then the package holds
    its compiled MJCF, includes inlined, with those files copied under meshes/ and textures/)."""
    compile_spec(load_spec(source), source)  # MuJoCo's own one line for a model it cannot read or compile
    outside = outside_files(source)
    if outside:
        write_compiled(source, package, source.name, reserved=("__init__.py", "robot.py", "terms.py"))
        shown = ", ".join(p.as_posix() for p in outside[:2]) + (", ..." if len(outside) > 2 else "")
        return package / source.name, (f"{source.name} loads files outside its folder ({shown}): the package "
                                        "holds its compiled MJCF with those files copied beside it")  # fmt: skip
    for rel in model_files(source):
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source.parent / rel, package / rel)
    return package / source.name, None


def _about_the_copy(message: str, robot: Path, copy: Path) -> str:
    """A load or compile error of new-task's copy of `robot`, told about the user's files: the copy
    lives in a staging folder that is gone when the message is read."""
    message = message.replace(str(copy), str(robot))
    message = _unstaged(message)
    hint = inertia_hint(robot, message) if robot.suffix.lower() == ".urdf" else None
    return f"{message}: {hint}" if hint else message


def _builtin_model(template: str, package: Path) -> Path:
    if template == "minimal":
        target = package / "robot.xml"
        shutil.copyfile(TEMPLATES / "minimal" / "robot.xml", target)
        return target
    source = assets_dir() / BUILTIN_MODELS[template]
    target, _ = _copy_model(source, package)
    text = target.read_text()
    if text.lstrip().startswith("<!--"):  # the asset's own notes speak of the built-in task's files
        text = text[text.index("-->") + 3:].lstrip()
    note = (f"<!-- Copied from robolearn's assets/{source.name} by `robolearn new-task`: this task's robot, yours to edit.\n"
            "     robot.py (where present) edits it before it compiles. -->\n")  # fmt: skip
    target.write_text(note + text)
    return target


def _verify_edit(robot_py: Path, model: Path) -> mujoco.MjModel:
    """Apply the generated robot.py to the copied model and compile it: a generation bug shows here,
    not at the user's first `robolearn train`. The edited model."""
    module_spec = importlib.util.spec_from_file_location("_new_task_robot", robot_py)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    spec = load_spec(model)
    try:
        module.apply(spec)
        return spec.compile()
    except Exception as exc:
        raise UserError(f"the generated model edit (robot.py) does not compile with {model.name}: {one_line(exc)}") from None


def _stand(planned: Planned, robot_py: Path, model_path: Path) -> None:
    """Hold the home pose with the robot's servos (stand_check.py), into `planned.held`. Gains new-task
    gave that do not hold it are raised where stronger ones do (robot.py rewritten, the edit verified
    again); the model's own gains are only warned of."""
    plan = planned.plan
    if not plan.kp:
        warning, planned.held = stand_warning(planned.edited, plan.base, plan.integrator)
        planned.lines += [warning] if warning else []
        return
    factor, line, planned.held = stand_gain(planned.edited, plan.base, plan.integrator)
    if factor == 1.0:
        planned.lines += [line] if line else []
        return
    raise_gains(plan, factor, "held by x 1 for a second, the home pose did not stand (the report's servo gains line)")
    plan.lines.append(line)
    planned.lines.append(line)
    robot_py.write_text(plan.robot_py(model_path.name))
    planned.edited = _verify_edit(robot_py, model_path)


def _plan_model(package: Path, model_path: Path, robot: Path | None, template: str, model: mujoco.MjModel | None,
                copy_notes: list[str], base: str | None = None, turn: Turn | None = None) -> Planned:
    """Plan the robot for `template` (robot_edits.py), write robot.py and check it: the edit compiles,
    motors at full effort stay finite, the home pose stands (gains raised where new-task's own are too
    weak). With `turn`, the model is planned as turned (upright.py: `base`'s contents turned, robot.py's
    first edit), and `model` is compiled here."""
    if turn is not None:
        spec = load_spec(model_path)
        run_step(spec, "turn_upright", BASE=base, UP_TURN=turn.quat)
        model = compile_spec(spec, robot or model_path)
    info = inspect_model(robot or model_path, model, urdf=model_path.suffix.lower() == ".urdf")
    plan = plan_robot(info, model, template)
    if turn is not None:
        add_turn(plan, turn)
    planned = Planned(info, plan, model, model, [*plan.lines, *copy_notes], turn=turn)
    robot_py = plan.robot_py(model_path.name)
    if robot_py is not None:
        (package / "robot.py").write_text(robot_py)
        planned.edited = _verify_edit(package / "robot.py", model_path)
    scales = np.ones(planned.edited.nu)
    if not plan.position and planned.edited.nu:  # motors: does full effort keep the simulation finite?
        scale = stable_scale(planned.edited)
        if 0.0 < scale < 1.0:  # each motor as strong as it can be (none holds: the warning says so, the actions keep their range)
            scales = motor_scales(planned.edited, scale)
            names = [planned.edited.actuator(a).name for a in range(planned.edited.nu)]
            plan.motor_scales = {name: float(v) for name, v in zip(names, scales) if name in plan.motors}
        if scale < 1.0:
            planned.lines.append(diverging_line(planned.edited, scale, scales))
    if template == "locomotion" and not plan.position:  # motors: do the model's joint limits hold against them?
        plan.soft_limits = soft_limits(planned.edited, plan.joints or plan.limbs, scales)
        if plan.soft_limits:
            joint, past = max(plan.soft_limits.items(), key=lambda item: item[1])
            planned.lines.append(f"joint limits: soft for the motors ({joint} goes {past:.2f} rad past its range within "
                                 f"{PROBE_S:g} s at full effort) -> no past_joint_limits termination (it would end nearly "
                                 "every early episode); the joint_limits penalty keeps the policy off them")  # fmt: skip
    if (template == "locomotion" and plan.position and not plan.planar and plan.base
            and mujoco.mj_name2id(planned.edited, mujoco.mjtObj.mjOBJ_KEY, "home") >= 0):  # fmt: skip
        _stand(planned, package / "robot.py", model_path)
    return planned


def _package_data(package: Path) -> str:
    """Glob patterns for every non-Python file of the package (by folder and suffix)."""
    patterns = set()
    for path in package.rglob("*"):
        if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts:
            rel = path.relative_to(package)
            patterns.add((rel.parent / f"*{path.suffix}").as_posix() if path.suffix else rel.as_posix())
    return ", ".join(json.dumps(p) for p in sorted(patterns))


def _write(root: Path, name: str, template: str, robot: Path | None, said: list[str]) -> NewTask:
    package = root / name
    package.mkdir()
    copy_notes: list[str] = []
    if robot is None:
        model_path = _builtin_model(template, package)
    elif robot.suffix.lower() == ".urdf":
        model_path, copy_notes = copy_urdf(robot, package, legged=template == "locomotion")
    else:
        model_path, copy_note = _copy_model(robot, package)
        copy_notes = [copy_note] if copy_note else []
    shown = robot or model_path.name
    try:
        spec = load_spec(model_path)
        model = compile_spec(spec, robot or model_path)
    except UserError as exc:
        if robot is None:
            raise
        load_spec(robot)  # where the user's own file fails to parse, MuJoCo's message names its lines, not the copy's
        raise UserError(_about_the_copy(str(exc), robot, model_path)) from None
    planned = _plan_model(package, model_path, robot, template, model, copy_notes)
    if needs_turning(planned):
        base = planned.plan.base
        planned = stand_up(planned, lambda turn: _plan_model(package, model_path, robot, template, None, copy_notes, base, turn))
        if text := planned.plan.robot_py(model_path.name):  # each plan tried wrote its own
            (package / "robot.py").write_text(text)
    info, plan = planned.info, planned.plan
    result = NewTask(root, name, template, planned.lines)
    robot_py = plan.robot_py(model_path.name)
    asset = model_path.relative_to(package).as_posix()
    copied = physics_copy(load_spec(model_path), model)[0]  # what the CPU backend copies per environment
    model_bytes = mujoco.mj_sizeModel(copied if copied is not None else model)
    (package / f"{name}.yaml").write_text(task_yaml(template, name, asset, plan, info.timestep, model_bytes))
    envs, envs_note = num_envs(template, model_bytes)
    if envs_note:
        result.lines.append(f"env.num_envs: {envs}, {envs_note}")
    terms = "planar_terms.py.tmpl" if plan.planar else "terms.py.tmpl"
    (package / "terms.py").write_text(render(TEMPLATES / TEMPLATE_FOLDER.get(template, template) / terms, name=name))
    summary = SUMMARY["planar"] if plan.planar else SUMMARY[template]
    (package / "__init__.py").write_text(render(
        TEMPLATES / "common" / "__init__.py.tmpl", name=name, summary=summary,
        robot_note="\nThe robot's constants and model edits: robot.py." if robot_py else "",
        robot_import="robot, terms" if robot_py else "terms", edit_spec=", edit_spec=robot.apply" if robot_py else ""))  # fmt: skip
    project = "robolearn-task-" + name.replace("_", "-")
    (root / "pyproject.toml").write_text(render(TEMPLATES / "common" / "pyproject.toml.tmpl", project=project,
                                                 name=name, package=name, summary=summary,
                                                 package_data=_package_data(package)))  # fmt: skip
    (root / "tests").mkdir()
    (root / "tests" / f"test_{name}.py").write_text(render(TEMPLATES / "common" / "test_task.py.tmpl", name=name))
    robot_rows = (f"| `{name}/robot.py` | the robot's constants (joints, gains, default pose, ...) and the edits "
                  f"`apply(spec)` makes to `{asset}` before it compiles |\n") if robot_py else ""  # fmt: skip
    robot_rows += f"| `{name}/{asset}` | the robot model{' and its meshes' if model_path.suffix == '.urdf' else ''} |\n"
    if said:  # what MuJoCo warned of while reading and checking the model
        result.lines.append(_warnings_line(said))
    findings = "\n## What new-task found in the model\n\n" + "".join(f"- {line}\n" for line in result.lines)
    (root / "README.md").write_text(render(
        TEMPLATES / "common" / "README.md.tmpl", project=project, summary=summary, name=name, package=name,
        template=template, robot_arg=f" --robot {shown.name}" if robot else "", robot_rows=robot_rows,
        edit_spec_note=" and the model edit (`edit_spec=robot.apply`)" if robot_py else "", findings=findings))  # fmt: skip
    return result
