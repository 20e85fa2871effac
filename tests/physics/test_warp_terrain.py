"""MuJoCo Warp's hfield collision far from a field's centre, on Warp's CPU device: why the terrain
is cut into blocks (terrain/mjcf.py)."""

import mujoco
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from robolearn.compose import compose_train
from robolearn.physics import BACKENDS
from robolearn.terrain import generate
from robolearn.terrain.mjcf import add_terrain

pytestmark = pytest.mark.skipif(BACKENDS["warp"].available(torch.device("cpu")) is not None, reason="warp not installed")
FOOT = (-28.189964, -76.102036, -0.010539)  # quadruped_rough, H200 divergence, reproduced on the CPU (docs/benchmarks.md)


def foot_contacts(block_size: float) -> np.ndarray:
    import mujoco_warp as mjw
    import warp as wp

    terrain = generate(OmegaConf.to_object(compose_train(["task=quadruped_rough"]).task.terrain), 0)
    spec = mujoco.MjSpec()
    add_terrain(spec, terrain, block_size=block_size)
    foot = spec.worldbody.add_body(pos=list(FOOT))
    foot.add_freejoint()
    foot.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.022, 0, 0])
    model = spec.compile()
    with wp.ScopedDevice("cpu"):
        data = mjw.make_data(model, nworld=1, nconmax=16, njmax=64)
        mjw.forward(mjw.put_model(model), data)
        return data.contact.dist.numpy()[: int(data.nacon.numpy()[0])]


def test_a_foot_on_flat_ground_80_m_out_gets_only_its_true_contacts():
    """A 2.2 cm foot 1 cm into flat ground at z = 0: every contact ~3 cm deep. On the terrain as one
    90 x 170 m hfield (MuJoCo Warp 4.0.0) the same foot also got a contact 3.7 m away and 7.9 m deep."""
    dist = foot_contacts(block_size=16.0)
    assert len(dist) > 0 and np.all(np.abs(dist + 0.0325) < 0.01), dist
