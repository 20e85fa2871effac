"""A task plugin installed the way pip would leave it, for tests that run `robolearn` in a
subprocess: a `<name>-<version>.dist-info` with its entry points in a site folder, which the
process gets on PYTHONPATH (importlib.metadata finds the entry points there)."""

from __future__ import annotations

import os
from pathlib import Path


def install_distribution(site: Path, name: str, entry_points: str) -> dict[str, str]:
    """Write the distribution `name` (its packages go into `site` beside it) with the given
    `[robolearn.tasks]` lines; returns an environment for a process that should see it."""
    dist = site / f"{name.replace('-', '_')}-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[robolearn.tasks]\n" + entry_points.strip() + "\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
