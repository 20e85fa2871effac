"""The robot model files `robolearn new-task --robot` reads and copies: the MJCF (or URDF) parsed and
compiled with one-line errors, the files an MJCF includes, the meshes a URDF names."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco

from robolearn.errors import UserError, one_line
from robolearn.model_files import model_files as shared_model_files
from robolearn.model_numbers import refuse_non_finite_model, refuse_non_finite_text
from robolearn.scaffold.plan import unique
from robolearn.scaffold.urdf_copy import mesh_suffix
from robolearn.scaffold.urdf_substitutions import expand_substitutions


def load_spec(path: Path) -> mujoco.MjSpec:
    refuse_non_finite_text(path)
    try:
        return mujoco.MjSpec.from_file(str(path))
    except Exception as exc:  # MuJoCo raises ValueError for a file it cannot parse
        raise UserError(f"cannot load robot model {path}: {one_line(exc)}") from None


def compile_spec(spec: mujoco.MjSpec, path: Path) -> mujoco.MjModel:
    try:
        model = spec.compile()
    except Exception as exc:
        raise UserError(f"cannot compile robot model {path}: {one_line(exc)}") from None
    refuse_non_finite_model(model, path)
    return model


def model_files(path: Path) -> list[Path]:
    """The MJCF and the files it includes and loads, relative to its folder (a URDF's meshes are
    gathered by `urdf_meshes` instead)."""
    load_spec(path)  # MuJoCo's own message for a file it cannot read
    return shared_model_files(path, "the task package")


def urdf_meshes(path: Path, within: str) -> dict[str, Path]:
    """The mesh files a URDF's `within` elements ('visual' or 'collision') name: each `filename` as
    written (`package://<pkg>/...`, looked up in the folders above it) and the file it is."""
    try:
        tree = parse_urdf(path)
    except (OSError, ET.ParseError) as exc:
        raise UserError(f"cannot read robot model {path}: {one_line(exc)}") from None
    expand_substitutions(tree, path)  # `$(find pkg)/meshes/...`
    names = {mesh.get("filename", "") for element in tree.getroot().iter(within) for mesh in element.iter("mesh")}
    return {name: _find_urdf_file(path, name) for name in sorted(names - {""})}


def parse_urdf(path: Path, comments: bool = False) -> ET.ElementTree:
    """A URDF's XML as MuJoCo and ROS read it: blank lines before the `<?xml` declaration and NUL bytes
    at the end (pybullet's humanoid.urdf) are no error there, so they are none here."""
    data = path.read_bytes().lstrip().rstrip(b"\x00 \t\r\n")
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)) if comments else None
    return ET.ElementTree(ET.fromstring(data, parser=parser))


def unique_file_names(files: list[Path]) -> dict[Path, str]:
    """A file name for each file, none two alike in their stems (MuJoCo names a URDF's meshes by the
    stem): `link1.stl` kept, another `link1.stl` (a visual mesh beside a collision one) made `link1_2.stl`."""
    taken: set[str] = set()
    return {file: unique(file.stem, taken) + mesh_suffix(file) for file in sorted(set(files))}


def _find_urdf_file(urdf: Path, name: str) -> Path:
    if name.startswith("file://"):
        candidates = [Path(name[len("file://"):])]
    elif name.startswith("package://"):
        rel = Path(name[len("package://"):])
        candidates = [parent / rel for parent in urdf.resolve().parents]  # <ws>/<pkg>/meshes/x.stl
        candidates += [parent / Path(*rel.parts[1:]) for parent in urdf.resolve().parents]  # the package's own folder
    else:
        candidates = [urdf.parent / name]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise UserError(f"{urdf.name} names mesh {name}, which is not found near {urdf.parent}")


INERTIA_ERRORS = {
    "mass and inertia of moving bodies must be larger than mjMINVAL": "a mass and moments of inertia above 0 on each link that moves",
    "inertia must have positive eigenvalues": "moments of inertia a rigid body has (positive definite)",
    "inertia must satisfy A + B >= C": "moments of inertia a rigid body has (each principal moment at most the sum of the other two)",
}
"""MuJoCo's refusals of a body's mass or inertia, and what a valid one is."""


def inertia_hint(path: Path, message: str) -> str | None:
    """Where MuJoCo refused a URDF link's mass or inertia (INERTIA_ERRORS): what the URDF says of
    that link, at which line (laikago_toes.urdf's hip motors: 1.095 kg, every moment 0), and how to
    mend it; None for another message."""
    error = next((valid for said, valid in INERTIA_ERRORS.items() if said in message), None)
    named = re.search(r"Element name '([^']+)'", message)
    if error is None or named is None:
        return None
    name = named.group(1)
    text = path.read_text(errors="replace")
    at = re.search(rf"<link\s+name\s*=\s*[\"']{re.escape(name)}[\"']", text)
    where = f"link {name} (line {text[:at.start()].count(chr(10)) + 1})" if at else f"link {name}"
    link = next((link for link in parse_urdf(path).getroot().iter("link") if link.get("name") == name), None)
    inertial = link.find("inertial") if link is not None else None
    if inertial is None:
        said = "has no <inertial>"
    else:
        mass, inertia = inertial.find("mass"), inertial.find("inertia")
        keys = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
        moments = " ".join(f"{k}={inertia.get(k, '0')}" for k in keys) if inertia is not None else "no <inertia>"
        said = f"has mass {mass.get('value', '?') if mass is not None else '?'} and {moments}"
    return (f"{where} {said}; valid: {error}: the link's real ones, or <mujoco><compiler inertiafromgeom=\"true\"/>"
            "</mujoco> in the URDF for MuJoCo to compute them from its geometry")
