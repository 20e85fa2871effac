"""MuJoCo Warp's buffers follow what the model needs: 60 balls resting apart on the floor make
60 contacts of 4 pyramid rows each, more than mujoco_warp's default of 48 contacts and 64 rows."""

import mujoco
import pytest
import torch

from robolearn.physics import BACKENDS, make_backend
from robolearn.physics.contact_budget import buffer_sizes, probe

BALLS = 60


def resting_balls() -> mujoco.MjModel:
    balls = "".join(f'<body pos="{0.1 * (i % 10)} {0.1 * (i // 10)} 0.02"><freejoint/><geom size="0.02"/></body>'
                    for i in range(BALLS))  # fmt: skip
    return mujoco.MjModel.from_xml_string(f'<mujoco><worldbody><geom type="plane" size="2 2 0.1"/>{balls}</worldbody></mujoco>')


def test_the_probe_counts_what_the_model_needs_and_only_raises_what_falls_short():
    model = resting_balls()
    assert probe(model, seconds=0.1, rollouts=2) == (BALLS, 4 * BALLS)  # sphere-plane, condim 3, pyramidal: 4 rows
    sizes, why = buffer_sizes(model, {"nconmax": 48, "njmax": 64})
    assert sizes == {"nconmax": 120, "njmax": 480}  # 2 x the most seen
    assert why.startswith("MuJoCo Warp buffers per environment: nconmax 48 -> 120, njmax 64 -> 480")
    assert buffer_sizes(model, {"nconmax": 48, "njmax": 64}, keep={"njmax"})[0] == {"nconmax": 120, "njmax": 64}
    assert buffer_sizes(model, {"nconmax": 128, "njmax": 512}) == ({"nconmax": 128, "njmax": 512}, None)


@pytest.mark.skipif(BACKENDS["warp"].available(torch.device("cpu")) is not None, reason="warp not installed")
def test_warp_sized_from_the_probe_does_not_overflow_where_its_default_did(capsys):
    model = resting_balls()
    n = 2
    start = torch.as_tensor(model.qpos0, dtype=torch.float32).repeat(n, 1)
    for settings, overflows in (({}, False), ({"nconmax": 48, "njmax": 64}, True)):
        backend = make_backend("warp", model, n, torch.device("cpu"), settings)
        backend.reset(torch.ones(n, dtype=torch.bool), start, torch.zeros(n, model.nv))
        backend.step(torch.zeros(n, 0), 2)
        assert (backend.health() is not None) == overflows, (settings, backend.health())
        backend.close()
    assert "nconmax 48 -> 120, njmax 64 -> 480" in capsys.readouterr().err
