"""`robolearn sim2sim`: run a bundle through the deploy runtime against a CPU MuJoCo stand-in robot.

The robot side is exactly what runs on hardware: robolearn_deploy's Policy, ControlLoop (with its
watchdog) and a RobotInterface (here MujocoRobot, at its own physics rate and integrator). This
module only adds the referee: a one-environment BatchedEnv of the bundle's task that samples each
episode's initial state with the task's reset events and scores every tick with the task's own
reward and termination terms, from the stand-in robot's state. The result is printed next to
the training evaluation stored in the bundle.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import torch
import yaml
from omegaconf import OmegaConf

from robolearn.config_checks import RULES
from robolearn.config_task import TaskCfg
from robolearn.envs.batched_env import BatchedEnv
from robolearn.errors import UserError, one_line
from robolearn.evaluate import MAX_EVAL_EPISODES, summarize_metrics
from robolearn.progress import EvalProgress
from robolearn.registry import BROKEN, TaskPlugin, discover_tasks, get_task
from robolearn.envs.env_state import check_conditions
from robolearn.sim2sim_conditions import EpisodeConditions
from robolearn.sim2sim_files import refuse_in_bundle
from robolearn_deploy import ControlLoop, LoopReport, Policy, Safety, Step
from robolearn_deploy.sim import MujocoRobot


class Referee:
    """Scores a robot's trajectory with the task's terms through a 1-env BatchedEnv whose physics
    state is overwritten with the robot's on every tick (the env's own physics never steps)."""

    def __init__(self, bundle_dir: Path, model_file: str, seed: int, conditions: str = "trained",
                 policy_task: str | None = None):  # fmt: skip
        """`policy_task`: the task robot.yaml says the policy was trained on, which task.yaml must be
        (None for an imported bundle, whose referee is a task.yaml of its own)."""
        try:
            task = OmegaConf.load(bundle_dir / "task.yaml")
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise UserError(f"cannot read {bundle_dir / 'task.yaml'}: {type(exc).__name__}: {one_line(exc)}; re-export the bundle") from None
        cfg = OmegaConf.merge(OmegaConf.structured(TaskCfg), task)
        if policy_task is not None and cfg.name != policy_task:  # a hand-assembled bundle: scored with another task's terms
            raise UserError(f"{bundle_dir / 'task.yaml'} is task '{cfg.name}' but robot.yaml's policy was trained on "
                            f"'{policy_task}': the bundle's files do not belong together; re-export the bundle")  # fmt: skip
        cfg.asset = str((bundle_dir / model_file).resolve())  # the bundle's copy of the MJCF
        installed = _plugin(cfg.name, bundle_dir)
        plugin = dataclasses.replace(installed or TaskPlugin(name=cfg.name, config=bundle_dir / "task.yaml"), edit_spec=None)
        try:  # the bundled MJCF is already edited
            self.env = BatchedEnv(cfg, plugin, 1, physics="mujoco", device="cpu", seed=seed, physics_settings={"num_threads": 1})
        except UserError as exc:
            if installed:
                raise
            raise UserError(f"task '{cfg.name}' is not installed here and its task.yaml does not build without its package "
                            f"({exc}); install the package that defines the task") from None  # fmt: skip
        self.names = self.env.terminations.names
        self.conditions = EpisodeConditions(self.env, bundle_dir, conditions, seed)
        self.env.track_metrics(True)
        self.metric_sums = torch.zeros(len(self.env.metrics.names))
        """Each task metric summed over every scored step (with steps and distance: summarize_metrics)."""
        self.steps, self.distance = torch.zeros(()), torch.zeros(())
        self.final_sums, self.episodes = torch.zeros_like(self.metric_sums), torch.zeros(())
        """Per-final metrics: the sum of each scored episode's last-window mean, and their number."""
        self._all = torch.ones(1, dtype=torch.bool)

    def initial_state(self) -> tuple[np.ndarray, np.ndarray]:
        """A start state drawn by the task's reset events, as a training episode starts (with
        freshly drawn commands, see commands()), on a terrain tile drawn from the conditions
        (sim2sim_conditions.py)."""
        self.conditions.apply()
        self.env.reset(spread_timeouts=False)
        physics = self.env.physics
        return physics.qpos[0].double().numpy(), physics.qvel[0].double().numpy()

    def commands(self) -> dict[str, np.ndarray]:
        """The task's current commands: the operator inputs the robot gets."""
        return {name: value[0].numpy().copy() for name, value in self.env.commands.values.items()}

    def advance_commands(self) -> dict[str, np.ndarray]:
        """One control period of the task's command schedule (resampling on its timers)."""
        self.env.commands.step(self.env.dt)
        return self.commands()

    def score(self, qpos: np.ndarray, qvel: np.ndarray, action: np.ndarray, seen: dict[str, np.ndarray]) -> tuple[float, list[str]]:
        """Reward of the transition that `action` caused, ending in (qpos, qvel), under the
        commands the robot `seen` when it chose that action; the termination terms that fire."""
        env = self.env
        env.actions.process(torch.as_tensor(action, dtype=torch.float32).unsqueeze(0))
        env.metrics.before_physics()  # the env still holds the previous state
        env.physics.reset(self._all, torch.from_numpy(qpos).unsqueeze(0), torch.from_numpy(qvel).unsqueeze(0))
        env.episode_length += 1
        env.episode_steps += 1
        schedule = {name: value.clone() for name, value in env.commands.values.items()}
        for name, value in seen.items():
            env.commands.values[name][0] = torch.as_tensor(value)
        env.terminated = env.terminations.compute()  # reward terms such as is_alive read it
        reward = float(env.rewards.compute()[0])
        env.metrics.after_physics()
        self.metric_sums += env.metrics.values[:, 0]
        self.steps += 1
        self.distance += env.metrics.distance[0]
        for name, value in schedule.items():
            env.commands.values[name].copy_(value)
        return reward, [n for n, f in zip(self.names, env.terminations.fired[:, 0].tolist()) if f]

    def end_episode(self) -> None:
        """The episode just scored is over: count its per-final metrics (its last-window means)."""
        if int(self.env.episode_steps[0]) > 0:
            self.final_sums += self.env.metrics.window_mean[:, 0]
            self.episodes += 1

    def close(self) -> None:
        self.env.close()


def _plugin(name: str, bundle_dir: Path) -> TaskPlugin | None:
    """The installed task of that name (with its own terms); None where none is installed: then the
    bundle's task.yaml is built with robolearn's generic terms alone (an imported bundle's referee,
    or a bundle whose task package this machine lacks)."""
    tasks = discover_tasks()
    return get_task(name, tasks) if name in tasks or name in BROKEN else None


@dataclass
class Episode:
    """One sim2sim episode. It ends when task termination terms fire (`terminations`), when the
    deploy watchdog trips (`tripped`: why; on the same tick as a termination both are kept), or
    at the time limit."""

    ret: float = 0.0
    length: int = 0
    """Scored steps (a tick whose state the robot reached by a policy action)."""
    terminations: tuple[str, ...] = ()
    tripped: str | None = None


class EpisodeScore:
    """One episode scored tick by tick as the control loop runs it (sim2sim's episodes, play's
    videos of a bundle): each tick's state is the outcome of the previous tick's action, rewarded
    under the commands the robot saw when it chose that action."""

    def __init__(self, referee: Referee, robot: MujocoRobot):
        self.referee, self.robot = referee, robot
        self.episode = Episode()
        self._previous: tuple | None = None  # (action, the commands it was chosen under)

    def tick(self, step: Step) -> bool:
        """Score the state this tick reached; True when the episode ended (a termination or the watchdog)."""
        episode, robot = self.episode, self.robot
        qpos, qvel = robot.data.qpos.copy(), robot.data.qvel.copy()
        # a state the watchdog tripped on for being non-finite cannot be scored (the episode still
        # counts, ended by the watchdog)
        scorable = step.tripped is None or (np.isfinite(qpos).all() and np.isfinite(qvel).all())
        if self._previous is not None and scorable:
            reward, fired = self.referee.score(qpos, qvel, *self._previous)
            episode.ret += reward
            episode.length += 1
            episode.terminations = tuple(fired)
        episode.tripped = step.tripped  # on the same tick as a termination, both are counted
        if episode.terminations or episode.tripped is not None:
            return True
        self._previous = (step.action.copy(), robot.inputs)
        return False

    def ended_by(self) -> str:
        """How the episode ended, in words: its termination terms, the watchdog's reason, or the time limit."""
        e = self.episode
        if e.tripped is not None:
            return f"watchdog: {e.tripped}"
        return ", ".join(e.terminations) or "time limit"


def run_episode(loop: ControlLoop, robot: MujocoRobot, referee: Referee, max_length: int) -> tuple[Episode, list[float]]:
    qpos, qvel = referee.initial_state()
    robot.reset(qpos, qvel)
    robot.inputs = referee.commands()
    loop.reset()
    score = EpisodeScore(referee, robot)
    episode = score.episode

    def on_step(step: Step) -> bool:
        if score.tick(step):
            return True
        robot.inputs = referee.advance_commands()  # what the operator asks for at the next tick
        return episode.length >= max_length

    report = loop.run(max_length + 1, on_step)
    referee.end_episode()
    return episode, report.compute_s


MAX_STEPS_PER_TICK = 10_000
"""The most physics steps sim2sim takes per control tick (a smaller timestep is a typo, not a test)."""


def check_timestep(timestep: float, control_period: float | None) -> None:
    """timestep= is a positive, finite number of seconds, at most the control period and at least
    1/MAX_STEPS_PER_TICK of it."""
    if not math.isfinite(timestep) or timestep <= 0:
        raise UserError(f"timestep={timestep} is not valid; valid: a positive number of seconds (the physics step)")
    if isinstance(control_period, (int, float)) and control_period > 0:
        if timestep > control_period:
            raise UserError(f"timestep={timestep} is longer than the policy's control period ({control_period} s); valid: "
                            f"{control_period / MAX_STEPS_PER_TICK:.2g} to {control_period} s")  # fmt: skip
        if timestep < control_period / MAX_STEPS_PER_TICK:
            raise UserError(f"timestep={timestep} would take {control_period / timestep:.3g} physics steps per control "
                            f"tick; valid: {control_period / MAX_STEPS_PER_TICK:.2g} to {control_period} s")  # fmt: skip


def check_seed(seed: int) -> None:
    """seed= within train's range (RULES['seed'], in its words): the referee seeds torch and numpy
    with it, which take 0..2**32-1 and fail on more with a traceback."""
    ok, valid = RULES["seed"]
    if not ok(seed):
        raise UserError(f"seed={seed} is out of range; valid: {valid}")


def open_sim(bundle_dir: Path, realtime: bool = False, timestep: float | None = None, integrator: str | None = None,
             engine: str = "auto", seed: int = 0, log: Path | None = None,
             conditions: str = "trained") -> tuple[Policy, MujocoRobot, Referee, ControlLoop]:  # fmt: skip
    """The deploy runtime on the MuJoCo stand-in robot, and the task's referee, for a bundle."""
    check_seed(seed)
    check_conditions(conditions)
    policy = Policy(bundle_dir, engine=engine)  # verifies the bundle before anything runs
    meta = policy.bundle.meta
    if timestep is not None:
        check_timestep(timestep, meta.get("control_period_s"))
    timestep = timestep or meta.get("physics_dt_s")  # the training timestep unless another is asked for
    if not meta.get("model_file") or not (bundle_dir / "task.yaml").is_file():
        raise UserError(f"{bundle_dir} carries no robot model and task.yaml to simulate (an imported bundle gets them "
                        "from robolearn import ... robot=<model.xml> [task=<robolearn task>])")  # fmt: skip
    robot = MujocoRobot(bundle_dir / meta["model_file"], timestep=timestep, integrator=integrator, realtime=realtime)
    referee = Referee(bundle_dir, meta["model_file"], seed, conditions, None if meta.get("imported_from") else meta.get("task"))
    if log is not None:  # everything checked: its folder is made now
        log.parent.mkdir(parents=True, exist_ok=True)
    return policy, robot, referee, ControlLoop(policy, robot, Safety(), log=log)


def sim2sim(bundle_dir: Path, episodes: int = 10, realtime: bool = False, timestep: float | None = None,
            integrator: str | None = None, engine: str = "auto", seed: int = 0, log: Path | None = None,
            conditions: str = "trained") -> dict:  # fmt: skip
    if not 1 <= episodes <= MAX_EVAL_EPISODES:  # eval's limit: more is a typo, not a test (they run one by one)
        raise UserError(f"episodes={episodes} is out of range; valid: 1..{MAX_EVAL_EPISODES}")
    if log is not None:
        refuse_in_bundle("log", log, bundle_dir)  # what the log is, the control loop checks when it opens it
    policy, robot, referee, loop = open_sim(bundle_dir, realtime, timestep, integrator, engine, seed, log, conditions)
    meta = policy.bundle.meta
    try:
        runs = []
        with EvalProgress("sim2sim", episodes, None, unit="episodes") as shown:  # one after another: hours for 65,536
            for done in range(1, episodes + 1):
                runs.append(run_episode(loop, robot, referee, referee.env.max_episode_length))
                shown.update(done)
    finally:
        loop.close()
        referee.close()
    compute_s = [s for _, c in runs for s in c]  # empty if the watchdog ended every episode at once
    result = {
        "task": meta.get("task"),
        "metric_names": referee.env.metrics.names,
        **summarize_episodes([e for e, _ in runs], referee.names),
        **summarize_metrics(referee.env, referee.metric_sums, referee.steps, referee.distance, referee.final_sums,
                            referee.episodes),  # fmt: skip
        "control_step_ms": LoopReport(compute_s=compute_s).latency_ms(),
        "engine": f"{policy.engine.name} {policy.engine.precision}",
        "conditions": referee.conditions.described,
        "physics": {"timestep": float(robot.model.opt.timestep), "integrator": mujoco.mjtIntegrator(robot.model.opt.integrator).name[len("mjINT_"):].lower(),
                    "realtime": realtime},  # fmt: skip
    }
    # a training evaluation scored by another task's rewards (an Isaac Lab task refereed by the robolearn
    # task of the same robot) is not comparable: only the task's own score is shown
    training = (meta.get("evaluation") or {}) if referee.env.cfg.name == meta.get("task") else {}
    result["return_comparison"] = compare_returns(result["return_mean"], training, result["episode_length_mean"])
    result["training_evaluation"] = training
    return result


def summarize_episodes(episodes: list[Episode], termination_names: list[str]) -> dict:
    """Return, length and how the episodes ended. Every episode counts, whatever ended it: one the
    watchdog ended keeps the return and length it reached, and ended early like a terminated one
    (terminated_fraction: ended before the time limit, by a termination term or the watchdog)."""
    returns = np.array([e.ret for e in episodes])
    tripped = [e.tripped for e in episodes if e.tripped is not None]
    return {
        "episodes": len(episodes),
        "return_mean": float(returns.mean()),
        "return_std": float(returns.std()),
        "episode_length_mean": float(np.mean([e.length for e in episodes])),
        "terminated_fraction": float(np.mean([bool(e.terminations) or e.tripped is not None for e in episodes])),
        **{f"termination/{n}": float(np.mean([n in e.terminations for e in episodes])) for n in termination_names},
        "ended_by_watchdog": len(tripped),
        "trip_reasons": sorted(set(tripped)),
    }


def compare_returns(sim2sim: float, training: dict, episode_length: float | None = None) -> dict | None:
    """The sim2sim mean return against the training evaluation's, right for either sign: the
    difference (higher is better), that difference relative to |training return| and in units of
    the training returns' std, and the ratio only where both are positive ("kept x %" means
    nothing for a negative return). A higher return from episodes that ended sooner (the watchdog,
    a fall) of a task whose returns are negative is no better: its verdict is "shorter". None if the
    bundle has no training evaluation."""
    if training.get("return_mean") is None:
        return None
    reference = float(training["return_mean"])
    difference = sim2sim - reference
    std = training.get("return_std")
    trained_length = training.get("episode_length_mean")
    if not math.isfinite(difference):
        verdict = "not comparable"
    elif difference > 0 and reference < 0 and episode_length is not None and trained_length \
            and episode_length < 0.95 * float(trained_length):  # fmt: skip
        verdict = "shorter"
    else:
        verdict = "better" if difference > 0 else "worse" if difference < 0 else "equal"
    return {
        "training": reference,
        "sim2sim": sim2sim,
        "difference": difference,
        "relative": difference / abs(reference) if reference != 0 else None,
        "in_training_std": difference / std if std else None,
        "ratio": sim2sim / reference if sim2sim > 0 and reference > 0 else None,
        "verdict": verdict,
        "episode_length": episode_length,
        "training_episode_length": trained_length,
    }


def comparison_line(c: dict) -> str:
    """The verdict in words, e.g. 'return: 50 better than the training evaluation (-50 vs -100:
    +50.0% of |training return|, +2.5 std of its returns)'."""
    if c["verdict"] == "equal":
        return f"return: equal to the training evaluation ({c['training']:.4g})"
    if c["verdict"] == "shorter":
        return (f"return: {c['sim2sim']:.4g} vs the training evaluation's {c['training']:.4g}, higher only because its "
                f"episodes ended sooner ({c['episode_length']:.4g} vs {c['training_episode_length']:.4g} steps) and "
                "this task's returns are negative: not better")  # fmt: skip
    if c["verdict"] not in ("better", "worse"):
        return f"return: {c['sim2sim']:.4g}, not comparable with the training evaluation ({c['training']:.4g})"
    details = [f"{100 * c['relative']:+.1f}% of |training return|" if c["relative"] is not None
               else "the training return is 0"]  # fmt: skip
    if c["in_training_std"] is not None:
        details.append(f"{c['in_training_std']:+.2g} std of its returns")
    kept = f"; kept {100 * c['ratio']:.1f}%" if c["ratio"] is not None else ""
    return (f"return: {abs(c['difference']):.4g} {c['verdict']} than the training evaluation "
            f"({c['sim2sim']:.4g} vs {c['training']:.4g}: {', '.join(details)}{kept})")  # fmt: skip


def print_report(result: dict) -> None:
    training = result["training_evaluation"]
    phys = result["physics"]
    print(f"sim2sim {result['task']}: {result['episodes']} episode{'s' if result['episodes'] != 1 else ''}, {result['engine']}, physics dt {phys['timestep']} s "
          f"({phys['integrator']}), "
          f"realtime {'on' if phys['realtime'] else 'off'}")  # fmt: skip
    if result.get("conditions"):
        print(f"  under {result['conditions']}")
    print(f"  {'metric':<28} {'training eval':>14} {'sim2sim':>10}")
    keys = ["return_mean", "return_std", "episode_length_mean", "terminated_fraction"]
    keys += [k for k in result if k.startswith("termination/")] + list(result["metric_names"])
    for key in keys:
        ours = f"{training[key]:>14.4g}" if isinstance(training.get(key), (int, float)) else f"{'-':>14}"
        print(f"  {key:<28} {ours} {result[key]:>10.4g}")
    if not training:
        print("  (no training evaluation with this task's rewards in the bundle: the policy is scored by the task alone)")
    if result["return_comparison"] is not None:
        print(f"  {comparison_line(result['return_comparison'])}")
    reasons = f" ({'; '.join(result['trip_reasons'])})" if result["trip_reasons"] else ""
    print(f"  episodes ended by the watchdog: {result['ended_by_watchdog']} of {result['episodes']}{reasons}")
    lat = result["control_step_ms"]
    if math.isnan(lat["median"]):  # every episode ended at its first tick
        print("  control step (observe + infer + map): none completed")
    else:
        print(f"  control step (observe + infer + map): median {lat['median'] * 1e3:.0f} us, p99 {lat['p99'] * 1e3:.0f} us")
