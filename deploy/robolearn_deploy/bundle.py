"""Reading and verifying a bundle: robot.yaml plus the files it lists, each with a sha256.

A bundle is refused (DeployError, one line) when a listed file is missing or differs from its
checksum, when robot.yaml itself was edited after export, when its format is one this runtime
does not read, when its observation/action layout does not add up, or when a number the control
loop relies on (timing, ctrl limits, PD gains, poses, joint limits) is one no export writes, or when
an entry is of a type no export writes (a list where a name belongs: fields.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from robolearn_deploy.errors import DeployError
from robolearn_deploy.fields import (
    ACTION_SCALE, CLIP, FINITE, GAIN, MAX_DECIMATION, NOT_NAN, PERIOD, PHYSICS_DT, SCALE, check_entries, integer, number,
    number_range, require, term_params, text,
)  # fmt: skip

BUNDLE_FORMAT = 1
"""The robot.yaml layout of a feed-forward policy's bundle; export writes the same constant."""
RECURRENT_BUNDLE_FORMAT = 2
"""Format 1 plus `policy_state`: the recurrent state the policy takes and returns. A runtime that
predates it refuses such a bundle by its format instead of running the policy without its state."""
READ_FORMATS = (BUNDLE_FORMAT, RECURRENT_BUNDLE_FORMAT)

ACTUATOR_KINDS = ("position", "motor", "actuator")
SAFE_CTRL = ("hold", "zero")
PRECISIONS = ("fp32", "fp16")
"""An artifact's precision (the policy's files: policy.onnx, policy.fp16.onnx, and TensorRT engines)."""
"""What a kind-'actuator' entry gets when the watchdog trips: its last ctrl, or ctrl 0."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def metadata_digest(meta: dict[str, Any]) -> str:
    """sha256 of robot.yaml's content without its own checksum key, in a canonical JSON form
    (key order and YAML formatting do not matter; any changed value does)."""
    body = {k: v for k, v in meta.items() if k != "metadata_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class Actuator:
    """One policy output: ctrl = clip(offset + scale * action, ctrl_min, ctrl_max).
    kind 'position': ctrl is the joint's target position, tracked with joint-space gains kp, kd.
    kind 'motor': ctrl times effort_per_ctrl is the joint effort [N m or N].
    kind 'actuator': ctrl goes to the robot's actuator `name` as is (a tendon, activation
    dynamics, ...: see actuator_kinds.py); `joint` is None, `drives` says what it moves and
    `safe_ctrl` what it gets when the watchdog trips ('hold': its last ctrl; 'zero': ctrl 0,
    clipped to [ctrl_min, ctrl_max])."""

    name: str
    joint: str | None
    kind: str
    action_scale: float
    action_offset: float
    ctrl_min: float
    ctrl_max: float
    kp: float = 0.0
    kd: float = 0.0
    effort_per_ctrl: float = 1.0
    effort_range: tuple[float, float] | None = None
    """[min, max] joint effort the actuator could apply in training (MuJoCo's forcerange x gear)."""
    drives: str = ""
    safe_ctrl: str = "zero"


@dataclass(frozen=True)
class ObsTerm:
    """One term of the observation layout. With `history` K > 1 its slice start:stop holds the
    last K values of the term, oldest first ([v(t-K+1), ..., v(t)], each `width` wide, each
    scaled and clipped); a robot.yaml without `history` means 1 (the current value only)."""

    name: str
    start: int
    stop: int
    scale: float
    clip: float | None
    units: str
    source: str
    params: dict
    history: int = 1

    @property
    def width(self) -> int:
        """Values of one step: what the term's source writes each tick."""
        return (self.stop - self.start) // self.history


@dataclass(frozen=True)
class StateTensor:
    """One recurrent state tensor: the policy takes it as `input` and returns its next value as
    `output`, shaped [batch, *shape]; it holds `reset` everywhere when an episode starts."""

    name: str
    input: str
    output: str
    shape: tuple[int, ...]
    reset: float = 0.0


@dataclass(frozen=True)
class Artifact:
    file: str
    kind: str  # onnx | tensorrt
    precision: str  # one of PRECISIONS
    info: dict


@dataclass(frozen=True)
class Bundle:
    path: Path
    meta: dict
    actuators: tuple[Actuator, ...]
    terms: tuple[ObsTerm, ...]
    obs_size: int
    input_name: str
    output_name: str
    control_period_s: float
    default_pose: dict[str, float]
    joint_limits: dict[str, tuple[float, float]]
    artifacts: tuple[Artifact, ...]
    state: tuple[StateTensor, ...] = ()
    """The recurrent policy's state tensors; () for a feed-forward policy."""

    @property
    def num_actions(self) -> int:
        return len(self.actuators)

    def file(self, name: str) -> Path:
        return self.path / name

    def artifact(self, kind: str, precision: str | None = None) -> Artifact | None:
        for a in self.artifacts:
            if a.kind == kind and precision in (None, a.precision):
                return a
        return None

    @classmethod
    def load(cls, path: str | Path) -> Bundle:
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise DeployError(f"a bundle is the path of the directory export wrote, got {path!r}")
        path = Path(path)
        try:
            meta = read_verified(path)
        except OSError as exc:  # no permission to read the folder or a file of it, a file that is a FIFO, ...
            raise DeployError(f"cannot read the bundle {path}: {exc.filename}: {exc.strerror}; valid: a bundle "
                              "directory whose files this user may read") from None  # fmt: skip
        try:
            return cls._parse(path, meta)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            what = f"missing entry {exc}" if isinstance(exc, KeyError) else " ".join(str(exc).split())
            raise DeployError(f"{path / 'robot.yaml'} is malformed ({type(exc).__name__}: {what}); re-export the bundle") from None

    @classmethod
    def _parse(cls, path: Path, meta: dict) -> Bundle:
        period = check_timing(meta)
        actuators = tuple(_actuator(a) for a in require(meta, "actuators"))
        obs, act = require(meta, "observation"), require(meta, "action")
        terms = tuple(_term(t) for t in require(obs, "terms", "robot.yaml observation"))
        bundle = cls(
            path=path, meta=meta, actuators=actuators, terms=terms,
            obs_size=integer(require(obs, "size", "robot.yaml observation"), "observation size"),
            input_name=text(obs.get("input", "obs"), "observation input"),
            output_name=text(act.get("output", "actions"), "action output"),
            control_period_s=period,
            default_pose={k: number(v, f"default_pose of {k!r}") for k, v in require(meta, "default_pose").items()},
            joint_limits={k: number_range(v, f"joint_limits of {k!r}") for k, v in (meta.get("joint_limits") or {}).items()},
            artifacts=tuple(Artifact(a["file"], a["kind"], a["precision"], a) for a in require(meta, "artifacts")),
            state=state_tensors(meta),
        )  # fmt: skip
        bundle._check_layout(integer(act.get("size", len(actuators)), "action size"))
        _check_evaluation(meta.get("evaluation"))
        return bundle

    def _check_layout(self, action_size: int) -> None:
        at = 0
        for t in self.terms:
            if t.start != at or t.stop <= t.start:
                raise DeployError(
                    f"observation layout is broken at term '{t.name}' (slice {t.start}:{t.stop}, expected to start "
                    f"at {at}): robot.yaml does not describe a contiguous observation"
                )
            if (t.stop - t.start) % t.history:
                raise DeployError(
                    f"observation term '{t.name}' has history {t.history} but its slice {t.start}:{t.stop} is not "
                    f"{t.history} steps of equal width: robot.yaml does not describe a history; re-export the bundle"
                )
            at = t.stop
        if at != self.obs_size:
            raise DeployError(f"observation terms cover {at} values but robot.yaml says the observation has {self.obs_size}")
        if action_size != len(self.actuators):
            raise DeployError(f"robot.yaml lists {len(self.actuators)} actuators for an action of size {action_size}")


def read_verified(path: Path) -> dict:
    """robot.yaml, after checking the format, its own checksum and every listed file's checksum."""
    manifest = path / "robot.yaml"
    if path.exists() and not path.is_dir():
        raise DeployError(f"{path} is a file; a bundle is the directory export wrote (with robot.yaml in it)")
    if not path.is_dir():
        raise DeployError(f"bundle directory {path} does not exist")
    if not manifest.is_file():
        inside = " (a run's bundle is its export/ folder: bundle=" + str(path / "export") + ")" if (path / "export" / "robot.yaml").is_file() else ""
        raise DeployError(f"{path} has no robot.yaml: not a robolearn bundle; valid: the directory export wrote{inside}")
    try:
        meta = yaml.safe_load(manifest.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise DeployError(f"{manifest} is not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(meta, dict):
        raise DeployError(f"{manifest} is not a robolearn bundle description")
    fmt = meta.get("bundle_format")
    if isinstance(fmt, bool) or fmt not in READ_FORMATS:  # YAML's true == 1 in Python
        from robolearn_deploy import __version__

        versions = meta.get("versions") if isinstance(meta.get("versions"), dict) else {}
        raise DeployError(
            f"bundle format {fmt!r} (exported by robolearn {versions.get('robolearn', '?')}) is not "
            f"a format this runtime reads ({', '.join(map(str, READ_FORMATS))}; robolearn-deploy {__version__}); use the deploy runtime "
            f"that ships with that robolearn, or re-export the run"
        )
    if meta.get("metadata_sha256") != metadata_digest(meta):
        raise DeployError(f"{manifest} was edited after export (its metadata checksum does not match); re-export the bundle")
    files = require(meta, "files")
    if not isinstance(files, dict):
        raise DeployError(f"{manifest}: 'files' must map each file name to its sha256; re-export the bundle")
    check_entries(meta)
    needed = [a["file"] for a in meta["artifacts"]] + [meta.get("model_file")]
    unlisted = [n for n in needed if n and n not in files]
    if unlisted:
        raise DeployError(f"robot.yaml carries no checksum for {unlisted[0]}: the bundle cannot be verified; re-export it")
    for name, entry in files.items():
        file = path / name
        if not file.is_file():
            raise DeployError(f"bundle file {name} listed in robot.yaml is missing from {path}")
        expected = entry.get("sha256") if isinstance(entry, dict) else None
        if sha256(file) != expected:
            raise DeployError(f"{name} does not match its sha256 in robot.yaml: it changed after export; re-export the bundle")
    return meta


def _term(t: Any) -> ObsTerm:
    if not isinstance(t, dict):
        raise DeployError(f"robot.yaml has an observation term {t!r}; valid: a mapping (re-export the bundle)")
    name = text(t.get("name"), "an observation term's name")
    where = f"observation term {name!r}"
    start, stop = (integer(require(t, k, f"robot.yaml {where}"), f"{where} {k}") for k in ("start", "stop"))
    return ObsTerm(name, start, stop, number(t.get("scale", 1.0), f"{where} scale", SCALE), _clip(t),
                   str(t.get("units", "")), text(t.get("source"), f"{where} source"), term_params(t, name), _history(t))


def state_tensors(meta: dict) -> tuple[StateTensor, ...]:
    """robot.yaml's `policy_state` (a recurrent policy's), checked against the bundle format."""
    entries = meta.get("policy_state") or []
    recurrent = meta.get("bundle_format") == RECURRENT_BUNDLE_FORMAT
    if bool(entries) != recurrent:
        raise DeployError(f"robot.yaml has bundle format {meta.get('bundle_format')} and "
                          f"{'a' if entries else 'no'} policy_state: format {RECURRENT_BUNDLE_FORMAT} is exactly the "
                          "recurrent bundles, which list their state; re-export the bundle")  # fmt: skip
    state = []
    for e in entries:
        shape = tuple(int(d) for d in e["shape"])
        if not shape or min(shape) < 1 or e.get("dtype", "float32") != "float32":
            raise DeployError(f"policy state {e.get('name')!r} has shape {list(shape)} dtype {e.get('dtype')!r}; "
                              "valid: positive sizes, float32 (re-export the bundle)")  # fmt: skip
        state.append(StateTensor(str(e["name"]), str(e["input"]), str(e["output"]), shape, float(e.get("reset", 0.0))))
    return tuple(state)


def check_timing(meta: dict) -> float:
    """The control period, after checking it and, where present, the physics step and decimation
    (physics steps per control period) export writes: the watchdog's deadline and sim2sim's physics
    come from them."""
    period = number(require(meta, "control_period_s"), "control_period_s", PERIOD)
    dt = number(meta["physics_dt_s"], "physics_dt_s", PHYSICS_DT) if "physics_dt_s" in meta else None
    decimation = meta.get("decimation", 1)
    if isinstance(decimation, bool) or not isinstance(decimation, int) or not 1 <= decimation <= MAX_DECIMATION:
        raise DeployError(f"robot.yaml has decimation: {decimation!r}; valid: an integer 1..{MAX_DECIMATION} (physics "
                          "steps per control period; re-export the bundle)")  # fmt: skip
    if dt is not None and "decimation" in meta and not math.isclose(dt * decimation, period, rel_tol=1e-6):
        raise DeployError(f"robot.yaml has control_period_s: {period} but physics_dt_s x decimation = {dt} x {decimation} "
                          f"= {dt * decimation:.6g} s; valid: equal periods (re-export the bundle)")  # fmt: skip
    return period


def _clip(term: dict) -> float | None:
    """A term's clip: none (unclipped), or a positive bound (np.clip to [c, -c] of a negative one is a constant)."""
    clip = term.get("clip")
    return None if clip is None else number(clip, f"observation term {term['name']!r} clip", CLIP)


def _check_evaluation(evaluation: Any) -> None:
    """The training evaluation sim2sim compares with: none (an imported policy), or a mapping of numbers."""
    if evaluation is None:
        return
    if not isinstance(evaluation, dict):
        raise DeployError(f"robot.yaml has evaluation: {evaluation!r}; valid: a mapping of the training evaluation's "
                          "numbers, or none (re-export the bundle)")  # fmt: skip
    for key in ("return_mean", "return_std", "episode_length_mean"):
        if evaluation.get(key) is not None:
            number(evaluation[key], f"evaluation {key}")


def _history(term: dict) -> int:
    """A term's `history` (absent: 1, the bundles written before history existed)."""
    history = term.get("history", 1)
    if isinstance(history, bool) or not isinstance(history, int) or history < 1:
        raise DeployError(f"observation term '{term.get('name')}' has history {history!r}; valid: an integer >= 1 "
                          "(re-export the bundle)")  # fmt: skip
    return history


NEEDS = {"position": ("joint", "kp", "kd"), "motor": ("joint", "effort_per_ctrl"), "actuator": ()}
"""What an actuator entry of each kind must carry: a position servo without its gains or a motor
without its effort per ctrl would run with the defaults (kp 0: a limp joint; 1 N m per ctrl)."""


def _actuator(entry: Any) -> Actuator:
    if not isinstance(entry, dict):
        raise DeployError(f"robot.yaml has an actuator {entry!r}; valid: a mapping (re-export the bundle)")
    where = f"actuator {text(entry.get('name'), 'an actuator name')!r}"
    kind = entry.get("kind")
    if kind not in ACTUATOR_KINDS:
        raise DeployError(
            f"actuator '{entry.get('name')}' is of kind {kind!r}; this runtime drives {', '.join(ACTUATOR_KINDS)}"
        )
    for key in NEEDS[kind]:
        require(entry, key, f"robot.yaml {where} (kind {kind})")
    if kind != "actuator":
        text(entry["joint"], f"{where} joint")
    rules = {"action_scale": ACTION_SCALE, "action_offset": FINITE, "kp": GAIN, "kd": GAIN, "effort_per_ctrl": FINITE}
    values = {k: number(entry[k], f"{where} {k}", rule) for k, rule in rules.items() if k in entry}
    values["ctrl_min"], values["ctrl_max"] = _ctrl_limits(entry, where)
    effort = entry.get("effort_range")
    safe = entry.get("safe_ctrl", "zero")
    if kind == "actuator" and safe not in SAFE_CTRL:
        raise DeployError(f"actuator '{entry.get('name')}' has safe_ctrl {safe!r}; valid: {', '.join(SAFE_CTRL)} "
                          "(re-export the bundle)")  # fmt: skip
    return Actuator(
        name=str(entry["name"]), joint=None if kind == "actuator" else str(entry["joint"]), kind=kind, **values,
        effort_range=None if effort is None else number_range(effort, f"{where} effort_range"),
        drives=str(entry.get("drives", "")), safe_ctrl=str(safe),
    )  # fmt: skip


def _ctrl_limits(entry: dict, where: str) -> tuple[float, float]:
    """An actuator's [ctrl_min, ctrl_max]: no NaN (which np.clip passes through), unbounded sides
    as +-inf (an imported policy's unclipped action), and ctrl_min <= ctrl_max."""
    low = number(require(entry, "ctrl_min", f"robot.yaml {where}"), f"{where} ctrl_min", NOT_NAN)
    high = number(require(entry, "ctrl_max", f"robot.yaml {where}"), f"{where} ctrl_max", NOT_NAN)
    if low > high or low == math.inf or high == -math.inf:
        raise DeployError(f"robot.yaml has {where} ctrl_min: {low}, ctrl_max: {high}; valid: ctrl_min <= ctrl_max, "
                          "ctrl_min below .inf and ctrl_max above -.inf (re-export the bundle)")  # fmt: skip
    return low, high
