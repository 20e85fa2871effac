"""What new-task plans for a robot (RobotPlan: the joints and actuators the policy drives, the
report, the edits of the generated robot.py) and the helpers that write robot.py's Python text."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

import mujoco
import numpy as np

from robolearn.scaffold.legs import BaseJoint

TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class RobotPlan:
    joints: list[str]
    """The joints the policy drives, in action order."""
    actuators: list[str]
    """The policy's actuators in action order (empty: every actuator, some being unnamed)."""
    position: bool
    """Every policy actuator is a position servo (actions are joint targets), the wheels aside."""
    wheels: dict[str, float] = field(default_factory=dict)
    """Joints new-task drives with a velocity servo (wheels.py), with each one's top speed [rad/s]:
    their actions are speeds, scaled to it."""
    tracked: list[str] = field(default_factory=list)
    """The joints the task's targets and joint observations are about: `joints`, or where no
    actuator drives a joint directly (tendons, muscles), every hinge/slide joint of the model."""
    robot_joints: list[str] = field(default_factory=list)
    """The robot's hinge/slide joints, driven or not (a cart-pole's pole): what the minimal template
    observes."""
    slides: set[str] = field(default_factory=set)
    """The robot's slide joints (their terms are in m, a hinge's in rad)."""
    unlimited_hinges: dict[str, float] = field(default_factory=dict)
    """The robot's hinges without limits that no position servo drives (wheels, continuous joints,
    free-swinging poles) and each one's angle in the
    default pose [rad]: their angle grows without bound as they turn, so the templates observe its
    cos and sin (joint_pos_cos_sin), and the minimal template centres their targets on that angle
    and wraps their target errors to +-pi."""
    object_joints: list[str] = field(default_factory=list)
    """Hinge/slide joints that are not the robot's (a goal marker's, an object's): the templates'
    joint terms name the robot's joints where there are any."""
    joint_actuators: bool = True
    """Every policy actuator drives a joint (not a tendon, site or body)."""
    geared: bool = False
    """Some policy actuator has a gear other than 1 (gymnasium's ant: 150): its joint torques are
    gear x ctrl, hundreds of N m, too large for the templates' torque penalty weight."""
    integrator: str | None = None
    """The integrator the task YAML sets (sim.integrator), None to keep the model's."""
    lines: list[str] = field(default_factory=list)
    """The report: what was found, guessed and added."""
    steps: list[str] = field(default_factory=list)
    """The edits robot.py's apply() makes, in order (templates/robot/<step>.py.tmpl)."""
    constants: list[str] = field(default_factory=list)
    """robot.py's constant definitions."""
    joint_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    default_pose: dict[str, float] = field(default_factory=dict)
    base: str | None = None
    base_height: float = 0.0
    kp: dict[str, float] = field(default_factory=dict)
    kd: dict[str, float] = field(default_factory=dict)
    """The gains of the position servos new-task added (servo_gains.py), by joint; empty where the
    model has actuators of its own."""
    ctrl_spans: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Policy actuators whose control range is not centred on 0, e.g. a muscle's [0, 1] or, beside
    motors, a gripper servo's [0, 0.05] (where every actuator is a position servo, actions are
    offsets from the default pose instead: servo_widths), and motors whose range is not +-1
    (robosuite's Panda: +-80 N m): (offset, scale) that map actions -1..1 onto that range, so that a
    policy's exploration around 0 is neither half clipped away nor a few N m of an arm's 80."""
    motors: set[str] = field(default_factory=set)
    """The policy actuators that are motors (force or torque = gear x ctrl)."""
    servo_widths: dict[str, float] = field(default_factory=dict)
    """Each position servo's joint range width [rad or m] (limited joints only), by actuator name: an
    action scale wider than it only sends targets past the range."""
    planar: list[BaseJoint] = field(default_factory=list)
    """A planar robot's base joints (locomotion on a planar base: no free joint), else empty."""
    limbs: list[str] = field(default_factory=list)
    """A planar robot's other hinge/slide joints (its legs), driven or not."""
    motor_scales: dict[str, float] = field(default_factory=dict)
    """Each motor's action scale where full effort makes the simulation diverge (limit_probe.motor_scales);
    empty where it does not."""
    soft_limits: dict[str, float] = field(default_factory=dict)
    """Motor-driven joints whose limits the model lets full effort overshoot past the watchdog's
    margin, with how far [rad or m] (limit_probe.py): the locomotion task then has no
    past_joint_limits termination."""
    foot_sensors: list[str] = field(default_factory=list)
    stepping: bool = True
    """The feet step (the feet_air_time reward pays for it); False where some roll on wheels."""
    rolls: bool = False
    """Every foot is a wheel (a rover, a car): the robot cannot move sideways, so the locomotion
    template commands no lateral speed."""
    ee_sensor: str | None = None
    """The end effector's position sensor (framepos, base frame), read by the reach terms."""
    workspace: list[tuple[float, float]] = field(default_factory=list)
    """The end effector's [low, high] per axis x, y, z in the base frame: the reach target's ranges."""
    workspace_note: str = ""
    """How those ranges were chosen (the task YAML's comment on them)."""
    ee_quat_sensor: str | None = None
    """The end effector's orientation sensor (framequat, base frame), read by the pose terms."""
    orientation: list[tuple[float, float]] = field(default_factory=list)
    """The pose template's orientation target: [low, high] of roll, pitch, yaw [rad] in the base
    frame (empty for the other templates)."""

    def robot_py(self, model_file: str) -> str | None:
        """The generated robot.py, or None when the model needs no edit."""
        if not self.steps:
            return None
        header = Template((TEMPLATES / "robot" / "header.py.tmpl").read_text())
        steps = "".join((TEMPLATES / "robot" / f"{step}.py.tmpl").read_text() for step in self.steps)
        imports = "import mujoco" + ("\nimport numpy as np" if "np." in steps else "")
        report = "\n".join(textwrap.fill(f"- {line}", 100, subsequent_indent="  ") for line in self.lines)
        text = header.substitute(model_file=model_file, report=report, imports=imports)
        text += "\n\n".join(self.constants) + "\n" + steps
        calls = "\n".join(f"    {step}(spec)" for step in self.steps)
        text += f'\n\ndef apply(spec: mujoco.MjSpec) -> None:\n    """Edit the model before it compiles (the task\'s edit_spec)."""\n{calls}\n'
        return text


def short(names: list[str], limit: int = 6) -> str:
    return ", ".join(names) if len(names) <= limit else ", ".join(names[:limit]) + f", ... ({len(names)} in all)"


def unique(name: str, taken: set[str]) -> str:
    candidate, k = name, 2
    while candidate in taken:
        candidate, k = f"{name}_{k}", k + 1
    taken.add(candidate)
    return candidate


def object_names(model: mujoco.MjModel, objtype: mujoco.mjtObj, count: int) -> set[str]:
    return {mujoco.mj_id2name(model, objtype, i) or "" for i in range(count)}


def num(value: float) -> str:
    return repr(round(float(value), 4) + 0.0)  # + 0.0: no -0.0


def quoted(name: str) -> str:
    return json.dumps(name)


def mapping(entries: dict[str, str]) -> str:
    """A dict literal, one entry a line: {"name": <value text>}."""
    return "{" + "".join(f"\n    {quoted(k)}: {v}," for k, v in entries.items()) + ("\n}" if entries else "}")


def const(name: str, value: str, doc: str, annotation: str = "") -> str:
    """A module constant (with a type annotation if given) and its docstring, wrapped to 100 columns."""
    lines = textwrap.wrap(doc, 97)
    body = lines[0] if len(lines) == 1 else "\n".join(lines)
    return f'{name}{": " + annotation if annotation else ""} = {value}\n"""{body}"""'


def tuple_text(values) -> str:
    return "(" + ", ".join(num(v) for v in values) + ")"


def render(path: Path, **values) -> str:
    try:
        return Template(path.read_text()).substitute(**values)
    except KeyError as exc:  # a template bug, not a user mistake
        raise RuntimeError(f"template {path.name} needs a value for {exc}") from None


def run_step(spec: mujoco.MjSpec, step: str, **constants) -> None:
    """Make one of robot.py's edits (templates/robot/<step>.py.tmpl) on `spec`, its constants given:
    where new-task plans a model as an edit leaves it (a turned base), the plan reads what robot.py
    will make."""
    namespace = {"mujoco": mujoco, "np": np, **constants}
    path = TEMPLATES / "robot" / f"{step}.py.tmpl"
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - robolearn's own template
    namespace[step](spec)
