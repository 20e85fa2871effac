"""env.compile: the reward, termination and observation computations, the managers' resets and
(where the backend's model-field writes are torch work: warp) the reset events through
torch.compile give the eager env's results (up to float rounding: fused kernels may round
differently), with the same episode ends, over steps that include resets. Random draws inside
compiled code come from the env's generator in the eager order (robolearn/draws.py)."""

import pytest
import torch

from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.envs.lockstep import Lockstep
from robolearn.registry import get_task

NUM_ENVS = 64


def make_env(compile: bool, physics: str = "mujoco", randomization: str = "default",
             task: str = "quadruped_flat") -> BatchedEnv:
    cfg = compose_train([f"task={task}", f"physics={physics}", f"randomization={randomization}"])
    settings = {"num_threads": 1} if physics == "mujoco" else {}
    env = BatchedEnv(cfg.task, get_task(cfg.task.name), NUM_ENVS, physics=physics, seed=3, compile=compile,
                     randomization=cfg.randomization, physics_settings=settings)  # fmt: skip
    env.reset()
    return env


@pytest.mark.parametrize("physics,randomization", [("mujoco", "default"), ("warp", "sim2real")])
def test_compiled_terms_match_the_eager_env(physics, randomization):
    """sim2real on warp: adaptive ranges (per-env bounds), pushes (interval events) and gain
    randomization (model-field writes) inside the compiled reset path."""
    eager, compiled = make_env(False, physics, randomization), make_env(True, physics, randomization)
    assert all("compute" in vars(m) for m in (compiled.rewards, compiled.terminations, compiled.observations))
    assert "_reset_managers" in vars(compiled) and "compute" not in vars(eager.rewards)
    assert ("_prepare_reset" in vars(compiled)) == (physics == "warp")  # native MuJoCo writes fields on the host
    gen = torch.Generator().manual_seed(0)
    ends = 0
    with torch.inference_mode():  # as the runner collects
        for step in range(40):
            action = torch.rand(NUM_ENVS, eager.num_actions, generator=gen) * 4 - 2  # large: some fall
            (o1, r1, te1, tr1), (o2, r2, te2, tr2) = eager.step(action), compiled.step(action)
            assert torch.equal(te1, te2) and torch.equal(tr1, tr2), step
            torch.testing.assert_close(r2, r1, rtol=1e-5, atol=1e-5, msg=f"reward, step {step}")
            for group in o1:
                torch.testing.assert_close(o2[group], o1[group], rtol=1e-5, atol=1e-5, msg=f"{group}, step {step}")
            ends += int((te1 | tr1).sum())
    assert ends > 0  # the reset path ran between compiled computations
    for env in (eager, compiled):
        env.close()


def test_compiled_rough_terrain_in_lockstep():
    """quadruped_rough, sim2real, warp: terrain levels and their curriculum, spawn heights on the
    tiles, the blocked terrain's contacts. Free running, a compiled and an eager env part there after
    some tens of steps (contacts amplify the compiled reset's last-bit rounding); in lockstep
    (robolearn/envs/lockstep.py) every step stays within 1e-4 and the checkpoint states agree after
    it (the generator and counters exactly)."""
    compiled, eager = (make_env(flag, "warp", "sim2real", "quadruped_rough") for flag in (True, False))
    pair, gen, ends = Lockstep(compiled, eager), torch.Generator().manual_seed(0), 0
    with torch.inference_mode():
        for _ in range(60):
            gap = pair.step(torch.rand(NUM_ENVS, eager.num_actions, generator=gen) * 4 - 2)
            assert gap.worst() <= 1e-4 and gap.ends_differ == 0, gap.describe(1e-4)
            ends += int(gap.ended.sum())
    assert ends > 0
