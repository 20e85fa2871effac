"""Writing a small file whole or not at all: `<name>.tmp` beside it, then a rename over it. A write
that fails (a full disk) leaves the earlier file as it was and no `.tmp` behind."""

from __future__ import annotations

from pathlib import Path


def write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
