"""A URDF copied into a new task package (robolearn new-task --robot robot.urdf): the URDF with
what urdf_copy.py and urdf_substitutions.py change, its meshes under meshes/ with names of their
own (ASCII STL written as binary STL, COLLADA as OBJ), and MuJoCo's URDF extension set so the copy
compiles as the robot: the meshes' folder, visual meshes kept (where they read), links as bodies."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import mujoco

from robolearn.errors import UserError, one_line
from robolearn.scaffold.plan import short
from robolearn.scaffold.robot_files import parse_urdf, unique_file_names, urdf_meshes
from robolearn.scaffold.urdf_copy import collide_visuals, copy_mesh, drop_footprint, endless_revolutes, has_collisions
from robolearn.scaffold.urdf_inertia import massless_links, mend_inertias, urdf_compiler, weightless_links
from robolearn.scaffold.urdf_substitutions import expand_substitutions


def copy_urdf(source: Path, package: Path, legged: bool) -> tuple[Path, list[str]]:
    """Copy a URDF and its meshes into meshes/, each under a name of its own (a ROS package's
    meshes/visual/link1.stl and meshes/collision/link1.stl become link1.stl and link1_2.stl, and
    the copy's `filename`s say so), and tell MuJoCo where they are in its URDF extension:
    `<mujoco><compiler meshdir="meshes" discardvisual="false" fusestatic="false">`. The visual
    meshes are kept, as geoms that collide with nothing and that videos and viewers draw, unless
    the URDF says `discardvisual="true"` itself or they cannot be read (then they are left out, and
    the returned note says so); links without joints (the base link) stay bodies. Returns the copy
    and the report's lines on what the copy changed (urdf_copy.py: ASCII STL meshes made binary STL,
    COLLADA ones OBJ, for a legged robot a base_footprint root left out)."""
    visual = urdf_meshes(source, "visual")
    collision = urdf_meshes(source, "collision") if has_collisions(parse_urdf(source)) else visual  # collide_visuals
    if urdf_compiler(parse_urdf(source).getroot()).get("discardvisual") == "true" or not visual:
        target, _, notes = _write_urdf(source, package, collision, None, legged)
        return target, notes
    try:
        target, copies, notes = _write_urdf(source, package, {**visual, **collision}, "false", legged)
    except UserError as exc:  # a COLLADA visual mesh that does not convert (a collision one: below, the error)
        reason, copies = str(exc), {}
    else:
        try:
            mujoco.MjModel.from_xml_path(str(target))
            return target, notes
        except Exception as exc:  # MuJoCo's own reason goes into the note
            reason = re.sub(r"'[^']*/meshes/([^'/]*)'", r"'\1'", one_line(exc))  # the file, not the package's folder
    for file, name in copies.items():
        reason = reason.replace(f"'{name}'", f"'{file.name}'")  # the user's file name, not the copy's
    shutil.rmtree(package / "meshes", ignore_errors=True)
    target, _, notes = _write_urdf(source, package, collision, "true", legged)
    return target, [*notes, f"visual meshes: MuJoCo cannot load them ({reason}) -> left out (discardvisual=\"true\"); "
                            "videos and viewers draw the collision geometry"]  # fmt: skip


def _write_urdf(source: Path, package: Path, meshes: dict[str, Path], discard_visual: str | None,
                legged: bool) -> tuple[Path, dict[Path, str], list[str]]:  # fmt: skip
    """The URDF `source` written into `package` with `meshes` (its `filename`s and their files) copied
    into meshes/ under names of their own, and its compiler element set (`discard_visual`: None
    keeps the URDF's own); returns the copy, each mesh file's name there and the report's lines on
    what changed (urdf_copy.py)."""
    tree = parse_urdf(source, comments=True)  # keep the comments
    notes = [note] if (note := expand_substitutions(tree, source)) else []
    notes += [note] if legged and (note := drop_footprint(tree)) else []
    notes += [note] if (note := endless_revolutes(tree)) else []
    notes += [note] if (note := collide_visuals(tree)) else []
    notes += [note] if (note := massless_links(tree, legged)) else []
    notes += [note] if (note := weightless_links(tree, legged)) else []
    notes += mend_inertias(tree)
    compiler = urdf_compiler(tree.getroot())
    compiler.set("fusestatic", "false")  # links without joints stay bodies: the base link keeps its name
    if discard_visual is not None:
        compiler.set("discardvisual", discard_visual)
    names = unique_file_names(list(meshes.values()))
    if meshes:
        (package / "meshes").mkdir(exist_ok=True)
        compiler.set("meshdir", "meshes")
        compiler.attrib.pop("strippath", None)  # the names are the copies' own
    converted = {file: copy_mesh(file, package / "meshes" / name) for file, name in names.items()}
    ascii_stl = [f"{f.parent.name}/{f.name}" for f, kind in converted.items() if kind == "ASCII STL"]
    if ascii_stl:
        notes.append(f"meshes: {short(ascii_stl)} are ASCII STL, which MuJoCo cannot read -> written "
                     "as binary STL in the package's meshes/")  # fmt: skip
    collada = [f"{f.parent.name}/{f.name}" for f, kind in converted.items() if kind == "COLLADA"]
    if collada:
        notes.append(f"meshes: {short(collada)} {'is' if len(collada) == 1 else 'are'} COLLADA (.dae), which MuJoCo cannot "
                     "read -> their triangles written as OBJ in the package's meshes/ (scaled by their <unit>, "
                     "placed by their nodes; <up_axis> not applied, as RViz and Gazebo do not; colours and textures "
                     "left out)")  # fmt: skip
    renamed = [f"{file.parent.name}/{file.name} -> {name}" for file, name in names.items()
               if Path(name).stem != file.stem]  # fmt: skip
    if renamed:
        notes.append(f"meshes: two files share a name, so the copies in meshes/ are renamed: {short(renamed)}")
    for mesh in tree.getroot().iter("mesh"):
        if mesh.get("filename") in meshes:
            mesh.set("filename", names[meshes[mesh.get("filename")]])
    target = package / source.name
    tree.write(target, encoding="utf-8")
    return target, names, notes
