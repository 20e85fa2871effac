"""A robot model's numbers must be finite. MuJoCo loads `nan` and `inf` where a number goes (a
keyframe's qpos, a body's pos, a gain), warns about a NaN on stderr once per load, and the model
then steps into NaN states; new-task would carry the value into a task's target ranges. Both are
refused here in one line that names the place: in the file before MuJoCo reads it
(`refuse_non_finite_text`), and in the compiled model, where a task's edit_spec may have written
one (`refuse_non_finite_model`)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np

from robolearn.errors import UserError

NAME_ATTRIBUTES = frozenset({
    "name", "class", "childclass", "file", "prefix", "model", "content_type", "type", "objtype", "reftype",
    "mesh", "material", "texture", "hfield", "skin", "target", "objname", "refname", "joint", "joint1", "joint2",
    "body", "body1", "body2", "site", "site1", "site2", "geom", "geom1", "geom2", "tendon", "tendon1", "tendon2",
    "actuator", "sensor", "camera", "light", "slidersite", "cranksite", "link", "parent", "child", "filename",
})  # fmt: skip
"""Attributes that hold names, not numbers: a body named "inf" is not a number."""

MODEL_FIELDS = ("qpos0", "key_qpos", "key_qvel", "key_ctrl", "key_act", "key_mpos", "key_mquat", "body_pos", "body_quat",
                "body_mass", "body_inertia", "geom_size", "geom_pos", "jnt_range", "dof_damping", "dof_armature",
                "actuator_gainprm", "actuator_biasprm", "actuator_ctrlrange", "actuator_gear")  # fmt: skip
"""Compiled-model arrays where a non-finite value is always a mistake (unlimited ranges are 0, not inf)."""


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def refuse_non_finite_text(path: Path) -> None:
    """An attribute of the MJCF or URDF `path`, or of a file it includes, whose numbers include nan
    or inf: a UserError naming file, element and attribute. A file that does not parse as XML is
    left to MuJoCo, whose message says why."""
    stack, seen = [path], set()
    while stack:
        file = stack.pop()
        if file in seen or not file.is_file():
            continue
        seen.add(file)
        try:
            root = ET.parse(file).getroot()
        except (ET.ParseError, OSError, UnicodeDecodeError):
            continue
        for element in root.iter():
            if element.tag == "include" and element.get("file"):
                stack.append(file.parent / element.get("file"))
            if element.tag == "text":  # <custom><text data="..."/>: a string, whatever it says
                continue
            for attribute, value in element.attrib.items():
                if attribute in NAME_ATTRIBUTES or "n" not in value.lower():  # nan and inf both have an n
                    continue
                tokens = value.split()
                numbers = [_number(t) for t in tokens]
                if numbers and all(n is not None for n in numbers) and not all(math.isfinite(n) for n in numbers):
                    bad = next(t for t, n in zip(tokens, numbers) if not math.isfinite(n))
                    name = f' name="{element.get("name")}"' if element.get("name") else ""
                    shown = value if len(value) <= 60 else value[:57] + "..."
                    raise UserError(f'{file}: <{element.tag}{name}> {attribute}="{shown}" holds {bad}; valid: finite '
                                    "numbers (MuJoCo loads nan and inf, and the simulation diverges)")  # fmt: skip


def refuse_non_finite_model(model: mujoco.MjModel, path: Path) -> None:
    """A compiled model holding nan or inf in MODEL_FIELDS (e.g. a home keyframe an edit_spec wrote
    from a NaN constant): a UserError naming the field and where in it."""
    for field in MODEL_FIELDS:
        values = np.asarray(getattr(model, field))
        bad = np.argwhere(~np.isfinite(values))
        if len(bad):
            where = ", ".join(map(str, bad[0]))
            what = f"keyframe '{model.key(int(bad[0][0])).name or int(bad[0][0])}' " if field.startswith("key_") else ""
            raise UserError(f"{path.name}: the compiled model's {what}{field}[{where}] is {values[tuple(bad[0])]}; valid: "
                            "finite numbers (check the model and the task's edit_spec, e.g. robot.py's constants)")  # fmt: skip
