"""Heightfield terrain curricula: `generate` builds the grid (numpy), `add_terrain` puts it in a MuJoCo spec."""

from robolearn.terrain.generator import TERRAIN_TYPES, Terrain, TerrainCfg, generate

__all__ = ["TERRAIN_TYPES", "Terrain", "TerrainCfg", "generate"]
