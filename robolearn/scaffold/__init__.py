"""`robolearn new-task NAME [--robot model.xml|model.urdf] [--template minimal|locomotion|reach] [--out DIR]`:
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

import importlib.util
import json
import keyword
import os
import re
import shutil
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from string import Template

import mujoco

from robolearn.errors import UserError, one_line
from robolearn.memory import gib
from robolearn.model_files import outside_files, write_compiled
from robolearn.paths import assets_dir
from robolearn.physics.physics_copy import physics_copy
from robolearn.registry import ENTRY_POINT_GROUP
from robolearn.scaffold.inspect_model import compile_spec, inspect_model, load_spec, model_files, urdf_meshes
from robolearn.scaffold.plan import TEMPLATES, RobotPlan
from robolearn.scaffold.robot_edits import plan_robot

TEMPLATE_NAMES = ("minimal", "locomotion", "reach")
BUILTIN_MODELS = {"locomotion": "quadruped.xml", "reach": "arm.xml"}
"""Without --robot: the template's model, copied from robolearn's assets (minimal ships its own)."""
NAME = re.compile(r"[a-z][a-z0-9_]*")
MAX_NAME = 64
"""A task name's most characters (it names a folder, a package and a distribution)."""
SUMMARY = {
    "minimal": "Drive a robot's joints to a commanded target pose.",
    "locomotion": "A legged robot tracks a commanded base velocity (forward, lateral, yaw rate).",
    "reach": "An arm brings its end effector to a commanded position.",
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
    if not NAME.fullmatch(name) or keyword.iskeyword(name) or len(name) > MAX_NAME:
        shown = f"'{name}'" if len(name) <= MAX_NAME else f"'{name[:20]}...' ({len(name)} characters)"
        raise UserError(f"invalid task name {shown}; valid: up to {MAX_NAME} lowercase letters, digits and '_', starting "
                        "with a letter (it is the task's name and its Python package's), e.g. my_robot_walk")  # fmt: skip
    if template not in TEMPLATE_NAMES:
        raise UserError(f"unknown template '{template}'; valid: {', '.join(TEMPLATE_NAMES)}")
    if out.exists() or out.is_symlink():
        raise UserError(f"{out} already exists; new-task never writes into an existing folder: remove it or choose "
                        "another with --out DIR")  # fmt: skip
    if not out.parent.is_dir():
        raise UserError(f"cannot create {out}: folder {out.parent} does not exist")
    if robot is not None:
        if not robot.is_file():
            raise UserError(f"robot model not found: {robot}" + (" (that is a folder)" if robot.is_dir() else ""))
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
        result = _write(staging, name, template, robot)
        if out.exists():  # appeared meanwhile: still never touched
            raise UserError(f"{out} already exists; new-task never writes into an existing folder")
        staging.chmod(0o777 & ~_umask())  # mkdtemp made it private; the package is an ordinary folder
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    result.folder = out
    return result


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


def _copy_urdf(source: Path, package: Path) -> Path:
    """Copy a URDF and its meshes (into meshes/), telling MuJoCo where they are in a `<mujoco><compiler
    meshdir="meshes" strippath="true">` element, MuJoCo's own URDF extension (strippath: a mesh is
    looked up by its file name alone, so `package://...` URIs and ROS folder layouts resolve);
    `fusestatic="false"` there keeps links without joints (the base link) as named bodies."""
    meshes = urdf_meshes(source)
    names = [m.name for m in meshes]
    clash = next((n for n in names if names.count(n) > 1), None)
    if clash:
        raise UserError(f"{source.name} names two meshes called {clash} in different folders; MuJoCo looks meshes up by "
                        "file name: rename one")  # fmt: skip
    target = package / source.name
    if meshes:
        (package / "meshes").mkdir()
    for mesh in meshes:
        shutil.copyfile(mesh, package / "meshes" / mesh.name)
    tree = ET.parse(source, ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))  # keep the comments
    extension = tree.getroot().find("mujoco")
    if extension is None:
        extension = ET.SubElement(tree.getroot(), "mujoco")
    compiler = extension.find("compiler")
    if compiler is None:
        compiler = ET.SubElement(extension, "compiler")
    if meshes:
        compiler.set("meshdir", "meshes")
        compiler.set("strippath", "true")
    compiler.set("fusestatic", "false")  # links without joints stay bodies: the base link keeps its name
    tree.write(target, encoding="utf-8")
    return target


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


def _yaml_name(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", name) else json.dumps(name)


def _names(names: list[str]) -> str:
    return ", ".join(_yaml_name(n) for n in names)


def _num(value: float) -> str:
    return repr(round(float(value), 4))


def _render(path: Path, **values) -> str:
    try:
        return Template(path.read_text()).substitute(**values)
    except KeyError as exc:  # a template bug, not a user mistake
        raise RuntimeError(f"template {path.name} needs a value for {exc}") from None


CPU_MODEL_COPIES_BYTES = 8 * 2**30
"""What a generated recipe's environments may hold in MjModel copies on the CPU backend: each
environment there has its own copy once an event randomizes a model field (the templates' friction
and mass events do). The copies leave visual meshes and textures out (physics/physics_copy.py), so
only a robot whose collision geometry itself is heavy gets fewer environments than the template's
default."""
TEMPLATE_NUM_ENVS = {"minimal": 128, "locomotion": 1024, "reach": 512}


def num_envs(template: str, model_bytes: int) -> tuple[int, str]:
    """The recipe's env.num_envs and, where the model's size lowered it, why (else ''):
    the template's default, halved until its per-environment model copies fit CPU_MODEL_COPIES_BYTES
    (at least 16)."""
    wanted = n = TEMPLATE_NUM_ENVS[template]
    while n > 16 and n * model_bytes > CPU_MODEL_COPIES_BYTES:
        n //= 2
    if n == wanted:
        return n, ""
    return n, (f"not {wanted}: on a CPU each environment holds its own copy of this {gib(model_bytes)} model for the "
               f"randomized model fields ({gib(wanted * model_bytes)} at {wanted}); a GPU needs none")  # fmt: skip


def _action_scale(plan: RobotPlan, servo_scale: float) -> str:
    """The task YAML's `action.scale` value, followed by an `action.offset` line where actuators take
    controls off-centre (plan.ctrl_spans): one value when every actuator shares one span, else
    per actuator (keys are patterns: the names escaped)."""
    if plan.position or not plan.ctrl_spans:
        return _num(servo_scale) if plan.position else "1.0"
    spans = plan.ctrl_spans
    if len(spans) == len(plan.actuators) and len(set(spans.values())) == 1:
        offset, scale = next(iter(spans.values()))
        return f"{_num(scale)}\n  offset: {_num(offset)}"
    key = lambda name: json.dumps(re.escape(name))  # noqa: E731
    scale = ", ".join(f"{key(n)}: {_num(s)}" for n, (_, s) in spans.items())
    offset = ", ".join(f"{key(n)}: {_num(o)}" for n, (o, _) in spans.items())
    return f"{{{scale}}}  # the others: 1.0\n  offset: {{{offset}}}  # the others: 0"


def _task_yaml(template: str, name: str, asset: str, plan: RobotPlan, timestep: float, model_bytes: int) -> str:
    decimation = max(1, round(0.02 / timestep))
    envs, envs_note = num_envs(template, model_bytes)
    values = dict(name=name, asset=asset, decimation=decimation, control_hz=f"{1.0 / (timestep * decimation):.3g}",
                  num_envs=envs, num_envs_note=f"  # {envs_note}" if envs_note else "",
                  actuators=_names(plan.actuators), num_actions=len(plan.actuators) or len(plan.joints),
                  use_default_offset=str(plan.position).lower(), delay_steps=min(2, decimation),
                  sim_options=f"\nsim: {{integrator: {plan.integrator}}}  # the model's is euler: see README" if plan.integrator else "")  # fmt: skip
    pd_gains = ("\n  pd_gains:\n    func: randomize_pd_gains\n    mode: reset\n    level: default\n"
                "    params: {kp_range: [0.85, 1.15], kd_range: [0.8, 1.2]}") if plan.position else ""  # fmt: skip
    if template == "minimal":
        ranges = []
        for joint in plan.tracked:
            low, high = plan.joint_ranges.get(joint, (-1.0, 1.0))
            margin = 0.1 * (high - low)
            ranges.append(f"{_yaml_name(joint)}: [{_num(low + margin)}, {_num(high - margin)}]")
        values.update(joints=_names(plan.tracked), num_joints=len(plan.tracked), command_ranges=", ".join(ranges),
                      action_scale=_action_scale(plan, 0.5))  # fmt: skip
    elif template == "locomotion" and plan.planar:
        return _render(TEMPLATES / template / "planar.yaml.tmpl", **values, **_planar_values(plan, pd_gains))
    elif template == "locomotion":
        critic_feet, air_time = _feet_terms(plan, "base_velocity")
        if plan.joint_actuators:  # actuator forces are computed for joint actuators only (mdp/state.py)
            effort = "torques: {func: joint_torques_l2, weight: -2.0e-4}"
            energy = "\n  energy_per_meter: {func: mechanical_power, per: meter, units: J/m}"
        else:
            effort, energy = "effort: {func: action_l2, weight: -0.01}  # joint_torques_l2 sees joint actuators only", ""
        values.update(effort_reward=effort, energy_metric=energy)
        values.update(base=_yaml_name(plan.base or ""), critic_feet=critic_feet, feet_air_time=air_time,
                      pd_gains=pd_gains, action_scale=_action_scale(plan, 0.25))  # fmt: skip
    else:
        (x, y, z) = plan.workspace
        values.update(base=plan.base, ee_sensor=_yaml_name(plan.ee_sensor or ""), pd_gains=pd_gains,
                      range_x=f"[{_num(x[0])}, {_num(x[1])}]", range_y=f"[{_num(y[0])}, {_num(y[1])}]",
                      range_z=f"[{_num(z[0])}, {_num(z[1])}]", action_scale=_action_scale(plan, 0.5),
                      workspace_note="middle 80 % of reachable")  # fmt: skip
    return _render(TEMPLATES / template / "task.yaml.tmpl", **values)


def _feet_terms(plan: RobotPlan, command: str) -> tuple[str, str]:
    """The critic's foot contact observation and the feet_air_time reward, where the robot has foot sensors."""
    if not plan.foot_sensors:
        return "", ""
    sensors = _names(plan.foot_sensors)
    critic = f"\n      feet_contact_forces: {{func: sensor, params: {{names: [{sensors}]}}, scale: 0.01, units: N}}"
    air_time = (f"\n  feet_air_time:\n    func: feet_air_time\n    weight: 0.5\n    params:\n      sensors: [{sensors}]\n"
                f"      command: {command}\n      target: 0.5")  # fmt: skip
    return critic, air_time


def _planar_values(plan: RobotPlan, pd_gains: str) -> dict[str, str]:
    """What templates/locomotion/planar.yaml.tmpl needs: the base's joints by role, and the terms that
    exist only for some roles (a height slide ends the episode when the base sinks to half its
    standing height; a pitch hinge when the base tilts more than 1 rad from its home angle)."""
    role = lambda *roles: [b for b in plan.planar if b.role in roles]  # noqa: E731
    pose = role("height", "pitch", "yaw")
    base_pose = {"policy": "", "critic": ""}
    if pose:
        joints = _names([b.name for b in pose])
        base_pose["policy"] = (f"\n      base_pose: {{func: joint_pos, params: {{joints: [{joints}], relative: true}}, "
                               'units: "m, rad", noise: {scale: 0.01}}')  # fmt: skip
        base_pose["critic"] = f"\n      base_pose: {{func: joint_pos, params: {{joints: [{joints}], relative: true}}}}"
    terminations = []
    for b in role("height"):
        home, drop = plan.default_pose[b.name], 0.5 * plan.base_height / b.axis[2]
        bounds = f"[{_num(home - drop)}, 1000.0]" if drop > 0 else f"[-1000.0, {_num(home - drop)}]"
        terminations.append(f"  base_too_low: {{func: joint_pos_out_of_bounds, params: {{joints: [{_yaml_name(b.name)}], "
                            f"bounds: {bounds}}}}}  # {plan.base} below {_num(0.5 * plan.base_height)} m")  # fmt: skip
    tilt = role("pitch")
    for b in tilt:
        home = plan.default_pose[b.name]
        terminations.append(f"  {b.name}_too_far: {{func: joint_pos_out_of_bounds, params: {{joints: [{_yaml_name(b.name)}], "
                            f"bounds: [{_num(home - 1.0)}, {_num(home + 1.0)}]}}}}")  # fmt: skip
    tilt_rewards = ""
    if tilt:
        joints = _names([b.name for b in tilt])
        tilt_rewards = (f"\n  pitch_rate: {{func: joint_vel_l2, weight: -0.05, params: {{joints: [{joints}]}}}}"
                        f"\n  pitch: {{func: joint_pos_l2, weight: -1.0, params: {{joints: [{joints}], relative: true}}}}")  # fmt: skip
    critic_feet, air_time = _feet_terms(plan, "forward_velocity")
    joints = plan.joints or plan.limbs  # the legs' joints (every actuator drives a tendon: all of them)
    return dict(base_joints=_names([b.name for b in plan.planar]), forward=_yaml_name(role("forward")[0].name),
                base_pose_policy=base_pose["policy"], base_pose_critic=base_pose["critic"], joints=_names(joints),
                tilt_rewards=tilt_rewards, terminations="\n" + "\n".join(terminations) if terminations else " {}",
                critic_feet=critic_feet, feet_air_time=air_time, base=_yaml_name(plan.base or ""), pd_gains=pd_gains,
                action_scale=_action_scale(plan, 0.25))  # fmt: skip


def _verify_edit(robot_py: Path, model: Path) -> None:
    """Apply the generated robot.py to the copied model and compile it: a generation bug shows here,
    not at the user's first `robolearn train`."""
    module_spec = importlib.util.spec_from_file_location("_new_task_robot", robot_py)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    spec = load_spec(model)
    try:
        module.apply(spec)
        spec.compile()
    except Exception as exc:
        raise UserError(f"the generated model edit (robot.py) does not compile with {model.name}: {one_line(exc)}") from None


def _package_data(package: Path) -> str:
    """Glob patterns for every non-Python file of the package (by folder and suffix)."""
    patterns = set()
    for path in package.rglob("*"):
        if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts:
            rel = path.relative_to(package)
            patterns.add((rel.parent / f"*{path.suffix}").as_posix() if path.suffix else rel.as_posix())
    return ", ".join(json.dumps(p) for p in sorted(patterns))


def _write(root: Path, name: str, template: str, robot: Path | None) -> NewTask:
    package = root / name
    package.mkdir()
    copy_note = None
    if robot is None:
        model_path = _builtin_model(template, package)
    elif robot.suffix.lower() == ".urdf":
        model_path = _copy_urdf(robot, package)
    else:
        model_path, copy_note = _copy_model(robot, package)
    shown = robot or model_path.name
    spec = load_spec(model_path)
    model = compile_spec(spec, robot or model_path)
    info = inspect_model(robot or model_path, model, urdf=model_path.suffix.lower() == ".urdf")
    plan = plan_robot(info, model, template)
    found = [*plan.lines, *([copy_note] if copy_note else [])]
    result = NewTask(root, name, template, list(found))

    robot_py = plan.robot_py(model_path.name)
    if robot_py is not None:
        (package / "robot.py").write_text(robot_py)
        _verify_edit(package / "robot.py", model_path)
    asset = model_path.relative_to(package).as_posix()
    copied = physics_copy(load_spec(model_path), model)[0]  # what the CPU backend copies per environment
    model_bytes = mujoco.mj_sizeModel(copied if copied is not None else model)
    (package / f"{name}.yaml").write_text(_task_yaml(template, name, asset, plan, info.timestep, model_bytes))
    envs, envs_note = num_envs(template, model_bytes)
    if envs_note:
        result.lines.append(f"env.num_envs: {envs}, {envs_note}")
    terms = "planar_terms.py.tmpl" if plan.planar else "terms.py.tmpl"
    (package / "terms.py").write_text(_render(TEMPLATES / template / terms, name=name))
    summary = SUMMARY["planar"] if plan.planar else SUMMARY[template]
    (package / "__init__.py").write_text(_render(
        TEMPLATES / "common" / "__init__.py.tmpl", name=name, summary=summary,
        robot_note="\nThe robot's constants and model edits: robot.py." if robot_py else "",
        robot_import="robot, terms" if robot_py else "terms", edit_spec=", edit_spec=robot.apply" if robot_py else ""))  # fmt: skip
    project = "robolearn-task-" + name.replace("_", "-")
    (root / "pyproject.toml").write_text(_render(TEMPLATES / "common" / "pyproject.toml.tmpl", project=project,
                                                 name=name, package=name, summary=summary,
                                                 package_data=_package_data(package)))  # fmt: skip
    (root / "tests").mkdir()
    (root / "tests" / f"test_{name}.py").write_text(_render(TEMPLATES / "common" / "test_task.py.tmpl", name=name))
    robot_rows = (f"| `{name}/robot.py` | the robot's constants (joints, gains, default pose, ...) and the edits "
                  f"`apply(spec)` makes to `{asset}` before it compiles |\n") if robot_py else ""  # fmt: skip
    robot_rows += f"| `{name}/{asset}` | the robot model{' and its meshes' if model_path.suffix == '.urdf' else ''} |\n"
    findings = "\n## What new-task found in the model\n\n" + "".join(f"- {line}\n" for line in found)
    (root / "README.md").write_text(_render(
        TEMPLATES / "common" / "README.md.tmpl", project=project, summary=summary, name=name, package=name,
        template=template, robot_arg=f" --robot {shown.name}" if robot else "", robot_rows=robot_rows,
        edit_spec_note=" and the model edit (`edit_spec=robot.apply`)" if robot_py else "", findings=findings))  # fmt: skip
    return result
