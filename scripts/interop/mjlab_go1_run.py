"""Train a short mjlab Go1 flat run on the CPU (fixture for robolearn import tests).

    python mjlab_go1_run.py [iterations] [--rnn gru|lstm]

--rnn makes the actor rsl_rl's RNNModel (one 64-unit layer before a [64, 64] head); the critic
stays an MLP.
"""
import argparse
import dataclasses

from mjlab.scripts.train import TrainConfig, launch_training

parser = argparse.ArgumentParser()
parser.add_argument("iterations", type=int, nargs="?", default=6)
parser.add_argument("--rnn", choices=("gru", "lstm"))
args = parser.parse_args()

task = "Mjlab-Velocity-Flat-Unitree-Go1"
cfg = TrainConfig.from_task(task)
cfg.env.scene.num_envs = 32
cfg.agent.actor.hidden_dims = (128, 128, 64)
cfg.agent.critic.hidden_dims = (128, 128, 64)
if args.rnn:
    cfg.agent.actor.class_name, cfg.agent.actor.rnn_type = "RNNModel", args.rnn
    cfg.agent.actor.rnn_hidden_dim, cfg.agent.actor.hidden_dims = 64, (64, 64)
cfg.agent.max_iterations = args.iterations
cfg.agent.save_interval = 3
cfg.agent.logger = "tensorboard"
cfg = dataclasses.replace(cfg, gpu_ids=None, log_root="logs/rsl_rl")
launch_training(task, cfg)
