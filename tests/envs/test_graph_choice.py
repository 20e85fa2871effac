"""Which env steps replay as CUDA graphs, and the one-line answers where one cannot (CPU-checkable)."""

from types import SimpleNamespace

import pytest
import torch

from robolearn.compose import compose_train
from robolearn.config_task import EventMode
from robolearn.envs.batched_env import BatchedEnv
from robolearn.envs.cuda_graph import graph_blockers, use_graphs
from robolearn.envs.event_manager import EventManager
from robolearn.envs.manager_base import Term
from robolearn.errors import UserError
from robolearn.registry import discover_tasks


def fake_env(device="cuda", graph_safe=True, events=()):
    modes = {mode: [] for mode in EventMode}
    for name, mode, field in events:
        modes[mode].append(Term(name=name, func=None, params={"field": field}))
    manager = SimpleNamespace(modes=modes)
    manager.inertial_after_startup = lambda: EventManager.inertial_after_startup(manager)
    return SimpleNamespace(device=torch.device(device), physics=SimpleNamespace(graph_safe=graph_safe, name="mjx"),
                           events=manager)  # fmt: skip


def test_a_graph_safe_cuda_env_without_inertial_resets_replays_graphs():
    env = fake_env(events=[("friction", EventMode.reset, "geom_friction"), ("mass", EventMode.startup, "body_mass")])
    assert graph_blockers(env) == [] and use_graphs(env, None) and use_graphs(env, True)
    assert not use_graphs(env, False)


def test_what_blocks_the_graph_path_is_named(capsys):
    env = fake_env(events=[("trunk_mass", EventMode.reset, "body_mass"), ("arm", EventMode.interval, "dof_armature")])
    assert not use_graphs(env, None)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "runs eager" in err and "'trunk_mass' randomizes body_mass at reset" in err
    assert "'arm' randomizes dof_armature at interval" in err and "mode: startup" in err
    with pytest.raises(UserError, match=r"env.cuda_graph=true: event 'trunk_mass' randomizes body_mass"):
        use_graphs(env, True)
    with pytest.raises(UserError, match=r"physics=mjx steps outside CUDA graphs"):
        use_graphs(fake_env(graph_safe=False), True)


def test_forcing_graphs_on_the_cpu_is_one_clear_error_and_auto_is_silent(capsys):
    cfg = compose_train(["task=cartpole", "physics=mujoco"])
    with pytest.raises(UserError, match=r"env.cuda_graph=true: the env runs on cpu, CUDA graphs need a CUDA device"):
        BatchedEnv(cfg.task, discover_tasks()["cartpole"], 4, physics="mujoco", cuda_graph=True)
    env = BatchedEnv(cfg.task, discover_tasks()["cartpole"], 4, physics="mujoco")
    assert not env._use_graphs and capsys.readouterr().err == ""


def test_forcing_a_graphed_update_where_it_cannot_run_is_one_clear_error():
    from robolearn.config import RunnerCfg
    from robolearn.rl.runner import OnPolicyRunner

    cfg = compose_train(["task=cartpole", "physics=mujoco", "algo.cuda_graph=true"])
    env = BatchedEnv(cfg.task, discover_tasks()["cartpole"], 4, physics="mujoco")
    with pytest.raises(UserError, match=r"^algo.cuda_graph=true needs a CUDA device; leave it unset"):
        OnPolicyRunner(env, cfg.algo, RunnerCfg(num_steps_per_env=4), torch.device("cpu"))
    cfg.algo.cuda_graph = None  # auto: eager on the CPU
    assert not OnPolicyRunner(env, cfg.algo, RunnerCfg(num_steps_per_env=4), torch.device("cpu")).alg._use_graph
