"""Two envs in lockstep (robolearn/envs/lockstep.py): from the same snapshot before every step,
what differs after it is that step's own doing. An env seeded differently follows the other bit
for bit (the checkpoint state holds everything a step reads); a last-bit change of every action
stays a last-bit change, where free-running envs part by O(0.1) within a few dozen steps; and a
wrong draw, a missed manager reset or a stale buffer is found at the first step that resets an
env, named by its state entry."""

import math

import pytest
import torch

from robolearn import draws
from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.envs.lockstep import Lockstep, StepGap, flatten, relative_gap
from robolearn.registry import get_task


def make_env(seed: int, num_envs: int = 128, physics: str = "mujoco") -> BatchedEnv:
    cfg = compose_train(["task=quadruped_flat", f"physics={physics}", "randomization=sim2real"])
    settings = {"num_threads": 1} if physics == "mujoco" else {}
    env = BatchedEnv(cfg.task, get_task(cfg.task.name), num_envs, physics=physics, seed=seed,
                     randomization=cfg.randomization, physics_settings=settings)  # fmt: skip
    env.reset()
    return env


def run(pair: Lockstep, steps: int) -> tuple[float, int, StepGap | None, int | None]:
    """Over `steps` lockstep steps: the largest gap, the resets, the first gap past 1e-3 and the
    first step that reset an env."""
    gen = torch.Generator().manual_seed(0)
    worst, resets, first, first_reset = 0.0, 0, None, None
    with torch.inference_mode():
        for step in range(steps):
            gap = pair.step(torch.randn(pair.second.num_envs, pair.second.num_actions, generator=gen))
            worst, resets = max(worst, gap.worst()), resets + int(gap.ended.sum())
            if first is None and gap.worst() > 1e-3:
                first = gap
            if first_reset is None and gap.ended.any():
                first_reset = step
    return worst, resets, first, first_reset


def test_gaps_by_kind():
    assert relative_gap(torch.tensor([1.0, 3.0]), torch.tensor([1.0, 1.0])) == pytest.approx(1.0)  # 2 / (1 + 1)
    assert relative_gap(torch.tensor([1, 2]), torch.tensor([1, 3])) == math.inf  # counters: exact
    assert relative_gap(torch.tensor([float("nan")]), torch.tensor([float("nan")])) == 0.0
    assert relative_gap(torch.tensor([float("nan")]), torch.tensor([0.0])) == math.inf
    inf = float("inf")
    assert relative_gap(torch.tensor([1.0, inf]), torch.tensor([1.0, inf])) == 0.0
    assert relative_gap(torch.tensor([1.0, 5.0]), torch.tensor([1.0, inf])) == math.inf  # finite vs not
    assert relative_gap(torch.tensor([-inf]), torch.tensor([inf])) == math.inf
    assert set(flatten({"a": {"b": torch.zeros(1), "c": [torch.ones(1)]}, "d": None})) == {"a/b", "a/c/0"}


@pytest.mark.parametrize("physics", ["mujoco", "warp"])
def test_an_env_seeded_otherwise_follows_bit_for_bit(physics):
    """Other seed: other generator state, randomized gains and masses, commands, time-outs; after
    loading the snapshot nothing of it is left (warp: also the model fields set at resets)."""
    first, second = make_env(7, 32, physics), make_env(5, 32, physics)
    worst, resets, _, _ = run(Lockstep(first, second), 30)
    assert resets > 0 and worst == 0.0


def test_rounding_stays_rounding_where_free_running_envs_part():
    """Every action 1e-5 larger in one env (what fused kernels do to an action mapping, and more):
    free running, contacts make one robot O(0.1) apart within 40 steps (hand-checked: 0.14 at step
    23); in lockstep no step leaves more than 1e-3."""
    envs = [make_env(5, 512), make_env(5, 512)]
    gen = torch.Generator().manual_seed(0)
    free = 0.0
    with torch.inference_mode():
        for _ in range(40):
            action = torch.randn(512, envs[0].num_actions, generator=gen)
            (o1, *_), (o2, *_) = envs[0].step(action * (1 + 1e-5)), envs[1].step(action)
            free = max(free, max(relative_gap(o1[g], o2[g]) for g in o1))
    assert free > 1e-2
    first, second = make_env(5, 512), make_env(5, 512)
    step = first.step
    first.step = lambda action: step(action * (1 + 1e-5))
    worst, resets, _, _ = run(Lockstep(first, second), 40)
    assert resets > 0 and 0 < worst < 1e-3


def extra_draw(env: BatchedEnv) -> None:
    prepare = env._prepare_reset

    def prepare_and_draw(mask, record):
        draws.uniform(env, (1,))
        prepare(mask, record)

    env._prepare_reset = prepare_and_draw


@pytest.mark.parametrize("fault,named", [
    (extra_draw, "generator"),  # one draw too many: every later draw moves
    (lambda env: setattr(env.actions, "reset", lambda mask: None), "managers/actions/state/action"),  # a stale buffer
    (lambda env: setattr(env.commands, "reset", lambda mask: None),
     "managers/commands/state/time_left"),  # a missed reset
])  # fmt: skip
def test_a_fault_is_found_at_the_first_reset_and_named(fault, named):
    first, second = make_env(5), make_env(5)
    fault(first)
    _, _, gap, first_reset = run(Lockstep(first, second), 30)
    assert gap is not None and gap.step == first_reset  # nothing before, found where envs first reset
    assert gap.state[named] > 1e-3 and named in gap.describe(1e-3)
    assert gap.per_env[gap.ended].max() > 1e-3  # the reset envs are the ones apart
    row = gap.as_row(1e-3)
    assert row["step"] == gap.step and named in row["state"] and row["envs"]
