"""An Isaac Lab manager-based task behind robolearn's batched env interface (envs/vec_env.py).

    robolearn runner -> IsaacLabEnv.step(action) -> ManagerBasedRLEnv.step(action)
      (Isaac Lab: action manager, physics x decimation, terminations, rewards, resets, observations)
      -> ({"policy", "critic"} from the task's observation groups, reward, terminated, truncated)

Isaac Lab resets the environments that ended inside its step, as robolearn's contract asks. The
actor and critic inputs are the groups the task's rsl_rl config names (obs_groups), else the
`policy` group and a `critic` group where the task has one. Episode statistics are kept here the
way robolearn's own env keeps them (on the device, read once per iteration), plus the means of
what Isaac Lab logs as episodes end (Episode_Reward/..., Metrics/...), under `isaaclab/`.

Checkpoints: Isaac Lab does not hand out its simulator state, so a resumed run continues the
learner exactly (weights, optimizer, normalizers, statistics) while every environment starts a
new episode.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import torch

from robolearn.envs.episode_stats import EpisodeStats
from robolearn.errors import UserError
from robolearn.isaaclab import PREFIX
from robolearn.isaaclab.metrics import task_metrics
from robolearn.isaaclab.runtime import ResolvedTask, open_env, resolve_task
from robolearn.isaaclab.views import CommandView, PhysicsView, RewardView, mujoco_solver


class _Terminations:
    """The termination terms of the last step, as robolearn's evaluation reads them."""

    def __init__(self, manager, num_envs: int, device: torch.device):
        self.manager = manager
        self.names = [n for n in manager.active_terms if n != "time_out"]
        self.fired = torch.zeros(len(self.names), num_envs, dtype=torch.bool, device=device)

    def update(self) -> None:
        for k, name in enumerate(self.names):
            self.fired[k] = self.manager.get_term(name)


class IsaacLabEnv:
    def __init__(self, task: str, num_envs: int, device: torch.device | str = "cpu", seed: int = 0,
                 overrides: list[str] = (), stagger_timeouts: bool = True, episode_window: int = 100,
                 resolved: ResolvedTask | None = None):  # fmt: skip
        """`task`: <gym id> or <module>:<gym id>; `overrides`: Isaac Lab's own (presets, env.<key>=...)."""
        if num_envs < 1:
            raise UserError(f"env.num_envs must be at least 1, got {num_envs}")
        self.resolved = resolved or resolve_task(task, overrides)
        self.device = torch.device(device)
        self.env, self._closer = open_env(self.resolved, num_envs, str(self.device), seed)
        env = self.env
        self.cfg = SimpleNamespace(name=PREFIX + task)
        self.num_envs = env.num_envs
        self.num_actions = int(env.action_manager.total_action_dim)
        self.dt = float(env.step_dt)
        self.decimation = int(env.cfg.decimation)
        self.max_episode_length = int(env.max_episode_length)
        self.stagger_timeouts = stagger_timeouts
        try:
            self.actor_groups, self.critic_groups = self._observation_groups()
        except BaseException:
            self.close()
            raise
        self.terminations = _Terminations(env.termination_manager, self.num_envs, self.device)
        self.metrics = task_metrics(env.command_manager, self.num_envs, self.device)
        self.stats = EpisodeStats(episode_window, ["mean_episode_return", "mean_episode_length",
                                                   *(f"termination/{n}" for n in self.terminations.names)], self.device)  # fmt: skip
        self.episode_return = torch.zeros(self.num_envs, device=self.device)
        self.episode_steps = torch.zeros(self.num_envs, device=self.device)
        self._logged: dict[str, list[torch.Tensor]] = {}
        self._obs: dict[str, torch.Tensor] | None = None
        # what play reads (views.py)
        self.physics = PhysicsView()
        self.rewards = RewardView(env.reward_manager, self.dt)
        self.commands = CommandView(env.command_manager)

    @property
    def model(self):
        """The MuJoCo model of one world, as Newton's MuJoCo solver built it (play draws it)."""
        return mujoco_solver().mj_model

    def _observation_groups(self) -> tuple[list[str], list[str]]:
        manager = self.env.observation_manager
        groups = manager.active_terms
        agent = self.resolved.agent_cfg
        wanted = dict(getattr(agent, "obs_groups", None) or {}) if agent is not None else {}
        actor = list(wanted.get("actor") or wanted.get("policy") or ["policy"])
        critic = list(wanted.get("critic") or (["critic"] if "critic" in groups else actor))
        for group in {*actor, *critic}:
            if group not in groups:
                raise UserError(f"Isaac Lab task {self.resolved.task_id} has no observation group '{group}' (its "
                                f"rsl_rl obs_groups name it); groups: {', '.join(groups)}")  # fmt: skip
            if not manager.group_obs_concatenate[group]:
                raise UserError(f"observation group '{group}' of {self.resolved.task_id} is a dict of terms "
                                "(concatenate_terms=False); robolearn's networks take one vector per group")  # fmt: skip
        return actor, critic

    def _groups(self, obs: dict) -> dict[str, torch.Tensor]:
        def join(names):
            return obs[names[0]] if len(names) == 1 else torch.cat([obs[n] for n in names], dim=1)

        return {"policy": join(self.actor_groups), "critic": join(self.critic_groups)}

    # --- the batched interface -------------------------------------------------------------------
    def reset(self, spread_timeouts: bool | None = None) -> dict[str, torch.Tensor]:
        """Every env starts an episode; with staggered time-outs (training) each starts at a random
        point of its time limit, as rsl_rl's init_at_random_ep_len does."""
        obs, _ = self.env.reset()
        self.episode_return.zero_()
        self.episode_steps.zero_()
        if self.stagger_timeouts if spread_timeouts is None else spread_timeouts:
            buf = self.env.episode_length_buf
            buf.copy_(torch.randint_like(buf, high=self.max_episode_length))
        self._obs = self._groups(obs)
        return self._obs

    def step(self, action: torch.Tensor):
        obs, reward, terminated, time_out, extras = self.env.step(action)
        truncated = time_out & ~terminated
        done = terminated | truncated
        self.episode_return += reward
        self.episode_steps += 1
        self.terminations.update()
        self.metrics.update()
        rows = torch.cat([self.episode_return.unsqueeze(0), self.episode_steps.unsqueeze(0), self.terminations.fired.float()])
        self.stats.record(done, rows.T)
        self.episode_return.masked_fill_(done, 0.0)
        self.episode_steps.masked_fill_(done, 0.0)
        for key, value in (extras.get("log") or {}).items():
            if isinstance(value, torch.Tensor) and value.numel() == 1 and not key.startswith("Episode_Termination/"):
                self._logged.setdefault(key, []).append(value.reshape(()).float())
        self._obs = self._groups(obs)
        return self._obs, reward, terminated, truncated

    def current_observations(self) -> dict[str, torch.Tensor]:
        return self._obs if self._obs is not None else self.reset()

    def observation_dims(self) -> dict[str, int]:
        dims = self.env.observation_manager.group_obs_dim
        return {"policy": sum(dims[g][0] for g in self.actor_groups), "critic": sum(dims[g][0] for g in self.critic_groups)}

    def pop_episode_stats(self) -> dict[str, float]:
        """robolearn's episode means, and the means of Isaac Lab's own episode logs since the last call."""
        logged = {f"isaaclab/{k}": torch.stack(v).mean() for k, v in self._logged.items()}
        self._logged = {}
        return self.stats.summary(logged)

    def logged_names(self) -> list[str]:
        """The keys pop_episode_stats can return; Isaac Lab's own logs (isaaclab/...) are known once they arrive."""
        return ["episodes", "episode_window", *self.stats.columns, "isaaclab/*"]

    def end_reason(self, i: int) -> str:
        return ", ".join(n for k, n in enumerate(self.terminations.names) if self.terminations.fired[k, i]) or "time-out"

    def track_metrics(self, enabled: bool) -> None:
        """Compute the task's metrics (metrics.py) each step from now on, or stop."""
        self.metrics.enabled = enabled

    # --- checkpoints ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"isaaclab_task": self.cfg.name, "stats": self.stats.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if state.get("isaaclab_task") != self.cfg.name:
            raise UserError(f"the checkpoint is of {state.get('isaaclab_task') or 'a robolearn task'}, not {self.cfg.name}")
        self.stats.load_state_dict(state["stats"])
        print("note: Isaac Lab does not hand out its simulator state; the learner resumes exactly and every "
              "environment starts a new episode", file=sys.stderr)  # fmt: skip
        self.reset()

    def bundle_metadata(self, staging) -> dict:
        """robot.yaml's contract for a policy trained here (bundle.py)."""
        from robolearn.isaaclab.bundle import bundle_metadata

        return bundle_metadata(self, staging)

    def close(self) -> None:
        try:
            self.env.close()
        finally:
            self._closer.close()
