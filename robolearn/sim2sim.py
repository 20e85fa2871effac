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
import json
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import torch
from omegaconf import OmegaConf

from robolearn.config import TaskCfg
from robolearn.envs.batched_env import BatchedEnv
from robolearn.errors import UserError
from robolearn.evaluate import summarize_metrics
from robolearn.registry import get_task
from robolearn_deploy import ControlLoop, Policy, Safety, Step
from robolearn_deploy.sim import MujocoRobot


class Referee:
    """Scores a robot's trajectory with the task's terms through a 1-env BatchedEnv whose physics
    state is overwritten with the robot's on every tick (the env's own physics never steps)."""

    def __init__(self, bundle_dir: Path, model_file: str, seed: int):
        cfg = OmegaConf.merge(OmegaConf.structured(TaskCfg), OmegaConf.load(bundle_dir / "task.yaml"))
        cfg.asset = str((bundle_dir / model_file).resolve())  # the bundle's copy of the MJCF
        plugin = dataclasses.replace(get_task(cfg.name), edit_spec=None)  # the bundled MJCF is already edited
        self.env = BatchedEnv(cfg, plugin, 1, physics="mujoco", device="cpu", seed=seed, physics_settings={"num_threads": 1})
        self.names = self.env.terminations.names
        self.env.track_metrics(True)
        self.metric_sums = torch.zeros(len(self.env.metrics.names))
        """Each task metric summed over every scored step (with steps and distance: summarize_metrics)."""
        self.steps, self.distance = torch.zeros(()), torch.zeros(())
        self._all = torch.ones(1, dtype=torch.bool)

    def initial_state(self) -> tuple[np.ndarray, np.ndarray]:
        """A start state drawn by the task's reset events, as a training episode starts (with
        freshly drawn commands, see commands())."""
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

    def close(self) -> None:
        self.env.close()


@dataclass
class Episode:
    ret: float = 0.0
    length: int = 0
    terminations: tuple[str, ...] = ()
    tripped: str | None = None


def run_episode(loop: ControlLoop, robot: MujocoRobot, referee: Referee, max_length: int) -> tuple[Episode, list[float]]:
    qpos, qvel = referee.initial_state()
    robot.reset(qpos, qvel)
    robot.inputs = referee.commands()
    loop.reset()
    episode = Episode()
    previous: list[tuple | None] = [None]  # (action, the commands it was chosen under)

    def on_step(step: Step) -> bool:
        if previous[0] is not None:  # this tick's state is the outcome of the previous action
            reward, fired = referee.score(robot.data.qpos.copy(), robot.data.qvel.copy(), *previous[0])
            episode.ret += reward
            episode.length += 1
            if fired:
                episode.terminations = tuple(fired)
                return True
        if step.tripped is not None:
            episode.tripped = step.tripped
            return True
        previous[0] = (step.action.copy(), robot.inputs)
        robot.inputs = referee.advance_commands()  # what the operator asks for at the next tick
        return episode.length >= max_length

    report = loop.run(max_length + 1, on_step)
    return episode, report.compute_s


def open_sim(bundle_dir: Path, realtime: bool = False, timestep: float | None = None, integrator: str | None = None,
             engine: str = "auto", seed: int = 0, log: Path | None = None) -> tuple[Policy, MujocoRobot, Referee, ControlLoop]:
    """The deploy runtime on the MuJoCo stand-in robot, and the task's referee, for a bundle."""
    policy = Policy(bundle_dir, engine=engine)  # verifies the bundle before anything runs
    meta = policy.bundle.meta
    timestep = timestep or meta.get("physics_dt_s")  # the training timestep unless another is asked for
    robot = MujocoRobot(bundle_dir / meta["model_file"], timestep=timestep, integrator=integrator, realtime=realtime)
    referee = Referee(bundle_dir, meta["model_file"], seed)
    return policy, robot, referee, ControlLoop(policy, robot, Safety(), log=log)


def sim2sim(bundle_dir: Path, episodes: int = 10, realtime: bool = False, timestep: float | None = None,
            integrator: str | None = None, engine: str = "auto", seed: int = 0, log: Path | None = None) -> dict:  # fmt: skip
    if episodes < 1:
        raise UserError(f"episodes must be at least 1, got {episodes}")
    policy, robot, referee, loop = open_sim(bundle_dir, realtime, timestep, integrator, engine, seed, log)
    meta = policy.bundle.meta
    try:
        runs = [run_episode(loop, robot, referee, referee.env.max_episode_length) for _ in range(episodes)]
    finally:
        loop.close()
        referee.close()
    returns = np.array([e.ret for e, _ in runs])
    compute_ms = np.concatenate([np.asarray(c) for _, c in runs]) * 1e3
    result = {
        "task": meta["task"],
        "metric_names": referee.env.metrics.names,
        "episodes": episodes,
        "return_mean": float(returns.mean()),
        "return_std": float(returns.std()),
        "episode_length_mean": float(np.mean([e.length for e, _ in runs])),
        "terminated_fraction": float(np.mean([bool(e.terminations) for e, _ in runs])),
        **{f"termination/{n}": float(np.mean([n in e.terminations for e, _ in runs])) for n in referee.names},
        **summarize_metrics(referee.env, referee.metric_sums, referee.steps, referee.distance),
        "watchdog_trips": sum(e.tripped is not None for e, _ in runs),
        "trip_reasons": sorted({e.tripped for e, _ in runs if e.tripped}),
        "control_step_ms": {"median": float(np.median(compute_ms)), "p99": float(np.percentile(compute_ms, 99))},
        "engine": f"{policy.engine.name} {policy.engine.precision}",
        "physics": {"timestep": float(robot.model.opt.timestep), "integrator": mujoco.mjtIntegrator(robot.model.opt.integrator).name[len("mjINT_"):].lower(),
                    "realtime": realtime},  # fmt: skip
    }
    training = meta.get("evaluation") or {}
    if training.get("return_mean"):
        result["return_vs_training"] = result["return_mean"] / training["return_mean"]
    result["training_evaluation"] = training
    return result


def print_report(result: dict) -> None:
    training = result["training_evaluation"]
    phys = result["physics"]
    print(f"sim2sim {result['task']}: {result['episodes']} episodes, {result['engine']}, physics dt {phys['timestep']} s "
          f"({phys['integrator']}), "
          f"realtime {'on' if phys['realtime'] else 'off'}")  # fmt: skip
    print(f"  {'metric':<28} {'training eval':>14} {'sim2sim':>10}")
    keys = ["return_mean", "return_std", "episode_length_mean", "terminated_fraction"]
    keys += [k for k in result if k.startswith("termination/")] + list(result["metric_names"])
    for key in keys:
        print(f"  {key:<28} {training.get(key, float('nan')):>14.4g} {result[key]:>10.4g}")
    if "return_vs_training" in result:
        print(f"  return kept: {100 * result['return_vs_training']:.1f}% of the training evaluation")
    lat = result["control_step_ms"]
    print(f"  control step (observe + infer + map): median {lat['median'] * 1e3:.0f} us, p99 {lat['p99'] * 1e3:.0f} us; "
          f"watchdog trips: {result['watchdog_trips']} {'; '.join(result['trip_reasons'])}")  # fmt: skip


def write_report(result: dict, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(path)
