"""The batched environment: one task on one physics backend, stepped as an ordered pipeline.

    action -> ctrl -> physics x decimation -> terminations -> rewards -> resets(+events)
           -> interval events -> observations

On a CUDA device with a graph-safe backend (warp), the torch work before and after the physics is
replayed as two CUDA graphs around the backend's own graphed step (cuda_graph.py).

See vec_env.py for the interface. Everything here is batched over environments on one device.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path

import mujoco
import torch
from omegaconf import DictConfig, OmegaConf

from robolearn import mdp
from robolearn.config import EventMode, RandomizationCfg, TaskCfg
from robolearn.envs.actions import ActionManager
from robolearn.envs.commands import CommandManager
from robolearn.envs.cuda_graph import GraphedStep
from robolearn.envs.managers import (
    CurriculumManager, EventManager, MetricManager, ObservationManager, RewardManager, TerminationManager,
    load_term_state, term_state,
)  # fmt: skip
from robolearn.envs.scene import field_rows, single_dof_joints
from robolearn.envs.terrain import TerrainState
from robolearn.errors import UserError
from robolearn.paths import assets_dir
from robolearn.physics import load_model, make_backend
from robolearn.registry import TaskPlugin
from robolearn.terrain import Terrain, generate
from robolearn.terrain.mjcf import add_terrain


def resolve_asset(asset: str, task_folder: Path) -> Path:
    """An absolute path, else relative to the task's folder, else to robolearn's assets/."""
    path = Path(asset)
    if path.is_absolute():
        return path
    for base in (task_folder, assets_dir()):
        if (base / path).is_file():
            return base / path
    return assets_dir() / path


def default_pose(model: mujoco.MjModel):
    """The model's keyframe named `home` if it has one, else qpos0: where episodes start from,
    what relative joint observations and default action offsets refer to."""
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")
    return model.key_qpos[key] if key >= 0 else model.qpos0


def with_terrain(edit: Callable | None, terrain: Terrain) -> Callable:
    """The task's spec edit followed by adding the terrain (in place of the MJCF's `floor`). A model
    that already carries it (an exported bundle's MJCF) is left as it is."""

    def edit_with_terrain(spec: mujoco.MjSpec) -> None:
        if edit is not None:
            edit(spec)
        existing = spec.hfield("terrain")
        if existing is None:
            add_terrain(spec, terrain)
        elif (existing.nrow, existing.ncol) != terrain.heights.shape:
            raise UserError(f"the model's hfield 'terrain' is {existing.nrow}x{existing.ncol}, the task's terrain: "
                            f"section makes {terrain.heights.shape[0]}x{terrain.heights.shape[1]}; export it again")

    return edit_with_terrain


def term_namespace(plugin: TaskPlugin) -> dict[str, Callable]:
    clash = sorted(set(plugin.terms) & set(mdp.TERMS))
    if clash:
        raise UserError(f"task '{plugin.name}' redefines generic terms {clash}; rename its own terms")
    return {**mdp.TERMS, **plugin.terms}


class BatchedEnv:
    def __init__(
        self,
        cfg: TaskCfg,
        plugin: TaskPlugin,
        num_envs: int,
        physics: str = "auto",
        device: torch.device | str = "cpu",
        seed: int = 0,
        physics_settings: Mapping | None = None,
        cuda_graph: bool = True,
        randomization: RandomizationCfg | None = None,
    ):
        """`randomization`: the preset (configs/randomization/); None means the `default` one."""
        self.cfg = cfg
        self.device = torch.device(device)
        self.num_envs = num_envs
        self.asset_path = resolve_asset(cfg.asset, plugin.folder)
        terrain = None
        self.edit_spec = plugin.edit_spec
        if cfg.get("terrain") is not None:
            terrain_cfg = OmegaConf.to_object(cfg.terrain) if isinstance(cfg.terrain, DictConfig) else cfg.terrain
            terrain = generate(terrain_cfg, terrain_cfg.seed)
            self.edit_spec = with_terrain(plugin.edit_spec, terrain)
        model = load_model(self.asset_path, cfg.sim_dt, self.edit_spec)
        if cfg.decimation < 1:
            raise UserError(f"task.decimation must be at least 1, got {cfg.decimation}")
        self.physics = make_backend(physics, model, num_envs, self.device, physics_settings)
        self.model = model
        self.decimation = cfg.decimation
        self.dt = float(model.opt.timestep) * cfg.decimation
        self.max_episode_length = max(1, math.ceil(cfg.episode_length_s / self.dt))
        self.generator = torch.Generator(self.device).manual_seed(seed)
        self._id_cache: dict[tuple, object] = {}
        self.terrain = None if terrain is None else TerrainState(
            terrain, num_envs, self.device, self.generator, terrain_cfg.max_init_level)
        self.env_origins = torch.zeros(num_envs, 3, device=self.device) if terrain is None else self.terrain.env_origins
        """Where each env's robot starts ([N, 3], world): its terrain tile's centre, else 0."""

        self.episode_length = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        """Control steps counted toward the time-out (starts at a random value, see reset())."""
        self.episode_steps = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        """Control steps actually taken in the running episode (what episode statistics report)."""
        self.default_qpos = torch.as_tensor(default_pose(model), dtype=torch.float32, device=self.device).repeat(num_envs, 1)
        self.default_qvel = torch.zeros(num_envs, model.nv, device=self.device)
        self.reset_qpos = self.default_qpos.clone()
        """Reset events write the next episode's initial state here (for the masked envs)."""
        self.reset_qvel = self.default_qvel.clone()

        namespace = term_namespace(plugin)
        self.actions = ActionManager(cfg.action, model, num_envs, self.device, self.default_qpos[0], cfg.decimation)
        self.num_actions = self.actions.num_actions
        self.terminated = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        self.truncated = torch.zeros_like(self.terminated)
        self.prev_qvel = self.default_qvel.clone()
        """Joint velocities before the last step's physics (joint accelerations)."""
        preset = randomization if randomization is not None else RandomizationCfg()
        self.commands = CommandManager(cfg.commands, self)
        self.terminations = TerminationManager(cfg.terminations, namespace, self)
        self.rewards = RewardManager(cfg.rewards, namespace, self)
        self.events = EventManager(cfg.events, namespace, self, preset)
        self.curriculum = CurriculumManager(cfg.get("curriculum") or {}, namespace, self)
        self.observations = ObservationManager(cfg.observations, namespace, self, noise=preset.observation_noise)
        self.metrics = MetricManager(cfg.metrics, namespace, self)
        self._stats = torch.zeros(3 + len(self.rewards.names) + len(self.terminations.names), device=self.device)
        self._use_graphs = cuda_graph and self.device.type == "cuda" and self.physics.graph_safe
        self._graphed: GraphedStep | None = None

    # --- lookups for term functions (cached: terms run every step) -----------------------------
    def joint_ids(self, joints: list[str] | None) -> tuple[slice | torch.Tensor, slice | torch.Tensor]:
        """(qpos index, dof index) of the named hinge/slide joints: a slice when the addresses are
        consecutive (indexing with it is a view, no gather), else a LongTensor."""
        key = ("joint", None if joints is None else tuple(joints))
        if key not in self._id_cache:
            self._id_cache[key] = tuple(self._index(a) for a in single_dof_joints(self.model, joints))
        return self._id_cache[key]

    def _index(self, ids: list[int]) -> slice | torch.Tensor:
        if ids and ids == list(range(ids[0], ids[0] + len(ids))):
            return slice(ids[0], ids[0] + len(ids))
        return torch.tensor(ids, dtype=torch.long, device=self.device)

    def field_ids(self, field: str, names: list[str] | None) -> slice | torch.Tensor:
        """Rows of a randomizable model field that belong to the named entities."""
        key = ("field", field, None if names is None else tuple(names))
        if key not in self._id_cache:
            self._id_cache[key] = self._index(field_rows(self.model, field, names))
        return self._id_cache[key]

    def current_observations(self) -> dict[str, torch.Tensor]:
        """The observations returned by the last reset/step (restored by load_state_dict)."""
        return self.observations.buffers

    def observation_dims(self) -> dict[str, int]:
        return {group: buf.shape[1] for group, buf in self.observations.buffers.items()}

    # --- the pipeline ---------------------------------------------------------------------------
    def reset(self, spread_timeouts: bool = True) -> dict[str, torch.Tensor]:
        """Start of training: startup events, reset every env, spread their time-outs apart
        (evaluation passes spread_timeouts=False: every first episode then runs its full length)."""
        everyone = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        self.events.apply(EventMode.startup, everyone)
        self.events.start_intervals()
        self._reset_envs(everyone, record=False)
        if spread_timeouts:
            # Random initial progress so the environments do not all time out on the same step.
            self.episode_length.random_(0, self.max_episode_length, generator=self.generator)
        return self.observations.compute()

    def track_metrics(self, enabled: bool) -> None:
        """Compute the task's metrics every step (evaluation) or not (training)."""
        if enabled != self.metrics.enabled:
            self.metrics.enabled = enabled
            self._graphed = None  # a captured step would replay the old choice

    def step(self, action: torch.Tensor):
        if self._use_graphs:
            if self._graphed is None:
                self._graphed = GraphedStep(self)
            return self._graphed.step(action)
        self._apply_action(action)
        self.physics.step(self.actions.physics_ctrl, self.decimation)
        return self._after_physics()

    def _apply_action(self, action: torch.Tensor) -> None:
        self.actions.process(action)
        self.prev_qvel.copy_(self.physics.qvel)
        self.metrics.before_physics()

    def _after_physics(self):
        self.episode_length += 1
        self.episode_steps += 1
        self.terminated = self.terminations.compute()
        self.truncated = (self.episode_length >= self.max_episode_length) & ~self.terminated
        reward = self.rewards.compute()
        self.metrics.after_physics()
        self._reset_envs(self.terminated | self.truncated)
        self.events.step_interval(self.dt)
        self.commands.step(self.dt)
        return self.observations.compute(), reward, self.terminated, self.truncated

    def _reset_envs(self, mask: torch.Tensor, record: bool = True) -> None:
        # On the CPU, asking whether any environment ended costs nothing and usually saves the
        # whole reset path; on an accelerator it would be a host sync, so the masked path runs.
        if self.device.type == "cpu" and not mask.any():
            return
        if record:
            self._record_episodes(mask)
            self.curriculum.apply(mask)  # before the reset events place the robots
        self.reset_qpos.copy_(self.default_qpos)
        self.reset_qvel.copy_(self.default_qvel)
        self.events.apply(EventMode.reset, mask)
        self.physics.reset(mask, self.reset_qpos, self.reset_qvel)
        self.prev_qvel.copy_(torch.where(mask.unsqueeze(1), self.physics.qvel, self.prev_qvel))
        self.actions.reset(mask)
        self.commands.resample(mask)
        for manager in self._term_managers().values():
            manager.reset(mask)
        self.episode_length.masked_fill_(mask, 0)
        self.episode_steps.masked_fill_(mask, 0)
        self.rewards.episode_sums.masked_fill_(mask, 0.0)

    # --- episode statistics: accumulated on the device, read once per iteration ---------------
    def _record_episodes(self, mask: torch.Tensor) -> None:
        self.events.record_episodes(mask)
        done = mask.float()
        sums = self.rewards.episode_sums
        self._stats += torch.cat(
            [
                torch.stack([done.sum(), (sums.sum(0) * done).sum(), (self.episode_steps * done).sum()]),
                (sums * done).sum(1),
                (self.terminations.fired.float() * done).sum(1),
            ]
        )

    def pop_episode_stats(self) -> dict[str, float]:
        problem = self.physics.health()
        if problem is not None:
            raise UserError(problem)
        adaptive = {**self.events.update_adaptive(), **self.curriculum.log()}
        values = self._stats.tolist()
        self._stats.zero_()
        count = values[0]
        if count == 0:
            return {"episodes": 0.0, **adaptive}
        stats = {"episodes": count, "mean_episode_return": values[1] / count, "mean_episode_length": values[2] / count,
                 **adaptive}  # fmt: skip
        n_rew = len(self.rewards.names)
        for k, name in enumerate(self.rewards.names):
            stats[f"episode_reward/{name}"] = values[3 + k] / count
        for k, name in enumerate(self.terminations.names):
            stats[f"termination/{name}"] = values[3 + n_rew + k] / count
        return stats

    # --- checkpointing --------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "physics": self.physics.state_dict(),
            "generator": self.generator.get_state(),
            "episode_length": self.episode_length.clone(),
            "episode_steps": self.episode_steps.clone(),
            "episode_sums": self.rewards.episode_sums.clone(),
            "action": self.actions.action.clone(),
            "last_action": self.actions.last_action.clone(),
            "ctrl": self.actions.ctrl.clone(),
            "ctrl_history": self.actions.history.clone(),
            "action_delay": self.actions.delay.clone(),
            "event_time_left": self.events.time_left.clone(),
            "stats": self._stats.clone(),
            "obs": {k: v.clone() for k, v in self.observations.buffers.items()},
            "prev_qvel": self.prev_qvel.clone(),
            "commands": self.commands.state_dict(),
            "terms": {kind: term_state(m.named_terms()) for kind, m in self._term_managers().items()},
            "adaptive": {name: adr.state_dict() for name, adr in self.events.adaptive.items()},
            "terrain": None if self.terrain is None else self.terrain.state_dict(),
        }

    def load_state_dict(self, state: Mapping) -> None:
        if state["episode_length"].shape[0] != self.num_envs:
            raise UserError(
                f"checkpoint has {state['episode_length'].shape[0]} environments, this run has {self.num_envs}; "
                "resume with the same env.num_envs"
            )
        self.physics.load_state_dict(state["physics"])
        self.generator.set_state(state["generator"])
        self.episode_length.copy_(state["episode_length"])
        self.episode_steps.copy_(state["episode_steps"])
        self.rewards.episode_sums.copy_(state["episode_sums"])
        self.actions.action.copy_(state["action"])
        self.actions.last_action.copy_(state["last_action"])
        if "ctrl" in state:  # absent in checkpoints written before actuator latency existed
            self.actions.ctrl.copy_(state["ctrl"])
            self.actions.history.copy_(state["ctrl_history"])
            self.actions.delay.copy_(state["action_delay"])
        self.events.time_left.copy_(state["event_time_left"])
        self._stats.copy_(state["stats"])
        for k, v in state["obs"].items():
            self.observations.buffers[k].copy_(v)
        self.prev_qvel.copy_(state["prev_qvel"])
        self.commands.load_state_dict(state["commands"])
        for kind, manager in self._term_managers().items():
            load_term_state(manager.named_terms(), state["terms"].get(kind, {}))
        for name, adr in self.events.adaptive.items():
            if name in state.get("adaptive", {}):
                adr.load_state_dict(state["adaptive"][name])
        if self.terrain is not None and state.get("terrain") is not None:
            self.terrain.load_state_dict(state["terrain"])

    def _term_managers(self) -> dict:
        return {"observations": self.observations, "rewards": self.rewards, "terminations": self.terminations,
                "metrics": self.metrics, "events": self.events, "curriculum": self.curriculum}  # fmt: skip

    def close(self) -> None:
        self.physics.close()
