"""The batched environment: one task on one physics backend, stepped as an ordered pipeline.

    action -> ctrl -> physics x decimation -> health -> terminations -> rewards -> resets(+events)
           -> interval events -> commands -> observations -> health

An env whose state, reward or observation is not finite is terminated, reset and marked `invalid`
for the learner (envs/health.py).

On a CUDA device with a graph-safe backend (warp), the step replays as CUDA graphs: the torch
work as graphs of its own, between them the backend's graphed physics step and sensor refresh
(cuda_graph.py). The eager step runs the same phases in the same order.

See vec_env.py for the interface. Everything here is batched over environments on one device.
The model and its name lookups come from robolearn/scene; checkpoints are assembled in
env_state.py; each manager owns its terms and state (manager_base.py).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping

import torch

from robolearn import mdp, memory
from robolearn.config import EnvCfg, RandomizationCfg
from robolearn.config_task import EventMode, TaskCfg
from robolearn.envs import env_compile, env_state, sensor_reads
from robolearn.envs.actions import ActionManager
from robolearn.envs.commands import CommandManager
from robolearn.envs.control_period import control_period
from robolearn.envs.cuda_graph import GraphedStep, use_graphs
from robolearn.envs.episode_stats import EpisodeStats
from robolearn.envs.event_manager import EventManager
from robolearn.envs.health import EnvHealth, divergence_cause, update_failure_cause
from robolearn.envs.observation_manager import ObservationManager
from robolearn.envs.term_managers import CurriculumManager, MetricManager, RewardManager, TerminationManager
from robolearn.envs.terrain import TerrainState
from robolearn.errors import UserError
from robolearn.physics import make_backend
from robolearn.registry import TaskPlugin
from robolearn.robot_fingerprint import robot_fingerprint
from robolearn.scene.floating_base import floating_base_joint
from robolearn.scene.scene import Scene

EPISODE_WINDOW = 100
"""Default number of finished episodes the reported episode means cover."""


def term_namespace(plugin: TaskPlugin) -> dict[str, Callable]:
    clash = sorted(set(plugin.terms) & set(mdp.TERMS))
    if clash:
        raise UserError(f"task '{plugin.name}' redefines generic terms {clash}; rename its own terms")
    return {**mdp.TERMS, **plugin.terms}


STEP_PHASES = ("action", "physics", "rewards+terminations+reset", "sensor refresh", "managers+observations")
"""What `BatchedEnv.step(action, mark)` reports the end of, in order."""


def _no_mark(phase: str) -> None:
    pass


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
        cuda_graph: bool | None = None,
        randomization: RandomizationCfg | None = None,
        stagger_timeouts: bool = True,
        episode_window: int = EPISODE_WINDOW,
        state_limit: float = EnvCfg.state_limit,
        keep_final_obs: bool = False,
        compile: bool = False,
    ):
        """`randomization`: the preset (configs/randomization/); None means the `default` one.
        `stagger_timeouts`: reset() spreads the first episodes' time-outs (training); off, every
        first episode runs its full length. `episode_window`: how many finished episodes the
        reported episode means cover. `state_limit`: |qpos| or |qvel| above it is a diverged
        simulation (reset and not learned from, like a non-finite one). `keep_final_obs`: keep each
        observation group as it was just before the envs that ended in a step were reset, in
        `final_obs` (rows of envs that did not end are stale; gymnasium's view reports them).
        `compile`: the step's tensor work through torch.compile (env.compile, envs/env_compile.py)."""
        if cfg.decimation < 1:
            raise UserError(f"task.decimation must be at least 1, got {cfg.decimation}")
        self.cfg = cfg
        self.device = torch.device(device)
        self.num_envs = num_envs
        self.scene = Scene.build(cfg, plugin, self.device)
        model = self.model = self.scene.model
        self.robot_model = robot_fingerprint(model)
        """The robot's fingerprint (robot_fingerprint.py), kept in checkpoints: which robot a policy learned on."""
        self.asset_path, self.edit_spec = self.scene.asset_path, self.scene.edit_spec
        self.dt = control_period(model, cfg)
        if self.device.type == "cpu":  # a GPU reports its own allocation failures (app.fits_in_memory)
            memory.require(memory.env_bytes(model, num_envs), f"env.num_envs={num_envs}", "lower env.num_envs")
        self.physics = make_backend(physics, model, num_envs, self.device, physics_settings, self.scene.physics_copy)
        self.decimation = cfg.decimation
        self.max_episode_length = max(1, math.ceil(cfg.episode_length_s / self.dt))
        self.stagger_timeouts = stagger_timeouts
        self.generator = torch.Generator(self.device).manual_seed(seed)
        self.terrain = None
        self.env_origins = torch.zeros(num_envs, 3, device=self.device)
        """Where each env's robot starts ([N, 3], world): its terrain tile's centre, else 0."""
        if self.scene.terrain is not None:
            if floating_base_joint(model) is None:  # a planar walker or a fixed arm: nothing to put on the tiles
                raise UserError("task.terrain: each env starts on a tile of its own, where reset_root_state puts the "
                                "floating base, and the model has none (a free joint): every env would stay at the "
                                "world's origin; valid: a robot with a free joint, or no terrain")  # fmt: skip
            self.terrain = TerrainState(self.scene.terrain, num_envs, self.device, self.generator,
                                        cfg.terrain.max_init_level)  # fmt: skip
            self.env_origins = self.terrain.env_origins

        self._make_buffers(state_limit)

        self._build_managers(cfg, plugin, randomization if randomization is not None else RandomizationCfg())
        self._compiled = False
        """Set by env_compile.compile_env (env.compile)."""
        if compile:
            env_compile.compile_env(self)
        self.stats = EpisodeStats(
            episode_window,
            ["mean_episode_return", "mean_episode_length", *(f"episode_reward/{n}" for n in self.rewards.names),
             *(f"termination/{n}" for n in self.terminations.names)],
            self.device,
        )  # fmt: skip
        with self._eager_once():
            self.final_obs = self.observations.compute() if keep_final_obs else None
        """With keep_final_obs: {group: [N, D]} the last observations of the episodes that ended."""
        if self.final_obs is not None:
            self.final_obs = {group: obs.clone() for group, obs in self.final_obs.items()}
        self._use_graphs = use_graphs(self, cuda_graph)
        self._graphed: GraphedStep | None = None
        self.sensor_refresh: str | None = None if self.physics.refreshes else "full"
        """How much of the sensor refresh after resets a step runs: none, blank or full
        (envs/sensor_reads.py), decided at the first step from what the terms read."""

    def _make_buffers(self, state_limit: float) -> None:
        """The env's own per-env state: episode counters, default and next-reset physics state, the
        step's outputs and the health checks."""
        n = self.num_envs
        self.episode_length = torch.zeros(n, dtype=torch.long, device=self.device)
        """Control steps counted toward the time-out (starts at a random value, see reset())."""
        self.episode_steps = torch.zeros(n, dtype=torch.long, device=self.device)
        """Control steps actually taken in the running episode (what episode statistics report)."""
        self.default_qpos = torch.as_tensor(self.scene.default_qpos, dtype=torch.float32, device=self.device).repeat(n, 1)
        self.default_qvel = torch.zeros(n, self.model.nv, device=self.device)
        self.reset_qpos = self.default_qpos.clone()
        """Reset events write the next episode's initial state here (for the masked envs)."""
        self.reset_qvel = self.default_qvel.clone()
        self.reward = torch.zeros(n, device=self.device)
        self.terminated = torch.zeros(n, dtype=torch.bool, device=self.device)
        self.truncated = torch.zeros_like(self.terminated)
        self.prev_qvel = self.default_qvel.clone()
        """Joint velocities before the last step's physics (joint accelerations)."""
        self.health = EnvHealth(n, self.device, state_limit)

    def _build_managers(self, cfg: TaskCfg, plugin: TaskPlugin, preset: RandomizationCfg) -> None:
        """Every manager from the task's config, in the order their terms may read each other;
        the plain reward, termination and metric terms are called once here to check their output."""
        namespace = term_namespace(plugin)
        n, device = self.num_envs, self.device
        self.actions = ActionManager(cfg.action, self.model, n, device, self.default_qpos[0], cfg.decimation)
        self.num_actions = self.actions.num_actions
        self.commands = CommandManager(cfg.commands, self)
        self.terminations = TerminationManager(cfg.terminations, namespace, self)
        self.rewards = RewardManager(cfg.rewards, namespace, self)
        self.events = EventManager(cfg.events, namespace, self, preset)
        self.curriculum = CurriculumManager(cfg.get("curriculum") or {}, namespace, self)
        self.observations = ObservationManager(cfg.observations, namespace, self, noise=preset.observation_noise)
        self.metrics = MetricManager(cfg.metrics, namespace, self)
        for manager in (self.terminations, self.rewards, self.metrics):
            manager.check_outputs()

    def _eager_once(self) -> contextlib.AbstractContextManager:
        """For a one-off call outside the rollout (construction, reset()): compiled code runs eagerly,
        so it is traced only as the rollout's steps call it: once instead of once per grad mode and
        reset flag (envs/env_compile.py)."""
        return torch.compiler.set_stance("force_eager") if self._compiled else contextlib.nullcontext()

    def managers(self) -> dict:
        """Every manager by name, in the order resets run (checkpoints hold each one's state)."""
        return {"actions": self.actions, "commands": self.commands, "observations": self.observations,
                "rewards": self.rewards, "terminations": self.terminations, "metrics": self.metrics,
                "events": self.events, "curriculum": self.curriculum}  # fmt: skip

    def current_observations(self) -> dict[str, torch.Tensor]:
        """The observations returned by the last reset/step (restored by load_state_dict)."""
        return self.observations.buffers

    @property
    def invalid(self) -> torch.Tensor:
        """[N] bool: the last step's transition must not be learned from (a diverged simulation, a
        non-finite reward or observation); that env was terminated and reset (envs/health.py)."""
        return self.health.invalid

    @property
    def steps_on_host_threads(self) -> bool:
        """The physics runs on a CPU thread pool of its own (see envs/vec_env.py)."""
        return self.physics.host_threads

    def end_reason(self, i: int) -> str:
        """Why env i's episode ended in the last step (a host read: for viewers, not training):
        'diverged', the terminations that fired, or 'time-out'."""
        if self.invalid[i]:
            return "diverged"
        return ", ".join(n for k, n in enumerate(self.terminations.names) if self.terminations.fired[k, i]) or "time-out"

    def observation_dims(self) -> dict[str, int]:
        return {group: buf.shape[1] for group, buf in self.observations.buffers.items()}

    # --- the pipeline ---------------------------------------------------------------------------
    def reset(self, spread_timeouts: bool | None = None) -> dict[str, torch.Tensor]:
        """Start of training: startup events, then every env starts an episode. With staggered
        time-outs (the training default, `stagger_timeouts`) each env starts at a random point of
        its time limit, so the environments do not all time out on the same step; evaluation
        passes spread_timeouts=False so that every first episode runs its full length."""
        everyone = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        with self._eager_once():
            self.events.apply(EventMode.startup, everyone)
            self._reset_envs(everyone, record=False)
            if self.stagger_timeouts if spread_timeouts is None else spread_timeouts:
                self.episode_length.random_(0, self.max_episode_length, generator=self.generator)
            obs = self.observations.compute()
            self.health.check_observations(obs)
            self._leave_stale(everyone)
        return obs

    def track_metrics(self, enabled: bool) -> None:
        """Compute the task's metrics every step (evaluation) or not (training)."""
        if enabled != self.metrics.enabled:
            self.metrics.enabled = enabled
            self._graphed = None  # a captured step would replay the old choice
            if self.physics.refreshes:
                self.sensor_refresh = None  # metrics may read sensors before the next physics step

    def step(self, action: torch.Tensor, mark: Callable[[str], None] = _no_mark):
        """`mark(phase)` is called after each of STEP_PHASES (a profiler's hook:
        scripts/profile_env_step.py); with CUDA graphs a phase is its graph replay or Warp graph."""
        if self.sensor_refresh is None:
            self.sensor_refresh = sensor_reads.plan(sensor_reads.probe(self), self.physics.blank_at_reset)
        if self._use_graphs:
            if self._graphed is None:
                self._graphed = GraphedStep(self)
            return self._graphed.step(action, mark)
        return self._eager_step(action, mark)

    def _eager_step(self, action: torch.Tensor, mark: Callable[[str], None] = _no_mark):
        """The step's phases one after the other (GraphedStep replays the same phases)."""
        self._apply_action(action)
        mark("action")
        self.physics.step(self.actions.physics_ctrl, self.decimation)
        mark("physics")
        ended = self._end_step()
        mark("rewards+terminations+reset")
        if ended is not None:
            self._settle_sensors(ended)
        mark("sensor refresh")
        if ended is not None:
            self._reset_managers(ended)
        out = self._next_observations()
        if ended is not None:
            self._leave_stale(ended)
        mark("managers+observations")
        return out

    def _apply_action(self, action: torch.Tensor) -> None:
        self.actions.process(action)
        self.prev_qvel.copy_(self.physics.qvel)
        self.metrics.before_physics()

    def _end_step(self) -> torch.Tensor | None:
        """After the physics: rewards and terminations, then the new state of the envs that ended
        (their sensors wait for physics.refresh). Returns which ended (None: none, CPU only)."""
        self.episode_length += 1
        self.episode_steps += 1
        health = self.health  # diverged envs end here, without a reward (envs/health.py)
        invalid = health.check_state(self.physics)
        self.terminated = self.terminations.compute()
        self.reward = self.rewards.compute(health)  # adds the envs whose reward is not finite
        if health.maybe_invalid:  # always on an accelerator; on the CPU only when one is
            self.terminated = self.terminated | invalid
            health.count()
        self.truncated = (self.episode_length >= self.max_episode_length) & ~self.terminated
        self.metrics.after_physics()
        ended = self.terminated | self.truncated
        return ended if self._reset_state(ended) else None

    def _next_observations(self):
        """The rest of the step once reset envs have their sensors: interval events, commands and
        the observations the policy acts on next."""
        self.events.step_interval(self.dt)
        self.commands.step(self.dt)
        obs = self.observations.compute()
        self.health.check_observations(obs)
        return obs, self.reward, self.terminated, self.truncated

    def _reset_envs(self, mask: torch.Tensor, record: bool = True) -> None:
        if self._reset_state(mask, record):
            self._settle_sensors(mask)
            self._reset_managers(mask)

    def _settle_sensors(self, mask: torch.Tensor) -> None:
        """The sensor refresh after resets, where the env's terms read what it computes (sensor_refresh:
        under blank the rows write_reset left at 0 are what kinematic mode reads)."""
        if self.sensor_refresh in (None, "full"):
            self.physics.refresh(mask)

    def _leave_stale(self, mask: torch.Tensor) -> None:
        """At the end of a step: what _settle_sensors left out, for a read before the next step."""
        if self.sensor_refresh in ("none", "blank"):
            self.physics.mark_stale(mask)

    def _reset_state(self, mask: torch.Tensor, record: bool = True) -> bool:
        """The first half of a reset: episode records, curricula, reset events and the physics
        state of the masked envs. False when nothing was to be done."""
        # On the CPU, asking whether any environment ended costs nothing and usually saves the
        # whole reset path; on an accelerator it would be a host sync, so the masked path runs.
        if self.device.type == "cpu" and not mask.any():
            return False
        self._prepare_reset(mask, record)
        self.physics.write_reset(mask, self.reset_qpos, self.reset_qvel)
        torch.where(mask.unsqueeze(1), self.physics.qvel, self.prev_qvel, out=self.prev_qvel)
        return True

    def _prepare_reset(self, mask: torch.Tensor, record: bool) -> None:
        """Everything of a reset before the physics takes the new state: the ended episodes' records
        and last observations, curricula, and the reset events writing reset_qpos / reset_qvel."""
        if record:
            if self.final_obs is not None:  # the ended episodes' last observations, before the reset
                for group, obs in self.observations.compute().items():
                    self.final_obs[group].copy_(obs)
            self._record_episodes(mask)
            self.curriculum.apply(mask)  # before the reset events place the robots
        self.reset_qpos.copy_(self.default_qpos)
        self.reset_qvel.copy_(self.default_qvel)
        self.events.apply(EventMode.reset, mask)

    def _reset_managers(self, mask: torch.Tensor) -> None:
        """The second half, once the physics has refreshed the envs' sensors: every manager's
        per-env state (command resampling and observation histories may read the new state)."""
        for manager in self.managers().values():
            manager.reset(mask)
        self.episode_length.masked_fill_(mask, 0)
        self.episode_steps.masked_fill_(mask, 0)

    # --- episode statistics: accumulated on the device, read once per iteration ---------------
    def _record_episodes(self, mask: torch.Tensor) -> None:
        self.events.record_episodes(mask)
        sums = self.rewards.episode_sums
        rows = torch.cat([sums.sum(0, keepdim=True), self.episode_steps.unsqueeze(0).float(), sums,
                          self.terminations.fired.float()])  # fmt: skip
        self.stats.record(mask, rows.T)

    def divergence_cause(self) -> str:
        """Why every transition is invalid (health.divergence_cause), for the one line a run stops with."""
        return divergence_cause(self)

    def update_failure_cause(self) -> str:
        """Why no minibatch of an update had a finite loss (health.update_failure_cause)."""
        return update_failure_cause(self)

    def pop_episode_stats(self) -> dict[str, float]:
        """Means over the last `episode_window` finished episodes (none before the first ends),
        how many episodes ended since the last call, the adaptive ranges and curricula."""
        problem = self.physics.health()
        if problem is not None:
            raise UserError(problem)
        stats = self.stats.summary({"health/nonfinite_resets": self.health.pop()})
        return {**stats, **self.events.update_adaptive(), **self.curriculum.log()}

    def logged_names(self) -> list[str]:
        """Every key pop_episode_stats can return (a sweep's objective may name one)."""
        adaptive = [key for adr in self.events.adaptive.values() for key in adr.log()]
        return ["episodes", "episode_window", "health/nonfinite_resets", *self.stats.columns, *adaptive,
                *self.curriculum.log()]  # fmt: skip

    # --- checkpointing --------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return env_state.state_dict(self)

    def load_state_dict(self, state: Mapping) -> None:
        env_state.load_state_dict(self, state)

    def close(self) -> None:
        self.physics.close()
