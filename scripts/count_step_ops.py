"""How many torch operations one env step runs outside the physics, and which function runs them:
on a GPU each is (at least) one kernel of the step's CUDA graphs, and at a few thousand envs their
count, not their arithmetic, sets the torch share of the step (docs/benchmarks.md).

    python scripts/count_step_ops.py [--task quadruped_flat] [--physics mujoco] [--num-envs 64] [--top 25]

Counts every aten operation except views (slices, selects, reshapes, ...) dispatched during one
eager step, after a few warm-up steps, and files it under the innermost robolearn function on the
Python stack outside the env's own plumbing (batched_env, the manager base classes). On the CPU the
reset path runs only in steps where an env ended; on a GPU it runs in every step (masked, no host
sync), so it is counted apart: one reset of one env (episode records, curricula, reset events, the
physics' new state, managers). Step + reset path is what a graphed GPU step launches, up to the
health checks an accelerator adds. Counts depend on the task's terms, not on the number of envs.
"""

from __future__ import annotations

import argparse
import collections
import traceback

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.registry import get_task

VIEWS = {"slice", "select", "detach", "unsqueeze", "squeeze", "view", "expand", "reshape", "_reshape_alias",
         "_unsafe_view", "t", "transpose", "permute", "alias", "as_strided", "unbind", "split", "split_with_sizes",
         "chunk", "narrow", "unfold", "diagonal", "lift_fresh", "resolve_conj", "resolve_neg"}  # fmt: skip
PLUMBING = ("envs/batched_env.py", "envs/manager_base.py", "envs/term_managers.py")


class OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.by_site: collections.Counter[str] = collections.Counter()
        self.by_op: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.__name__.split(".")[0]
        if name not in VIEWS:
            frames = [f for f in traceback.extract_stack() if "/robolearn/" in f.filename
                      and not f.filename.endswith(PLUMBING)]  # fmt: skip
            site = f"{frames[-1].filename.split('/robolearn/')[-1]}:{frames[-1].name}" if frames else "(outside robolearn)"
            self.by_site[site] += 1
            self.by_op[name] += 1
        return func(*args, **(kwargs or {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="quadruped_flat")
    parser.add_argument("--physics", default="mujoco")
    parser.add_argument("--randomization", default="default")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    cfg = compose_train([f"task={args.task}", f"physics={args.physics}", f"randomization={args.randomization}"])
    env = BatchedEnv(cfg.task, get_task(cfg.task.name), args.num_envs, physics=args.physics, device="cpu", seed=3,
                     randomization=cfg.randomization, physics_settings={"num_threads": 1})  # fmt: skip
    env.reset()
    action = torch.zeros(args.num_envs, env.num_actions)
    step, reset = OpCounter(), OpCounter()
    one = torch.zeros(args.num_envs, dtype=torch.bool)
    one[0] = True
    with torch.inference_mode():
        for _ in range(3):
            env.step(action)
        with step:
            env.step(action)
        with reset:
            env._reset_envs(one)
    for title, counter in (("env step (no env ended)", step), ("reset path", reset)):
        print(f"{args.task}, {title}: {sum(counter.by_site.values())} torch operations (views not counted)")
        for site, count in counter.by_site.most_common(args.top):
            print(f"{count:5d}  {site}")
        print("  by operation:", ", ".join(f"{op} {n}" for op, n in counter.by_op.most_common(12)))
    env.close()


if __name__ == "__main__":
    main()
