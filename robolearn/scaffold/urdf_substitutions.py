"""xacro substitutions left in a URDF (`$(optenv VAR default)`, `$(find pkg)`, `$(arg name)`): a URDF
written by a half-run xacro, or by hand from a xacro file, as pybullet's Husky is. MuJoCo reads
them as numbers and fails on "bad format in attribute 'xyz'"; new-task reads the ones whose value
needs no xacro run (the environment's, ROS's package folders) and names the line of any other."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from robolearn.errors import UserError
from robolearn.scaffold.plan import short

SUBSTITUTION = re.compile(r"\$\((\w+)(?:\s+([^)]*?))?\s*\)")
"""`$(command args)`: xacro's and roslaunch's substitution args."""
EXPRESSION = re.compile(r"\$\{[^}]*\}")
"""`${expression}`: a xacro property or expression."""


def expand_substitutions(tree: ET.ElementTree, path: Path) -> str | None:
    """Replace, in every attribute and text of the URDF, `$(optenv VAR default)` by VAR's value or
    the default (what xacro does), `$(env VAR)` by VAR's value, and `$(find pkg)` by `package://pkg`
    (which the mesh lookup resolves in the folders above the URDF). Any other substitution, or one
    of those that has no value, is a UserError naming its line. Returns the report line, None where
    there were none."""
    used: dict[str, str] = {}

    def value(match: re.Match[str]) -> str:
        command, args = match.group(1), (match.group(2) or "").split()
        if command == "find" and len(args) == 1:
            used[match.group(0)] = f"package://{args[0]}"
        elif command == "optenv" and args:
            used[match.group(0)] = os.environ.get(args[0], " ".join(args[1:]))
        elif command == "env" and len(args) == 1 and args[0] in os.environ:
            used[match.group(0)] = os.environ[args[0]]
        else:
            _refuse(path, match.group(0), f"environment variable {args[0]} is not set" if command == "env" and args else None)
        return used[match.group(0)]

    def expanded(text: str) -> str:
        if "$" not in text:
            return text
        leftover = EXPRESSION.search(text)
        if leftover:
            _refuse(path, leftover.group(0), None)
        return SUBSTITUTION.sub(value, text)

    for element in tree.getroot().iter():
        if not isinstance(element.tag, str):  # a comment
            continue
        for key, text in element.attrib.items():
            element.set(key, expanded(text))
        if element.text:
            element.text = expanded(element.text)
    if not used:
        return None
    shown = short([f"{name} -> {value!r}" for name, value in used.items()], 4)
    return (f"xacro substitutions left in the URDF: {shown} -> read in the copy (an optenv's default where its "
            "variable is not set, a find as the package:// folder above the URDF)")


def _refuse(path: Path, what: str, why: str | None) -> None:
    text = path.read_text(errors="replace")
    line = text[:text.find(what)].count("\n") + 1 if what in text else None
    where = f"{path.name} line {line}" if line else path.name
    raise UserError(f"{where}: {what} is a xacro substitution left unexpanded{f' ({why})' if why else ''}; valid: the "
                    f"URDF xacro writes: run `xacro {path.name} > robot.urdf` (pip install xacro) and pass robot.urdf")
