"""The sensor refresh after resets, cut to what the terms read (envs/sensor_reads.py): the probe
finds the columns an operation reads through any view of sensordata, the plan follows from them,
and an env that runs the plan (no refresh where none is read) steps exactly like one that runs the
whole refresh every time: observations, rewards, resets and physics state bit for bit, and sensor
readings looked at from outside between steps. Warp on its CPU device (the backend whose refresh
is a forward of every world)."""

import mujoco
import numpy as np
import pytest
import torch

from robolearn.compose import compose_train
from robolearn.envs import sensor_reads
from robolearn.envs.batched_env import BatchedEnv
from robolearn.physics import BACKENDS
from robolearn.registry import get_task

CPU = torch.device("cpu")
needs_warp = pytest.mark.skipif(BACKENDS["warp"].available(CPU) is not None, reason="warp not installed")


def test_the_probe_sees_the_columns_each_operation_reads():
    data = torch.arange(80, dtype=torch.float32).reshape(8, 10)
    kept = data[:, 3:5]  # a view taken before the probe (a term's cached columns)
    other = torch.ones(8, 10)
    cases = [
        (lambda: kept * 2, {3, 4}),
        (lambda: data[:, [1, 7]].sum(), {1, 7}),  # advanced indexing reads only the picked columns
        (lambda: torch.index_select(data, 1, torch.tensor([9])), {9}),
        (lambda: torch.gather(data, 1, torch.full((8, 1), 6)), {6}),
        (lambda: data[2].max(), set(range(10))),  # one row: every column
        (lambda: data[:, 8:].T.contiguous(), {8, 9}),
        (lambda: (other * 3).sum(), set()),  # another tensor
        (lambda: data[:, 2:6], set()),  # a view alone reads nothing
        (lambda: float(data[5, 0]), {0}),
    ]
    for run, expected in cases:
        with sensor_reads.SensorReads(data) as reads:
            run()
        assert set(np.flatnonzero(reads.columns)) == expected


def test_the_plan_from_the_columns_read():
    blank = np.array([False, True, True, False])
    assert sensor_reads.plan(np.zeros(4, dtype=bool), blank) == "none"
    assert sensor_reads.plan(np.array([False, True, False, False]), blank) == "blank"
    assert sensor_reads.plan(np.array([False, True, False, True]), blank) == "full"
    assert sensor_reads.plan(np.array([False, True, False, False]), np.zeros(4, dtype=bool)) == "full"


NO_SENSOR_OBSERVED = "~task.observations.critic.terms.feet_contact_forces"
"""The quadruped without its critic's touch readings: nothing reads a sensor after a reset."""


def make_env(overrides: list[str], reset_sensors: str, plan: str | None = None) -> BatchedEnv:
    cfg = compose_train(["task=quadruped_flat", "physics=warp", "randomization=sim2real", *overrides])
    env = BatchedEnv(cfg.task, get_task(cfg.task.name), 12, physics="warp", seed=4, randomization=cfg.randomization,
                     physics_settings={"reset_sensors": reset_sensors})  # fmt: skip
    if plan is not None:
        env.sensor_refresh = plan  # decided here instead of by the probe
    return env


def read_sensor_names(env: BatchedEnv) -> set[str]:
    cols, m = sensor_reads.probe(env), env.model
    return {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SENSOR, i) for i in range(m.nsensor)
            if cols[m.sensor_adr[i] : m.sensor_adr[i] + m.sensor_dim[i]].any()}  # fmt: skip


@needs_warp
@pytest.mark.parametrize("overrides,reset_sensors,expected", [([], "kinematic", "blank"), ([], "exact", "full"),
                                                               ([NO_SENSOR_OBSERVED], "exact", "none")])
def test_a_planned_refresh_steps_exactly_like_the_whole_refresh(overrides, reset_sensors, expected):
    """quadruped_flat's critic reads the feet's touch sensors after a reset (0 under kinematic, as
    warp's reset leaves them: no refresh needed); without that term nothing reads a sensor there."""
    planned, whole = make_env(overrides, reset_sensors), make_env(overrides, reset_sensors, plan="full")
    for env in (planned, whole):
        env.reset()
    feet = {f"{leg}_foot_contact" for leg in ("FL", "FR", "RL", "RR")}
    assert read_sensor_names(planned) == (set() if overrides else feet)
    gen = torch.Generator().manual_seed(0)
    resets = looked = 0
    for step in range(120):
        action = torch.randn(12, planned.num_actions, generator=gen) * 2
        (o1, r1, te1, tr1), (o2, r2, te2, tr2) = planned.step(action), whole.step(action)
        assert planned.sensor_refresh == expected
        assert all(torch.equal(o1[g], o2[g]) for g in o1), step
        assert torch.equal(r1, r2) and torch.equal(te1, te2) and torch.equal(tr1, tr2), step
        assert torch.equal(planned.physics.qpos, whole.physics.qpos)
        assert torch.equal(planned.physics.qvel, whole.physics.qvel)
        ended = te1 | tr1
        if ended.any():
            resets += 1
            if resets % 2:  # a look from outside after every other reset: the plan's stale rows refresh
                assert torch.equal(planned.physics.sensordata, whole.physics.sensordata), step
                looked += 1
    assert looked >= 2 and resets - looked >= 2  # resets looked at and resets nobody looked at
