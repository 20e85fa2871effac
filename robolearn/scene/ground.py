"""A ground plane for a robot model that has none (a robot description ships without a floor)."""

from __future__ import annotations

import mujoco


def add_floor(spec: mujoco.MjSpec, name: str = "floor") -> mujoco.MjsGeom:
    """A plane `name` on the world body that collides with every geom that collides with anything:
    its contype/conaffinity are set from the model's geoms, so a model whose default class turns
    collisions off one way (contype 0, conaffinity 1, as many robot descriptions do) still stands on it."""
    floor = spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05], rgba=[0.3, 0.35, 0.4, 1])
    floor.contype = floor.conaffinity = 0
    for geom in spec.geoms:
        if geom.name != name:
            floor.contype |= geom.conaffinity
            floor.conaffinity |= geom.contype
    return floor
