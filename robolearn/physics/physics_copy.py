"""A physics-only copy of a model: what the CPU backend's per-environment models are made of.

Once a model field is randomized, the CPU backend steps one MjModel per environment. In a robot
description most of an MjModel is what only the renderer reads: visual meshes with their
bounding-volume trees, and textures (mjlab's Go1: 31 of its 35 MiB; 1,024 copies would need 35 GiB).
`physics_copy` compiles the same spec without them and keeps every index:

- a visual-only mesh geom (contype = conaffinity = 0, in no explicit contact pair, read by no sensor,
  no fluid ellipsoid) becomes a sphere with the mesh geom's compiled position, orientation and
  bounding radius, so the model statistics MuJoCo derives from geoms (dof_length, extent) agree;
- every body's inertia is written explicitly as the full model computed it (the meshes no longer
  give it);
- meshes no remaining geom uses, and all textures, are deleted.

The copy is used only where it is the same model in everything else: every array and option of
the two compiled models is compared, and anything but the left-out data and the replaced geoms'
own shape rows differing (an edit that does not compile the same twice, ...) returns None with the
reason: the caller then copies the full model.
A rangefinder sees every geom, visual ones too: a model with one keeps its visual geoms (only its
textures are left out). A compiler `settotalmass` is not applied again to the explicit masses.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable

import mujoco
import numpy as np

CopyMaker = Callable[[], tuple[mujoco.MjModel | None, str]]
"""What a backend calls for the model to copy per environment: (the physics-only model, what it left
out), or (None, why there is none) (Scene.physics_copy)."""

_GEOM = mujoco.mjtObj.mjOBJ_GEOM
_MESH = mujoco.mjtGeom.mjGEOM_MESH

# Arrays whose size is that of the left-out data (they differ in shape, or index into it).
_LEFT_OUT_PREFIXES = ("mesh_", "tex_", "oct_", "name_", "names", "paths", "bvh_")
_LEFT_OUT_ARRAYS = frozenset({"mat_texid", "geom_dataid", "body_bvhadr"})  # geom_dataid: _meshes_differ
_PATH_ADDRESSES = "_pathadr"  # where an asset's file name starts in `paths` (the left-out files' names go)
_LEFT_OUT_SIZES = ("nmesh", "ntex", "noct", "npolygonmax", "nbvh", "nnames", "npaths", "nbuffer", "signature")
_STAT_FIELDS = ("center", "extent", "meaninertia", "meanmass", "meansize")
# The replaced geoms' own rows of these may differ (a sphere where a mesh was).
_REPLACED_ROWS = frozenset({"geom_type", "geom_size", "geom_aabb"})


def physics_copy(spec: mujoco.MjSpec, nominal: mujoco.MjModel) -> tuple[mujoco.MjModel | None, str]:
    """(the physics-only model, what it left out), or (None, why not) where there is nothing to
    leave out or the copy would not simulate exactly like `nominal` (compiled from `spec` as is).
    `spec` is edited in place."""
    rays = bool(spec.sensors) and any(s.type == mujoco.mjtSensor.mjSENS_RANGEFINDER for s in spec.sensors)
    replaced = set() if rays else _visual_mesh_geoms(nominal)  # a rangefinder's rays see visual geoms too
    if not replaced and not nominal.ntex:
        return None, "no visual meshes or textures to leave out" + (" (visual geoms stay: the model has a rangefinder)" if rays else "")
    try:
        with warnings.catch_warnings():  # what compiling this spec warns of was said when `nominal` was compiled
            warnings.simplefilter("ignore")
            spec.compile()  # numbers the spec's geoms as the model does
    except ValueError as exc:
        return None, f"the spec does not compile ({exc})"
    _explicit_inertia(spec, nominal)
    kept_meshes = set()
    for geom in spec.geoms:
        if geom.id in replaced:
            geom.type, geom.meshname = mujoco.mjtGeom.mjGEOM_SPHERE, ""
            geom.size = (nominal.geom_rbound[geom.id], 0, 0)
        elif geom.type == _MESH:
            kept_meshes.add(geom.meshname)
    for mesh in list(spec.meshes):
        if mesh.name not in kept_meshes:
            spec.delete(mesh)
    for material in spec.materials:
        material.textures = [""] * len(material.textures)
    for texture in list(spec.textures):
        spec.delete(texture)
    try:
        stripped = spec.compile()
    except ValueError as exc:
        return None, f"the copy does not compile ({exc})"
    _place_spheres(stripped, nominal, replaced)
    difference = _difference(stripped, nominal, replaced) or _difference(*_set_const(stripped, nominal), replaced)
    if difference is not None:
        return None, difference
    saved = mujoco.mj_sizeModel(nominal) - mujoco.mj_sizeModel(stripped)
    return stripped, f"{len(replaced)} visual mesh geoms, {nominal.ntex} textures ({saved / 2**20:.1f} MiB)"


def _visual_mesh_geoms(model: mujoco.MjModel) -> set[int]:
    keep = set(model.pair_geom1) | set(model.pair_geom2)
    for objtype, objid in ((model.sensor_objtype, model.sensor_objid), (model.sensor_reftype, model.sensor_refid)):
        keep |= set(objid[objtype == _GEOM])
    visual = (model.geom_type == _MESH) & (model.geom_contype == 0) & (model.geom_conaffinity == 0)
    visual &= model.geom_fluid[:, 0] == 0
    return {int(g) for g in np.flatnonzero(visual) if g not in keep}


def _explicit_inertia(spec: mujoco.MjSpec, nominal: mujoco.MjModel) -> None:
    """Every body's mass and inertia as `nominal` computed them, so no geom needs to give them."""
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.compiler.settotalmass = -1  # the masses below are already scaled to the model's total
    for body in spec.bodies:
        b = body.id  # numbered by the compile before
        if b == 0:
            continue
        body.explicitinertial = True
        body.mass, body.ipos = nominal.body_mass[b], nominal.body_ipos[b]
        body.iquat, body.inertia = nominal.body_iquat[b], nominal.body_inertia[b]
        body.fullinertia = [np.nan] * 6


def _place_spheres(stripped: mujoco.MjModel, nominal: mujoco.MjModel, replaced: set[int]) -> None:
    """Each replacement sphere where the mesh geom was, as large as its bounding sphere; then the
    constants MuJoCo derives from geom extents again."""
    for g in replaced:
        radius = nominal.geom_rbound[g]
        stripped.geom_pos[g], stripped.geom_quat[g] = nominal.geom_pos[g], nominal.geom_quat[g]
        stripped.geom_sameframe[g], stripped.geom_rbound[g] = nominal.geom_sameframe[g], radius
        stripped.geom_size[g] = (radius, 0, 0)
        stripped.geom_aabb[g] = (0, 0, 0, radius, radius, radius)
    mujoco.mj_setConst(stripped, mujoco.MjData(stripped))
    for field in _STAT_FIELDS:  # the compiler's statistics, not mj_setConst's
        setattr(stripped.stat, field, getattr(nominal.stat, field))


def _set_const(stripped: mujoco.MjModel, nominal: mujoco.MjModel) -> tuple[mujoco.MjModel, mujoco.MjModel]:
    """Both after mj_setConst, as a randomized mass or inertia leaves them: the constants it
    derives must agree too."""
    pair = (copy.copy(stripped), copy.copy(nominal))
    for model in pair:
        mujoco.mj_setConst(model, mujoco.MjData(model))
    return pair


def _difference(stripped: mujoco.MjModel, nominal: mujoco.MjModel, replaced: set[int]) -> str | None:
    """The first way in which `copy` would simulate differently from `nominal`, or None."""
    others = np.setdiff1d(np.arange(nominal.ngeom), sorted(replaced))
    for name in dir(nominal):
        if name.startswith("_") or name.startswith(_LEFT_OUT_PREFIXES) or name.endswith(_PATH_ADDRESSES) or name in _LEFT_OUT_ARRAYS:
            continue
        a, b = getattr(nominal, name), getattr(stripped, name)
        if isinstance(a, np.ndarray):
            if name in _REPLACED_ROWS:
                a, b = a[others], b[others]
            if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
                return f"{name} differs"
        elif isinstance(a, (int, float)) and not name.startswith(_LEFT_OUT_SIZES) and a != b:
            return f"{name} differs"
    for struct in ("opt", "stat"):
        if _fields(getattr(nominal, struct)) != _fields(getattr(stripped, struct)):
            return f"{struct} differs"
    return _meshes_differ(stripped, nominal, others) or _body_trees_differ(stripped, nominal)


def _meshes_differ(stripped: mujoco.MjModel, nominal: mujoco.MjModel, others: np.ndarray) -> str | None:
    """The geoms that keep their data (height fields, colliding meshes) must point at the same data."""
    for g in others:
        a, b = nominal.geom_dataid[g], stripped.geom_dataid[g]
        if nominal.geom_type[g] != _MESH or a < 0:
            if a != b:
                return f"geom {g}'s data differs"
            continue
        vertices = [m.mesh_vert[m.mesh_vertadr[i]:m.mesh_vertadr[i] + m.mesh_vertnum[i]] for m, i in ((nominal, a), (stripped, b))]
        if b < 0 or not np.array_equal(*vertices):
            return f"geom {g}'s mesh differs"
    return None


def _fields(struct) -> list:
    return [np.asarray(getattr(struct, f)).tolist() for f in dir(struct) if not f.startswith("_")
            and not callable(getattr(struct, f))]  # fmt: skip


def _body_trees_differ(stripped: mujoco.MjModel, nominal: mujoco.MjModel) -> str | None:
    """The bodies' trees of geom bounding boxes (collision midphase) must be node for node equal."""
    for b in range(nominal.nbody):
        n = nominal.body_bvhnum[b]
        if n != stripped.body_bvhnum[b]:
            return f"body {b}'s bounding-volume tree differs"
        i, j = nominal.body_bvhadr[b], stripped.body_bvhadr[b]
        for field in ("bvh_aabb", "bvh_child", "bvh_nodeid", "bvh_depth"):
            if not np.array_equal(getattr(nominal, field)[i:i + n], getattr(stripped, field)[j:j + n]):
                return f"body {b}'s bounding-volume tree differs"
    return None
