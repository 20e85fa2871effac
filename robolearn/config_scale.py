"""Schemas of what a run reports to sweeps (`objective`) and how it runs under torchrun
(`distributed`); part of TrainCfg (config.py)."""

from __future__ import annotations

from dataclasses import dataclass

OBJECTIVE_MODES = ("final", "best", "last10")
DIRECTIONS = ("maximize", "minimize")


@dataclass
class ObjectiveCfg:
    """The one number `robolearn train` returns to a Hydra sweeper (Optuna) or Ray Tune, and what a
    sweep's summary table ranks by."""

    metric: str = "mean_episode_return"
    """A metrics.jsonl column (mean_episode_return, episode_reward/<term>, termination/<term>,
    value_loss, ...) or eval/<key> of the end-of-run evaluation (eval/return_mean, or a task
    metric such as eval/lin_vel_error_xy)."""
    mode: str = "final"
    """final: its last finite value (the last iteration's, unless that one was not finite); best:
    its best value over the run (direction decides which is best); last10: its mean over the last
    10 finite values. An eval/ metric has one value. NaN when the run never reported it."""
    direction: str = "maximize"
    """maximize or minimize: what `best` means, and the direction handed to the Optuna sweeper."""


@dataclass
class DistributedCfg:
    """Data-parallel training under torchrun (robolearn/distributed.py)."""

    timeout_s: float = 600.0
    """A rank that waits longer than this for the others in a collective (a rank died or hangs)
    stops the job with one line. Starting (building environments, compiling kernels) has its own
    30 minutes."""
