"""A task's compiled MuJoCo model and the name lookups terms need, each resolved once.

`Scene.build(task_cfg, plugin, device)` finds the MJCF, applies the plugin's spec edit and the
generated terrain, and compiles it. Terms then ask the scene for entities by name
(`env.scene.joints(["hip", "knee"])`, `env.scene.root`); every answer is cached, so a lookup
made while stepping is a dict hit, and managers resolve annotated params once at build
(entities.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import mujoco
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from robolearn.errors import UserError
from robolearn.paths import assets_dir
from robolearn.physics import load_model, load_spec
from robolearn.physics.physics_copy import physics_copy
from robolearn.registry import TaskPlugin
from robolearn.scene import lookup
from robolearn.scene.floating_base import floating_base_joint
from robolearn.scene.ground import level_ground_geoms
from robolearn.scene.entities import Actuators, FieldRows, Joints, Root, Sensors, entity_names
from robolearn.scene.sim_options import with_sim_options
from robolearn.terrain import Terrain, generate
from robolearn.terrain.mjcf import add_terrain, terrain_blocks


def resolve_asset(asset: str, task_folder: Path) -> Path:
    """An absolute path, else relative to the task's folder, else to robolearn's assets/; one that
    is in neither is a UserError naming both places."""
    path = Path(asset)
    if path.is_absolute():
        return path
    for base in (task_folder, assets_dir()):
        if (base / path).is_file():
            return base / path
    for base in (task_folder, assets_dir()):
        if (base / path).exists():  # a folder: load_model says so
            return base / path
    kind = "URDF" if path.suffix.lower() == ".urdf" else "MJCF"
    raise UserError(f"{kind} file not found: {asset}, neither in the task's folder ({task_folder}) nor in robolearn's "
                    f"assets ({assets_dir()}); valid: a path relative to either, or an absolute one")  # fmt: skip


def default_pose(model: mujoco.MjModel) -> np.ndarray:
    """The model's keyframe named `home` if it has one, else qpos0: where episodes start from,
    what relative joint observations and default action offsets refer to."""
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")
    return model.key_qpos[key] if key >= 0 else model.qpos0


OWN_TERRAIN = "robolearn_terrain"
"""The generated terrain's name where the model has an hfield or geom named 'terrain' of its own."""


def _carries_terrain(spec: mujoco.MjSpec, terrain: Terrain, name: str) -> bool:
    """Whether the model already holds `terrain` under `name` (one field, or its blocks)."""
    blocks = terrain_blocks(terrain, name)
    found = [spec.hfield(block) for block, _, _ in blocks]
    return all(h is not None and (h.nrow, h.ncol) == (rows.stop - rows.start, cols.stop - cols.start)
               for h, (_, rows, cols) in zip(found, blocks))  # fmt: skip


def with_terrain(edit: Callable | None, terrain: Terrain) -> Callable:
    """The task's spec edit followed by adding the terrain (in place of the MJCF's `floor`). A model
    that already carries it (an exported bundle's MJCF) is left as it is."""

    def edit_with_terrain(spec: mujoco.MjSpec) -> None:
        if edit is not None:
            edit(spec)
        if _carries_terrain(spec, terrain, OWN_TERRAIN):  # a bundle's model, where 'terrain' is the robot model's
            return
        blocks = terrain_blocks(terrain)
        found = [spec.hfield(name) for name, _, _ in blocks]
        whole = spec.hfield("terrain")  # one field: a small terrain, or a bundle exported before blocks
        if whole is not None and (whole.nrow, whole.ncol) == terrain.heights.shape:
            return
        if len(blocks) > 1 and any(hfield is not None for hfield in found):  # a bundle's blocks: the same ones
            if any(h is None or (h.nrow, h.ncol) != (rows.stop - rows.start, cols.stop - cols.start)
                   for h, (_, rows, cols) in zip(found, blocks)):  # fmt: skip
                raise UserError(f"the model's terrain hfields do not match the task's terrain: section "
                                f"({terrain.heights.shape[0]}x{terrain.heights.shape[1]} samples in {len(blocks)} "
                                f"hfields named {blocks[0][0]}...); export it again")
            return
        # An hfield or geom the robot's model calls 'terrain' (dm_control's quadruped) is its own: a name of ours then.
        taken = whole is not None or spec.geom("terrain") is not None
        add_terrain(spec, terrain, OWN_TERRAIN if taken else "terrain", remove_geoms=("floor", *level_ground_geoms(spec)))

    return edit_with_terrain


class Scene:
    def __init__(self, model: mujoco.MjModel, device: torch.device, asset_path: Path | None = None,
                 edit_spec: Callable | None = None, terrain: Terrain | None = None):  # fmt: skip
        self.model = model
        self.device = torch.device(device)
        self.asset_path = asset_path
        """The MJCF the model was compiled from (an export copies it into the bundle)."""
        self.edit_spec = edit_spec
        """The spec edit applied before compiling (robot constants, terrain), or None."""
        self.terrain = terrain
        self.default_qpos = np.array(default_pose(model), dtype=np.float64)
        self._cache: dict[tuple, object] = {}

    @classmethod
    def build(cls, cfg, plugin: TaskPlugin, device: torch.device) -> Scene:
        """The model of task config `cfg` (a TaskCfg node) registered by `plugin`."""
        asset_path = resolve_asset(cfg.asset, plugin.folder)
        edit, terrain = plugin.edit_spec, None
        if cfg.get("terrain") is not None:
            terrain_cfg = OmegaConf.to_object(cfg.terrain) if isinstance(cfg.terrain, DictConfig) else cfg.terrain
            terrain = generate(terrain_cfg, terrain_cfg.seed)
            edit = with_terrain(plugin.edit_spec, terrain)
        sim = cfg.get("sim")
        options = dict((OmegaConf.to_container(sim) if OmegaConf.is_config(sim) else vars(sim)) if sim is not None else {})
        if cfg.sim_dt is not None:  # into the spec too, so that the bundle's model carries it
            options["timestep"] = cfg.sim_dt
        edit = with_sim_options(edit, options)
        model = load_model(asset_path, edit)
        return cls(model, device, asset_path, edit, terrain)

    def physics_copy(self) -> tuple[mujoco.MjModel | None, str]:
        """The model without what only rendering reads (physics/physics_copy.py), compiled again
        from the MJCF and the edit; (None, why not) where that gives nothing or is not the same model."""
        if self.asset_path is None:
            return None, "the model was not compiled from a file"
        return physics_copy(load_spec(self.asset_path, self.edit_spec), self.model)

    def _cached(self, key: tuple, make: Callable[[], object]):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def index(self, ids: Sequence[int]) -> slice | torch.Tensor:
        return lookup.as_index(ids, self.device)

    # --- entities by name (a resolved value is returned unchanged) ------------------------------
    def joints(self, names: Sequence[str] | Joints | None) -> Joints:
        """Hinge/slide joints by name; None: every such joint, in model order."""
        if isinstance(names, Joints):
            return names

        names = entity_names(names)

        def make() -> Joints:
            ids = lookup.single_dof_joint_ids(self.model, names)
            all_names = lookup.names(self.model, mujoco.mjtObj.mjOBJ_JOINT)
            qpos = [int(self.model.jnt_qposadr[j]) for j in ids]
            dof = [int(self.model.jnt_dofadr[j]) for j in ids]
            return Joints(tuple(all_names[j] for j in ids), self.index(qpos), self.index(dof))

        return self._cached(("joints", names), make)

    def sensors(self, names: Sequence[str] | Sensors) -> Sensors:
        if isinstance(names, Sensors):
            return names
        if names is None:
            raise UserError("a sensor term needs the names of its sensors")
        names = entity_names(names)
        return self._cached(("sensors", names),
                            lambda: Sensors(tuple(names), self.index(lookup.sensor_columns(self.model, names))))

    def actuators(self, names: Sequence[str] | Actuators | None) -> Actuators:
        """Actuators by name; None: every actuator, in model order."""
        if isinstance(names, Actuators):
            return names

        names = entity_names(names)

        def make() -> Actuators:
            ids = lookup.entity_ids(self.model, mujoco.mjtObj.mjOBJ_ACTUATOR, names)
            all_names = lookup.names(self.model, mujoco.mjtObj.mjOBJ_ACTUATOR)
            return Actuators(tuple(all_names[i] for i in ids), self.index(ids))

        return self._cached(("actuators", names), make)

    def field_rows(self, field: str, names: Sequence[str] | FieldRows | None) -> FieldRows:
        """Rows of a randomizable model field belonging to the named entities (None: all rows)."""
        if isinstance(names, FieldRows):
            return names
        lookup.check_field(field)
        names = entity_names(names)
        return self._cached(("field", field, names),
                            lambda: FieldRows(field, names, self.index(lookup.field_rows(self.model, field, names))))

    @property
    def qpos_limits(self) -> torch.Tensor:
        """[nq, 2]: the range of each limited hinge/slide joint at its qpos address [rad or m];
        -inf, inf at every other address (unlimited joints, free and ball joints)."""

        def make() -> torch.Tensor:
            m = self.model
            limits = np.tile([-np.inf, np.inf], (m.nq, 1))
            for j in range(m.njnt):
                if m.jnt_limited[j] and m.jnt_type[j] in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
                    limits[m.jnt_qposadr[j]] = m.jnt_range[j]
            return torch.tensor(limits, dtype=torch.float32, device=self.device)

        return self._cached(("qpos_limits",), make)

    @property
    def root(self) -> Root:
        """The floating base; a UserError when the model has no free joint."""
        if "root" not in self._cache:
            m, j = self.model, floating_base_joint(self.model)
            self._cache["root"] = Root(int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])) if j is not None else None
        root = self._cache["root"]
        if root is None:
            raise UserError("this term needs a floating base (a free joint), and the model has none")
        return root
