"""The warp backend's reset in two halves (write_reset, then refresh), as the env's CUDA graphs run
it, on the quadruped: gyro, accelerometer, orientation and touch sensors (position, velocity and
acceleration stages, the last needing the constraint solver). Run on Warp's CPU device."""

import mujoco
import numpy as np
import pytest
import torch

from robolearn.paths import assets_dir
from robolearn.physics import BACKENDS, load_model, make_backend

pytestmark = pytest.mark.skipif(BACKENDS["warp"].available(torch.device("cpu")) is not None, reason="warp not installed")
N = 6


def stepped_backend():
    model = load_model(assets_dir() / "quadruped.xml")
    backend = make_backend("warp", model, N, torch.device("cpu"))
    gen = torch.Generator().manual_seed(3)
    start = torch.as_tensor(model.qpos0, dtype=torch.float32).repeat(N, 1)
    start[:, 2] = 0.3  # feet near the ground: contacts from the first steps
    backend.reset(torch.ones(N, dtype=torch.bool), start, torch.zeros(N, model.nv))
    for _ in range(25):
        backend.step((torch.rand(N, model.nu, generator=gen) - 0.5) * 0.6, 4)
    return model, backend, gen


def native_sensors(model, qpos, qvel):
    """Native MuJoCo (float64) mj_forward of each given state: the readings a fresh state has."""
    data, rows = mujoco.MjData(model), []
    for q, v in zip(qpos.double().numpy(), qvel.double().numpy()):
        mujoco.mj_resetData(model, data)
        data.qpos[:], data.qvel[:] = q, v
        mujoco.mj_forward(model, data)
        rows.append(data.sensordata.copy())
    return np.array(rows)


def test_masked_refresh_keeps_other_worlds_and_gives_reset_worlds_a_full_forward():
    model, backend, gen = stepped_backend()
    assert {model.sensor_needstage[i] for i in range(model.nsensor)} >= {mujoco.mjtStage.mjSTAGE_ACC}
    untouched = {k: v.clone() for k, v in backend.state_dict().items()}
    sensors_before = backend.sensordata.clone()
    mask = torch.tensor([True, False, False, True, False, True])
    qpos = backend.qpos.clone()
    qpos[:, 2] = 0.27 + 0.02 * torch.rand(N, generator=gen)  # standing: feet touch, the solver pushes back
    qvel = (torch.rand(N, model.nv, generator=gen) - 0.5) * 0.2

    backend.write_reset(mask, qpos, qvel)
    assert torch.equal(backend.sensordata[~mask], sensors_before[~mask])
    assert torch.all(backend.sensordata[mask] == 0)  # reset worlds: zeros until refresh (the contract)
    backend.refresh(mask)

    assert torch.equal(backend.sensordata[~mask], sensors_before[~mask])  # bit for bit
    for key in ("qpos", "qvel", "act", "time", "qacc_warmstart", "history"):
        assert torch.equal(backend.state_dict()[key][~mask], untouched[key][~mask]), key
    expected = native_sensors(model, qpos[mask], qvel[mask])
    got = backend.sensordata[mask].double().numpy()
    touch = [model.sensor_adr[i] for i in range(model.nsensor) if model.sensor_type[i] == mujoco.mjtSensor.mjSENS_TOUCH]
    assert expected[:, touch].max() > 1.0  # the states really are in contact
    np.testing.assert_allclose(got, expected, rtol=2e-3, atol=2e-3 * np.abs(expected).max())


def test_write_reset_then_refresh_equals_reset():
    _, split, _ = stepped_backend()
    _, whole, _ = stepped_backend()
    mask = torch.tensor([False, True, True, False, False, True])
    qpos, qvel = split.qpos.flip(0).clone(), split.qvel.flip(0).clone()
    split.write_reset(mask, qpos, qvel)
    split.refresh(mask)
    whole.reset(mask, qpos, qvel)
    assert torch.equal(split.sensordata, whole.sensordata)
    assert torch.equal(split.qpos, whole.qpos) and torch.equal(split.qvel, whole.qvel)
