"""Which starts a trained policy fails from: each episode's return against where one joint started.

    python scripts/returns_by_start.py runs/pendulum_partial/<run> [--joint hinge] [--episodes 256]
                                       [--bins 8] [--below 300] [--sampled] [--seed 123]

A training run's mean return (and `robolearn eval`'s) hides how the episodes spread. This runs one
episode in each of `--episodes` environments of the run's task (native MuJoCo on the CPU, the
checkpoint's conditions, randomization as trained), with the deterministic policy (the mean action,
as eval and the bundle act) or, with `--sampled`, the training distribution's actions, and bins the
episodes by the joint's starting position: a hinge's angle wrapped to [-pi, pi), a slide's position.
Per bin: how many episodes, their mean return, and the share below `--below`. Default joint: the
first hinge or slide the policy's action drives or, failing that, the model's first one.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import mujoco
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # robolearn from this checkout
from robolearn.rl.models import Controller  # noqa: E402
from robolearn.run_policy import policy_from_run  # noqa: E402

MOVING = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


def pick_joint(model: mujoco.MjModel, name: str | None) -> int:
    """The joint's id: the one named, else the first hinge or slide an actuator drives, else the first one."""
    if name is not None:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0 or model.jnt_type[jid] not in MOVING:
            names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(model.njnt) if model.jnt_type[j] in MOVING]
            raise SystemExit(f"--joint {name}: not a hinge or slide of this model; valid: {', '.join(map(str, names))}")
        return jid
    driven = [int(model.actuator_trnid[a, 0]) for a in range(model.nu) if int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT)]
    moving = [j for j in range(model.njnt) if model.jnt_type[j] in MOVING]
    if not moving:
        raise SystemExit("this model has no hinge or slide joint to bin the starts by")
    return next((j for j in driven if j in moving), moving[0])


def run_episodes(run: Path, episodes: int, joint: str | None, sampled: bool, seed: int):
    """(joint name, whether it is a hinge, start positions [N], returns [N])."""
    env, actor_critic, _, _ = policy_from_run(run, None, episodes, seed=seed)
    try:
        jid = pick_joint(env.model, joint)
        adr = int(env.model.jnt_qposadr[jid])
        controller, gen = Controller(actor_critic, episodes), torch.Generator().manual_seed(seed)
        returns, ended = torch.zeros(episodes), torch.zeros(episodes, dtype=torch.bool)
        with torch.inference_mode():
            obs = env.reset(spread_timeouts=False)
            start = env.physics.qpos[:, adr].clone()
            for _ in range(env.max_episode_length):
                if sampled:  # a draw from the Gaussian policy, as the rollout acts
                    actions, _, _, _, controller.state = actor_critic.act(obs["policy"], controller.state, gen)
                else:
                    actions = controller(obs["policy"])
                obs, reward, terminated, truncated = env.step(actions)
                returns += reward * ~ended
                ended |= terminated | truncated
                if bool(ended.all()):
                    break
        name = mujoco.mj_id2name(env.model, mujoco.mjtObj.mjOBJ_JOINT, jid) or f"joint {jid}"
        return name, int(env.model.jnt_type[jid]) == int(mujoco.mjtJoint.mjJNT_HINGE), start, returns
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("--joint", default=None)
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--bins", type=int, default=8)
    parser.add_argument("--below", type=float, default=None, help="count episodes whose return is below this")
    parser.add_argument("--sampled", action="store_true", help="the training distribution's actions, not the mean")
    parser.add_argument("--seed", type=int, default=123)
    args = parser.parse_args()
    name, hinge, start, returns = run_episodes(args.run, args.episodes, args.joint, args.sampled, args.seed)
    if hinge:
        start = torch.remainder(start + math.pi, 2 * math.pi) - math.pi
        lo, hi = -math.pi, math.pi
    else:
        lo, hi = float(start.min()), float(start.max()) + 1e-9
    below = f" | below {args.below:g}" if args.below is not None else ""
    print(f"{args.run}: {'sampled' if args.sampled else 'mean'} actions, {args.episodes} episodes: return "
          f"{returns.mean():.1f} (std {returns.std():.1f}){below and f', {float((returns < args.below).float().mean()):.0%} below {args.below:g}'}")  # fmt: skip
    print(f"| {name} at the start{' (rad)' if hinge else ''} | episodes | mean return{below} |")
    print("|---|---|---|" + ("---|" if below else ""))
    edges = torch.linspace(lo, hi, args.bins + 1)
    for a, b in zip(edges[:-1].tolist(), edges[1:].tolist()):
        inside = (start >= a) & (start < b)
        if not bool(inside.any()):
            continue
        share = f" | {float((returns[inside] < args.below).float().mean()):.0%}" if below else ""
        print(f"| {a:+.2f} .. {b:+.2f} | {int(inside.sum())} | {float(returns[inside].mean()):.1f}{share} |")


if __name__ == "__main__":
    main()
