"""Name -> index lookups in an MjModel, with errors that list the valid names."""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import torch

from robolearn.errors import UserError
from robolearn.physics.base import RANDOMIZABLE_FIELDS, check_field, model_attr

_KIND = {
    mujoco.mjtObj.mjOBJ_BODY: ("body", "nbody"),
    mujoco.mjtObj.mjOBJ_GEOM: ("geom", "ngeom"),
    mujoco.mjtObj.mjOBJ_JOINT: ("joint", "njnt"),
    mujoco.mjtObj.mjOBJ_ACTUATOR: ("actuator", "nu"),
    mujoco.mjtObj.mjOBJ_SENSOR: ("sensor", "nsensor"),
}


def names(model: mujoco.MjModel, objtype: mujoco.mjtObj) -> list[str]:
    kind, count = _KIND[objtype]
    return [mujoco.mj_id2name(model, objtype, i) or f"<unnamed {kind} {i}>" for i in range(getattr(model, count))]


def entity_ids(model: mujoco.MjModel, objtype: mujoco.mjtObj, wanted: Sequence[str] | None) -> list[int]:
    """Ids of the named entities, in the order given (each once); None means all of them."""
    kind, count = _KIND[objtype]
    if wanted is None:
        return list(range(getattr(model, count)))
    twice = next((name for k, name in enumerate(wanted) if name in wanted[:k]), None)
    if twice is not None:  # an actuator twice would be two policy outputs for one motor, a joint counted twice
        raise UserError(f"{kind} '{twice}' is named twice in [{', '.join(map(str, wanted))}]; valid: each {kind} once")
    ids = []
    for name in wanted:
        i = mujoco.mj_name2id(model, objtype, name)
        if i < 0:
            valid = names(model, objtype)
            raise UserError(f"no {kind} named '{name}' in the model; "
                            + (f"valid: {', '.join(valid)}" if valid else f"it has no {kind}s"))  # fmt: skip
        ids.append(i)
    return ids


_ONE_DOF = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


def single_dof_joint_ids(model: mujoco.MjModel, wanted: Sequence[str] | None) -> list[int]:
    """Ids of the named hinge/slide joints; None means every such joint, in model order."""
    if wanted is None:
        return [j for j in range(model.njnt) if int(model.jnt_type[j]) in _ONE_DOF]
    ids = entity_ids(model, mujoco.mjtObj.mjOBJ_JOINT, wanted)
    for j, name in zip(ids, wanted):
        if int(model.jnt_type[j]) not in _ONE_DOF:
            raise UserError(f"joint '{name}' is not a hinge or slide joint")
    return ids


def single_dof_joints(model: mujoco.MjModel, wanted: Sequence[str] | None) -> tuple[list[int], list[int]]:
    """(qpos addresses, dof addresses) of hinge/slide joints; None means every such joint."""
    ids = single_dof_joint_ids(model, wanted)
    return [int(model.jnt_qposadr[j]) for j in ids], [int(model.jnt_dofadr[j]) for j in ids]


def field_rows(model: mujoco.MjModel, field: str, wanted: Sequence[str] | None) -> list[int]:
    """Rows of a randomizable MjModel field that belong to the named entities (for an option like
    opt.gravity, which belongs to no entity: its components, and `names` must be left out)."""
    check_field(field)
    objtype = RANDOMIZABLE_FIELDS[field]
    if objtype is None:
        if wanted is not None:
            raise UserError(f"model field '{field}' is a model option, not per {', '.join(k for k, _ in _KIND.values())}: "
                            "leave out its names")  # fmt: skip
        return list(range(len(model_attr(model, field))))
    if field.startswith("dof_"):
        return single_dof_joints(model, wanted)[1]
    return entity_ids(model, objtype, wanted)


def as_index(ids: Sequence[int], device: torch.device) -> slice | torch.Tensor:
    """Indices for a tensor dimension: a slice when they are consecutive (indexing with it is a
    view, no gather), else a LongTensor on `device`."""
    ids = [int(i) for i in ids]
    if ids and ids == list(range(ids[0], ids[0] + len(ids))):
        return slice(ids[0], ids[0] + len(ids))
    return torch.tensor(ids, dtype=torch.long, device=device)


def sensor_columns(model: mujoco.MjModel, wanted: Sequence[str]) -> list[int]:
    """Columns of sensordata holding the named sensors, in the order given."""
    cols: list[int] = []
    for i in entity_ids(model, mujoco.mjtObj.mjOBJ_SENSOR, wanted):
        adr, dim = int(model.sensor_adr[i]), int(model.sensor_dim[i])
        cols += range(adr, adr + dim)
    return cols
