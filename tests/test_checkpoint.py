"""Checkpoints are atomic: an interrupted write leaves the previous checkpoint loadable."""

from pathlib import Path

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


def test_rng_state_round_trip(tmp_path):
    import random

    import numpy as np

    state = checkpoint.rng_state()
    expected = (torch.rand(3), np.random.rand(3), random.random())
    checkpoint.set_rng_state(state, tmp_path)
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
    with pytest.raises(UserError, match=r"cannot write checkpoint .*iter_000020.pt \(no space left on the device\); the last "
                       r"intact one is .*iter_000010.pt"):  # fmt: skip
        ckpt.save_atomic({"iteration": 20}, folder / "iter_000020.pt")
    assert sorted(p.name for p in folder.iterdir()) == ["iter_000010.pt"]
    monkeypatch.undo()
    assert ckpt.load(folder / "iter_000010.pt")["iteration"] == 10


def test_slim_checkpoints_keep_the_weights_and_the_file_times(tmp_path):
    """scripts/slim_checkpoints.py (what the GPU machine sends back): weights and counters only,
    each file's time unchanged (scoring reads it as the checkpoint's wall time)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    folder = tmp_path / "checkpoints"
    model = {"actor.0.weight": torch.arange(6.0).reshape(2, 3)}
    for it in (20, 40):
        path = checkpoint.checkpoint_path(folder, it)
        checkpoint.save_atomic({"format": 2, "iteration": it, "env_steps": it * 100, "wall_time_s": it / 10,
                                "model": model, "optimizer": {"state": torch.zeros(10_000)}, "env": {"x": 1}}, path)  # fmt: skip
        os.utime(path, (1_000_000 + it, 2_000_000 + it))
    out = tmp_path / "slim"
    script = Path(__file__).parents[1] / "scripts" / "slim_checkpoints.py"
    subprocess.run([sys.executable, str(script), str(folder), str(out)], check=True)
    for it in (20, 40):
        slim = out / f"iter_{it:06d}.pt"
        payload = checkpoint.load(slim)
        assert sorted(payload) == ["env_steps", "format", "iteration", "model", "wall_time_s"]
        assert payload["iteration"] == it and torch.equal(payload["model"]["actor.0.weight"], model["actor.0.weight"])
        assert slim.stat().st_mtime == 2_000_000 + it
        assert slim.stat().st_size < checkpoint.checkpoint_path(folder, it).stat().st_size / 10


def test_a_named_checkpoint_is_found_as_a_path_or_in_the_runs_checkpoints(tmp_path, monkeypatch):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    for i in (50, 100, 150, 200):
        (run / "checkpoints" / f"iter_{i:06d}.pt").write_bytes(b"x")
    (tmp_path / "mine.pt").write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    assert checkpoint.named(run, Path("iter_000050.pt")) == run / "checkpoints" / "iter_000050.pt"
    assert checkpoint.named(run, Path("checkpoints/iter_000100.pt")) == run / "checkpoints" / "iter_000100.pt"
    assert checkpoint.named(run, Path("mine.pt")) == Path("mine.pt")  # a path that exists wins
    assert checkpoint.named(run, tmp_path / "gone.pt") == tmp_path / "gone.pt"  # absolute: load() says it is missing
    with pytest.raises(UserError) as err:
        checkpoint.named(run, Path("iter_000999.pt"))
    assert str(err.value) == (f"checkpoint iter_000999.pt does not exist here, in {run / 'checkpoints'} or in {run}; "
                              "valid: a path, or a name in the run's checkpoints/ folder (iter_000100.pt, iter_000150.pt, "
                              "iter_000200.pt and 1 older)")


def test_a_checkpoint_this_user_may_not_read_says_so(tmp_path, monkeypatch):
    """chmod 000 on a checkpoint (root reads it anyway: the read is made to fail as it would): the
    line names the permission, not damage, and does not advise moving the file away."""
    path = tmp_path / "iter_000001.pt"
    torch.save({"iteration": 1}, path)

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(torch, "load", denied)
    with pytest.raises(UserError) as info:
        checkpoint.load(path)
    assert str(info.value) == (f"checkpoint {path}: permission denied; valid: a checkpoint this user may read: check its "
                               "owner and mode (ls -l)")  # fmt: skip


def test_a_state_is_judged_in_one_host_read_and_the_first_bad_entry_is_named():
    """runner.save judges every weight and optimizer tensor before it writes: together, one host
    read per device (not one per tensor, each a stall on a GPU); a broken state names its first
    bad entry in the state's own order."""
    import math

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class CountReads(TorchDispatchMode):
        reads = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.aten._local_scalar_dense.default:
                CountReads.reads += 1
            return func(*args, **(kwargs or {}))

    state = {"model": {f"layer{i}.weight": torch.ones(3, 3) for i in range(20)},
             "norm": {"mean": torch.zeros(3), "var": torch.ones(3), "count": torch.tensor(5)},
             "algorithm": {"optimizer": {"lr": torch.tensor(1e-3), "betas": [0.9, 0.999]}, "step": 7}}  # fmt: skip
    with CountReads():
        assert checkpoint.nonfinite_entry(state) is None
    assert CountReads.reads == 1

    state["model"]["layer7.weight"][1, 2] = math.inf
    state["model"]["layer12.weight"][0, 0] = math.nan
    assert checkpoint.nonfinite_entry(state) == "model.layer7.weight (NaN or inf)"
    assert checkpoint.nonfinite_entry(state, finite=False) is None  # only variances are judged
    state["norm"]["var"][1] = -0.5
    assert checkpoint.nonfinite_entry(state, finite=False) == "norm.var (a negative variance)"
    for key in ("layer7.weight", "layer12.weight"):
        state["model"][key].fill_(1.0)
    state["norm"]["var"].fill_(1.0)
    state["algorithm"]["optimizer"]["betas"][1] = math.nan  # a Python float
    assert checkpoint.nonfinite_entry(state) == "algorithm.optimizer.betas.1 (nan)"
    assert checkpoint.nonfinite_entry(state, finite=False) is None


@pytest.mark.parametrize("edit, line", [
    ({"format": 99}, r"is format 99, written by a newer robolearn \(this one reads formats up to 2\); valid: upgrade"),
    ({"format": "two"}, r"holds format 'two': a damaged or hand-edited checkpoint; move it away"),
    ({"format": True}, r"holds format True: a damaged or hand-edited checkpoint"),
    ({"iteration": -5}, r"holds iteration -5: a damaged or hand-edited checkpoint"),
    ({"iteration": True}, r"holds iteration True: a damaged or hand-edited checkpoint"),
])  # fmt: skip
def test_a_checkpoint_of_a_newer_format_or_a_damaged_header_is_refused_by_every_reader(tmp_path, edit, line):
    """eval, export, play and resume all load through checkpoint.load: a format from a newer robolearn
    (its layout unknown here), a format that is not a number, or a negative iteration is one line.
    A format-1 checkpoint (no `format` key) still loads: eval and export read its policy."""
    path = tmp_path / "iter_000003.pt"
    torch.save({"format": 2, "iteration": 3, "model": {}, **edit}, path)
    with pytest.raises(UserError, match=line):
        checkpoint.load(path)
    torch.save({"iteration": 3, "model": {}}, path)
    assert checkpoint.load(path)["iteration"] == 3
