"""Record the mjlab run's own policy (rsl_rl's inference policy from the checkpoint) on observations
from the mjlab env, for robolearn's import parity test.

    python mjlab_go1_reference.py <run dir> <model_N.pt> <out.npz> [--rnn gru|lstm] [--steps 25]

Writes obs, actions (feed-forward: [steps x 4, D] rows; --rnn: [steps, 4, D] sequences, the
actor's hidden state carried from step to step and reset where an episode ended, as rsl_rl does,
with `dones` [steps, 4]), joint_names, default_joint_pos.
"""
import argparse
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from mjlab.envs import ManagerBasedRlEnv
from mjlab.rl import RslRlVecEnvWrapper
from mjlab.tasks.registry import load_env_cfg, load_rl_cfg, load_runner_cls

parser = argparse.ArgumentParser()
parser.add_argument("run", type=Path)
parser.add_argument("checkpoint")
parser.add_argument("out", type=Path)
parser.add_argument("--rnn", choices=("gru", "lstm"))
parser.add_argument("--steps", type=int, default=25)
args = parser.parse_args()

task = "Mjlab-Velocity-Flat-Unitree-Go1"
env_cfg = load_env_cfg(task)
env_cfg.scene.num_envs = 4
agent_cfg = load_rl_cfg(task)
agent_cfg.actor.hidden_dims = (128, 128, 64)
agent_cfg.critic.hidden_dims = (128, 128, 64)
if args.rnn:
    agent_cfg.actor.class_name, agent_cfg.actor.rnn_type = "RNNModel", args.rnn
    agent_cfg.actor.rnn_hidden_dim, agent_cfg.actor.hidden_dims = 64, (64, 64)
env = RslRlVecEnvWrapper(ManagerBasedRlEnv(cfg=env_cfg, device="cpu"), clip_actions=agent_cfg.clip_actions)
runner = load_runner_cls(task)(env, asdict(agent_cfg), device="cpu")
runner.load(str(args.run / args.checkpoint), load_cfg={"actor": True}, strict=True, map_location="cpu")
policy = runner.get_inference_policy(device="cpu")
obs = env.get_observations()
rec_obs, rec_act, rec_done = [], [], []
torch.manual_seed(0)
with torch.no_grad():
    for _ in range(args.steps):
        actions = policy(obs)
        rec_obs.append(obs["actor"].clone())
        rec_act.append(actions.clone())
        obs, _, dones, _ = env.step(actions)
        policy.reset(dones)  # rsl_rl's runner zeroes the hidden state of the environments that were reset
        rec_done.append(dones.clone().bool())
robot = env.unwrapped.scene["robot"]
term = env.unwrapped.action_manager.get_term("joint_pos")
stack = torch.stack if args.rnn else torch.cat
extra = {"dones": torch.stack(rec_done).numpy()} if args.rnn else {}
np.savez(args.out, obs=stack(rec_obs).numpy(), actions=stack(rec_act).numpy(), **extra,
         joint_names=np.array(robot.joint_names),
         action_joint_names=np.array(term.target_names if hasattr(term, "target_names") else []),
         default_joint_pos=robot.data.default_joint_pos[0].numpy())
print("wrote", args.out, stack(rec_obs).shape)
