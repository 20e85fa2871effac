"""Put a generated `Terrain` into a MuJoCo model as hfield geoms.

MuJoCo rescales hfield data to [0, 1] at compile time and multiplies it by the hfield's
elevation, so we hand it data already normalised, set elevation = max - min and move the geom
down to the minimum height: the compiled surface then equals `terrain.heights` at every sample.
`MjSpec.to_xml()` writes the data as the hfield's `elevation` attribute, so an exported model
reloads with the same ground.

A field larger than `BLOCK_SIZE` is cut into blocks, one hfield geom each, centred on itself;
neighbouring blocks share their edge samples, so the surface is the same triangles as one field's.
The reason is MuJoCo Warp: its hfield collision runs GJK/EPA in the hfield's own frame, in
float32, and far from the frame's origin it returns wrong contacts (a foot resting on flat ground
80 m from the centre of quadruped_rough's field got a second contact 3.7 m away, 7.9 m deep, and
the leg a joint speed of 860 rad/s; the same foot on an 8 m field centred near it, none).
"""

from __future__ import annotations

from typing import Sequence

import mujoco
import numpy as np

from robolearn.errors import UserError
from robolearn.terrain.generator import Terrain

# Contact and look of a removed floor that the terrain takes over; the material is left out
# because a floor's material is usually a plane-sized texture that does not suit an hfield.
_COPIED = ("contype", "conaffinity", "condim", "priority", "friction", "solref", "solimp", "solmix",
           "margin", "gap", "group", "rgba")
_MIN_ELEVATION = 1e-6  # MuJoCo wants a positive elevation even for an all-flat field
_BASE_DEPTH = 1.0  # m of solid box under the lowest point, so nothing tunnels through thin spots
BLOCK_SIZE = 16.0
"""Largest side (m) of one hfield geom: points of a block are within 8 m of its centre."""


def terrain_blocks(terrain: Terrain, name: str = "terrain", block_size: float = BLOCK_SIZE) -> list[tuple]:
    """(hfield name, row slice, column slice) of each block of `terrain.heights`; one block keeps
    `name`, several are `name_<row>_<col>`. The slices overlap by one sample at shared edges."""
    ny, nx = terrain.heights.shape
    step = max(1, int(round(block_size / terrain.resolution)))

    def spans(n: int) -> list[slice]:
        return [slice(s, min(s + step, n - 1) + 1) for s in range(0, n - 1, step)]

    rows, cols = spans(ny), spans(nx)
    if len(rows) == len(cols) == 1:
        return [(name, rows[0], cols[0])]
    return [(f"{name}_{r}_{c}", rs, cs) for r, rs in enumerate(rows) for c, cs in enumerate(cols)]


def add_terrain(spec: mujoco.MjSpec, terrain: Terrain, name: str = "terrain",
                remove_geoms: Sequence[str | mujoco.MjsGeom] | None = ("floor",), block_size: float = BLOCK_SIZE) -> None:
    """Add the hfield assets and worldbody geoms showing `terrain`, centred at (0, 0), named as
    `terrain_blocks` says.

    The geoms in `remove_geoms` (names, missing ones ignored, or the geoms themselves: the scene
    passes every level ground of the world, scene/ground.py) are deleted; the first one found lends
    its contact settings to the terrain geoms so friction and collision filters carry over.
    """
    blocks = terrain_blocks(terrain, name, block_size)
    for block, _, _ in blocks:
        if spec.hfield(block) is not None or spec.geom(block) is not None:
            raise UserError(f"cannot add terrain '{block}': the model already has an hfield or geom of that name; "
                            f"valid: a name not used in the model")
    heights = np.asarray(terrain.heights, np.float64)
    geoms = [_add_block(spec, block, heights[rows, cols], terrain, rows, cols) for block, rows, cols in blocks]
    donor = None
    found = [spec.geom(g) if isinstance(g, str) else g for g in remove_geoms or ()]
    for old in dict.fromkeys(g for g in found if g is not None):  # each once, in order
        if donor is None:
            for geom in geoms:
                for attr in _COPIED:
                    setattr(geom, attr, getattr(old, attr))
            donor = old.name or "unnamed ground"
        spec.delete(old)


def _add_block(spec: mujoco.MjSpec, name: str, heights: np.ndarray, terrain: Terrain, rows: slice, cols: slice):
    nrow, ncol = heights.shape
    low, high = float(heights.min()), float(heights.max())
    elevation = max(high - low, _MIN_ELEVATION)
    normalised = (heights - low) / elevation  # all zeros when flat, so the surface sits at `low`
    # Half-extents from the sample counts: spacing is exactly `resolution` along both axes.
    res = terrain.resolution
    rx, ry = (ncol - 1) * res / 2, (nrow - 1) * res / 2
    cx = -terrain.size_x / 2 + (cols.start + (ncol - 1) / 2) * res  # the block's centre in the world
    cy = -terrain.size_y / 2 + (rows.start + (nrow - 1) / 2) * res
    spec.add_hfield(name=name, size=[rx, ry, elevation, _BASE_DEPTH], nrow=nrow, ncol=ncol,
                    userdata=normalised.ravel().tolist())
    return spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname=name, pos=[cx, cy, low])
