"""Record the mjlab run's own policy (rsl_rl's inference policy from the checkpoint) on observations
from the mjlab env, for robolearn's import parity test. Writes reference.npz next to the run."""
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from mjlab.envs import ManagerBasedRlEnv
from mjlab.rl import RslRlVecEnvWrapper
from mjlab.tasks.registry import load_env_cfg, load_rl_cfg, load_runner_cls

task = "Mjlab-Velocity-Flat-Unitree-Go1"
run, ckpt, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
env_cfg = load_env_cfg(task)
env_cfg.scene.num_envs = 4
agent_cfg = load_rl_cfg(task)
agent_cfg.actor.hidden_dims = (128, 128, 64)
agent_cfg.critic.hidden_dims = (128, 128, 64)
env = RslRlVecEnvWrapper(ManagerBasedRlEnv(cfg=env_cfg, device="cpu"), clip_actions=agent_cfg.clip_actions)
runner = load_runner_cls(task)(env, asdict(agent_cfg), device="cpu")
runner.load(str(run / ckpt), load_cfg={"actor": True}, strict=True, map_location="cpu")
policy = runner.get_inference_policy(device="cpu")
obs = env.get_observations()
rec_obs, rec_act = [], []
torch.manual_seed(0)
with torch.no_grad():
    for _ in range(25):
        actions = policy(obs)
        rec_obs.append(obs["actor"].clone())
        rec_act.append(actions.clone())
        obs, _, _, _ = env.step(actions)
robot = env.unwrapped.scene["robot"]
term = env.unwrapped.action_manager.get_term("joint_pos")
np.savez(out, obs=torch.cat(rec_obs).numpy(), actions=torch.cat(rec_act).numpy(),
         joint_names=np.array(robot.joint_names), action_joint_names=np.array(term.target_names if hasattr(term, "target_names") else []),
         default_joint_pos=robot.data.default_joint_pos[0].numpy())
print("wrote", out, torch.cat(rec_obs).shape)
