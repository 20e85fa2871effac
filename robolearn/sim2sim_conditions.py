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

from robolearn.envs.env_state import CONDITIONS_FILE
from robolearn.errors import UserError

CONDITIONS = ("trained", "initial")


class EpisodeConditions:
    def __init__(self, env, bundle_dir: Path, conditions: str, seed: int):
        if conditions not in CONDITIONS:
            raise UserError(f"conditions={conditions} is not valid; valid: {', '.join(CONDITIONS)}")
        self.env, self.gen = env, np.random.default_rng(seed)
        saved = _read(bundle_dir / CONDITIONS_FILE) if conditions == "trained" else {}
        self.cells = self._cells(saved.get("terrain_cells"))
        self.described = self._describe(conditions, saved)

    def _cells(self, counts) -> np.ndarray | None:
        """[level, column] probabilities of the trained tiles; uniform columns at the task's initial
        levels where there is none."""
        terrain = self.env.terrain
        if terrain is None:
            return None
        shape = (terrain.num_levels, terrain.terrain.num_cols)
        counts = np.asarray(counts, dtype=float) if counts is not None else None
        if counts is None or counts.shape != shape or counts.sum() <= 0:
            counts = np.zeros(shape)
            counts[: self.env.cfg.terrain.max_init_level + 1] = 1.0
        return counts / counts.sum()

    def apply(self) -> None:
        """Before the referee's reset: this episode's tile."""
        if self.cells is not None:
            cell = int(self.gen.choice(self.cells.size, p=self.cells.ravel()))
            level, column = divmod(cell, self.cells.shape[1])
            terrain = self.env.terrain
            terrain.cols[0] = column
            terrain.set_levels(torch.tensor([level], device=terrain.levels.device))

    def _describe(self, conditions: str, saved: dict) -> str:
        """One line for the report ('' for a task without terrain: nothing to choose)."""
        if self.cells is None:
            return ""
        levels = self.cells.sum(axis=1)
        tiles = (f"terrain level {float(levels @ np.arange(len(levels))):.2g} on average, over "
                 f"{int((self.cells.sum(axis=0) > 0).sum())} of {self.cells.shape[1]} columns")  # fmt: skip
        if conditions == "trained" and not saved:
            return f"the task's initial tiles (the bundle records no trained ones): {tiles}"
        which = "the tiles training stood on" if conditions == "trained" else "the task's initial tiles"
        return f"{which}: {tiles}"


def _read(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"cannot read {path}: {exc}; re-export the bundle") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} is not a mapping of conditions; re-export the bundle")
    return data
