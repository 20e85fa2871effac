"""The physics-only model the CPU backend copies per environment: without visual meshes and
textures, and simulating bit for bit like the full model (with randomized fields too)."""

import mujoco
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from robolearn.config_task import TaskCfg
from robolearn.envs.batched_env import BatchedEnv
from robolearn.physics import load_spec, make_backend
from robolearn.physics.physics_copy import physics_copy
from robolearn.registry import TaskPlugin

# A box-shaped mesh whose vertices are off its geom's origin (the compiler moves the geom to the
# mesh's centre): the copy's sphere must sit where the mesh geom was.
_BOX = " ".join(f"{x} {y} {z}" for x in (0.02, 0.14) for y in (-0.05, 0.05) for z in (-0.04, 0.04))
_RICH = " ".join(f"{0.1 * np.cos(a):.4f} {0.1 * np.sin(a):.4f} {z}" for a in np.linspace(0, 6.2, 60) for z in (-0.03, 0.03))

ROBOT = f"""<mujoco>
  <option timestep="0.004"/>
  <asset>
    <texture name="grid" type="2d" builtin="checker" width="256" height="256" rgb1=".2 .3 .4" rgb2=".1 .2 .3"/>
    <material name="grid" texture="grid" texrepeat="4 4"/>
    <mesh name="shell" vertex="{_RICH}"/>
    <mesh name="thigh" vertex="{_BOX}"/>
    <mesh name="bumper" vertex="{_BOX}"/>
  </asset>
  <default><geom contype="0" conaffinity="0"/><default class="collision"><geom contype="1" conaffinity="1"/></default></default>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 .05" material="grid" class="collision"/>
    <body name="base" pos="0 0 .35">
      <freejoint/>
      <geom type="mesh" mesh="shell" density="800"/>
      <geom name="torso" class="collision" type="box" size=".12 .06 .04" mass="2"/>
      <site name="imu"/>
      <body name="leg" pos=".1 0 0">
        <joint name="hip" axis="0 1 0" range="-1 1"/>
        <geom type="mesh" mesh="thigh" density="600"/>
        <geom name="foot" class="collision" type="capsule" fromto="0 0 0 0 0 -.3" size=".02" mass=".3"/>
      </body>
      <body name="tail" pos="-.12 0 0">
        <joint name="wag" axis="0 0 1" range="-1 1"/>
        <geom name="bumper" class="collision" type="mesh" mesh="bumper" density="300"/>
        <geom name="tip" class="collision" type="sphere" pos="-.2 0 -.25" size=".03" mass=".1"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="hip" joint="hip" kp="30"/>
    <position name="wag" joint="wag" kp="10"/>
  </actuator>
  <sensor><framequat name="quat" objtype="site" objname="imu"/><jointpos name="hip_q" joint="hip"/></sensor>
</mujoco>"""


@pytest.fixture
def robot(tmp_path):
    path = tmp_path / "robot.xml"
    path.write_text(ROBOT)
    return path


def test_the_copy_leaves_out_visual_meshes_and_textures_and_keeps_every_index(robot):
    nominal = load_spec(robot).compile()
    copy, note = physics_copy(load_spec(robot), nominal)
    assert note.startswith("2 visual mesh geoms, 1 textures")
    assert (copy.ngeom, copy.nbody, copy.nsensordata, copy.nu) == (nominal.ngeom, nominal.nbody, 5, 2)
    assert copy.nmesh == 1 and copy.ntex == 0  # the bumper's mesh collides: it stays
    assert mujoco.mj_sizeModel(copy) < mujoco.mj_sizeModel(nominal) - 256 * 256 * 3
    visual = [g for g in range(nominal.ngeom) if nominal.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH and not nominal.geom_contype[g]]
    assert len(visual) == 2 and all(copy.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE for g in visual)
    np.testing.assert_array_equal(copy.body_mass, nominal.body_mass)  # the meshes' mass stays
    np.testing.assert_array_equal(copy.body_inertia, nominal.body_inertia)
    np.testing.assert_array_equal(copy.geom_pos, nominal.geom_pos)  # the spheres sit where the meshes were
    np.testing.assert_array_equal(copy.dof_length, nominal.dof_length)


def _backends(model, robot, n):
    with_copy = make_backend("mujoco", model, n, torch.device("cpu"), {"num_threads": 2},
                             lambda: physics_copy(load_spec(robot), model))  # fmt: skip
    full = make_backend("mujoco", model, n, torch.device("cpu"), {"num_threads": 2})
    return with_copy, full


def test_randomized_copies_step_bit_for_bit_like_full_model_copies(robot):
    """Masses (which mj_setConst derives constants from) and friction randomized in some
    environments, resets in the middle (sensors of the new state computed on the copies): the
    physics-only copies end in the same states and sensor readings as copies of the full model."""
    n = 6
    model = load_spec(robot).compile()
    backends = _backends(model, robot, n)
    gen = torch.Generator().manual_seed(0)
    masses = backends[0].model_field("body_mass") * (0.5 + torch.rand(n, model.nbody, generator=gen, dtype=torch.float64))
    friction = backends[0].model_field("geom_friction") * (0.3 + torch.rand(n, model.ngeom, 1, generator=gen, dtype=torch.float64))
    some = torch.tensor([True, True, False, True, False, True])
    controls = torch.rand(80, n, model.nu, generator=gen, dtype=torch.float64) * 2 - 1
    qpos = torch.as_tensor(model.qpos0, dtype=torch.float32).repeat(n, 1)
    states = []
    for backend in backends:
        backend.set_model_field("body_mass", masses, some)
        backend.set_model_field("geom_friction", friction, ~some)
        for t, ctrl in enumerate(controls):
            backend.step(ctrl, 5)
            if t == 40:
                backend.reset(some, qpos, torch.zeros(n, model.nv))
        states.append((backend.state_dict()["physics_state"].numpy(), backend.sensordata.numpy().copy()))
    copied, full = (backend.copied_model[0] for backend in backends)
    assert copied.nmesh == 1 and full.nmesh == 3  # the first stepped physics-only copies
    assert backends[0].copied_model[1].startswith("2 visual mesh geoms")
    np.testing.assert_array_equal(states[0][0], states[1][0])
    np.testing.assert_array_equal(states[0][1], states[1][1])
    assert np.ptp(states[0][0][:, 3]) > 0.01  # the environments' bases went different ways
    for backend in backends:
        backend.close()


def test_a_copy_that_would_differ_is_not_made(robot, tmp_path):
    changed = load_spec(robot).compile()
    changed.dof_damping[6] = 0.5  # as an edit that does not compile the same twice would leave it
    assert physics_copy(load_spec(robot), changed) == (None, "dof_damping differs")
    # a rangefinder's rays see visual geoms: they stay, only the texture goes
    ray = tmp_path / "ray.xml"
    ray.write_text(ROBOT.replace('<sensor>', '<sensor><rangefinder name="down" site="imu"/>'))
    copy, note = physics_copy(load_spec(ray), load_spec(ray).compile())
    assert note.startswith("0 visual mesh geoms, 1 textures") and copy.nmesh == 3 and copy.ntex == 0
    plain = tmp_path / "plain.xml"
    plain.write_text(ray.read_text().replace('material="grid" ', ""))
    plain.write_text(plain.read_text().replace('<texture name="grid" type="2d" builtin="checker" width="256" height="256" rgb1=".2 .3 .4" '
                                               'rgb2=".1 .2 .3"/>', "").replace('<material name="grid" texture="grid" texrepeat="4 4"/>', ""))
    assert physics_copy(load_spec(plain), load_spec(plain).compile()) == (
        None, "no visual meshes or textures to leave out (visual geoms stay: the model has a rangefinder)")
    # a compiler that scales the masses to a total (gymnasium's and dm_control's cheetahs) is not applied twice
    scaled = tmp_path / "scaled.xml"
    scaled.write_text(ROBOT.replace("<mujoco>", '<mujoco><compiler settotalmass="7"/>', 1))
    with pytest.warns(UserWarning, match="settotalmass"):
        nominal = load_spec(scaled).compile()
    copy, note = physics_copy(load_spec(scaled), nominal)
    assert copy is not None and copy.body_mass.sum() == pytest.approx(7.0)
    paired = tmp_path / "paired.xml"
    paired.write_text(ROBOT.replace('<mesh name="shell"', '<mesh name="unused" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/><mesh name="shell"')
                      .replace("</worldbody>", '</worldbody><contact><pair geom1="floor" geom2="shellgeom"/></contact>')
                      .replace('<geom type="mesh" mesh="shell"', '<geom name="shellgeom" type="mesh" mesh="shell"'))  # fmt: skip
    copy, note = physics_copy(load_spec(paired), load_spec(paired).compile())
    assert note.startswith("1 visual mesh geoms") and copy.nmesh == 2  # the paired mesh still collides


def test_a_task_env_randomizing_a_field_copies_the_physics_only_model(robot, tmp_path):
    task = {
        "name": "meshy", "asset": str(robot), "decimation": 5, "episode_length_s": 2.0,
        "observations": {"policy": {"terms": {"q": {"func": "joint_pos"}}}},
        "rewards": {"alive": {"func": "is_alive"}},
        "events": {"mass": {"func": "randomize_model_field", "mode": "startup",
                            "params": {"field": "body_mass", "range": [0.8, 1.2]}}},
    }  # fmt: skip
    (tmp_path / "meshy.yaml").write_text(OmegaConf.to_yaml(task))
    cfg = OmegaConf.merge(OmegaConf.structured(TaskCfg), task)
    env = BatchedEnv(cfg, TaskPlugin("meshy", tmp_path / "meshy.yaml"), 4, physics="mujoco", seed=1,
                     physics_settings={"num_threads": 1})  # fmt: skip
    env.reset()
    assert env.physics.copied_model[0].nmesh == 1 and env.model.nmesh == 3
    assert env.physics.model_field("body_mass").std(0).max() > 0
    env.close()


def test_the_memory_check_names_the_model_it_would_copy(robot, monkeypatch):
    from robolearn import memory
    from robolearn.errors import UserError

    model = load_spec(robot).compile()
    with_copy, full = _backends(model, robot, 64)
    monkeypatch.setattr(memory, "available_bytes", lambda: 2**16)
    everyone = torch.ones(64, dtype=torch.bool)
    masses = with_copy.model_field("body_mass")
    with pytest.raises(UserError, match=r"^env.num_envs=64 with per-environment model parameters \(body_mass: one \d+ kB "
                                        r"physics-only MjModel per environment\) needs ~\d+ kB of memory, 64 kB free"):  # fmt: skip
        with_copy.set_model_field("body_mass", masses, everyone)
    with pytest.raises(UserError, match=r"one \d+ kB MjModel \(no physics-only copy: no model file to compile a "
                                        r"physics-only copy from\) per environment"):  # fmt: skip
        full.set_model_field("body_mass", masses, everyone)
    for backend in (with_copy, full):
        backend.close()
