"""A trained run's config and policy, and what the verbs after training do with them: `export`
re-exports a checkpoint as a deploy bundle, `eval` scores it, `play` and the web viewer drive it."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

from robolearn import checkpoint
from robolearn.atomic_file import write_text_atomic
from robolearn.app import build_env, seed_everything
from robolearn.config import TrainCfg
from robolearn.config_checks import check_train_cfg, not_a_setting
from robolearn.envs.batched_env import BatchedEnv
from robolearn.envs.env_state import check_conditions, load_conditions
from robolearn.errors import UserError, one_line
from robolearn.evaluate import MAX_EVAL_EPISODES
from robolearn.hydra_errors import schema_mistake
from robolearn.memory import NotEnoughMemory, gib
from robolearn.rl.models import ActorCritic, Controller
from robolearn.run_dir import check_writable


RUN_SECTIONS = ("task", "algo", "env", "runner")
"""The sections of a run's config.yaml its policy is rebuilt from (train writes every section; the
ones added in later versions come from the schema's defaults)."""


def load_run_config(run_dir: Path, overrides: list[str] = ()) -> DictConfig:
    """The resolved config a run was trained with (validated), plus `key=value` overrides."""
    path = run_dir / "config.yaml"
    if not run_dir.exists():
        raise UserError(f"run directory {run_dir} does not exist; valid: a folder train wrote (robolearn runs lists them), "
                        "latest or <task>/latest")  # fmt: skip
    if not path.is_file():
        raise UserError(f"{run_dir} is not a robolearn run directory (no config.yaml)")
    try:
        saved = OmegaConf.load(path)
        if not isinstance(saved, DictConfig) or not isinstance(saved.get("task"), DictConfig):
            raise ValueError("it holds no task: mapping (robolearn train writes one)")
        lost = [part for part in RUN_SECTIONS if not isinstance(saved.get(part), DictConfig)]
        if lost:
            raise ValueError(f"it holds no {lost[0]}: mapping (robolearn train writes {', '.join(RUN_SECTIONS)})")
        cfg = OmegaConf.merge(OmegaConf.structured(TrainCfg), saved)
    except Exception as exc:
        kind, key = getattr(exc, "object_type", None), getattr(exc, "full_key", None)
        if isinstance(exc, ConfigKeyError) and key and dataclasses.is_dataclass(kind):  # a hand edit of the file
            raise UserError(f"cannot read {path}: {not_a_setting(key, kind)} (edited since the run wrote it?)") from None
        mistake = schema_mistake(one_line(exc)) if isinstance(exc, OmegaConfBaseException) else None
        if mistake:
            raise UserError(f"{path} (edited since the run wrote it?): {mistake}") from None
        raise UserError(f"cannot read {path}: {one_line(exc)}") from None
    unset = sorted(OmegaConf.missing_keys(cfg))
    if unset:  # a deleted key the schema has no default for
        raise UserError(f"{path} (edited since the run wrote it?): {unset[0]} is missing; valid: a value for it (the "
                        "schema has no default)")  # fmt: skip
    level = cfg.randomization.level
    # the group choices the run was started with: naming them again changes nothing
    own = {"task": cfg.task.name, "randomization": getattr(level, "name", level), "physics": cfg.physics.backend}
    for override in overrides:
        group, _, value = override.partition("=")
        if group in own and value == str(own[group]):
            continue
        if group == "physics":
            raise UserError(f"{override}: a resumed run takes plain keys; physics.backend={value} resumes it on another engine")
        if group in ("task", "randomization"):
            raise UserError(f"{override}: a resumed run keeps the task and randomization it was started with "
                            f"({cfg.task.name}); start a new run for another")  # fmt: skip
        if group == "run_name":
            raise UserError(f"{override}: run_name names a new run's folder; a resumed run keeps its own ({run_dir.name}); "
                            "leave run_name out, or start a new run")  # fmt: skip
        if group == "seed" and value != str(cfg.seed):
            raise UserError(f"{override}: a resumed run continues its own random streams (seed {cfg.seed}, restored from "
                            "its checkpoint); leave seed out, or start a new run with it")  # fmt: skip
    overrides = [o for o in overrides if o.partition("=")[0] not in own]  # the run's own choices: checked above
    bad = [o for o in overrides if "=" not in o or o.startswith(("hydra.", "+", "~", "-"))]
    if bad:
        raise UserError(f"cannot apply '{bad[0]}' to a saved run: use plain key=value overrides")
    try:
        merged = OmegaConf.merge(cfg, OmegaConf.from_dotlist(list(overrides)))
    except Exception as exc:  # a key the schema does not have, a value of the wrong type
        kind, key = getattr(exc, "object_type", None), getattr(exc, "full_key", None)
        if isinstance(exc, ConfigKeyError) and key and dataclasses.is_dataclass(kind):
            raise UserError(not_a_setting(key, kind)) from None
        raise UserError(f"cannot apply {' '.join(overrides)} to {path}: {one_line(exc).split(' full_key:')[0]}") from None
    try:  # train's own checks: a hand edit (a NaN, a size of 0) would otherwise fail deep inside the env
        check_train_cfg(merged)
    except UserError as exc:
        given = f" with {' '.join(overrides)}" if overrides else " (edited since the run wrote it?)"
        raise UserError(f"{path}{given}: {exc}") from None
    return merged


def policy_from_run(run_dir: Path, checkpoint_file: Path | None, num_envs: int | None, conditions: str = "trained",
                    seed: int | None = None, other_robot: str = "note") -> tuple[BatchedEnv, ActorCritic, dict, Path]:  # fmt: skip
    """A CPU env for a run's task (native MuJoCo; num_envs None: as in training, at most 64) and
    the policy of a checkpoint (the latest unless one is named); `conditions` (CONDITIONS): the
    env's curricula and adaptive ranges as the checkpoint has them, or as the task starts them;
    `seed`: the env's episodes (default: the run's seed). What the checkpoint changed is said in
    one line on stderr. A robot model changed since the checkpoint (checkpoint.other_robot) is a
    note on stderr (`other_robot="note"`: eval and play run the model as it is now) or a UserError
    ("refuse": an export would hand the robot gains or joints its policy never saw)."""
    check_conditions(conditions)
    cfg = load_run_config(run_dir)
    if seed is not None:
        cfg.seed = seed
    num_envs = num_envs or min(cfg.env.num_envs, 64)
    source = checkpoint.named(run_dir, checkpoint_file) if checkpoint_file else checkpoint.latest(run_dir)
    payload = checkpoint.load(source, named=checkpoint_file is not None)
    state = checkpoint.policy_state(payload, source, named=checkpoint_file is not None)
    seed_everything(cfg.seed)
    env = build_env(cfg, "mujoco", torch.device("cpu"), num_envs=num_envs)
    changed = checkpoint.other_robot(payload, env, source)
    if changed and other_robot == "refuse":
        env.close()
        raise UserError(f"{changed}; its bundle would give the robot gains or joints its policy never saw; valid: "
                        "restore the model it trained with, or train a new run on this one")  # fmt: skip
    if changed:
        note_other_robot(changed)
    actor_critic = ActorCritic.from_config(cfg.algo, env.observation_dims(), env.num_actions)
    checkpoint.restore(actor_critic, state, source)
    refuse_nonfinite_policy(actor_critic, env, source)
    if conditions == "trained" and isinstance(payload.get("env"), dict):
        changed = load_conditions(env, payload["env"])
        if changed:
            print(f"under the conditions training had reached by iteration {payload['iteration']}: {'; '.join(changed)}",
                  file=sys.stderr, flush=True)  # fmt: skip
    return env, actor_critic, payload, source


def note_other_robot(changed: str, stream=None) -> None:
    """Say that a checkpoint met another robot model than it trained on (checkpoint.other_robot), which
    eval, play and the web viewer run as it is now."""
    print(f"note: {changed}; running it on the model as it is now", file=stream or sys.stderr, flush=True)


def refuse_nonfinite_policy(actor_critic: ActorCritic, env: BatchedEnv, source: Path) -> None:
    """A checkpoint whose policy acts NaN or inf (weights or normalizer not finite; probed at a zero
    observation, which draws nothing from the env) is a UserError: every verb would run episodes the
    env resets after one step, and eval's numbers and play's video would look like a policy's."""
    if acts_nonfinite(actor_critic, env):
        env.close()
        raise UserError(nonfinite_policy(source))


def acts_nonfinite(actor_critic: ActorCritic, env: BatchedEnv) -> bool:
    """Whether the policy acts NaN or inf at a zero observation."""
    obs = torch.zeros(1, env.observation_dims()["policy"], device=env.device)
    with torch.no_grad():
        actions, _ = actor_critic.actor_step(obs, actor_critic.initial_actor_state(1, env.device))
    return not bool(torch.isfinite(actions).all())


def nonfinite_policy(source: Path) -> str:
    return (f"the policy of {source} acts NaN or inf (its weights or normalizer are not finite: they diverged in "
            "training, or the checkpoint is damaged); valid: an earlier checkpoint (checkpoint=<name>)")


def export_run(run_dir: Path, checkpoint_file: Path | None = None, out: Path | None = None, fmt: str = "onnx",
               precision: str = "fp32") -> Path:  # fmt: skip
    """Re-export a run's policy (latest checkpoint unless one is named) as a deploy bundle."""
    from robolearn.export.bundle import TrainedTo, check_options, export_bundle

    check_options(fmt, precision)
    if out is not None and out.name == "export" and (out.parent / "config.yaml").is_file() \
            and out.resolve() != (run_dir / "export").resolve():  # fmt: skip
        raise UserError(f"out={out} is the bundle of another run ({out.parent}); choose a new path, or export that "
                        "run itself")  # fmt: skip
    if out is None and checkpoint_file is not None:
        checkpoint.refuse_another_runs(run_dir, checkpoint.named(run_dir, checkpoint_file), "export writes its bundle",
                                       "export run={owner} checkpoint={name}, or give out= for a bundle elsewhere")
    env, actor_critic, payload, source = policy_from_run(run_dir, checkpoint_file, None, other_robot="refuse")
    try:
        result = export_bundle(actor_critic, env, out or run_dir / "export", fmt, precision,
                               trained_to=TrainedTo(payload["iteration"], source))
    finally:
        env.close()
    result.print(f" from {source.name} (iteration {payload['iteration']})")
    return result.path


def eval_run(run_dir: Path, episodes: int = 64, checkpoint_file: Path | None = None, conditions: str = "trained") -> dict:
    """The deterministic policy over `episodes` episodes with the task's randomization on (native
    MuJoCo on the CPU), under the checkpoint's or the task's initial conditions (CONDITIONS);
    prints the metrics and writes them to <run>/eval.json."""
    from robolearn.evaluate import evaluate

    if not 1 <= episodes <= MAX_EVAL_EPISODES:
        raise UserError(f"episodes={episodes} is out of range; valid: 1..{MAX_EVAL_EPISODES} (one environment per episode)")
    check_conditions(conditions)
    load_run_config(run_dir)  # a run directory, before anything about its eval.json
    check_writable(run_dir / "eval.json", "eval", file=True)  # before the evaluation, not after it
    if checkpoint_file is not None:
        checkpoint.refuse_another_runs(run_dir, checkpoint.named(run_dir, checkpoint_file), "eval writes its eval.json",
                                       "eval run={owner} checkpoint={name}")
    try:
        env, actor_critic, payload, source = policy_from_run(run_dir, checkpoint_file, episodes, conditions)
    except NotEnoughMemory as exc:  # it says env.num_envs: here the episodes set it
        raise UserError(f"episodes={episodes} (one environment each) needs ~{gib(exc.need)} of memory, {gib(exc.free)} "
                        "free: lower episodes=") from None  # fmt: skip
    try:
        metrics, _ = evaluate(env, Controller(actor_critic, env.num_envs, env.device))
    finally:
        env.close()
    metrics = {"checkpoint": source.name, "iteration": payload["iteration"], "conditions": conditions, **metrics}
    path = run_dir / "eval.json"
    write_text_atomic(path, json.dumps(metrics, indent=2) + "\n")
    for key, value in metrics.items():
        print(f"{key:<28} {value:.4g}" if isinstance(value, float) else f"{key:<28} {value}")
    print(f"wrote {path}")
    return metrics
