"""Structured config schemas: every YAML value is validated against these dataclasses (this
module: training, `TrainCfg`; the task's: config_task.py; scale-out: config_scale.py).

They are registered in Hydra's ConfigStore (`SCHEMAS`, compose.py), so a wrong key or a value of
the wrong type fails at composition time, before anything runs, naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from omegaconf import MISSING

from robolearn.config_scale import DistributedCfg, ObjectiveCfg
from robolearn.config_task import RandomizationLevel, TaskCfg


@dataclass
class RandomizationCfg:
    """A domain-randomization preset (configs/randomization/): which of a task's events run,
    whether observation noise is on and whether adaptive ranges adapt."""

    level: RandomizationLevel = RandomizationLevel.default
    """Run the events whose `level` is this or lower."""
    observation_noise: bool = True
    """Add each observation term's noise in groups that enable it; false turns all noise off."""
    adaptive: bool = False
    """Adapt the ranges marked `adaptive` (automatic domain randomization); false keeps their
    initial ranges fixed."""


@dataclass
class EnvCfg:
    num_envs: int = 256
    """Number of parallel environments."""
    cuda_graph: Optional[bool] = None
    """Replay the env step as CUDA graphs (warp on a CUDA device): unset (auto) where the env
    allows it, saying why not where it does not; true insists (an error where it cannot); false
    runs eager."""
    compile: bool = False
    """Compile the step's tensor work with torch.compile: rewards, terminations, observations,
    the managers' resets and (physics=warp) the reset events: fused kernels instead of one per
    tensor op, meant for the CUDA-graph path on a GPU, where the quadruped's step launches ~220
    small kernels (docs/benchmarks.md). Results equal eager up to float rounding; compiling
    costs seconds to tens of seconds at start."""
    stagger_timeouts: bool = True
    """Start training with every env at a random point of its time limit, so that time-outs (and
    the resets they cause) are spread over steps instead of all landing on one."""
    state_limit: float = 1.0e6
    """An env whose |qpos| or |qvel| exceeds this (or is not finite) has diverged: it is reset and
    its transition is not learned from (counted as health/nonfinite_resets)."""


@dataclass
class PhysicsCfg:
    backend: str = "auto"
    """Physics engine: auto (fastest installed) or a backend listed by `robolearn list`."""
    num_threads: int = 0
    """CPU threads for the mujoco backend; 0 uses every core. The backend still steps on the calling
    thread alone when its first steps measure that faster (small, cheap batches: rollout_schedule.py)."""
    nconmax: int = 0
    """warp: contacts allocated per environment; 0 derives it from the model: MuJoCo Warp's default,
    raised where a short random-control run of the model needs more (physics/contact_budget.py)."""
    njmax: int = 0
    """warp: constraint rows allocated per environment; 0 derives it from the model, as nconmax."""
    deterministic: bool = False
    """warp: MuJoCo Warp's deterministic mode (opt.deterministic: stable contact order, canonical
    constraint rows, order-invariant atomic sums), at some speed; without it, contact-rich GPU
    runs differ in the last bits between runs."""
    reset_sensors: str = "exact"
    """What a reset env's sensors read in its first observation. exact: a full forward of the new
    state. kinematic: position- and velocity-stage sensors (joints, frames, gyro, velocimeter) as
    exact; sensors that need the constraint solve (touch, accelerometer, force) read 0 until the
    env's next step. On warp it replaces a forward of every world at each reset (the solver
    included) by its position and velocity stages (docs/benchmarks.md); models without such sensors
    get that path under exact too."""


@dataclass
class AlgoCfg:
    learning_rate: float = 1e-3
    """Adam learning rate (initial value under the adaptive schedule)."""
    schedule: str = "adaptive"
    """'adaptive' (KL-driven learning rate, computed on the device) or 'fixed'."""
    desired_kl: float = 0.01
    """Target KL divergence per minibatch for the adaptive schedule."""
    clip_param: float = 0.2
    """PPO ratio clip epsilon."""
    use_clipped_value_loss: bool = True
    """Clip the value update around the old value estimate (by value_clip)."""
    value_clip: float = 0.2
    """How far the value estimate may move from the rollout's before its loss is clipped (in
    return units; the ratio's clip_param is a separate, unitless epsilon)."""
    value_loss_coef: float = 1.0
    """Weight of the value loss."""
    entropy_coef: float = 0.005
    """Weight of the entropy bonus."""
    gamma: float = 0.99
    """Discount factor."""
    lam: float = 0.95
    """GAE lambda."""
    num_learning_epochs: int = 5
    """Passes over the rollout per update."""
    num_mini_batches: int = 4
    """Minibatches per epoch."""
    max_grad_norm: float = 1.0
    """Gradient norm clip, applied to the actor's and to the critic's gradients separately."""
    init_noise_std: float = 1.0
    """Initial standard deviation of the Gaussian policy (state-independent, learned)."""
    min_noise_std: float = 0.0
    """Floor of the policy's standard deviation, kept after every step (0: none)."""
    actor_hidden_dims: List[int] = field(default_factory=lambda: [64, 64])
    """Actor MLP hidden layer sizes."""
    critic_hidden_dims: List[int] = field(default_factory=lambda: [64, 64])
    """Critic MLP hidden layer sizes."""
    activation: str = "elu"
    """Hidden activation: elu, relu, tanh."""
    normalize_observations: bool = True
    """Empirical running mean/std normalization of actor and critic inputs (when they take new
    observations: normalizer_schedule)."""
    normalizer_schedule: str = "rollout"
    """'rollout': the normalizers take each rollout once, at its update (the critic's before it,
    absorbed by its first layer; the actor's after it), so the update's first minibatch has
    probability ratio exactly 1. 'step' (rsl_rl's schedule): they merge every step's observations
    before acting on them, and the update normalizes the rollout with the newest statistics (its
    first ratio then shows how far they moved). docs/benchmarks.md compares the two."""
    normalizer_min_std: float = 0.01
    """Floor of the normalizer's standard deviation: a column that barely varied in training is
    amplified at most 1/normalizer_min_std times (also in the exported policy)."""
    normalizer_clip: Optional[float] = None
    """Clip normalized observations to [-clip, clip] (also in the exported policy); None: no clip."""
    policy: str = "mlp"
    """The actor's network: 'mlp' (feed-forward), 'gru' or 'lstm' (a recurrent core of
    rnn_num_layers x rnn_hidden_size before the actor_hidden_dims head); the critic's too unless
    critic_network says otherwise."""
    critic_network: Optional[str] = None
    """The critic's network, 'mlp', 'gru' or 'lstm'; null: the same as `policy`."""
    rnn_hidden_size: int = 64
    """Units per layer of a recurrent core."""
    rnn_num_layers: int = 1
    """Stacked layers of a recurrent core."""
    bptt_length: int = 0
    """Recurrent networks learn from sequences of this many steps of one environment (truncated
    back-propagation through time; each starts from the state the rollout had there); 0: the
    whole rollout (runner.num_steps_per_env), which it must divide."""
    compile: bool = False
    """Compile each minibatch step of the update with torch.compile (same results, within float
    tolerance; pays a one-time compilation of tens of seconds)."""
    amp: Optional[str] = None
    """'bf16': the update's network forward and backward passes run in bfloat16 autocast (matrix
    products in bf16; normalizers, losses, gradients, Adam and the weights stay float32; no loss
    scaling needed). The rollout's actions and the exported policy stay float32. null: float32
    throughout. Whether it pays is a measurement per GPU and network size (docs/benchmarks.md)."""
    cuda_graph: Optional[bool] = None
    """Unset (auto): on a CUDA device, feed-forward policies capture the whole update (every
    epoch's minibatch gathers, forward, loss, backward, clipped Adam steps, normalizer updates)
    once as a CUDA graph and replay it each iteration: one launch instead of thousands (H100,
    quadruped_flat, 4,096 envs: a whole iteration 284 -> 167 ms). Minibatches are then drawn by
    sorting random keys instead of randperm (another, equally uniform shuffle). true insists (an
    error on the CPU or with a recurrent policy); false keeps the update eager."""


@dataclass
class RunnerCfg:
    num_steps_per_env: int = 24
    """Rollout length per environment per iteration."""
    max_iterations: int = 100
    """Total PPO iterations of the run (a resumed run continues to this count)."""
    save_interval: int = 50
    """Write a checkpoint every this many iterations (and always at the end)."""
    keep_checkpoints: int = 5
    """How many recent checkpoints to keep (older ones are deleted)."""
    export_onnx: bool = True
    """Export policy.onnx + robot.yaml at the end of training."""
    progress: bool = True
    """Show the live progress line."""
    episode_window: int = 100
    """The reported episode return, length and term sums are means over this many most recent
    finished episodes."""
    video_interval: int = 250
    """A clip of env 0 ends at every this many iterations (recorded over the iterations just
    before), into <run>/videos/ and the loggers; 0: no clips. Drawn by a separate process."""
    video_length_s: float = 3.0
    """Simulated seconds per clip (at most about 30 frames a second of them are drawn)."""
    video_width: int = 320
    """Clip width in pixels."""
    video_height: int = 240
    """Clip height in pixels."""


@dataclass
class WandbCfg:
    """Weights & Biases (logger=wandb or both); the run is named after its folder and writes
    under <run>/wandb/."""

    project: str = "robolearn"
    """The W&B project the run goes to."""
    entity: Optional[str] = None
    """The W&B team or user; None: your default entity."""
    mode: str = ""
    """online, offline or disabled; empty: the WANDB_MODE environment variable, else online."""


@dataclass
class IsaacLabCfg:
    """Settings of `task=isaaclab:<id>` (robolearn/isaaclab/)."""

    overrides: List[str] = field(default_factory=list)
    """Isaac Lab's own overrides for the task, as `isaaclab train` takes them, each quoted:
    'isaaclab.overrides=["env.episode_length_s=10","physics=newton_mjwarp"]'."""


@dataclass
class TrainCfg:
    task: TaskCfg = MISSING
    """The task (choose with task=<name>)."""
    physics: PhysicsCfg = field(default_factory=PhysicsCfg)
    """The physics backend (choose with physics=<name>)."""
    algo: AlgoCfg = field(default_factory=AlgoCfg)
    """PPO hyperparameters."""
    env: EnvCfg = field(default_factory=EnvCfg)
    """Environment count."""
    runner: RunnerCfg = field(default_factory=RunnerCfg)
    """Rollout / iteration settings."""
    randomization: RandomizationCfg = field(default_factory=RandomizationCfg)
    """Domain-randomization preset (choose with randomization=none|default|sim2real)."""
    seed: int = 0
    """Seeds torch, numpy, python and every environment sampler."""
    device: str = "auto"
    """Learner device: auto (cuda if available), cpu, cuda, cuda:N."""
    resume: Optional[str] = None
    """Run directory to continue from its latest checkpoint."""
    overwrite: bool = False
    """Move a run that already lives in hydra.run.dir aside (to <dir>.replaced-<time>) instead of
    refusing to start."""
    run_name: str = ""
    """Appended to the run's folder: runs/<task>/<time>_<run_name> (letters, digits, . _ -)."""
    logger: str = "tensorboard"
    """Where the metrics go besides metrics.jsonl: tensorboard, wandb, both or none."""
    wandb: WandbCfg = field(default_factory=WandbCfg)
    """Weights & Biases settings (used with logger=wandb or both)."""
    isaaclab: IsaacLabCfg = field(default_factory=IsaacLabCfg)
    """Isaac Lab's own overrides (used with task=isaaclab:<id>)."""
    objective: ObjectiveCfg = field(default_factory=ObjectiveCfg)
    """The number `robolearn train` returns to sweepers (Optuna, Ray Tune) and sweep summaries rank by."""
    distributed: DistributedCfg = field(default_factory=DistributedCfg)
    """torchrun settings (collective timeout)."""


SCHEMAS = ((None, "train_schema", TrainCfg), ("physics", "physics_schema", PhysicsCfg), ("algo", "algo_schema", AlgoCfg),
           ("randomization", "randomization_schema", RandomizationCfg))  # fmt: skip
"""(group, name, schema) of each schema the YAML tree extends (`defaults: [<group>_schema]`); compose.py
registers them in Hydra's ConfigStore."""
