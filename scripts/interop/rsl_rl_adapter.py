"""robolearn's env and recipe as rsl_rl 5.x sees them: `rsl_rl_config` maps a composed robolearn
config onto rsl_rl's train config (value for value), `RslVecEnv` wraps a robolearn BatchedEnv as
rsl_rl's VecEnv. Used by rsl_rl_side_by_side.py; needs rsl-rl-lib and tensordict at call time."""

from __future__ import annotations


def rsl_rl_config(cfg) -> dict:
    """rsl_rl 5.x's train config from robolearn's composed config: each value is robolearn's."""
    a, r = cfg.algo, cfg.runner
    if a.policy != "mlp":
        raise SystemExit("only feed-forward policies are mapped")
    if a.use_clipped_value_loss and abs(a.value_clip - a.clip_param) > 1e-12:
        raise SystemExit(f"rsl_rl clips the value with clip_param ({a.clip_param}); robolearn's value_clip is {a.value_clip}")
    if a.min_noise_std > 0 or a.normalizer_clip is not None:
        raise SystemExit("min_noise_std / normalizer_clip have no rsl_rl counterpart here")
    return {
        "num_steps_per_env": int(r.num_steps_per_env),
        "save_interval": 10**9,
        "obs_groups": {"actor": ["policy"], "critic": ["critic"]},
        "algorithm": {
            "class_name": "PPO",
            "num_learning_epochs": int(a.num_learning_epochs),
            "num_mini_batches": int(a.num_mini_batches),
            "clip_param": float(a.clip_param),
            "gamma": float(a.gamma),
            "lam": float(a.lam),
            "value_loss_coef": float(a.value_loss_coef),
            "entropy_coef": float(a.entropy_coef),
            "learning_rate": float(a.learning_rate),
            "max_grad_norm": float(a.max_grad_norm),
            "optimizer": "adam",
            "use_clipped_value_loss": bool(a.use_clipped_value_loss),
            "schedule": str(a.schedule),
            "desired_kl": float(a.desired_kl),
            "normalize_advantage_per_mini_batch": False,
            "rnd_cfg": None,
            "symmetry_cfg": None,
        },
        "actor": {
            "class_name": "MLPModel",
            "hidden_dims": list(a.actor_hidden_dims),
            "activation": str(a.activation),
            "obs_normalization": bool(a.normalize_observations),
            # robolearn learns log std, state-independent, one per action
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": float(a.init_noise_std),
                                 "std_type": "log"},  # fmt: skip
        },
        "critic": {
            "class_name": "MLPModel",
            "hidden_dims": list(a.critic_hidden_dims),
            "activation": str(a.activation),
            "obs_normalization": bool(a.normalize_observations),
        },
    }


class RslVecEnv:
    """A robolearn BatchedEnv as rsl_rl 5.x's VecEnv (duck-typed: num_envs, num_actions,
    max_episode_length, episode_length_buf, device, cfg, get_observations, step)."""

    def __init__(self, env):
        from tensordict import TensorDict

        self._td = TensorDict
        self.env = env
        self.num_envs, self.num_actions = env.num_envs, env.num_actions
        self.max_episode_length = env.max_episode_length
        self.device = env.device
        self.cfg = {}
        self._obs = self._wrap(env.reset())  # as robolearn's runner.start(): startup events, staggered time-outs

    @property
    def episode_length_buf(self):
        return self.env.episode_length

    @episode_length_buf.setter
    def episode_length_buf(self, value):
        self.env.episode_length.copy_(value)

    def _wrap(self, obs: dict):
        # the env overwrites its buffers at the next step, and rsl_rl stores obs after that step: copy
        return self._td({k: v.clone() for k, v in obs.items()}, batch_size=[self.num_envs], device=self.device)

    def get_observations(self):
        return self._obs

    def step(self, actions):
        obs, reward, terminated, truncated = self.env.step(actions)
        self._obs = self._wrap(obs)
        dones = terminated | truncated
        return self._obs, reward.clone(), dones, {"time_outs": truncated.clone()}


class Stop(Exception):
    pass
