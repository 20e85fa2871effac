"""The generated terrain on the env's device: where each environment's tile is and the ground
height anywhere (height scans, curricula), computed in torch on MuJoCo's own triangulation.

Each env lives on one tile, (level, column); `env_origins` is that tile's centre, where reset
events place the robot. Columns are dealt round-robin so every terrain type gets environments.
"""

from __future__ import annotations

import torch

from robolearn.errors import UserError
from robolearn.terrain.generator import Terrain


class TerrainState:
    def __init__(self, terrain: Terrain, num_envs: int, device: torch.device, generator: torch.Generator,
                 max_init_level: int):  # fmt: skip
        if not 0 <= max_init_level < terrain.num_levels:
            raise UserError(f"terrain.max_init_level={max_init_level} is invalid; valid: 0..{terrain.num_levels - 1}")
        self.terrain = terrain
        self.heights = torch.as_tensor(terrain.heights, dtype=torch.float32, device=device)
        self.origins = torch.as_tensor(terrain.origins, dtype=torch.float32, device=device)
        self.num_levels = terrain.num_levels
        self.levels = torch.randint(0, max_init_level + 1, (num_envs,), generator=generator, device=device)
        self.cols = torch.arange(num_envs, device=device) % terrain.num_cols
        self.env_origins = self.origins[self.levels, self.cols].clone()

    def set_levels(self, levels: torch.Tensor) -> None:
        self.levels.copy_(levels)
        self.env_origins.copy_(self.origins[self.levels, self.cols])

    def set_tiles(self, levels: torch.Tensor, cols: torch.Tensor) -> None:
        """Each env onto the tile (level, column) given (sim2sim's one env, drawn per episode)."""
        self.cols.copy_(cols)
        self.set_levels(levels)

    def height_at(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Ground height at world (x, y) (any shape), clamped to the heightfield: linear on the
        triangles MuJoCo collides with (Terrain.height_at is the numpy twin)."""
        t = self.terrain
        ny, nx = self.heights.shape
        fx = ((x + t.size_x / 2) / t.resolution).clamp(0, nx - 1)
        fy = ((y + t.size_y / 2) / t.resolution).clamp(0, ny - 1)
        ix = fx.floor().long().clamp(max=nx - 2)
        iy = fy.floor().long().clamp(max=ny - 2)
        tx, ty = fx - ix, fy - iy
        h = self.heights
        h00, h10, h01, h11 = h[iy, ix], h[iy, ix + 1], h[iy + 1, ix], h[iy + 1, ix + 1]
        lower = h00 + tx * (h10 - h00) + ty * (h11 - h10)
        upper = h00 + ty * (h01 - h00) + tx * (h11 - h01)
        return torch.where(tx >= ty, lower, upper)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"levels": self.levels.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.set_levels(state["levels"])
