"""Hydra's composition of the training config, remembered: compose_train composes the same command
line again and again in one process (every env a test or a script builds, every check before a
run), and Hydra re-reads and deep-copies the whole config tree each time (~0.6 s on a 2-core VM).
A remembered config is handed out as a deep copy (~40 ms), so a caller may change its copy.

A config is remembered under its overrides, and used only while everything it was composed from is
unchanged: the same ConfigStore entries (the schemas and every task's node, compose.py) and the same
YAML files in the config folder (path, size, modification time). Overrides of Hydra's own settings, and
compositions that fail, are never remembered."""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig


SIZE = 32
"""How many compositions are remembered (the oldest goes first)."""
_MEMO: dict[tuple, tuple[tuple, DictConfig]] = {}


def compose_train_config(merges: list[str], configs: Path) -> DictConfig:
    """`configs`/train.yaml composed with `merges` (the overrides as config_additions.as_merges
    writes them), from memory where nothing it came from has changed."""
    key = (tuple(merges), str(configs), _files(configs))
    sources = _sources()
    known = _MEMO.get(key)
    if known is not None and len(known[0]) == len(sources) and all(a is b for a, b in zip(known[0], sources)):
        return copy.deepcopy(known[1])
    with _own_hydra(), initialize_config_dir(config_dir=str(configs), version_base="1.3"):
        cfg = compose(config_name="train", overrides=list(merges))
    if not any(m.lstrip("+~").startswith("hydra") for m in merges):
        _MEMO.pop(key, None)
        _MEMO[key] = (sources, copy.deepcopy(cfg))
        while len(_MEMO) > SIZE:
            del _MEMO[next(iter(_MEMO))]
    return cfg


def _files(configs: Path) -> tuple:
    return tuple(sorted((str(p), s.st_size, s.st_mtime_ns) for p in configs.rglob("*.yaml") for s in [p.stat()]))


def _sources() -> tuple:
    """The ConfigStore's entries a training config is composed from, in a fixed order (held, not
    only named: an entry replaced or removed is a different object)."""
    entries = []

    def walk(node: dict, path: str) -> None:
        for name in sorted(node):
            value = node[name]
            if isinstance(value, dict):
                if path or name != "hydra":  # Hydra's own configs: static in a process
                    walk(value, f"{path}{name}/")
            else:
                entries.append((f"{path}{name}", value))

    walk(ConfigStore.instance().repo, "")
    return tuple(entry for _, entry in entries)


@contextlib.contextmanager
def _own_hydra():
    """Compose inside a running Hydra app (`robolearn train` exporting an Isaac Lab task's bundle with
    its sim-to-sim task): the app's Hydra instance is set aside and put back."""
    global_hydra = GlobalHydra.instance()
    running = global_hydra.hydra if global_hydra.is_initialized() else None
    global_hydra.clear()
    try:
        yield
    finally:
        global_hydra.clear()
        if running is not None:
            global_hydra.initialize(running)
