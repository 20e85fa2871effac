"""The terrain tile sim2sim's referee starts each episode on: by default drawn as training's envs
stood when the bundle was exported (level and column, from the bundle's `conditions.yaml`:
env_state.conditions_summary), so that sim-to-sim is scored where the bundle's training evaluation
was; a rough task's one referee env would otherwise start every episode on the first column (one
terrain type). `conditions=initial`: the task's initial levels, over every column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import yaml

from robolearn.envs.env_state import CONDITIONS_FILE, check_conditions
from robolearn.errors import UserError, one_line

class EpisodeConditions:
    def __init__(self, env, bundle_dir: Path, conditions: str, seed: int):
        check_conditions(conditions)
        self.env, self.gen = env, np.random.default_rng(seed)
        saved = _read(bundle_dir / CONDITIONS_FILE).get("terrain_cells") if conditions == "trained" else None
        self.cells, trained = self._cells(saved)
        self.described = self._describe(conditions, trained)

    def _cells(self, counts) -> tuple[np.ndarray | None, bool]:
        """[level, column] probabilities of the trained tiles, and whether they are the trained ones:
        else uniform over every column at the task's initial levels (a bundle without them, or with
        counts that do not fit this terrain)."""
        terrain = self.env.terrain
        if terrain is None:
            return None, False
        shape = (terrain.num_levels, terrain.terrain.num_cols)
        try:
            counts = np.asarray(counts, dtype=float) if counts is not None else None
        except (TypeError, ValueError):  # not a table of numbers
            counts = None
        trained = counts is not None and counts.shape == shape and bool((counts >= 0).all()) and counts.sum() > 0
        if not trained:
            counts = np.zeros(shape)
            counts[: self.env.cfg.terrain.max_init_level + 1] = 1.0
        return counts / counts.sum(), trained

    def apply(self) -> None:
        """Before the referee's reset: this episode's tile."""
        if self.cells is not None:
            cell = int(self.gen.choice(self.cells.size, p=self.cells.ravel()))
            level, column = divmod(cell, self.cells.shape[1])
            terrain = self.env.terrain
            device = terrain.levels.device
            terrain.set_tiles(torch.tensor([level], device=device), torch.tensor([column], device=device))

    def _describe(self, conditions: str, trained: bool) -> str:
        """One line for the report ('' for a task without terrain: nothing to choose)."""
        if self.cells is None:
            return ""
        levels = self.cells.sum(axis=1)
        tiles = (f"terrain level {float(levels @ np.arange(len(levels))):.2g} on average, over "
                 f"{int((self.cells.sum(axis=0) > 0).sum())} of {self.cells.shape[1]} columns")  # fmt: skip
        if conditions == "trained" and not trained:
            return f"the task's initial tiles (the bundle records none that fit this terrain): {tiles}"
        which = "the tiles training stood on" if conditions == "trained" else "the task's initial tiles"
        return f"{which}: {tiles}"


def _read(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path}: {one_line(exc)}; re-export the bundle") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} is not a mapping of conditions; re-export the bundle")
    return data
