"""Put a generated `Terrain` into a MuJoCo model as an hfield geom.

MuJoCo rescales hfield data to [0, 1] at compile time and multiplies it by the hfield's
elevation, so we hand it data already normalised, set elevation = max - min and move the geom
down to the minimum height: the compiled surface then equals `terrain.heights` at every sample.
`MjSpec.to_xml()` writes the data as the hfield's `elevation` attribute, so an exported model
reloads with the same ground.
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


def add_terrain(spec: mujoco.MjSpec, terrain: Terrain, name: str = "terrain",
                remove_geoms: Sequence[str] | None = ("floor",)) -> None:
    """Add hfield asset `name` and a worldbody geom `name` showing `terrain`, centred at (0, 0).

    Geoms named in `remove_geoms` are deleted (missing names are ignored); the first one found
    lends its contact settings to the terrain geom so friction and collision filters carry over.
    """
    if spec.hfield(name) is not None or spec.geom(name) is not None:
        raise UserError(f"cannot add terrain '{name}': the model already has an hfield or geom of that name; "
                        f"valid: a name not used in the model")
    heights = np.asarray(terrain.heights, np.float64)
    nrow, ncol = heights.shape
    low, high = float(heights.min()), float(heights.max())
    elevation = max(high - low, _MIN_ELEVATION)
    normalised = (heights - low) / elevation  # all zeros when flat, so the surface sits at `low`
    # Half-extents from the sample counts: spacing is exactly `resolution` along both axes.
    rx, ry = (ncol - 1) * terrain.resolution / 2, (nrow - 1) * terrain.resolution / 2
    spec.add_hfield(name=name, size=[rx, ry, elevation, _BASE_DEPTH], nrow=nrow, ncol=ncol,
                    userdata=normalised.ravel().tolist())
    geom = spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname=name,
                                   pos=[0.0, 0.0, low])
    donor = None
    for old_name in remove_geoms or ():
        old = spec.geom(old_name)
        if old is None:
            continue
        if donor is None:
            for attr in _COPIED:
                setattr(geom, attr, getattr(old, attr))
            donor = old_name
        spec.delete(old)
