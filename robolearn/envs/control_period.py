"""A task's control period (the model's timestep x task.decimation), checked before an env is built:
one the deploy runtime cannot run, or an episode shorter than one control step, is one line."""

from __future__ import annotations

import mujoco

from robolearn.config_task import TaskCfg
from robolearn.errors import UserError

MIN_CONTROL_PERIOD = 1e-4
"""The shortest control period a task may have [s]: the deploy runtime's (robolearn_deploy/fields.py
PERIOD), which refuses a bundle that asks for more than 10 kHz."""


def control_period(model: mujoco.MjModel, cfg: TaskCfg) -> float:
    """The control period [s], after checking it against MIN_CONTROL_PERIOD and the episode length."""
    timestep = float(model.opt.timestep)
    period = timestep * cfg.decimation
    if period < MIN_CONTROL_PERIOD:  # 1e-7 s steps: an evaluation of hours, a bundle no robot runs
        raise UserError(f"the control period is {period:g} s (the model's timestep {timestep:g} s x task.decimation "
                        f"{cfg.decimation}), faster than the deploy runtime runs a policy; valid: timestep x "
                        f"decimation >= {MIN_CONTROL_PERIOD:g} s (10 kHz)")  # fmt: skip
    if cfg.episode_length_s < period:
        raise UserError(f"task.episode_length_s={cfg.episode_length_s:g} is shorter than one control step ({period:g} s: "
                        f"the model's timestep x task.decimation); valid: >= {period:g}")  # fmt: skip
    return period
