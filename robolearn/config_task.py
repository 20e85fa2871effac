"""The task schema: what a task YAML may hold (its model, action, observation, reward,
termination, event, command, metric and curriculum terms, terrain and physics options), each
field with its docstring. `TaskCfg` is the root; robolearn/config.py holds the training schema
that contains it. A wrong key or type fails at composition time, naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Optional

from omegaconf import MISSING

from robolearn.terrain.generator import TerrainCfg


class EventMode(Enum):
    startup = "startup"
    """Once per environment, when the environments are built."""
    reset = "reset"
    """Every time an environment starts a new episode."""
    interval = "interval"
    """Every `interval_s` seconds of simulated time, drawn per environment."""


class NoiseType(Enum):
    uniform = "uniform"
    """Additive noise drawn from U(-scale, scale)."""
    gaussian = "gaussian"
    """Additive noise drawn from N(0, scale^2)."""


@dataclass
class NoiseCfg:
    type: NoiseType = NoiseType.uniform
    """Distribution of the additive noise."""
    scale: float = 0.0
    """Half-width (uniform) or standard deviation (gaussian), in the term's units before `scale`."""


@dataclass
class ObsTermCfg:
    func: str = MISSING
    """Name of the observation function (task terms first, then robolearn.mdp)."""
    params: Dict[str, Any] = field(default_factory=dict)
    """Keyword arguments passed to the function."""
    noise: NoiseCfg = field(default_factory=NoiseCfg)
    """Noise added when the group has noise enabled (domain randomization of sensing)."""
    scale: float = 1.0
    """Multiplier applied after noise; recorded in robot.yaml so the robot applies the same."""
    clip: Optional[float] = None
    """Clip the scaled value to [-clip, clip]; None disables."""
    units: str = ""
    """Physical units of the raw value (documentation for robot.yaml)."""
    history: int = 1
    """How many control steps of this term the policy sees: 1 = the current value only; K > 1 =
    the last K values, oldest first, [v(t-K+1), ..., v(t)] flattened step after step (each value
    as the group computes it: noise drawn per step, then scale and clip). An episode's first
    observation fills every slot with its first value. At most the episode's length in control
    steps; robot.yaml records it as the term's `history`."""


@dataclass
class ObsGroupCfg:
    terms: Dict[str, ObsTermCfg] = field(default_factory=dict)
    """Terms concatenated in this order into the group's vector."""
    enable_noise: bool = True
    """Add each term's noise (typically on for `policy`, off for a privileged `critic`)."""


@dataclass
class RewardTermCfg:
    func: str = MISSING
    """Name of the reward function returning a [num_envs] tensor."""
    weight: float = 1.0
    """The step reward adds weight * func(env, **params)."""
    params: Dict[str, Any] = field(default_factory=dict)
    """Keyword arguments passed to the function."""


@dataclass
class TerminationTermCfg:
    func: str = MISSING
    """Name of the function returning a [num_envs] bool tensor: True ends the episode."""
    params: Dict[str, Any] = field(default_factory=dict)
    """Keyword arguments passed to the function."""


class RandomizationLevel(Enum):
    """Presets in increasing order: each runs the events of its level and of the levels below."""

    none = "none"
    """Only what defines the task (initial-state resets): no domain randomization."""
    default = "default"
    """The randomization a policy needs to be robust in simulation."""
    sim2real = "sim2real"
    """Everything a policy meets on hardware: latency, pushes, gravity tilt, adaptive ranges."""


@dataclass
class AdaptiveRangeCfg:
    """Automatic domain randomization of one [low, high] param of an event: per group of
    environments, the range widens by `step` on each side while the group's metric stays at or
    above `widen_above` and narrows back toward its initial value when it falls below
    `narrow_below`; it never leaves `limits` nor gets narrower than the initial range."""

    param: str = "range"
    """The event param that adapts (a [low, high] list)."""
    limits: List[float] = MISSING
    """The widest [low, high] the range may reach."""
    step: float = MISSING
    """How far each bound moves per update."""
    metric: str = "survival"
    """survival (fraction of episodes that time out instead of terminating), episode_length
    (fraction of the maximum), or a reward term's name (its mean unweighted value per step)."""
    widen_above: float = 0.8
    """Widen when the group's metric is at least this."""
    narrow_below: float = 0.5
    """Narrow when it is below this."""
    num_groups: int = 1
    """Environment groups with independent ranges (env i is in group i % num_groups)."""
    min_episodes: int = 16
    """Episodes a group must finish between two updates of its range."""


@dataclass
class EventTermCfg:
    func: str = MISSING
    """Name of the event function f(env, mask, **params) (resets, domain randomization)."""
    mode: EventMode = EventMode.reset
    """When it runs: startup, reset or interval."""
    params: Dict[str, Any] = field(default_factory=dict)
    """Keyword arguments passed to the function."""
    interval_s: List[float] = field(default_factory=lambda: [1.0, 1.0])
    """For mode=interval: the period in seconds, drawn uniformly from [low, high] per env."""
    level: RandomizationLevel = RandomizationLevel.none
    """The lowest randomization preset that runs this event (none: always)."""
    adaptive: Optional[AdaptiveRangeCfg] = None
    """Make one of its ranges adaptive (used when the preset enables adaptive ranges)."""


@dataclass
class CurriculumTermCfg:
    func: str = MISSING
    """Name of a curriculum term (robolearn.mdp.curriculum): it runs when episodes end, before the
    reset events, and moves what the next episodes face (terrain level, command ranges)."""
    params: Dict[str, Any] = field(default_factory=dict)
    """Keyword arguments passed to the term."""


@dataclass
class MetricCfg:
    func: str = MISSING
    """Name of a function returning a [num_envs] value per control step (robolearn.mdp.metrics)."""
    params: Dict[str, Any] = field(default_factory=dict)
    """Keyword arguments passed to the function."""
    per: str = "step"
    """'step': the value's mean over the episode's steps; 'meter': its time integral divided by
    the distance the floating base travelled (e.g. power -> energy per meter); 'final': its mean
    over the last `window_s` seconds of each episode, however the episode ended (e.g. the error
    a reach settles at)."""
    window_s: float = 1.0
    """For per: final, the length of the episode's end that is averaged, in seconds."""
    units: str = ""
    """Units of the reported number (documentation)."""


@dataclass
class CommandCfg:
    ranges: Dict[str, Any] = MISSING
    """Components in order, each drawn uniformly from its [low, high] (e.g. lin_vel_x: [-1, 1]).
    Checked when the env is built (envs/commands.py): OmegaConf 2.3 refuses integers in a
    Dict[str, List[float]] (`[0, 1]`), which List[float] elsewhere converts."""
    resampling_time_s: List[float] = field(default_factory=lambda: [10.0, 10.0])
    """Each env draws a new command after a period drawn uniformly from [low, high] seconds."""
    standing_probability: float = 0.0
    """Probability that a drawn command is all zeros (stand still)."""


@dataclass
class ActionCfg:
    """ctrl = clip(offset + scale * action): each of scale, offset and clip is one value for every
    actuator or a mapping {joint or actuator name or regular expression: value} (matched in full,
    e.g. {".*_hip_joint": 0.2, ".*_calf_joint": 0.4}); an actuator no key matches keeps the
    default (scale 1, offset 0, no clip), a key that matches nothing or an actuator matched by two
    keys is an error."""

    actuators: List[str] = field(default_factory=list)
    """Actuators driven by the policy, in action order; empty means all, in model order."""
    scale: Any = 1.0
    """Action scale: a number, or {joint/actuator name or pattern: number}."""
    offset: Any = 0.0
    """Added to the ctrl (after the default offset below): a number, or {name or pattern: number}."""
    use_default_offset: bool = False
    """Offset each position actuator (a servo whose ctrl is a joint position) by its joint's default
    position (the `home` keyframe, else qpos0); a motor's, a velocity servo's or an integrating
    servo's ctrl is not a position and keeps offset 0. False: offset 0 for every actuator."""
    clip: Any = None
    """Narrow the ctrl of matched actuators to [low, high] (e.g. joint targets inside the joint
    limits): {name or pattern: [low, high]}; null: no clip besides ctrlrange."""
    clip_to_ctrlrange: bool = True
    """Clip ctrl to each actuator's ctrlrange (when the actuator is ctrl-limited)."""


@dataclass
class SimOptionsCfg:
    """MuJoCo's <option> settings a task may set; null keeps the MJCF's own value. They are written
    into the model before it compiles, so the exported bundle's MJCF carries them too."""

    timestep: Optional[float] = None
    """Physics timestep in seconds."""
    integrator: Optional[str] = None
    """euler, rk4, implicit, implicitfast (or discrete)."""
    solver: Optional[str] = None
    """Constraint solver: pgs, cg, newton."""
    iterations: Optional[int] = None
    """Maximum constraint solver iterations."""
    ls_iterations: Optional[int] = None
    """Maximum line-search iterations (cg, newton)."""
    tolerance: Optional[float] = None
    """Solver early-termination tolerance."""
    cone: Optional[str] = None
    """Friction cone: pyramidal or elliptic."""
    impratio: Optional[float] = None
    """Ratio of frictional to normal constraint impedance (elliptic cones)."""
    noslip_iterations: Optional[int] = None
    """Iterations of the no-slip solver (0: off)."""


@dataclass
class TaskCfg:
    name: str = MISSING
    """Task name; equals the name it is registered under."""
    description: str = ""
    """One line shown by `robolearn list`."""
    asset: str = MISSING
    """MJCF file: absolute, relative to the task's folder, or relative to robolearn's assets/."""
    sim_dt: Optional[float] = None
    """Physics timestep in seconds; None keeps the MJCF's <option timestep> (or sim.timestep)."""
    sim: SimOptionsCfg = field(default_factory=SimOptionsCfg)
    """Physics options (integrator, solver, iterations, cone, impratio, timestep, ...)."""
    decimation: int = 4
    """Physics steps per control step (control period = decimation * sim_dt)."""
    episode_length_s: float = 5.0
    """Episodes are truncated (time-out, bootstrapped) after this many seconds."""
    action: ActionCfg = field(default_factory=ActionCfg)
    """How policy actions become actuator controls."""
    observations: Dict[str, ObsGroupCfg] = field(default_factory=dict)
    """Observation groups; `policy` is required, `critic` defaults to `policy`."""
    rewards: Dict[str, RewardTermCfg] = field(default_factory=dict)
    """Weighted reward terms, summed each step."""
    terminations: Dict[str, TerminationTermCfg] = field(default_factory=dict)
    """Termination terms (true terminations; time-outs are separate)."""
    events: Dict[str, EventTermCfg] = field(default_factory=dict)
    """Reset and domain-randomization events."""
    commands: Dict[str, CommandCfg] = field(default_factory=dict)
    """Commands the policy is asked to follow (e.g. a base velocity), resampled per env."""
    metrics: Dict[str, MetricCfg] = field(default_factory=dict)
    """Task metrics `robolearn eval` and `sim2sim` report (tracking error, energy per meter, ...)."""
    terrain: Optional[TerrainCfg] = None
    """A generated heightfield terrain (tiles in difficulty levels) replacing the MJCF's `floor`."""
    curriculum: Dict[str, CurriculumTermCfg] = field(default_factory=dict)
    """Curriculum terms (terrain levels, command ranges), applied as episodes end."""
