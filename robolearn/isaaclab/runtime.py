"""Finding Isaac Lab, resolving one of its tasks' configs and opening the task, with one-line errors.

Isaac Lab 3 runs kit-less (Newton physics) without Isaac Sim; its 2.x releases need Isaac Sim and
are refused. Upstream supports Python 3.12 only; on 3.11 it runs (installed with
--ignore-requires-python) but is unsupported, which robolearn says once on stderr.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from dataclasses import dataclass

from robolearn.errors import UserError, one_line

SETUP = "build an Isaac Lab environment with scripts/isaaclab/make_venv.sh (docs/isaaclab.md)"
EXAMPLES = "robolearn.isaaclab.examples"
"""robolearn's own Isaac Lab tasks (registered whenever a task is resolved)."""
LOCAL_EXAMPLE = "RoboLearn-Velocity-Flat-Quadruped"
REMOTE = ("http://", "https://", "omniverse://")
_warned = False


def require_isaaclab() -> str:
    """Isaac Lab's version, or a UserError that says how to get a usable one."""
    global _warned
    try:
        from importlib.metadata import PackageNotFoundError, version

        found = version("isaaclab")
    except PackageNotFoundError:
        raise UserError(f"Isaac Lab tasks need the isaaclab package (3.x), which is not installed in {sys.prefix}; "
                        f"{SETUP}") from None  # fmt: skip
    if int(found.split(".")[0]) < 3:
        raise UserError(f"isaaclab {found} needs Isaac Sim; robolearn runs Isaac Lab 3's kit-less (Newton) mode: "
                        f"install isaaclab 3.x ({SETUP})")  # fmt: skip
    for module in ("isaaclab_tasks", "isaaclab_newton", "newton"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise UserError(f"isaaclab {found} is installed but cannot import {module} ({one_line(exc)}); {SETUP}") from None
    if sys.version_info < (3, 12) and not _warned:
        _warned = True
        print(f"note: Isaac Lab {found} supports Python 3.12; this is Python {sys.version_info.major}."
              f"{sys.version_info.minor} (works, unsupported upstream)", file=sys.stderr)  # fmt: skip
    return found


@dataclass
class ResolvedTask:
    task_id: str
    """The gymnasium id Isaac Lab registered the task under."""
    env_cfg: object
    """Its ManagerBasedRLEnvCfg, presets resolved."""
    agent_cfg: object | None
    """Its rsl_rl runner config (RslRlOnPolicyRunnerCfg), or None if it has none."""


def resolve_task(task: str, overrides: list[str] = ()) -> ResolvedTask:
    """The configs of `task` (<gym id> or <module>:<gym id>) with Isaac Lab's own overrides
    (presets such as physics=newton_mjwarp, env.<key>=<value>)."""
    require_isaaclab()
    import gymnasium as gym

    importlib.import_module("isaaclab_tasks")
    importlib.import_module(EXAMPLES)
    module, _, task_id = task.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise UserError(f"task=isaaclab:{task}: cannot import {module} ({one_line(exc)}), the module that should "
                            f"register {task_id}") from None  # fmt: skip
    if task_id not in gym.registry:
        known = sorted(k for k in gym.registry if k.startswith(("Isaac-", "RoboLearn-")))
        close = [k for k in known if task_id.lower() in k.lower()] or known
        raise UserError(f"unknown Isaac Lab task '{task_id}'; valid: {', '.join(close[:8])}"
                        f"{f' (and {len(close) - 8} more)' if len(close) > 8 else ''}")  # fmt: skip
    spec = gym.spec(task_id)
    if "ManagerBased" not in str(spec.entry_point) and "ManagerBased" not in str(spec.kwargs.get("env_cfg_entry_point")):
        raise UserError(f"Isaac Lab task {task_id} is a {spec.entry_point} env; robolearn runs manager-based tasks "
                        "(their observation and action managers give the bundle's layout)")  # fmt: skip
    from isaaclab_tasks.utils import resolve_task_config

    entry = "rsl_rl_cfg_entry_point" if "rsl_rl_cfg_entry_point" in spec.kwargs else None
    try:
        env_cfg, agent_cfg = resolve_task_config(task_id, entry, overrides=list(overrides))
    except Exception as exc:
        raise UserError(f"Isaac Lab could not resolve {task_id}'s config with overrides {list(overrides)}: "
                        f"{one_line(exc)}") from None  # fmt: skip
    remote = remote_assets(env_cfg.scene.to_dict())
    if remote:
        raise UserError(f"Isaac Lab task {task_id} loads {remote[0]} from NVIDIA's asset store, which robolearn does not "
                        f"download: set ISAACSIM_ASSET_ROOT to a local copy of the assets, or use a task whose assets are "
                        f"local (isaaclab:{LOCAL_EXAMPLE})")  # fmt: skip
    return ResolvedTask(task_id, env_cfg, agent_cfg)


def remote_assets(tree) -> list[str]:
    """Every `usd_path` in a scene config (as configclass.to_dict() gives it) that names a remote
    file (an URL): the USD files kit-less Isaac Lab spawns. Debug-visualization markers, visual
    materials (mdl_path) and textures are not loaded headless, so they are not counted."""
    if isinstance(tree, (list, tuple)):
        return [url for item in tree for url in remote_assets(item)]
    if not isinstance(tree, dict):
        return []
    found = [v for k, v in tree.items() if k == "usd_path" and isinstance(v, str) and v.startswith(REMOTE)]
    return found + [url for k, v in tree.items() if "visualizer" not in k and "marker" not in k for url in remote_assets(v)]


def open_env(resolved: ResolvedTask, num_envs: int, device: str, seed: int):
    """(the ManagerBasedRLEnv, the context that closes its simulation) for `resolved`."""
    import gymnasium as gym
    from isaaclab.app import launch_simulation

    cfg = resolved.env_cfg
    cfg.scene.num_envs = num_envs
    cfg.sim.device = device
    cfg.seed = seed % 2**32  # Isaac Lab seeds numpy with it
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(launch_simulation(cfg, {"device": device}))
        env = gym.make(resolved.task_id, cfg=cfg).unwrapped
    except Exception as exc:
        stack.close()
        text = one_line(exc)
        if "omni" in text or "retrieve_file_path" in text:
            raise UserError(f"Isaac Lab task {resolved.task_id} needs a file from NVIDIA's asset store, which cannot be "
                            f"reached from here ({text}): set ISAACSIM_ASSET_ROOT to a local copy of the assets, or use "
                            f"isaaclab:{LOCAL_EXAMPLE}") from None  # fmt: skip
        raise UserError(f"Isaac Lab could not build {resolved.task_id}: {text}") from None
    return env, stack
