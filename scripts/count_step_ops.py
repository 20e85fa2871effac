"""How many torch operations one env step runs outside the physics, and which function runs them:
on a GPU each is (at least) one kernel of the step's CUDA graphs, and at a few thousand envs their
count, not their arithmetic, sets the torch share of the step (docs/benchmarks.md).

    python scripts/count_step_ops.py [--task quadruped_flat] [--physics mujoco] [--num-envs 64] [--top 25] [--lines] [--compile]

Counts every aten operation that does device work (not views, not allocations, not host-side
answers such as a bool, not a `.to` that returns its input) dispatched during one eager step, after
a few warm-up steps, and files it under the innermost robolearn function on the Python stack
outside the env's own plumbing (batched_env, the manager base classes; the plumbing's own
operations under its functions). On the CPU the reset path runs only in steps where an env ended;
on a GPU it runs in every step (masked, no host sync), so it is counted apart: one reset of one
env (episode records, curricula, reset events, the physics' new state, managers). Step + reset
path is what a graphed GPU step launches without env.compile, up to the health checks an
accelerator adds. Counts depend on the task's terms, not on the number of envs. `--lines` lists
them by source line.
"""

from __future__ import annotations

import argparse
import collections
import traceback

import torch
import torch._inductor.config
from torch.utils._python_dispatch import TorchDispatchMode

from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.registry import get_task

VIEWS = {"slice", "select", "detach", "unsqueeze", "squeeze", "view", "expand", "reshape", "_reshape_alias",
         "_unsafe_view", "t", "transpose", "permute", "alias", "as_strided", "unbind", "split", "split_with_sizes",
         "chunk", "narrow", "unfold", "diagonal", "lift_fresh", "resolve_conj", "resolve_neg"}  # fmt: skip
ALLOCATIONS = {"empty", "empty_like", "empty_strided", "new_empty"}  # memory, no kernel
PLUMBING = ("envs/batched_env.py", "envs/manager_base.py", "envs/term_managers.py")


class OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.by_site: collections.Counter[str] = collections.Counter()
        self.by_op: collections.Counter[str] = collections.Counter()
        self.by_line: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.__name__.split(".")[0]
        if name in VIEWS or not _launches(name, args, kwargs, out):
            return out
        stack = [f for f in traceback.extract_stack() if "/robolearn/" in f.filename]
        terms = [f for f in stack if not f.filename.endswith(PLUMBING)] or stack
        if terms:
            where = terms[-1].filename.split("/robolearn/")[-1]
            site, line = f"{where}:{terms[-1].name}", f"{where}:{terms[-1].lineno}"
        else:
            site = line = "(outside robolearn)"
        self.by_site[site] += 1
        self.by_line[f"{line} {name}"] += 1
        self.by_op[name] += 1
        return out


def _launches(name: str, args, kwargs, out) -> bool:
    """Whether an operation does device work: not a host-side answer (a bool, a shape) and not a
    no-op returning its own input (`.to` of the dtype it has); in-place and out= ops always do."""
    if name in ALLOCATIONS:
        return False
    if name.endswith("_") or "out" in kwargs:
        return True
    if not isinstance(out, torch.Tensor):
        return isinstance(out, (tuple, list)) and any(isinstance(o, torch.Tensor) for o in out)
    storage = out.untyped_storage().data_ptr()
    return not any(isinstance(a, torch.Tensor) and a.untyped_storage().data_ptr() == storage for a in args)


def count_compiled(run) -> collections.Counter:
    """Under env.compile: Inductor's fused functions (`cpp_fused_*` on the CPU; each may hold several
    loop nests, of which Triton on a GPU makes one kernel each, so a GPU launches more) and the
    operations run outside them that do device work (the draws, fallbacks, eager plumbing)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        run()
    counts: collections.Counter[str] = collections.Counter()
    for event in prof.events():
        parent = event.cpu_parent
        if "cpp_fused" in event.name:
            counts["(fused function)"] += 1
        elif event.name.startswith("aten::") and not (parent is not None and parent.name.startswith("aten::")
                                                       and parent.name not in ("aten::to", "aten::contiguous")):
            name = event.name.removeprefix("aten::")
            if name not in VIEWS | ALLOCATIONS | {"to", "contiguous", "is_nonzero", "item", "_local_scalar_dense"}:
                counts[name] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="quadruped_flat")
    parser.add_argument("--physics", default="mujoco")
    parser.add_argument("--randomization", default="default")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--lines", action="store_true", help="also list the operations by source line")
    parser.add_argument("--compile", action="store_true", help="env.compile=true: count fused functions and the rest")
    args = parser.parse_args()
    if args.compile:
        torch._inductor.config.cpp.enable_kernel_profile = True  # fused functions by name in the profile
    cfg = compose_train([f"task={args.task}", f"physics={args.physics}", f"randomization={args.randomization}"])
    env = BatchedEnv(cfg.task, get_task(cfg.task.name), args.num_envs, physics=args.physics, device="cpu", seed=3,
                     randomization=cfg.randomization, physics_settings={"num_threads": 1}, compile=args.compile)  # fmt: skip
    env.reset()
    action = torch.zeros(args.num_envs, env.num_actions)
    step, reset = OpCounter(), OpCounter()
    one = torch.zeros(args.num_envs, dtype=torch.bool)
    one[0] = True
    with torch.inference_mode():
        for _ in range(3):
            env.step(action)
            env._reset_envs(one)  # compiles the reset path (env.compile)
        if args.compile:
            for title, run in (("env step (no env ended)", lambda: env.step(action)),
                               ("reset path", lambda: env._reset_envs(one))):  # fmt: skip
                counts = count_compiled(run)
                print(f"{args.task}, env.compile, {title}: {sum(counts.values())} kernels or fused functions: "
                      + ", ".join(f"{name} {n}" for name, n in counts.most_common()))  # fmt: skip
            env.close()
            return
        with step:
            env.step(action)
        with reset:
            env._reset_envs(one)
    for title, counter in (("env step (no env ended)", step), ("reset path", reset)):
        print(f"{args.task}, {title}: {sum(counter.by_site.values())} torch operations (views not counted)")
        for site, count in counter.by_site.most_common(args.top):
            print(f"{count:5d}  {site}")
        print("  by operation:", ", ".join(f"{op} {n}" for op, n in counter.by_op.most_common(12)))
        if args.lines:
            for line, count in sorted(counter.by_line.items()):
                print(f"    {count:3d}  {line}")
    env.close()


if __name__ == "__main__":
    main()
