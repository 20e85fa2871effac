"""A ground plane from robolearn's assets instead of Isaac Lab's asset store (which needs network)."""

from isaaclab.sim import GroundPlaneCfg
from isaaclab.terrains import TerrainImporter

from robolearn.paths import assets_dir

GROUND_PLANE = assets_dir() / "isaaclab" / "ground_plane.usda"
"""An Xform holding one infinite collision Plane prim (what Isaac Lab's ground-plane spawner binds friction to)."""


class LocalGroundImporter(TerrainImporter):
    """terrain_type="plane" with the local ground plane; every other terrain type as Isaac Lab does it."""

    def import_ground_plane(self, name: str, size: tuple[float, float] | None = None):
        prim_path = f"{self.cfg.prim_path}/{name}"
        if prim_path in self.terrain_prim_paths:
            raise ValueError(f"a terrain named '{name}' already exists")
        self.terrain_prim_paths.append(prim_path)
        cfg = GroundPlaneCfg(usd_path=str(GROUND_PLANE), physics_material=self.cfg.physics_material,
                             size=size or self._compute_ground_plane_size(), color=None)  # fmt: skip
        cfg.func(prim_path, cfg)
