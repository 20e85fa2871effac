"""Checkpoints are atomic: an interrupted write leaves the previous checkpoint loadable."""

import pytest
import torch

from robolearn import checkpoint
from robolearn.errors import UserError


def test_interrupted_write_keeps_previous_checkpoint(tmp_path, monkeypatch):
    folder = tmp_path / "checkpoints"
    checkpoint.save_atomic({"iteration": 1, "w": torch.ones(3)}, checkpoint.checkpoint_path(folder, 1))

    def crash_mid_write(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 half a checkpoint")
        raise KeyboardInterrupt  # e.g. Ctrl-C or a kill while the file is being written

    monkeypatch.setattr(torch, "save", crash_mid_write)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save_atomic({"iteration": 2}, checkpoint.checkpoint_path(folder, 2))
    monkeypatch.undo()

    assert [p.name for p in folder.iterdir()] == ["iter_000001.pt"]  # no partial file left behind
    latest = checkpoint.latest(tmp_path)
    assert checkpoint.load(latest)["iteration"] == 1


def test_corrupt_checkpoint_is_a_user_error(tmp_path):
    path = checkpoint.checkpoint_path(tmp_path / "checkpoints", 5)
    path.parent.mkdir()
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(UserError, match=r"checkpoint .*iter_000005.pt is unreadable"):
        checkpoint.load(checkpoint.latest(tmp_path))


def test_missing_checkpoint_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no checkpoint in"):
        checkpoint.latest(tmp_path)
    with pytest.raises(UserError, match="run directory not found"):
        checkpoint.latest(tmp_path / "nope")


def test_rng_state_round_trip():
    import random

    import numpy as np

    state = checkpoint.rng_state()
    expected = (torch.rand(3), np.random.rand(3), random.random())
    checkpoint.set_rng_state(state)
    again = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(expected[0], again[0]) and np.array_equal(expected[1], again[1]) and expected[2] == again[2]


def test_prune_keeps_newest(tmp_path):
    for it in range(1, 6):
        checkpoint.save_atomic({"iteration": it}, checkpoint.checkpoint_path(tmp_path, it))
    checkpoint.prune(tmp_path, keep=2)
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == ["iter_000004.pt", "iter_000005.pt"]


def test_a_checkpoint_that_cannot_be_written_is_one_line_naming_the_last_intact_one(tmp_path, monkeypatch):
    """Disk full while saving: no partial file is left, the earlier checkpoint is untouched, and the
    error says which one a resume would use."""
    import errno

    ckpt = checkpoint
    folder = tmp_path / "checkpoints"
    ckpt.save_atomic({"iteration": 10}, folder / "iter_000010.pt")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(UserError, match=r"cannot write checkpoint .*iter_000020.pt \(No space left on device\); the last "
                       r"intact one is .*iter_000010.pt"):  # fmt: skip
        ckpt.save_atomic({"iteration": 20}, folder / "iter_000020.pt")
    assert sorted(p.name for p in folder.iterdir()) == ["iter_000010.pt"]
    monkeypatch.undo()
    assert ckpt.load(folder / "iter_000010.pt")["iteration"] == 10
