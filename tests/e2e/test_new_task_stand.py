"""new-task's check that a legged robot stands in its home pose, held by the servos it was given
(robolearn/scaffold/stand_check.py): a report line tells a pose that is off balance from gains
that are too weak, and says nothing where the robot stands."""

from __future__ import annotations

import math

import mujoco
import pytest

from robolearn.scaffold.stand_check import hold, stand_warning

CORNERS = ((0.2, 0.15), (0.2, -0.15), (-0.2, 0.15), (-0.2, -0.15))


def _table(kp: float, legs=CORNERS, lean: float = 0.6) -> mujoco.MjModel:
    """A 20 kg box on legs 0.3 m long, every hip turned `lean` rad the same way (a parallelogram that
    folds unless the servos hold it), its feet on the floor at home."""
    height = 0.3 * math.cos(lean) + 0.02
    bodies = "".join(f"""<body name="leg{i}" pos="{x} {y} 0"><joint name="hip{i}" axis="0 1 0" range="-1.5 1.5"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.2"/></body>""" for i, (x, y) in enumerate(legs))
    servos = "".join(f'<position joint="hip{i}" kp="{kp}" kv="{kp / 40}"/>' for i in range(len(legs)))
    return mujoco.MjModel.from_xml_string(f"""<mujoco><option integrator="implicitfast"/><worldbody>
      <geom name="floor" type="plane" size="5 5 0.1"/>
      <body name="base" pos="0 0 {height}"><freejoint/><geom type="box" size="0.25 0.2 0.03" mass="20"/>{bodies}</body>
      </worldbody><actuator>{servos}</actuator>
      <keyframe><key name="home" qpos="0 0 {height} 1 0 0 0 {' '.join([str(lean)] * len(legs))}"/></keyframe></mujoco>""")


def test_a_robot_that_stands_gets_no_line():
    start, end, turned = hold(_table(kp=800), "base")
    assert end > 0.9 * start and turned < math.radians(2)
    assert stand_warning(_table(kp=800), "base", None) is None


@pytest.mark.parametrize("model, cause", [
    (_table(kp=20), "with KP x 4 it stands: the placeholder gains are too weak for this robot; set KP and KD in robot.py"),
    (_table(kp=800, legs=((0.0, 0.0),)), "it does not stand with KP x 4 either: the pose is off balance"),
])  # fmt: skip
def test_a_robot_that_falls_is_warned_of_with_the_cause(model, cause):
    line = stand_warning(model, "base", None)
    assert line is not None and line.startswith("WARNING: holding the home pose with its servos for 1 s, the base's height goes from 0.268 to ")
    assert cause in line, line


def test_the_task_integrator_is_the_one_held_with():
    """The generated task may set implicitfast where the model says Euler (its servos' damping):
    the check runs the integrator training will."""
    model = _table(kp=800)
    model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    assert hold(model, "base", "implicitfast") == hold(_table(kp=800), "base")
