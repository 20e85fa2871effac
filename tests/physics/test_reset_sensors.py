"""physics.reset_sensors on every backend, on the quadruped (gyro and orientation: position and
velocity stages; accelerometer and touch: the constraint solve). kinematic: right after a reset the
position- and velocity-stage readings are exactly what exact gives, the solver-stage ones read 0,
and environments that were not reset keep their readings bit for bit; after the next step both
modes are the same again; the same on a model with 32 sensor types. Warp runs on its CPU device,
MJX on JAX's CPU."""

import mujoco
import numpy as np
import pytest
import torch

from robolearn.errors import UserError
from robolearn.paths import assets_dir
from robolearn.physics import BACKENDS, load_model, make_backend
from robolearn.physics.base import solver_sensors

CPU = torch.device("cpu")
N = 6
MASK = torch.tensor([True, False, False, True, False, True])
BACKEND_NAMES = [pytest.param(name, marks=pytest.mark.skipif(BACKENDS[name].available(CPU) is not None,
                                                             reason=f"{name} not installed"))
                 for name in ("mujoco", "warp", "mjx")]  # fmt: skip


def quadruped() -> mujoco.MjModel:
    return load_model(assets_dir() / "quadruped.xml")


def stepped(name: str, model: mujoco.MjModel, mode: str):
    """A backend after 10 random-control steps from a pose with the feet near the ground."""
    backend = make_backend(name, model, N, CPU, {"num_threads": 1, "reset_sensors": mode})
    gen = torch.Generator().manual_seed(3)
    start = torch.as_tensor(model.qpos0, dtype=torch.float32).repeat(N, 1)
    start[:, 2] = 0.3
    backend.reset(torch.ones(N, dtype=torch.bool), start, torch.zeros(N, model.nv))
    for _ in range(10):
        backend.step((torch.rand(N, model.nu, generator=gen) - 0.5) * 0.6, 4)
    return backend


def columns(model: mujoco.MjModel) -> np.ndarray:
    """True for the sensordata columns of sensors that need the constraint solve."""
    solver = np.zeros(model.nsensordata, dtype=bool)
    for i in solver_sensors(model):
        solver[model.sensor_adr[i] : model.sensor_adr[i] + model.sensor_dim[i]] = True
    return solver


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_kinematic_reset_sensors_are_exact_without_the_solver_and_zero_with_it(name):
    model = quadruped()
    solver = torch.from_numpy(columns(model))
    names = {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SENSOR, i) for i in solver_sensors(model)}
    assert {"imu_acc", "FL_foot_contact", "trunk_contact"} <= names and "imu_gyro" not in names
    exact, kinematic = stepped(name, model, "exact"), stepped(name, model, "kinematic")
    assert torch.equal(exact.sensordata, kinematic.sensordata)  # the same until a reset
    before = kinematic.sensordata.clone()
    qpos = exact.qpos.clone()
    qpos[:, 2] = 0.28  # standing: the feet touch, the solver pushes back
    qvel = (torch.rand(N, model.nv, generator=torch.Generator().manual_seed(1)) - 0.5) * 0.2
    for backend in (exact, kinematic):
        backend.reset(MASK, qpos, qvel)

    got, want = kinematic.sensordata, exact.sensordata
    assert torch.equal(got[~MASK], before[~MASK])  # the other environments, bit for bit
    assert torch.equal(got[MASK][:, ~solver], want[MASK][:, ~solver])  # position/velocity stages: exact
    assert torch.all(got[MASK][:, solver] == 0) and want[MASK][:, solver].abs().max() > 1.0  # touch read 0, not the contact

    controls = (torch.rand(N, model.nu, generator=torch.Generator().manual_seed(2)) - 0.5) * 0.6
    for backend in (exact, kinematic):
        backend.step(controls, 4)
    assert torch.equal(exact.sensordata, kinematic.sensordata)  # the next step reads everything
    assert torch.equal(exact.qpos, kinematic.qpos)


@pytest.mark.skipif(BACKENDS["warp"].available(CPU) is not None, reason="warp not installed")
def test_warp_refreshes_without_the_solver_where_no_sensor_needs_it():
    """A quadruped with only its gyro and orientation sensors: under exact, warp's refresh is the
    forward's position and velocity stages, and its readings equal a whole forward's bit for bit."""
    import mujoco_warp as mjw

    spec = mujoco.MjSpec.from_file(str(assets_dir() / "quadruped.xml"))
    for sensor in list(spec.sensors):
        if sensor.name not in ("imu_gyro", "imu_quat"):
            spec.delete(sensor)
    model = spec.compile()
    backend = stepped("warp", model, "exact")
    assert backend.kinematic_refresh and not stepped("warp", quadruped(), "exact").kinematic_refresh
    before = backend.sensordata.clone()
    qpos = backend.qpos.flip(0).clone()
    backend.reset(MASK, qpos, backend.qvel.flip(0).clone())
    refreshed = backend.sensordata.clone()
    assert torch.equal(refreshed[~MASK], before[~MASK]) and not torch.equal(refreshed[MASK], before[MASK])
    mjw.forward(backend.m, backend.d)  # the whole forward of the same state
    assert torch.equal(refreshed[MASK], backend.sensordata[MASK])


def test_an_unknown_mode_is_one_line():
    with pytest.raises(UserError, match="physics.reset_sensors=lazy is not valid; valid: exact, kinematic"):
        make_backend("mujoco", quadruped(), 2, CPU, {"reset_sensors": "lazy"})


@pytest.mark.skipif(BACKENDS["warp"].available(CPU) is not None, reason="warp not installed")
def test_warp_keeps_the_contract_where_it_must_refresh_with_a_forward():
    """Sleeping islands need the forward's wake-up pass (step1 has none): the refresh stays a forward,
    and under kinematic the solver-stage readings of reset worlds are zeroed after it."""
    spec = mujoco.MjSpec.from_file(str(assets_dir() / "quadruped.xml"))
    spec.option.enableflags |= mujoco.mjtEnableBit.mjENBL_SLEEP
    model = spec.compile()
    exact, kinematic = stepped("warp", model, "exact"), stepped("warp", model, "kinematic")
    assert not kinematic.kinematic_refresh
    solver = torch.from_numpy(columns(model))
    before = kinematic.sensordata.clone()
    qpos = exact.qpos.clone()
    qpos[:, 2] = 0.28
    for backend in (exact, kinematic):
        backend.reset(MASK, qpos, torch.zeros(N, model.nv))
    assert torch.equal(kinematic.sensordata[~MASK], before[~MASK])
    assert torch.equal(kinematic.sensordata[MASK][:, ~solver], exact.sensordata[MASK][:, ~solver])
    assert torch.all(kinematic.sensordata[MASK][:, solver] == 0) and exact.sensordata[MASK][:, solver].abs().max() > 1.0


MANY_SENSORS = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="base" pos="0 0 0.4">
      <freejoint/>
      <geom name="torso" type="box" size="0.15 0.08 0.04" mass="3"/>
      <site name="imu" pos="0 0 0.02"/>
      <site name="ray" pos="0 0 -0.05" zaxis="0 0 -1"/>
      <body name="leg" pos="0.1 0 -0.05">
        <joint name="hip" type="hinge" axis="0 1 0" range="-1 1"/>
        <geom name="thigh" type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02"/>
        <site name="ft" pos="0 0 0"/>
        <body name="shin" pos="0 0 -0.2">
          <joint name="knee" type="hinge" axis="0 1 0" range="-2 0"/>
          <geom name="foot" type="sphere" size="0.03" pos="0 0 -0.15"/>
          <site name="foot_site" pos="0 0 -0.15" size="0.04"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon><fixed name="tend"><joint joint="hip" coef="1"/><joint joint="knee" coef="0.5"/></fixed></tendon>
  <actuator>
    <position name="hip_act" joint="hip" kp="30"/>
    <position name="knee_act" joint="knee" kp="30"/>
  </actuator>
  <sensor>
    <jointpos joint="hip"/> <jointvel joint="knee"/> <tendonpos tendon="tend"/> <tendonvel tendon="tend"/>
    <actuatorpos actuator="hip_act"/> <actuatorvel actuator="knee_act"/> <actuatorfrc actuator="hip_act"/>
    <jointactuatorfrc joint="knee"/> <jointlimitpos joint="knee"/> <jointlimitvel joint="knee"/>
    <framepos objtype="site" objname="imu"/> <framequat objtype="body" objname="base"/>
    <framexaxis objtype="body" objname="leg"/> <framelinvel objtype="site" objname="imu"/>
    <frameangvel objtype="site" objname="imu"/> <framelinacc objtype="site" objname="imu"/>
    <frameangacc objtype="site" objname="imu"/> <subtreecom body="base"/> <subtreelinvel body="base"/>
    <subtreeangmom body="base"/> <gyro site="imu"/> <velocimeter site="imu"/> <accelerometer site="imu"/>
    <magnetometer site="imu"/> <rangefinder site="ray"/> <force site="ft"/> <torque site="ft"/>
    <touch site="foot_site"/> <contact geom1="foot" geom2="floor" data="found force"/>
    <e_potential/> <e_kinetic/> <clock/>
  </sensor>
</mujoco>"""
"""A one-legged floating body with most of MuJoCo's sensor types at every stage (joint, tendon and
actuator positions and velocities, joint limits, frames, subtrees, IMU, rangefinder, energy, clock;
forces, accelerations, touch and contact at the acceleration stage)."""


@pytest.mark.parametrize("name", [p for p in BACKEND_NAMES if p.values[0] != "mjx"])  # mjx lacks 4 of the types
def test_every_sensor_stage_keeps_the_contract(name):
    model = mujoco.MjModel.from_xml_string(MANY_SENSORS)
    solver = torch.from_numpy(columns(model))
    assert 0 < int(solver.sum()) < model.nsensordata
    exact, kinematic = (make_backend(name, model, N, CPU, {"num_threads": 1, "reset_sensors": mode})
                        for mode in ("exact", "kinematic"))  # fmt: skip
    start = torch.as_tensor(model.qpos0, dtype=torch.float32).repeat(N, 1)
    start[:, 2] = 0.37  # the foot on the floor
    gen = torch.Generator().manual_seed(0)
    for backend in (exact, kinematic):
        backend.reset(torch.ones(N, dtype=torch.bool), start, torch.zeros(N, model.nv))
    for _ in range(5):
        controls = torch.rand(N, model.nu, generator=gen) - 0.5
        for backend in (exact, kinematic):
            backend.step(controls, 4)
    qvel = torch.rand(N, model.nv, generator=gen) - 0.5
    for backend in (exact, kinematic):
        backend.reset(MASK, start, qvel)
    got, want = kinematic.sensordata[MASK], exact.sensordata[MASK]
    assert torch.equal(got[:, ~solver], want[:, ~solver])
    assert torch.all(got[:, solver] == 0) and want[:, solver].abs().max() > 1.0
