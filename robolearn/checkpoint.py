"""Atomic checkpoints: written to a temporary file, fsynced, then renamed into place.

A crash mid-write leaves at most a stray `*.tmp` file; every `iter_*.pt` is complete. Loading
uses `weights_only=True`, so a checkpoint holds only tensors and plain Python containers.
torch is imported where a checkpoint is read or written: `robolearn runs` lists checkpoints without it.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import numpy as np

from robolearn.errors import UserError, disk_full, one_line

_NAME = re.compile(r"^iter_(\d+)\.pt$")

FORMAT = 2
"""The checkpoint format this robolearn writes. 2: device-side optimizer and manager-owned env state
(format 1, without a `format` key, predates both: eval and export still read its policy)."""


def checkpoint_path(folder: Path, iteration: int) -> Path:
    return folder / f"iter_{iteration:06d}.pt"


def iteration_of(path: Path) -> int | None:
    """The iteration a checkpoint file's name holds (iter_000120.pt: 120), None for another name."""
    m = _NAME.match(path.name)
    return int(m.group(1)) if m else None


def list_checkpoints(folder: Path) -> list[Path]:
    """Complete checkpoints in `folder`, oldest first."""
    if not folder.is_dir():
        return []
    found = [(it, p) for p in folder.iterdir() if (it := iteration_of(p)) is not None]
    return [p for _, p in sorted(found)]


def save_atomic(payload: dict, path: Path) -> None:
    """Write a checkpoint whole or not at all; a write that fails (disk full, a folder made
    read-only) is one line naming the last checkpoint that is intact."""
    import torch

    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except (OSError, RuntimeError) as exc:  # torch's writer raises a RuntimeError of its own from a full disk
        full = disk_full(exc)
        if not isinstance(exc, OSError) and full is None:
            raise
        earlier = [p for p in list_checkpoints(path.parent) if p != path] if path.parent.is_dir() else []
        last = f"the last intact one is {earlier[-1]}" if earlier else "no earlier checkpoint exists"
        reason = full or getattr(exc, "strerror", None) or one_line(exc)
        raise UserError(f"cannot write checkpoint {path} ({reason}); {last}") from None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def prune(folder: Path, keep: int) -> None:
    for old in list_checkpoints(folder)[:-keep] if keep > 0 else []:
        old.unlink(missing_ok=True)


def load(path: Path, named: bool = False) -> dict:
    """A checkpoint's payload; `named`: the user chose the file (checkpoint=), so a bad one is not
    answered with advice about the run's older checkpoints."""
    if not path.is_file():
        raise UserError(f"checkpoint {path} " + ("is a directory, not a checkpoint file" if path.is_dir() else "does not exist"))
    import torch

    advice = _advice(named)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except PermissionError:  # the file is fine, this user may not read it
        raise UserError(f"checkpoint {path}: permission denied; valid: a checkpoint this user may read: check its "
                        "owner and mode (ls -l)") from None  # fmt: skip
    except Exception as exc:  # torch raises many types for truncated or foreign files
        detail = f"{type(exc).__name__}: {_first_sentence(one_line(exc))}"
        raise UserError(f"checkpoint {path} is unreadable: not a checkpoint robolearn wrote, or damaged or cut short "
                        f"({detail}); {advice}") from None  # fmt: skip
    if not isinstance(payload, dict) or not isinstance(payload.get("iteration"), int):
        raise UserError(f"checkpoint {path} is {_foreign(payload)}; {advice}")
    written = payload.get("format", 1)
    iteration = payload["iteration"]
    if not isinstance(written, int) or isinstance(written, bool) or written < 1 or isinstance(iteration, bool) or iteration < 0:
        shown = f"iteration {iteration!r}" if isinstance(iteration, bool) or iteration < 0 else f"format {written!r}"
        raise UserError(f"checkpoint {path} holds {shown}: a damaged or hand-edited checkpoint; {advice}")
    if written > FORMAT:
        raise UserError(f"checkpoint {path} is format {written}, written by a newer robolearn (this one reads formats up "
                        f"to {FORMAT}); valid: upgrade robolearn to read it")  # fmt: skip
    return payload


def policy_state(payload: dict, path: Path, named: bool = False) -> dict:
    """The policy's state_dict a checkpoint holds (load() checked the rest of its form)."""
    if not isinstance(payload.get("model"), dict):
        raise UserError(f"checkpoint {path} is {_foreign(payload)}; {_advice(named)}")
    broken = nonfinite_entry(payload["model"], "model", finite=False)
    if broken:  # a normalizer that would scale by sqrt of a negative: eval, play and a bundle would run it
        raise UserError(f"checkpoint {path} holds {broken}: a damaged or hand-edited checkpoint; {_advice(named)}")
    return payload["model"]


def _advice(named: bool) -> str:
    """What to do about a bad checkpoint: one the user named, or the run's latest."""
    return "name a checkpoint of the run's checkpoints/ folder" if named else "move it away to use the one before it"


def _foreign(payload) -> str:
    """What a torch file that is not a robolearn checkpoint is, in words."""
    if isinstance(payload, dict) and ({"model_state_dict", "actor_state_dict"} & set(payload)):
        return "an rsl_rl checkpoint (Isaac Lab, mjlab): `robolearn import run=<its run dir>` turns its run into a bundle"
    shown = ", ".join(map(str, list(payload)[:4])) if isinstance(payload, dict) else type(payload).__name__
    return f"a torch file robolearn did not write (it holds {shown or 'nothing'}, not a policy and an iteration)"


def _first_sentence(text: str, limit: int = 100) -> str:
    """The first sentence of an exception's text, cut at a word (torch's run on for a page)."""
    sentence = text.split(". ")[0]
    if len(sentence) <= limit:
        return sentence
    return sentence[:limit].rsplit(" ", 1)[0] + " ..."


def nonfinite_entry(state, prefix: str = "", finite: bool = True) -> str | None:
    """The name of the first entry of a (nested) state that is not finite (a tensor holding NaN or
    inf, a float), or a negative variance (a normalizer's `var`); None where every entry is sound.
    `finite=False`: only the variances (a policy's NaN is told by what it does: run_policy.py).
    The tensors are judged together, one host sync per device (a GPU run saves without a sync per
    tensor); only a broken state reads its flags one by one, to name the first bad entry."""
    import math

    import torch

    leaves = [(name, value, _broken_flag(value, name, finite)) for name, value in _leaves(state, prefix)]
    by_device: dict = {}
    for _, _, flag in leaves:
        if flag is not None:
            by_device.setdefault(flag.device, []).append(flag)
    tensors_sound = not any(bool(torch.stack(flags).any()) for flags in by_device.values())
    for name, value, flag in leaves:
        if flag is None:
            if finite and isinstance(value, float) and not math.isfinite(value):
                return f"{name} ({value})"
        elif not tensors_sound and bool(flag):
            nan = finite and not bool(torch.isfinite(value).all())
            return f"{name} ({'NaN or inf' if nan else 'a negative variance'})"
    return None


def _leaves(state, prefix: str):
    """(dotted name, value) of every leaf of nested dicts, lists and tuples."""
    if isinstance(state, dict):
        items = state.items()
    elif isinstance(state, (list, tuple)):
        items = enumerate(state)
    else:
        yield prefix, state
        return
    for key, value in items:
        yield from _leaves(value, f"{prefix}.{key}" if prefix else str(key))


def _is_variance(name: str) -> bool:
    return name.rsplit(".", 1)[-1] == "var"


def _broken_flag(value, name: str, finite: bool):
    """A 0-d bool tensor on the value's device, True where it is broken; None for what is not judged
    on a device (an integer tensor, a Python number)."""
    import torch

    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        return None
    flag = None
    if finite:
        flag = ~torch.isfinite(value).all()
    if _is_variance(name):
        negative = (value < 0).any()
        flag = negative if flag is None else flag | negative
    return flag


def restore(module, state: dict, source: Path) -> None:
    """load_state_dict, with a mismatch (other network sizes, another task) as a UserError that
    names the first entry that differs."""
    try:
        module.load_state_dict(state)
    except (RuntimeError, KeyError, ValueError) as exc:
        raise UserError(f"checkpoint {source} does not fit this config: {_mismatch(one_line(exc))} (a checkpoint of "
                        "another task, observation layout or network size)") from None  # fmt: skip


def _mismatch(text: str) -> str:
    """torch's load_state_dict error, as its first difference and how many there are."""
    import re

    sizes = re.findall(r"size mismatch for ([\w.]+): copying a param with shape torch\.Size\(\[([^\]]*)\]\) from "
                       r"checkpoint, the shape in current model is torch\.Size\(\[([^\]]*)\]\)", text)  # fmt: skip
    if sizes:
        name, there, here = sizes[0]
        more = f"; {len(sizes) - 1} more entries differ in shape" if len(sizes) > 1 else ""
        return f"{name} is [{there}] there and [{here}] here{more}"
    for label, what in (("Missing", "lacks"), ("Unexpected", "has entries this network lacks:")):
        found = re.search(label + r" key\(s\) in state_dict: (.*?)(?:\. (?:Missing|Unexpected)|$)", text)
        if found:
            keys = re.findall(r'"([^"]+)"', found.group(1))
            return f"the checkpoint {what} {', '.join(keys[:3])}{' ...' if len(keys) > 3 else ''}"
    return _first_sentence(text, 200)


def named(run_dir: Path, name: Path) -> Path:
    """checkpoint=<name>: a path as given, else (a relative one) in the run's checkpoints/ folder
    or in the run directory; a UserError that says where it looked and what the run has."""
    if name.exists() or name.is_absolute():
        return name
    for folder in (run_dir / "checkpoints", run_dir):
        if (folder / name).exists():
            return folder / name
    found = [p.name for p in list_checkpoints(run_dir / "checkpoints")]
    have = ", ".join(found[-3:]) + (f" and {len(found) - 3} older" if len(found) > 3 else "") if found else "none"
    raise UserError(f"checkpoint {name} does not exist here, in {run_dir / 'checkpoints'} or in {run_dir}; valid: a path, "
                    f"or a name in the run's checkpoints/ folder ({have})")  # fmt: skip


def owner_run(path: Path) -> Path | None:
    """The run directory a checkpoint file lies in (<run>/checkpoints/<file> or <run>/<file>, the
    run holding a config.yaml), None where it lies in none."""
    for folder in (path.parent.parent, path.parent) if path.parent.name == "checkpoints" else (path.parent,):
        if (folder / "config.yaml").is_file():
            return folder
    return None


def refuse_another_runs(run_dir: Path, source: Path, what: str, instead: str) -> None:
    """One line if checkpoint `source` belongs to a run other than `run_dir`: `what` (e.g. 'eval
    writes its eval.json') would credit `run_dir` with another run's policy; `instead` says what to do."""
    owner = owner_run(source.resolve())
    if owner is not None and owner != run_dir.resolve():
        raise UserError(f"checkpoint {source} belongs to another run ({owner}), and {what} into {run_dir}; "
                        f"{instead.format(owner=owner, name=source.name)}")  # fmt: skip


def latest(run_dir: Path) -> Path:
    """The newest checkpoint of a run directory, or a UserError saying why there is none."""
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir} is a file, not a run directory")
    if not run_dir.is_dir():
        raise UserError(f"run directory not found: {run_dir}")
    found = list_checkpoints(run_dir / "checkpoints")
    if not found and not (run_dir / "config.yaml").is_file() and (run_dir.parent / "config.yaml").is_file():
        raise UserError(f"{run_dir} is not a robolearn run directory (no config.yaml); its run is {run_dir.parent}")
    if not found:
        raise UserError(f"no checkpoint in {run_dir / 'checkpoints'} (expected iter_NNNNNN.pt files)")
    return found[-1]


def rng_state() -> dict:
    """torch (CPU and CUDA), numpy and python global RNG states as tensors/plain types."""
    import torch

    np_state = np.random.get_state()
    py_state = random.getstate()
    state = {
        "torch": torch.get_rng_state(),
        "numpy": {"keys": torch.from_numpy(np_state[1].astype(np.int64)), "pos": int(np_state[2]),
                  "has_gauss": int(np_state[3]), "cached_gaussian": float(np_state[4])},
        "python": {"version": py_state[0], "state": list(py_state[1]), "gauss": py_state[2]},
    }  # fmt: skip
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def other_robot(payload: dict, env, source: Path) -> str | None:
    """Why the policy of checkpoint `source` met another robot in `env` than it trained on (the
    robot fingerprint it keeps differs from the env's), in words; None if the same or unknown (a
    checkpoint from before 2026-11-29, or an env without one, as Isaac Lab's)."""
    trained, now = payload.get("robot_model"), getattr(env, "robot_model", None)
    if not isinstance(trained, str) or now is None or trained == now:
        return None
    return (f"checkpoint {source} was trained on another robot model than task '{env.cfg.name}' builds now (robot "
            f"fingerprint {trained}, now {now}: its MJCF, the task's robot edits such as robot.py, or the physics "
            "options changed since)")  # fmt: skip


RESUME_PARTS = {"algorithm": "optimizer and learner state", "env": "environment state", "rng": "random number streams",
                "env_steps": "count of env steps", "wall_time_s": "training time", "other_ranks": "other ranks' state"}
"""What a resume needs beyond the policy, in words (eval and export read only the policy and iteration)."""


def resume_part(payload: dict, key: str, source: Path):
    """payload[key], or a UserError: a checkpoint stripped of it (to save space, by hand) still
    evaluates and exports, but training cannot continue from it exactly."""
    if key not in payload:
        raise UserError(f"checkpoint {source} has no {RESUME_PARTS[key]} ('{key}'): it cannot be resumed exactly; "
                        "eval and export still read its policy; move it away to resume from the one before it")  # fmt: skip
    return payload[key]


def set_rng_state(state: dict, source: Path) -> None:
    import torch

    try:
        torch.set_rng_state(state["torch"])
        n = state["numpy"]
        np.random.set_state(("MT19937", n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))
        p = state["python"]
        random.setstate((p["version"], tuple(p["state"]), p["gauss"]))
        if "cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError) as exc:
        raise UserError(f"checkpoint {source} holds random number streams this robolearn cannot restore "
                        f"({type(exc).__name__}: {one_line(exc)[:120]}); move it away to resume from the one "
                        "before it") from None  # fmt: skip
