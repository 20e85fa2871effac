"""robot.yaml's values, checked one by one: a checksum proves only that robot.yaml is the one export
signed, and a hand edit re-signed with metadata_digest would otherwise run, or fail deep inside the
runtime. Each refusal is one DeployError line naming the entry, its value and what is valid.
"""

from __future__ import annotations

import math
from typing import Any

from robolearn_deploy.errors import DeployError


def require(meta: dict, key: str, where: str = "robot.yaml") -> Any:
    if key not in meta:
        raise DeployError(f"{where} has no '{key}' entry: not a complete robolearn bundle (re-export it)")
    return meta[key]


FINITE = (math.isfinite, "a finite number")
NOT_NAN = (lambda v: not math.isnan(v), "a number (.inf and -.inf: unbounded)")
GAIN = (lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0 (a negative gain drives the joint away from its target)")
"""(test, what is valid) for one number of robot.yaml."""
SCALE = (lambda v: math.isfinite(v) and v != 0, "a finite number other than 0 (0 would hide the term from the policy)")
ACTION_SCALE = (lambda v: math.isfinite(v) and v != 0, "a finite number other than 0 (0 would drop the policy's output)")
CLIP = (lambda v: math.isfinite(v) and v > 0, "a positive finite number, or none for no clip")
PERIOD = (lambda v: 1e-4 <= v <= 100, "a number of seconds in 1e-4..100")
"""A control period (10 kHz to one tick per 100 s): what training can make (a physics step of at
least 1e-6 s, at most 1000 per control period); beyond it a hand edit would run for ever or never."""
PHYSICS_DT = (lambda v: 1e-6 <= v <= 100, "a number of seconds in 1e-6..100")
MAX_DECIMATION = 1000


def number(value: Any, field: str, rule: tuple = FINITE, unit: str = "") -> float:
    """robot.yaml's `field` as a float that passes `rule`: a checksum proves only that robot.yaml
    is the one signed, and a hand edit re-signed with metadata_digest would otherwise run (a negative
    period trips the watchdog on every tick, a NaN ctrl limit lets any ctrl through)."""
    ok, valid = rule
    try:  # a string too: YAML 1.1 reads 2e-2 (no dot) as one
        as_float = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        as_float = math.nan
    if not ok(as_float):
        raise DeployError(f"robot.yaml has {field}: {value!r}; valid: {valid}{unit} (re-export the bundle)")
    return as_float


def number_range(value: Any, field: str) -> tuple[float, float]:
    """A finite [low, high] of robot.yaml (a joint's limits, an effort range): the watchdog trips
    outside it, so a NaN or a swapped pair would trip it on every tick or never."""
    valid = "[low, high], finite numbers with low <= high (re-export the bundle)"
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise DeployError(f"robot.yaml has {field}: {value!r}; valid: {valid}")
    try:
        low, high = (number(v, field) for v in value)
    except DeployError:
        raise DeployError(f"robot.yaml has {field}: {list(value)!r}; valid: {valid}") from None
    if low > high:
        raise DeployError(f"robot.yaml has {field}: [{low}, {high}]; valid: {valid}")
    return low, high


ENTRY_KINDS = {
    "task": ((str, type(None)), "the training task's name"),
    "model_file": ((str, type(None)), "the robot model's file name in the bundle"),
    "actuators": ((list,), "a list of actuator entries"),
    "observation": ((dict,), "a mapping with input, size and terms"),
    "action": ((dict,), "a mapping with output and size"),
    "default_pose": ((dict,), "a mapping of joint name to position"),
    "joint_limits": ((dict, type(None)), "a mapping of joint name to [low, high]"),
    "commands": ((dict, type(None)), "a mapping of command name to its components"),
    "sensors": ((dict, type(None)), "a mapping of sensor name to its dim"),
    "artifacts": ((list,), "a list of the policy's files"),
}
"""robot.yaml's top-level entries that the runtime reads, with the YAML types export writes: a
hand edit re-signed with metadata_digest is refused by name instead of failing deep inside."""


def check_entries(meta: dict) -> None:
    """The layout of robot.yaml's entries (ENTRY_KINDS; each artifact a mapping whose file is a name,
    each command a mapping with a components list), before any is read."""
    for key, (kinds, valid) in ENTRY_KINDS.items():
        if key in meta and not isinstance(meta[key], kinds) or isinstance(meta.get(key), str) and not meta[key]:
            raise DeployError(f"robot.yaml has {key}: {meta[key]!r}; valid: {valid} (re-export the bundle)")
    for entry in require(meta, "artifacts"):
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str) or not entry["file"]:
            raise DeployError(f"robot.yaml has an artifact {entry!r}; valid: a mapping with file (a file name in "
                              "the bundle), kind and precision (re-export the bundle)")  # fmt: skip
    for name, command in (meta.get("commands") or {}).items():
        if not isinstance(command, dict) or not isinstance(command.get("components"), list):
            raise DeployError(f"robot.yaml has command {name!r}: {command!r}; valid: a mapping with a components "
                              "list (re-export the bundle)")  # fmt: skip
    for name, sensor in (meta.get("sensors") or {}).items():
        if not isinstance(sensor, dict) or integer(sensor.get("dim"), f"sensor {name!r} dim") < 1:
            raise DeployError(f"robot.yaml has sensor {name!r}: {sensor!r}; valid: a mapping with dim, an integer "
                              ">= 1 (re-export the bundle)")  # fmt: skip


def text(value: Any, field: str) -> str:
    """A name of robot.yaml (a term's, a source's, an ONNX input's): a non-empty string."""
    if not isinstance(value, str) or not value:
        raise DeployError(f"robot.yaml has {field}: {value!r}; valid: a non-empty string (re-export the bundle)")
    return value


def integer(value: Any, field: str) -> int:
    """A count or index of robot.yaml: an integer (YAML's true is not 1 here)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise DeployError(f"robot.yaml has {field}: {value!r}; valid: an integer (re-export the bundle)")
    return value


def term_params(term: dict, name: str) -> dict:
    """A term's params: a mapping, whose joint and sensor lists (`joints`, `names`) are names and
    whose `name` (a command's, a signal's) is one."""
    params = term.get("params") or {}
    if not isinstance(params, dict):
        raise DeployError(f"robot.yaml has observation term {name!r} params: {params!r}; valid: a mapping "
                          "(re-export the bundle)")  # fmt: skip
    for key in ("joints", "names"):
        value = params.get(key)
        listed = [value] if key == "names" and isinstance(value, str) else value
        if value is not None and (not isinstance(listed, list) or not all(isinstance(v, str) and v for v in listed)):
            raise DeployError(f"robot.yaml has observation term {name!r} params.{key}: {value!r}; valid: a list of "
                              "names (re-export the bundle)")  # fmt: skip
    if "name" in params:
        text(params["name"], f"observation term {name!r} params.name")
    return dict(params)
