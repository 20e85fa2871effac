"""Train a short mjlab Go1 flat run on the CPU (fixture for robolearn import tests)."""
import sys
from mjlab.scripts.train import TrainConfig, launch_training

task = "Mjlab-Velocity-Flat-Unitree-Go1"
import dataclasses
cfg = TrainConfig.from_task(task)
cfg.env.scene.num_envs = 32
cfg.agent.actor.hidden_dims = (128, 128, 64)
cfg.agent.critic.hidden_dims = (128, 128, 64)
cfg.agent.max_iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 6
cfg.agent.save_interval = 3
cfg.agent.logger = "tensorboard"
cfg = dataclasses.replace(cfg, gpu_ids=None, log_root="logs/rsl_rl")
launch_training(task, cfg)
