"""Heightfield terrain curricula for legged robots (numpy only).

The terrain is a grid of square tiles: `num_levels` along x (difficulty grows with x) times
`num_cols` along y (one terrain type per column), inside a flat border. Keeping this module free
of MuJoCo and torch lets curricula be generated, inspected and tested anywhere; `mjcf.py` turns
the result into an hfield.

Conventions (shared with `mjcf.add_terrain`):
- world (0, 0) is the centre of the whole heightfield, border included, because a MuJoCo hfield
  geom is centred on its position;
- `heights[iy, ix]` is the height at x = -size_x/2 + ix*resolution, y = -size_y/2 + iy*resolution
  (row index = y, the same row order as MuJoCo's hfield data);
- every tile is 0 on its boundary, so neighbouring tiles always meet without a step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from robolearn.errors import UserError

TERRAIN_TYPES = ("flat", "rough", "slope_up", "slope_down", "stairs_up", "stairs_down")
_EPS = 1e-6


def _default_types() -> Dict[str, float]:
    return {"flat": 0.1, "rough": 0.3, "slope_up": 0.15, "slope_down": 0.15,
            "stairs_up": 0.15, "stairs_down": 0.15}


@dataclass
class TerrainCfg:
    """Shape of the tile grid and the easy..hard parameter range of each terrain type."""

    num_levels: int = 5
    """Rows of difficulty along x; row r has difficulty r / max(1, num_levels - 1)."""
    num_cols: int = 10
    """Columns along y; each column holds one terrain type at every level."""
    tile_size: float = 8.0
    """Side of a square tile (m); must be a whole number of `resolution` samples."""
    resolution: float = 0.1
    """Distance between heightfield samples (m)."""
    border: float = 5.0
    """Flat margin around the grid (m), rounded to whole samples, so robots at the edge tiles do not fall off."""
    types: Dict[str, float] = field(default_factory=_default_types)
    """Share of columns per terrain type (normalised); valid names are in TERRAIN_TYPES."""
    rough_amplitude: List[float] = field(default_factory=lambda: [0.01, 0.08])
    """Rough tiles: half-range (m) of the uniform random heights, at difficulty 0 and 1."""
    rough_step: float = 0.2
    """Rough tiles: spacing (m) of the random grid that is linearly upsampled, so bumps are foot-sized."""
    slope: List[float] = field(default_factory=lambda: [0.0, 0.4])
    """Slope tiles: rise over run of the pyramid faces, at difficulty 0 and 1."""
    step_height: List[float] = field(default_factory=lambda: [0.03, 0.18])
    """Stairs tiles: height (m) of one step, at difficulty 0 and 1."""
    step_width: float = 0.3
    """Stairs tiles: tread depth (m) of each concentric ring."""
    platform_size: float = 1.0
    """Pyramids: width (m) of the central platform or pit where robots spawn; capped at tile_size."""
    seed: int = 0
    """Seed of the rough tiles: the terrain is part of the task, the same in every run."""
    max_init_level: int = 0
    """Environments start on levels 0..max_init_level (a terrain curriculum then moves them)."""


@dataclass(frozen=True, eq=False)
class Terrain:
    """A generated heightfield plus where each tile is; see the module docstring for axes.

    `origins[r, c]` is the world xyz of the centre of the tile at level r (tiles at increasing x)
    and column c (tiles at increasing y); z is the ground height there (platform top or pit floor
    for pyramids).
    """

    heights: np.ndarray
    resolution: float
    size_x: float
    size_y: float
    origins: np.ndarray
    col_types: tuple
    num_levels: int
    num_cols: int
    tile_size: float

    def height_at(self, x, y) -> np.ndarray:
        """Ground height at world (x, y), clamped to the heightfield's extent.

        Linear on MuJoCo's triangles rather than bilinear: MuJoCo splits each cell along the
        diagonal from (ix, iy) to (ix+1, iy+1), and contacts and rays use those triangles, so
        this matches the simulator between samples too (bilinear is off by up to a quarter of
        the cell's twist).
        """
        ny, nx = self.heights.shape
        fx = (np.asarray(x, np.float64) + self.size_x / 2) / self.resolution
        fy = (np.asarray(y, np.float64) + self.size_y / 2) / self.resolution
        fx, fy = np.clip(fx, 0, nx - 1), np.clip(fy, 0, ny - 1)
        ix = np.minimum(np.floor(fx).astype(np.int64), nx - 2)  # a tile has >= 2 samples a side
        iy = np.minimum(np.floor(fy).astype(np.int64), ny - 2)
        tx, ty = fx - ix, fy - iy
        h = self.heights.astype(np.float64)
        h00, h10, h01, h11 = h[iy, ix], h[iy, ix + 1], h[iy + 1, ix], h[iy + 1, ix + 1]
        lower = h00 + tx * (h10 - h00) + ty * (h11 - h10)  # triangle (00, 10, 11): tx >= ty
        upper = h00 + ty * (h01 - h00) + tx * (h11 - h01)  # triangle (00, 01, 11): tx < ty
        return np.where(tx >= ty, lower, upper)


def _lerp(bounds: List[float], t: float) -> float:
    return float(bounds[0] + (bounds[1] - bounds[0]) * t)


def _validate(cfg: TerrainCfg) -> None:
    """Catch bad configs here with one-line messages instead of odd shapes later."""
    for name in ("num_levels", "num_cols"):
        if int(getattr(cfg, name)) < 1:
            raise UserError(f"terrain.{name}={getattr(cfg, name)} is invalid; valid: an integer >= 1")
    for name in ("tile_size", "resolution", "rough_step", "step_width"):
        if not float(getattr(cfg, name)) > 0:
            raise UserError(f"terrain.{name}={getattr(cfg, name)} is invalid; valid: a number > 0")
    for name in ("border", "platform_size"):
        if not float(getattr(cfg, name)) >= 0:
            raise UserError(f"terrain.{name}={getattr(cfg, name)} is invalid; valid: a number >= 0")
    samples = cfg.tile_size / cfg.resolution
    if abs(samples - round(samples)) * cfg.resolution > _EPS:
        raise UserError(f"terrain.tile_size={cfg.tile_size} is invalid; valid: a multiple of "
                        f"terrain.resolution={cfg.resolution}")
    for name in ("rough_amplitude", "slope", "step_height"):
        bounds = list(getattr(cfg, name))
        if len(bounds) != 2 or not 0 <= bounds[0] <= bounds[1]:
            raise UserError(f"terrain.{name}={bounds} is invalid; valid: [low, high] with 0 <= low <= high")
    unknown = sorted(set(cfg.types) - set(TERRAIN_TYPES))
    if unknown:
        raise UserError(f"unknown terrain type(s) {unknown} in terrain.types; valid: {list(TERRAIN_TYPES)}")
    if any(float(p) < 0 for p in cfg.types.values()) or sum(float(p) for p in cfg.types.values()) <= 0:
        raise UserError(f"terrain.types={dict(cfg.types)} is invalid; valid: proportions >= 0, at least one > 0")


def column_types(types: Dict[str, float], num_cols: int) -> tuple:
    """Assign columns to types in proportion (largest remainder), in the order of `types`.

    Every type with a nonzero share gets at least one column when there are enough columns, so a
    small test grid still exercises all the requested types.
    """
    names = [n for n, p in types.items() if float(p) > 0]
    shares = np.array([float(types[n]) for n in names])
    exact = shares / shares.sum() * num_cols
    counts = np.floor(exact).astype(int)
    if num_cols >= len(names):
        counts = np.maximum(counts, 1)
    remainder = exact - counts
    while counts.sum() < num_cols:  # stable argmax: ties go to the earlier type
        i = int(np.argmax(remainder))
        counts[i] += 1
        remainder[i] -= 1.0
    while counts.sum() > num_cols:  # only after the >= 1 bump: take from the most over-served
        i = int(np.argmin(np.where(counts > 1, remainder, np.inf)))
        counts[i] -= 1
        remainder[i] += 1.0
    return tuple(n for n, k in zip(names, counts) for _ in range(k))


def _edge_distance(n: int, res: float) -> np.ndarray:
    """Distance (m) of each of the (n+1)^2 tile samples to the nearest tile edge (Chebyshev)."""
    i = np.arange(n + 1)
    d = np.minimum(i, n - i) * res
    return np.minimum(d[:, None], d[None, :])


def _pyramid_run(cfg: TerrainCfg) -> float:
    """Distance (m) from the tile edge to the central platform."""
    return max(0.0, (cfg.tile_size - min(cfg.platform_size, cfg.tile_size)) / 2)


def _slope_tile(cfg: TerrainCfg, n: int, t: float, sign: float) -> np.ndarray:
    d = _edge_distance(n, cfg.resolution)
    return sign * _lerp(cfg.slope, t) * np.minimum(d, _pyramid_run(cfg))


def stairs_count(cfg: TerrainCfg) -> int:
    """Number of steps between a stairs tile's edge and its platform (all full-width treads)."""
    return int(np.floor(_pyramid_run(cfg) / cfg.step_width + _EPS))


def _stairs_tile(cfg: TerrainCfg, n: int, t: float, sign: float) -> np.ndarray:
    d = _edge_distance(n, cfg.resolution)
    ring = np.minimum(np.floor(d / cfg.step_width + _EPS), stairs_count(cfg))  # outer ring 0 is at ground level
    return sign * _lerp(cfg.step_height, t) * ring


def _rough_tile(cfg: TerrainCfg, n: int, t: float, rng: np.random.Generator) -> np.ndarray:
    """Uniform noise on a coarse grid, linearly upsampled, faded linearly to 0 over the outer
    `rough_step` band so the tile edge is 0 without a step."""
    amplitude = _lerp(cfg.rough_amplitude, t)
    stride = max(1, int(round(cfg.rough_step / cfg.resolution)))
    m = -(-n // stride) + 1  # coarse points covering n fine cells
    coarse = rng.uniform(-amplitude, amplitude, size=(m, m))
    fine_at = np.arange(n + 1) / stride
    rows = np.stack([np.interp(fine_at, np.arange(m), coarse[:, j]) for j in range(m)], axis=1)
    fine = np.stack([np.interp(fine_at, np.arange(m), row) for row in rows], axis=0)
    fade = np.clip(_edge_distance(n, cfg.resolution) / cfg.rough_step, 0.0, 1.0)
    return fine * fade


def _tile(cfg: TerrainCfg, kind: str, n: int, t: float, rng: np.random.Generator) -> np.ndarray:
    if kind == "flat":
        return np.zeros((n + 1, n + 1))
    if kind == "rough":
        return _rough_tile(cfg, n, t, rng)
    if kind.startswith("slope"):
        return _slope_tile(cfg, n, t, 1.0 if kind == "slope_up" else -1.0)
    return _stairs_tile(cfg, n, t, 1.0 if kind == "stairs_up" else -1.0)


def generate(cfg: TerrainCfg, seed: int) -> Terrain:
    """Build the heightfield; only rough tiles draw random numbers, so `seed` changes only them."""
    _validate(cfg)
    if int(seed) < 0:
        raise UserError(f"terrain seed={seed} is invalid; valid: an integer >= 0")
    res, levels, cols = float(cfg.resolution), int(cfg.num_levels), int(cfg.num_cols)
    n = int(round(cfg.tile_size / res))
    nb = int(round(cfg.border / res))
    nx, ny = levels * n + 2 * nb + 1, cols * n + 2 * nb + 1
    heights = np.zeros((ny, nx), np.float64)
    col_types = column_types(cfg.types, cols)
    rng = np.random.default_rng(int(seed))
    for r in range(levels):
        t = r / max(1, levels - 1)
        x0 = nb + r * n
        for c, kind in enumerate(col_types):
            y0 = nb + c * n
            heights[y0:y0 + n + 1, x0:x0 + n + 1] = _tile(cfg, kind, n, t, rng)
    size_x, size_y = (nx - 1) * res, (ny - 1) * res
    centre = (nb + (np.arange(max(levels, cols)) + 0.5) * n) * res
    cx, cy = centre[:levels] - size_x / 2, centre[:cols] - size_y / 2
    gx, gy = np.meshgrid(cx, cy, indexing="ij")
    origins = np.stack([gx, gy, np.zeros_like(gx)], axis=-1).astype(np.float32)
    terrain = Terrain(heights=heights.astype(np.float32), resolution=res, size_x=size_x, size_y=size_y,
                      origins=origins, col_types=col_types, num_levels=levels, num_cols=cols,
                      tile_size=n * res)
    origins[..., 2] = terrain.height_at(gx, gy)  # filled in place: the frozen field holds this array
    return terrain
