"""Batch-1 latency of the deploy runtime's control step against bare ONNX Runtime inference.

    python scripts/bench_deploy.py [--hidden 512 256 128] [--repeats 20000]

For a [512, 256, 128] MLP policy, two layouts:
  cartpole     the real task's bundle (4 observations, 1 motor)
  legged-12    a 12-joint legged-robot layout: IMU rate and gravity, a velocity command, joint
               positions (relative) and velocities, last action -> 45 inputs, 12 position servos
Reported (median / p99, microseconds, one thread):
  bare ort     session.run(["actions"], {"obs": x}): what hand-written robot code calls
  step         observation build + inference + action map (Policy / ObservationBuilder / ActionMapper)
  loop tick    ControlLoop.step: the step plus the watchdog's checks, against a robot that costs nothing
overhead = step / bare ort - 1 (target: <= 50 %).
"""

from __future__ import annotations

import argparse
import platform
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
import yaml

from robolearn.config import AlgoCfg
from robolearn.export.onnx import export_onnx
from robolearn.rl.models import ActorCritic, InferencePolicy
from robolearn_deploy import ControlLoop, JointCommand, Policy, RobotInterface, RobotState, register_signal_source
from robolearn_deploy.bundle import BUNDLE_FORMAT, metadata_digest, sha256
from robolearn_deploy.timing import latency_ms

LEGS = [f"{leg}_{part}" for leg in ("FL", "FR", "RL", "RR") for part in ("hip", "thigh", "calf")]


def legged_bundle(out: Path, hidden: list[int]) -> Path:
    """A hand-written 12-joint bundle (no task needed: only the deploy runtime reads it)."""
    out.mkdir(parents=True)
    terms, at = [], 0
    for name, source, size, params in [
        ("base_ang_vel", "base_ang_vel", 3, {}), ("projected_gravity", "projected_gravity", 3, {}),
        ("command", "velocity_command", 3, {}), ("joint_pos", "joint_pos", 12, {"joints": LEGS, "relative": True}),
        ("joint_vel", "joint_vel", 12, {"joints": LEGS}), ("last_action", "last_action", 12, {}),
    ]:  # fmt: skip
        terms.append({"name": name, "start": at, "stop": at + size, "scale": 1.0, "clip": None, "units": "",
                      "source": source, "params": params})  # fmt: skip
        at += size
    ac = ActorCritic(at, at, 12, hidden, [32])
    export_onnx(InferencePolicy(ac), at, out / "policy.onnx")
    meta = {
        "bundle_format": BUNDLE_FORMAT, "task": "legged-12", "model_file": None, "control_period_s": 0.02,
        "actuators": [{"name": j, "joint": j, "kind": "position", "action_scale": 0.25, "action_offset": 0.1 * k,
                       "ctrl_min": -3.0, "ctrl_max": 3.0, "kp": 25.0, "kd": 0.5} for k, j in enumerate(LEGS)],
        "default_pose": {j: 0.1 * k for k, j in enumerate(LEGS)},
        "joint_limits": {j: [-3.0, 3.0] for j in LEGS},
        "observation": {"input": "obs", "size": at, "terms": terms},
        "action": {"output": "actions", "size": 12},
        "artifacts": [{"file": "policy.onnx", "kind": "onnx", "precision": "fp32"}],
        "files": {"policy.onnx": {"sha256": sha256(out / "policy.onnx")}},
    }  # fmt: skip
    meta["metadata_sha256"] = metadata_digest(meta)
    (out / "robot.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    register_signal_source("velocity_command")  # base_ang_vel and projected_gravity are built in
    return out


def cartpole_bundle(out: Path, hidden: list[int]) -> Path:
    from robolearn.compose import compose_train
    from robolearn.envs.batched_env import BatchedEnv
    from robolearn.export.bundle import export_bundle
    from robolearn.registry import discover_tasks

    cfg = compose_train(["task=cartpole"])
    env = BatchedEnv(cfg.task, discover_tasks()["cartpole"], 8, physics="mujoco", physics_settings={"num_threads": 1})
    ac = ActorCritic.from_config(AlgoCfg(actor_hidden_dims=hidden, critic_hidden_dims=[32]), env.observation_dims(), 1)
    export_bundle(ac, env, out)
    env.close()
    return out


class NullRobot(RobotInterface):
    """Returns a fixed reading, accepts any command, costs nothing: isolates the runtime's own time."""

    def __init__(self, joints: list[str], signals: dict[str, np.ndarray]):
        self.joint_names = joints
        self.state = RobotState(np.linspace(-0.3, 0.3, len(joints)), np.linspace(-1, 1, len(joints)), signals)

    def read_state(self) -> RobotState:
        return self.state

    def write_command(self, command: JointCommand) -> None:
        pass


def bench(bundle: Path, joints: list[str], signals: dict, repeats: int) -> dict[str, dict[str, float]]:
    policy = Policy(bundle)
    robot = NullRobot(joints, signals)
    loop = ControlLoop(policy, robot)
    state = robot.state
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    session = ort.InferenceSession(str(bundle / "policy.onnx"), options, providers=["CPUExecutionProvider"])
    x = np.zeros((1, policy.bundle.obs_size), np.float32)
    build, act, mapper = loop.observations.build, policy.act, loop.actions.map

    def step():
        build(state)
        mapper(act())

    results = {}
    for _ in range(2):  # interleaved twice; the better median of each is kept (less machine noise)
        for name, fn in [("bare ort", lambda: session.run(["actions"], {"obs": x})), ("step", step),
                         ("loop tick", lambda: loop.step(0, float("inf")))]:  # fmt: skip
            r = latency_ms(fn, repeats=repeats, warmup=1000)
            if name not in results or r["median"] < results[name]["median"]:
                results[name] = r
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, nargs="+", default=[512, 256, 128])
    parser.add_argument("--repeats", type=int, default=20000)
    args = parser.parse_args()
    torch.manual_seed(0)
    print(f"{platform.processor() or platform.machine()}, onnxruntime {ort.__version__}, MLP {args.hidden}, "
          f"{args.repeats} calls each (us)")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        layouts = {
            "cartpole": (cartpole_bundle(Path(tmp) / "cartpole", args.hidden), ["slider", "hinge"], {}),
            "legged-12": (legged_bundle(Path(tmp) / "legged", args.hidden), LEGS[::-1], {
                "base_ang_vel": np.array([0.1, -0.2, 0.05]), "projected_gravity": np.array([0.0, 0.0, -1.0]),
                "velocity_command": np.array([0.8, 0.0, 0.2])}),
        }  # fmt: skip
        print(f"{'layout':<10} {'bare ort':>16} {'step':>16} {'loop tick':>16} {'overhead':>9}")
        for name, (bundle, joints, signals) in layouts.items():
            r = bench(bundle, joints, signals, args.repeats)
            cells = "".join(f"{r[k]['median'] * 1e3:>8.1f} / {r[k]['p99'] * 1e3:>5.1f}" for k in ("bare ort", "step", "loop tick"))
            print(f"{name:<10} {cells} {100 * (r['step']['median'] / r['bare ort']['median'] - 1):>8.0f}%")


if __name__ == "__main__":
    main()
