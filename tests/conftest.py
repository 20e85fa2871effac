import os

import pytest
import torch

from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.registry import discover_tasks

from robolearn.paths import assets_dir

os.environ.setdefault("MUJOCO_GL", "egl")


@pytest.fixture
def cartpole_xml():
    return assets_dir() / "cartpole.xml"


@pytest.fixture
def make_env():
    """make_env(task, overrides=[...], num_envs=..., physics=...) -> BatchedEnv, closed afterwards
    (overrides may choose a randomization preset: "randomization=sim2real")."""
    built = []

    def make(task="cartpole", overrides=(), num_envs=16, physics="mujoco", seed=0):
        cfg = compose_train([f"task={task}", *overrides])
        env = BatchedEnv(cfg.task, discover_tasks()[task], num_envs, physics=physics, device="cpu", seed=seed,
                         physics_settings={"num_threads": 2}, randomization=cfg.randomization)
        built.append(env)
        return env

    yield make
    for env in built:
        env.close()


def random_actions(env, gen):
    return torch.rand(env.num_envs, env.num_actions, generator=gen) * 4 - 2
