"""The files a robot model is made of: what a bundle or a generated task package must carry.

A model is its MJCF (or URDF), the files its `<include>` elements pull in, and the mesh, skin,
heightfield and texture files it loads (found under the spec's meshdir / texturedir). A model
whose files all lie below its folder is carried as it is; one that reaches outside it (a ROS
package's `../meshes`, a benchmark suite's shared `../scene` and `../stls` folders) is carried as
its compiled MJCF, includes inlined, with the files it loads copied next to it (`write_compiled`).
"""

from __future__ import annotations

import os
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import mujoco

from robolearn.errors import UserError


def loaded_files(spec: mujoco.MjSpec) -> Iterator[tuple[object, str, str]]:
    """(item, the spec attribute naming its folder, what it is) for every mesh, skin, heightfield and
    texture of the spec that is loaded from a file (MuJoCo looks for skins under meshdir too)."""
    for items, attr, what in ((spec.meshes, "meshdir", "mesh"), (spec.skins, "meshdir", "skin"),
                              (spec.hfields, "meshdir", "heightfield"), (spec.textures, "texturedir", "texture")):  # fmt: skip
        for item in items:
            if item.file:
                yield item, attr, what


def _referenced(asset: Path) -> list[Path]:
    """The MJCF, the files it includes and the files it loads, as the model names them (relative to
    the MJCF's folder; unchecked)."""
    root = asset.parent
    found, pending = [Path(asset.name)], [asset]
    while pending:  # <include file=...> is resolved relative to the main model's folder
        for element in ET.parse(pending.pop()).getroot().iter("include"):
            found.append(Path(element.get("file", "")))
            pending.append(root / found[-1])
    spec = mujoco.MjSpec.from_file(str(asset))
    found += [Path(getattr(spec, attr) or "") / item.file for item, attr, _ in loaded_files(spec)]
    return found


def outside_files(asset: Path) -> list[Path]:
    """The files the model names outside its own folder (absolute, or through `..`)."""
    return [rel for rel in _referenced(asset) if rel.is_absolute() or ".." in rel.parts]


def model_files(asset: Path, carrier: str) -> list[Path]:
    """The MJCF, the files it includes and the files it loads, relative to the MJCF's folder; a
    file outside that folder is a UserError (`carrier`, e.g. "a bundle", carries only files below it)."""
    root = asset.parent
    found = _referenced(asset)
    for rel in found:
        if rel.is_absolute() or ".." in rel.parts or not (root / rel).is_file():
            raise UserError(f"model file {rel} is not inside {root}: {carrier} carries only the files below the "
                            "model's folder; move them there")  # fmt: skip
    return sorted(set(found))


def write_compiled(asset: Path, dest: Path, name: str, edit=None, reserved: tuple[str, ...] = ()) -> None:
    """The model as MuJoCo compiles it (`edit` applied to its spec first), written as MJCF `name` in
    `dest` with the mesh/skin/heightfield/texture files it loads copied next to it and its paths
    pointing at them: a file below the model's folder keeps its path there; one outside it goes to
    meshes/ (or textures/) with its path below the outside files' common folder, so two files of
    one name in different folders (visual/ and collision/ meshes) stay apart. `reserved`: names
    other files in `dest` take."""
    spec = mujoco.MjSpec.from_file(str(asset))
    if edit is not None:
        edit(spec)
    spec.compile()
    root = asset.parent.resolve()
    items = []
    for item, attr, what in loaded_files(spec):
        folder = getattr(spec, attr) or ""
        source = (asset.parent / folder / (Path(item.file).name if spec.strippath else item.file)).resolve()
        items.append((item, source, "textures" if what == "texture" else "meshes"))
    outside: dict[str, list[str]] = {}
    for _, source, kind in items:
        if not source.is_relative_to(root):
            outside.setdefault(kind, []).append(str(source.parent))
    common = {kind: Path(os.path.commonpath(parents)) for kind, parents in outside.items()}
    placed: dict[Path, object] = {Path(n): "a file written there" for n in (name, *reserved)}
    for item, source, kind in items:
        rel = source.relative_to(root) if source.is_relative_to(root) else Path(kind) / source.relative_to(common[kind])
        if placed.setdefault(rel, source) != source:
            raise UserError(f"{source} would be {rel} in {dest}, where {placed[rel]} is; rename one of them")
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest / rel)
        item.file = rel.as_posix()
    spec.meshdir, spec.texturedir, spec.strippath = "", "", False  # every path is now relative to the MJCF
    spec.modelfiledir = f"{dest}{os.sep}"  # to_xml compiles again: from the copies
    (dest / name).write_text(_balanced(spec.to_xml(), spec))


def _balanced(xml: str, spec: mujoco.MjSpec) -> str:
    """`xml` with the compiler's balanceinertia kept: MuJoCo's writer leaves it out, and the explicit
    inertias it writes at 6 digits may again miss A + B >= C by 1e-10 (an Allegro hand URDF: the
    bundle did not load in sim2sim)."""
    if not spec.compiler.balanceinertia or re.search(r"<compiler[^>]*\bbalanceinertia=", xml):
        return xml
    if re.search(r"<compiler\b", xml):
        return re.sub(r"<compiler\b", '<compiler balanceinertia="true"', xml, count=1)
    return re.sub(r"(<mujoco\b[^>]*>)", r'\1\n  <compiler balanceinertia="true"/>', xml, count=1)
