"""The files a robot model is made of: what a bundle or a generated task package must carry.

A model is its MJCF (or URDF), the files its `<include>` elements pull in, and the mesh, skin,
heightfield and texture files it loads (found under the spec's meshdir / texturedir).
"""

from __future__ import annotations

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


def model_files(asset: Path, carrier: str) -> list[Path]:
    """The MJCF, the files it includes and the files it loads, relative to the MJCF's folder; a
    file outside that folder is a UserError (`carrier`, e.g. "a bundle", carries only files below it)."""
    root = asset.parent
    found, pending = [Path(asset.name)], [asset]
    while pending:  # <include file=...> is resolved relative to the main model's folder
        for element in ET.parse(pending.pop()).getroot().iter("include"):
            found.append(Path(element.get("file", "")))
            pending.append(root / found[-1])
    spec = mujoco.MjSpec.from_file(str(asset))
    found += [Path(getattr(spec, attr) or "") / item.file for item, attr, _ in loaded_files(spec)]
    for rel in found:
        if rel.is_absolute() or ".." in rel.parts or not (root / rel).is_file():
            raise UserError(f"model file {rel} is not inside {root}: {carrier} carries only the files below the "
                            "model's folder; move them there")  # fmt: skip
    return sorted(set(found))
