"""Which part of a step is not reproducible: two eager envs, same seed, same actions, MuJoCo
Warp's deterministic mode; after each step, every array of the two engines' Data and every
observation group are compared, and the first step where anything differs is reported field by
field (max |difference|). Engine fields that differ point at MuJoCo Warp (a report upstream);
observations that differ while every engine field is equal point at a torch op.

    python scripts/determinism_probe.py [--task quadruped_flat] [--randomization sim2real]
                                        [--num-envs 512] [--steps 20] [--out rows.jsonl]
                                        [--compare eager|graphed|compiled|compiled-graphed]
                                        [--tolerance 1e-3] [--reset-sensors kinematic]
                                        [--lockstep] [--eager-numerics]

--compare pits other pairs against each other (the graphed env against an eager one, env.compile
against the same env uncompiled, eager or graphed); with --tolerance the first step where
anything differs by more is reported, with the envs that differ most (and whether they ended in the
three steps before), the reward terms and the model fields (randomized at resets) that differ.
Every row has `gaps`: each step's largest relative gap of the outputs (observations, reward terms;
inf where one env ended an episode and the other did not), over all --steps.

Free running, a last-bit difference grows: contacts amplify it until one robot's foot lands a step
later and that env is O(0.1) apart (on the CPU: every action 1e-5 larger, 0.14 at step 23). With
--lockstep both envs load the same snapshot before every step (robolearn/envs/lockstep.py), so the
first step past the tolerance is a step that computes something else (a draw, a stale buffer, a
missed reset), reported with the checkpoint-state entries that differ. --eager-numerics sets the
Inductor options that round as eager torch does on a GPU (IEEE division, no flush-to-zero, torch's
libdevice, no fused multiply-add), those this torch has, and reports which. --perturb EPS scales the
first env's actions by 1 + EPS: how many steps a last-bit difference takes to pass the tolerance
free running, on this machine (the yardstick for a free-running compiled env).

On a GPU (tests/gpu/test_cuda_graphs.py's control failed there, H200 2026-11-27); on the CPU it is
a dry run (Warp's CPU device runs one thread: nothing should differ).
"""

from __future__ import annotations

import argparse
import json
import math

import torch
import warp as wp

from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.envs.env_compile import compile_env
from robolearn.envs.lockstep import Lockstep, gaps
from robolearn.errors import UserError
from robolearn.registry import get_task


def data_arrays(d) -> dict[str, torch.Tensor]:
    """Every float/int Warp array of a mujoco_warp Data, as torch views."""
    out = {}
    for name in dir(d):
        value = getattr(d, name, None)
        if isinstance(value, wp.array) and value.size:
            try:
                out[name] = wp.to_torch(value)
            except Exception:  # types torch cannot view (none expected); skipped, not compared
                continue
    return out


def differences(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], relative: bool = False) -> dict[str, float]:
    """Per name: max |a - b| where they differ (relative: max |a - b| / (1 + |b|))."""
    diff = {}
    for name, x in a.items():
        y = b[name]
        if not torch.equal(x, y):
            delta = (x.double() - y.double()).abs()
            if relative:
                delta = delta / (1.0 + y.double().abs())
            diff[name] = float(delta[torch.isfinite(delta)].max()) if torch.isfinite(delta).any() else float("nan")
    return diff


def columns(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], tolerance: float) -> dict[str, list]:
    """Per observation group: the columns that differ by more than `tolerance` (relative, as
    `differences`; at most 16), each with how many envs differ there."""
    out = {}
    for name, x in a.items():
        per_column = ((x - b[name]).abs() > tolerance * (1 + b[name].abs())).sum(0) if x.dim() == 2 else None
        if per_column is not None and per_column.any():
            out[name] = [[c, int(per_column[c])] for c in per_column.nonzero().flatten()[:16].tolist()]
    return out


def above(diff: dict[str, float], tolerance: float) -> dict[str, float]:
    return {k: v for k, v in diff.items() if not v <= tolerance}


COMPARE = {  # the first env's (cuda_graph, compile) against the second's
    "eager": ((False, False), (False, False)),
    "graphed": ((True, False), (False, False)),
    "compiled": ((False, True), (False, False)),
    "compiled-graphed": ((True, True), (True, False)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="quadruped_flat")
    parser.add_argument("--randomization", default="sim2real")
    parser.add_argument("--num-envs", type=int, default=512)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--compare", choices=sorted(COMPARE), default="eager",
                        help="eager: two eager envs; graphed: graphed vs eager; compiled: env.compile vs not "
                             "(eager); compiled-graphed: env.compile vs not, both graphed")
    parser.add_argument("--tolerance", type=float, default=0.0,
                        help="report the first step where anything differs by more, relative to 1 + |value| "
                             "(env.compile rounds differently: 1e-3)")
    parser.add_argument("--compile-only", default=None, metavar="NAME",
                        help="with --compare compiled or compiled-graphed: compile only this one of what "
                             "env.compile compiles (e.g. _prepare_reset, observations.compute)")
    parser.add_argument("--reset-sensors", default="exact", choices=("exact", "kinematic"))
    parser.add_argument("--torch-deterministic", action="store_true", help="torch.use_deterministic_algorithms (warn mode)")
    parser.add_argument("--lockstep", action="store_true",
                        help="both envs load the same snapshot before every step: a step's own difference, not chaos")
    parser.add_argument("--perturb", type=float, default=0.0, metavar="EPS",
                        help="the first env's actions times 1 + EPS: how fast a last-bit difference grows "
                             "(1.2e-7: 1 ulp)")
    parser.add_argument("--eager-numerics", action="store_true",
                        help="Inductor rounds as eager torch does (for --compare compiled / compiled-graphed)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.torch_deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
    if args.eager_numerics and "compiled" not in args.compare:
        raise SystemExit(f"--eager-numerics sets how compiled code rounds; --compare {args.compare} compiles nothing: "
                         "use --compare compiled or compiled-graphed")  # fmt: skip
    numerics = eager_numerics() if args.eager_numerics else []
    device, tol = torch.device(args.device), args.tolerance
    cfg = compose_train([f"task={args.task}", "physics=warp", f"randomization={args.randomization}"])
    envs = [BatchedEnv(cfg.task, get_task(cfg.task.name), args.num_envs, physics="warp", device=device, seed=5,
                       cuda_graph=graphed, compile=compiled and not args.compile_only, randomization=cfg.randomization,
                       physics_settings={"deterministic": True, "reset_sensors": args.reset_sensors})
            for graphed, compiled in COMPARE[args.compare]]  # fmt: skip
    if args.compile_only:
        try:
            compile_env(envs[0], only=args.compile_only)
        except UserError as exc:
            raise SystemExit(f"--compile-only {args.compile_only}: {exc}") from None
    for env in envs:
        env.reset()
    if args.perturb:
        unperturbed, scale = envs[0].step, 1.0 + args.perturb
        envs[0].step = lambda action, *rest: unperturbed(action * scale, *rest)
    row = {"task": args.task, "randomization": args.randomization, "num_envs": args.num_envs, "device": str(device),
           "compare": args.compare, "tolerance": tol, "reset_sensors": args.reset_sensors,
           "torch_deterministic": args.torch_deterministic, "compile_only": args.compile_only,
           "lockstep": args.lockstep, "perturb": args.perturb, "eager_numerics": numerics, "first_step": None}  # fmt: skip
    row.update((in_lockstep if args.lockstep else free_running)(envs, args.steps, tol, device))
    print(json.dumps(row, indent=1))
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(row) + "\n")
    for env in envs:
        env.close()


def free_running(envs: list, steps: int, tol: float, device: torch.device) -> dict:
    """The first step where the two envs differ (past `tol`, relative, if given): engine fields,
    observations, reward terms, columns, model fields and the envs that differ most, each with
    whether it ended in the three steps before. The envs run on to `steps` after it: `gaps` is each
    step's largest relative gap of the outputs (observations, reward terms; inf where only one env
    ended an episode): how a difference grows."""
    num_envs = envs[0].num_envs
    gen = torch.Generator(device).manual_seed(0)
    recent = torch.zeros(3, num_envs, dtype=torch.bool, device=device)  # envs that ended in the last 3 steps
    found, worst = None, []

    def apart(a: dict, b: dict) -> dict[str, float]:  # what differs by more than the tolerance
        return above(differences(a, b, relative=tol > 0), tol)

    with torch.inference_mode():
        before = apart(*(data_arrays(env.physics.d) for env in envs))
        for step in range(steps):
            action = torch.randn(num_envs, envs[0].num_actions, device=device, generator=gen)
            (obs_a, *_), (obs_b, *_) = outs = [env.step(action) for env in envs]
            ends = [o[2] | o[3] for o in outs]
            terms = [dict(zip(env.rewards.names, env.rewards.values)) for env in envs]
            gap = torch.stack([*(gaps(obs_a[g], obs_b[g]).amax(1) for g in obs_a),
                               *(gaps(terms[0][t], terms[1][t]) for t in terms[0])]).amax(0)  # fmt: skip
            gap[ends[0] != ends[1]] = math.inf  # an episode that ended in one env only
            worst.append(float(f"{float(gap.max()):.3g}"))
            if found is None:
                engine = apart(*(data_arrays(env.physics.d) for env in envs))
                observed = apart(obs_a, obs_b)
                rewards = apart(*terms)
                # exact: anything; with a tolerance the envs' outputs (engine fields such as cacc amplify
                # a last-bit change of the state by orders of magnitude and feed nothing back: reported)
                if observed or rewards or not torch.equal(*ends) or (tol == 0 and (engine or (before and step == 0))):
                    found = {"first_step": step, "engine": engine, "observations": observed, "reward_terms": rewards,
                             "columns": columns(obs_a, obs_b, tol), "model": apart(*(data_arrays(e.physics.m) for e in envs)),
                             "ends_differ": int((ends[0] != ends[1]).sum()), "ended_before": int(recent.any(0).sum()),
                             "envs": [[i, float(gap[i]), bool(recent[:, i].any())]
                                      for i in (gap > tol).nonzero().flatten()[:8].tolist()]}  # fmt: skip
            recent = torch.cat([recent[1:], ends[0].unsqueeze(0)])
    return {"after_reset_engine": before, **(found or {}), "gaps": worst}


def eager_numerics() -> list[str]:
    """Inductor's options for eager torch's rounding on a GPU, those this torch has (the names set)."""
    import torch._inductor.config as inductor

    chosen, numerics = [], getattr(inductor, "eager_numerics", None)
    for owner, name in ((inductor, "emulate_precision_casts"), (numerics, "division_rounding"),
                        (numerics, "disable_ftz"), (numerics, "use_pytorch_libdevice")):  # fmt: skip
        if owner is not None and hasattr(owner, name):
            setattr(owner, name, True)
            chosen.append(name)
    return chosen


def in_lockstep(envs: list, steps: int, tol: float, device: torch.device) -> dict:
    """The first step whose own difference passes `tol` (first_step, with its outputs, state
    entries and envs), and the largest gap of each step until then (or over all `steps`)."""
    pair, gen, worst, resets = Lockstep(*envs), torch.Generator(device).manual_seed(0), [], 0
    with torch.inference_mode():
        for step in range(steps):
            gap = pair.step(torch.randn(envs[0].num_envs, envs[0].num_actions, device=device, generator=gen))
            worst.append(float(f"{gap.worst():.3g}"))
            resets += int(gap.ended.sum())
            if not gap.worst() <= tol:
                return {"first_step": step, "resets": resets, "gaps": worst, **gap.as_row(tol)}
    return {"resets": resets, "gaps": worst}


if __name__ == "__main__":
    main()
