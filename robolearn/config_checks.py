"""Value ranges of the training config, checked right after composition, before anything is built.

The schemas (config.py) already refuse unknown keys and wrong types; these rules refuse values
of the right type that cannot work (a negative learning rate, gamma above 1, zero minibatches),
each in one line that names the field and its valid range.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from robolearn.config_scale import DIRECTIONS, OBJECTIVE_MODES
from robolearn.errors import UserError
from robolearn.physics.base import RESET_SENSORS
from robolearn.scene import sim_options

SCHEDULES = ("adaptive", "fixed")
NORMALIZER_SCHEDULES = ("rollout", "step")
ACTIVATIONS = ("elu", "relu", "tanh")
NETWORKS = ("mlp", "gru", "lstm")
AMP = ("bf16",)
LOGGERS = ("tensorboard", "wandb", "both", "none")
WANDB_MODES = ("online", "offline", "disabled")
FLOAT32_MAX = 3.4028234663852886e38
"""The largest float32: a config number beyond it is inf in the tensors it scales."""


def _positive(v) -> bool:
    return v > 0


def _non_negative(v) -> bool:
    return v >= 0


def _at_least_one(v) -> bool:
    return v >= 1


def _unit(v) -> bool:
    return 0 <= v <= 1


def _layers(v) -> bool:
    return all(isinstance(x, int) and x >= 1 for x in v)


def _nonzero(v) -> bool:
    return v != 0


RUN_NAME = re.compile(r"[A-Za-z0-9._-]{0,100}")
"""A run's name: part of its folder's name (runs/<task>/<time>_<run_name>), which a file system
allows 255 bytes."""
RUN_NAME_VALID = "letters, digits, '.', '_' and '-', at most 100 characters"

RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "seed": (lambda v: 0 <= v < 2**32, "an integer 0..4294967295"),
    "run_name": (lambda v: RUN_NAME.fullmatch(str(v)) is not None, RUN_NAME_VALID),
    "logger": (lambda v: v in LOGGERS, ", ".join(LOGGERS)),
    "wandb.mode": (lambda v: v in ("", *WANDB_MODES), ", ".join(WANDB_MODES) + ", or empty for WANDB_MODE"),
    "wandb.project": (lambda v: bool(str(v).strip()), "a project name"),
    "env.num_envs": (_at_least_one, "an integer >= 1"),
    "env.state_limit": (_positive, "> 0"),
    "physics.num_threads": (lambda v: 0 <= v <= 4096, "0..4096 (0: every core)"),
    "physics.nconmax": (_non_negative, ">= 0 (0: derived from the model)"),
    "physics.njmax": (_non_negative, ">= 0 (0: derived from the model)"),
    "physics.reset_sensors": (lambda v: v in RESET_SENSORS, " or ".join(RESET_SENSORS)),
    "algo.learning_rate": (lambda v: 0 < v <= 1, "0 < learning_rate <= 1"),
    "algo.schedule": (lambda v: v in SCHEDULES, " or ".join(SCHEDULES)),
    "algo.normalizer_schedule": (lambda v: v in NORMALIZER_SCHEDULES, " or ".join(NORMALIZER_SCHEDULES)),
    "algo.desired_kl": (_positive, "> 0"),
    "algo.clip_param": (_positive, "> 0"),
    "algo.value_clip": (_positive, "> 0"),
    "algo.value_loss_coef": (_non_negative, ">= 0"),
    "algo.entropy_coef": (_non_negative, ">= 0"),
    "algo.gamma": (_unit, "0 <= gamma <= 1"),
    "algo.lam": (_unit, "0 <= lam <= 1"),
    "algo.num_learning_epochs": (lambda v: 1 <= v <= 1000, "an integer 1..1000 (passes over each rollout; 5 is usual)"),
    "algo.num_mini_batches": (_at_least_one, "an integer >= 1"),
    "algo.max_grad_norm": (_positive, "> 0"),
    "algo.init_noise_std": (_positive, "> 0"),
    "algo.min_noise_std": (_non_negative, ">= 0 (0: no floor)"),
    "algo.actor_hidden_dims": (_layers, "a list of layer sizes >= 1"),
    "algo.critic_hidden_dims": (_layers, "a list of layer sizes >= 1"),
    "algo.activation": (lambda v: v in ACTIVATIONS, ", ".join(ACTIVATIONS)),
    "algo.normalizer_min_std": (_positive, "> 0"),
    "algo.normalizer_clip": (lambda v: v is None or v > 0, "> 0, or null for no clip"),
    "algo.policy": (lambda v: v in NETWORKS, ", ".join(NETWORKS)),
    "algo.critic_network": (lambda v: v is None or v in NETWORKS, ", ".join(NETWORKS) + ", or null for the same as algo.policy"),
    "algo.amp": (lambda v: v is None or v in AMP, ", ".join(AMP) + ", or null for float32"),
    "algo.rnn_hidden_size": (_at_least_one, "an integer >= 1"),
    "algo.rnn_num_layers": (_at_least_one, "an integer >= 1"),
    "algo.bptt_length": (_non_negative, "an integer >= 0 (0: the whole rollout)"),
    "runner.num_steps_per_env": (_at_least_one, "an integer >= 1"),
    "runner.max_iterations": (lambda v: 1 <= v <= 10**9, "an integer 1..1000000000"),
    "runner.save_interval": (_at_least_one, "an integer >= 1"),
    "runner.keep_checkpoints": (_at_least_one, "an integer >= 1"),
    "runner.episode_window": (_at_least_one, "an integer >= 1"),
    "runner.video_interval": (_non_negative, "an integer >= 0 (0: no clips)"),
    "runner.video_length_s": (lambda v: 0 < v <= 600, "0 < video_length_s <= 600 (seconds)"),
    "runner.video_width": (lambda v: 16 <= v <= 3840, "16..3840 (pixels)"),
    "runner.video_height": (lambda v: 16 <= v <= 2160, "16..2160 (pixels)"),
    "objective.mode": (lambda v: v in OBJECTIVE_MODES, ", ".join(OBJECTIVE_MODES)),
    "objective.direction": (lambda v: v in DIRECTIONS, " or ".join(DIRECTIONS)),
    "distributed.timeout_s": (_positive, "> 0 (seconds)"),
    # the task (the rules that need the model, e.g. joint names, run when the env is built);
    # `*` stands for any key at that level (a term, a group, a command)
    "task.decimation": (lambda v: 1 <= v <= 1000, "an integer 1..1000 (physics steps per control step)"),
    "task.episode_length_s": (lambda v: 0 < v <= 3600, "0 < episode_length_s <= 3600 (seconds; evaluation runs whole episodes)"),
    "task.sim_dt": (lambda v: 1e-6 <= v <= 0.1, "1e-06..0.1 (seconds), or null for the model's own timestep"),
    "task.observations.*.terms.*.scale": (_nonzero, "a number other than 0"),
    "task.observations.*.terms.*.clip": (_positive, "> 0, or null for no clip"),
    "task.observations.*.terms.*.noise.scale": (_non_negative, ">= 0"),
    "task.observations.*.terms.*.history": (_at_least_one, "an integer >= 1 (1: the current value only)"),
    "task.commands.*.standing_probability": (_unit, "0 <= p <= 1"),
    "task.metrics.*.window_s": (_positive, "> 0 (seconds)"),
    "task.events.*.interval_s": (lambda v: len(v) == 2 and 0 < v[0] <= v[1], "[low, high] (seconds) with 0 < low <= high"),
    "task.sim.timestep": (_positive, "> 0 (seconds), or null for the model's own"),
    "task.sim.iterations": (_at_least_one, "an integer >= 1"),
    "task.sim.ls_iterations": (_at_least_one, "an integer >= 1"),
    "task.sim.tolerance": (_non_negative, ">= 0"),
    "task.sim.impratio": (_positive, "> 0"),
    "task.sim.noslip_iterations": (_non_negative, "an integer >= 0"),
    **{f"task.sim.{option}": (lambda v, o=option: str(v).lower() in sim_options.choices(o), ", ".join(sim_options.choices(option)))
       for option in sim_options.ENUMS},
}


def not_a_setting(key: str, schema: type, note: str = "") -> str:
    """'algo.learnin_rate is not a setting of algo; valid: ...' (the fields of `schema`)."""
    where = key.rpartition(".")[0] or "the training config"
    return f"{key} is not a setting of {where}{note}; valid: {', '.join(f.name for f in dataclasses.fields(schema))}"


def check_known_keys(node: DictConfig, path: str = "") -> None:
    """Refuse a key that no schema declares, also one added with `+` (Hydra lets `+key=value` into
    any config; the schema would not read it, so the user's setting would be silently ignored)."""
    kind = OmegaConf.get_type(node)
    if dataclasses.is_dataclass(kind):
        known = {f.name for f in dataclasses.fields(kind)}
        for key in node.keys():
            if key not in known:
                raise UserError(not_a_setting(f"{path}{key}", kind, " (a + override cannot add one)"))
        gone = [f.name for f in dataclasses.fields(kind) if f.name not in node] if not path else []
        if gone:  # `~seed`: Hydra deletes a key of the top level (a nested schema refuses it itself)
            raise UserError(f"~{gone[0]}: {gone[0]} cannot be removed from the training config; valid: override it "
                            "instead, or leave it at its default")  # fmt: skip
    for key in node.keys():
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not child._is_none() and not child._is_missing():
            check_known_keys(child, f"{path}{key}.")


def check_train_cfg(cfg: DictConfig, world_size: int = 1) -> None:
    """Raise a UserError for an undeclared key or the first value outside its valid range;
    `world_size`: the ranks of a torchrun job, which share env.num_envs."""
    check_known_keys(cfg)
    check_missing(cfg)
    check_finite(cfg)
    for pattern, (ok, valid) in RULES.items():
        for key, value in _select(cfg, pattern):
            if value is None or isinstance(value, DictConfig):
                continue  # null (the schema allows it only where it means 'none') or absent in a partial config
            plain = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
            if not ok(plain):
                raise UserError(f"{key}={_show(plain)} is out of range; valid: {valid}")
    if OmegaConf.select(cfg, "task.sim_dt") is not None and OmegaConf.select(cfg, "task.sim.timestep") is not None:
        raise UserError("task.sim_dt and task.sim.timestep both set the timestep; keep one of them")
    if OmegaConf.select(cfg, "task.action") is not None:
        check_action_cfg(cfg.task.action)
    num_envs = cfg.env.num_envs
    if world_size > 1:
        if num_envs % world_size:
            raise UserError(f"env.num_envs={num_envs} cannot be shared by {world_size} ranks (the total over all "
                            f"ranks); valid: a multiple of {world_size}")  # fmt: skip
        num_envs //= world_size
    samples = num_envs * cfg.runner.num_steps_per_env
    if samples % cfg.algo.num_mini_batches:
        per_rank = f" (per rank: env.num_envs / {world_size} ranks)" if world_size > 1 else ""
        raise UserError(f"algo.num_mini_batches={cfg.algo.num_mini_batches} does not divide env.num_envs * "
                        f"runner.num_steps_per_env = {samples}{per_rank}; valid: a divisor of {samples}")  # fmt: skip
    if cfg.algo.policy != "mlp" or cfg.algo.critic_network not in (None, "mlp"):
        check_sequences(num_envs, cfg.runner.num_steps_per_env, cfg.algo.bptt_length, cfg.algo.num_mini_batches)
    if cfg.algo.min_noise_std >= cfg.algo.init_noise_std:
        raise UserError(f"algo.min_noise_std={cfg.algo.min_noise_std} must be below algo.init_noise_std="
                        f"{cfg.algo.init_noise_std}")  # fmt: skip


TRAINED_GROUPS = ("policy", "critic")
"""The observation groups training reads: the policy's input and the critic's (default: the policy's)."""


def check_what_training_reads(cfg: DictConfig) -> None:
    """A task trains on its rewards and on the policy and critic observation groups: no reward at
    all leaves nothing to learn, and another group would be computed every step and read by nothing
    (a misspelt `critic`, most often). An Isaac Lab task's own managers hold both (its robolearn
    task config has neither)."""
    from robolearn.isaaclab import isaaclab_task

    if isaaclab_task(str(OmegaConf.select(cfg, "task.name") or "")) is not None:
        return
    rewards = OmegaConf.select(cfg, "task.rewards")
    if rewards is not None and len(rewards) == 0:
        raise UserError("task.rewards is empty: the policy would have nothing to learn; valid: at least one reward "
                        "term (`robolearn terms --kind reward` lists them)")  # fmt: skip
    for group in OmegaConf.select(cfg, "task.observations") or {}:
        if group not in TRAINED_GROUPS:
            raise UserError(f"task.observations.{group} is read by nothing (training reads the policy and critic "
                            f"groups); valid: {', '.join(TRAINED_GROUPS)}")  # fmt: skip


def check_sequences(num_envs: int, num_steps: int, bptt_length: int, num_mini_batches: int) -> int:
    """A recurrent network learns from sequences of bptt_length steps (0: num_steps): that length
    must divide the rollout, and num_mini_batches the number of sequences. Returns the length."""
    length = bptt_length or num_steps
    if num_steps % length:
        raise UserError(f"algo.bptt_length={bptt_length} does not divide runner.num_steps_per_env={num_steps}; "
                        f"valid: a divisor of {num_steps}, or 0 for the whole rollout")  # fmt: skip
    sequences = num_envs * (num_steps // length)
    if sequences % num_mini_batches:
        raise UserError(f"algo.num_mini_batches={num_mini_batches} does not divide the {sequences} sequences of a "
                        f"recurrent update (env.num_envs * runner.num_steps_per_env / bptt length); valid: a divisor "
                        f"of {sequences}")  # fmt: skip
    return length


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_PER_ACTUATOR = {
    "scale": (lambda v: _number(v) and v != 0, "a number other than 0"),
    "offset": (_number, "a number"),
    "clip": (lambda v: isinstance(v, list) and len(v) == 2 and all(map(_number, v)) and v[0] < v[1], "[low, high] with low < high"),
}  # fmt: skip


def check_action_cfg(action: DictConfig) -> None:
    """task.action.scale / offset: a number or {name or pattern: number}; clip: {name or pattern:
    [low, high]}. Whether the names match the model's actuators is checked when the env is built."""
    for key, (ok, valid) in _PER_ACTUATOR.items():
        value = action.get(key)
        if value is None:
            if key == "clip" or key not in action:
                continue  # null: no clip besides ctrlrange
            raise UserError(f"task.action.{key}=null is out of range; valid: {valid}, or a mapping "
                            f"{{joint or actuator name or pattern: {valid}}}")  # fmt: skip
        plain = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        if not isinstance(plain, dict):
            if key == "clip" or not ok(plain):
                what = "" if key == "clip" else f"{valid}, or "
                raise UserError(f"task.action.{key}={_show(plain)} is out of range; valid: {what}a mapping "
                                f"{{joint or actuator name or pattern: {valid}}}")  # fmt: skip
            continue
        for pattern, v in plain.items():
            try:
                re.compile(str(pattern))
            except re.error as exc:
                raise UserError(f"task.action.{key}: '{pattern}' is not a valid regular expression ({exc})") from None
            if not ok(v):
                raise UserError(f"task.action.{key}.{pattern}={_show(v)} is out of range; valid: {valid}")


def check_missing(node: Any, path: str = "") -> None:
    """Refuse a term without its func (`+task.rewards.new={}`: the schema has no default for it),
    before the run reads it in OmegaConf's words. Other unset values have checks of their own that
    say what they need (an event's adaptive.limits: envs/event_manager.py)."""
    if isinstance(node, DictConfig) and not node._is_none() and not node._is_missing():
        for key in node.keys():
            child = node._get_node(key)
            if key == "func" and child._is_missing():
                raise UserError(f"{path[:-1]} has no func; valid: {{func: <a term function>, ...}} (robolearn terms "
                                "lists them)")  # fmt: skip
            if isinstance(child, DictConfig):
                check_missing(child, f"{path}{key}.")


def check_finite(node: Any, path: str = "") -> None:
    """Refuse nan and inf anywhere in the config: no setting means anything with them."""
    if isinstance(node, DictConfig):
        for key in node.keys():
            child = node._get_node(key)
            if not child._is_missing():
                check_finite(node[key], f"{path}{key}.")
    elif isinstance(node, ListConfig):
        for k, value in enumerate(node):
            check_finite(value, f"{path[:-1]}[{k}].")
    elif isinstance(node, float) and not math.isfinite(node):
        raise UserError(f"{path[:-1]}={node} is out of range; valid: a finite number")
    elif isinstance(node, float) and abs(node) > FLOAT32_MAX:  # inf once on the device, which computes in float32
        raise UserError(f"{path[:-1]}={node} is out of range; valid: a finite float32 number (magnitude at most 3.4e38)")


def _select(cfg: DictConfig, pattern: str):
    """(key, value) of every field that `pattern` names; `*` matches each key at its level."""
    head, _, rest = pattern.partition(".*.")
    if not rest:
        yield pattern, OmegaConf.select(cfg, pattern)
        return
    group = OmegaConf.select(cfg, head)
    if not isinstance(group, DictConfig):
        return
    for name in group.keys():
        yield from _select(cfg, f"{head}.{name}.{rest}")


def _show(value: Any) -> str:
    return str(value).replace(" ", "") if isinstance(value, list) else str(value)
