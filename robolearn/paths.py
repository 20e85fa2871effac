"""Where the packaged data (Hydra configs, MJCF assets) lives.

In a wheel they sit inside the package (`robolearn/configs`, `robolearn/assets`); in a source
checkout, editable install included, they sit at the repository root next to `robolearn/`.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"robolearn data folder '{name}' not found next to {_PACKAGE}")


def configs_dir() -> Path:
    return _data_dir("configs")


def assets_dir() -> Path:
    return _data_dir("assets")
