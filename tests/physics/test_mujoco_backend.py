"""The mujoco backend against plain MuJoCo: N batched environments == N separate MjData + mj_step."""

import copy

import mujoco
import numpy as np
import pytest
import torch

from robolearn.errors import UserError
from robolearn.physics import load_model, make_backend

N, SUBSTEPS, STEPS = 6, 3, 60
FULL = mujoco.mjtState.mjSTATE_FULLPHYSICS


def physics_state(backend):
    return backend.state_dict()["physics_state"].numpy()


def reference_rollout(models, qpos0, qvel0, controls):
    """Step each environment alone with mj_step, holding each control for SUBSTEPS steps."""
    states = []
    for i, model in enumerate(models):
        data = mujoco.MjData(model)
        data.qpos[:], data.qvel[:] = qpos0[i], qvel0[i]
        for ctrl in controls:
            data.ctrl[:] = ctrl[i]
            for _ in range(SUBSTEPS):
                mujoco.mj_step(model, data)
        row = np.empty(mujoco.mj_stateSize(model, FULL))
        mujoco.mj_getState(model, data, row, FULL)
        states.append(row)
    return np.stack(states)


@pytest.fixture
def setup(cartpole_xml):
    model = load_model(cartpole_xml)
    gen = torch.Generator().manual_seed(0)
    qpos0 = (torch.rand(N, model.nq, generator=gen) - 0.5) * 0.4
    qvel0 = (torch.rand(N, model.nv, generator=gen) - 0.5) * 0.4
    controls = (torch.rand(STEPS, N, model.nu, generator=gen) * 2 - 1).double()
    backend = make_backend("mujoco", model, N, torch.device("cpu"), {"num_threads": 2})
    backend.reset(torch.ones(N, dtype=torch.bool), qpos0, qvel0)
    yield model, backend, qpos0.double().numpy(), qvel0.double().numpy(), controls
    backend.close()


def test_batched_steps_equal_separate_mj_step(setup):
    model, backend, qpos0, qvel0, controls = setup
    for ctrl in controls:
        backend.step(ctrl, SUBSTEPS)
    expected = reference_rollout([model] * N, qpos0, qvel0, controls.numpy())
    np.testing.assert_array_equal(physics_state(backend), expected)
    # the float32 tensors the env reads are the same state
    np.testing.assert_allclose(backend.qpos.numpy(), expected[:, 1 : 1 + model.nq], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(backend.time.numpy(), STEPS * SUBSTEPS * model.opt.timestep, rtol=1e-6)


def test_partial_reset_touches_only_masked_envs(setup):
    model, backend, _, _, controls = setup
    for ctrl in controls[:10]:
        backend.step(ctrl, SUBSTEPS)
    before = physics_state(backend).copy()
    mask = torch.tensor([True, False, False, True, False, True])
    qpos = torch.full((N, model.nq), 0.25)
    qvel = torch.full((N, model.nv), -0.5)
    backend.reset(mask, qpos, qvel)
    after = physics_state(backend)
    m = mask.numpy()
    np.testing.assert_array_equal(after[~m], before[~m])
    np.testing.assert_allclose(backend.qpos.numpy()[m], 0.25)
    np.testing.assert_allclose(backend.qvel.numpy()[m], -0.5)
    assert np.all(backend.time.numpy()[m] == 0) and np.all(backend.time.numpy()[~m] > 0)


def test_per_env_parameters_change_only_their_env(setup):
    model, backend, qpos0, qvel0, controls = setup
    masses = backend.model_field("body_mass").clone()
    pole = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "pole")
    masses[2, pole] *= 3.0
    gains = backend.model_field("actuator_gainprm").clone()
    gains[4, 0, 0] *= 0.5
    mask = torch.zeros(N, dtype=torch.bool)
    mask[[2, 4]] = True
    backend.set_model_field("body_mass", masses, mask)
    backend.set_model_field("actuator_gainprm", gains, mask)
    for ctrl in controls:
        backend.step(ctrl, SUBSTEPS)

    models = [model] * N
    heavy = copy.deepcopy(model)
    heavy.body_mass[pole] *= 3.0
    mujoco.mj_setConst(heavy, mujoco.MjData(heavy))  # derived constants follow the mass
    weak = copy.deepcopy(model)
    weak.actuator_gainprm[0, 0] *= 0.5
    models[2], models[4] = heavy, weak
    expected = reference_rollout(models, qpos0, qvel0, controls.numpy())
    np.testing.assert_array_equal(physics_state(backend), expected)
    nominal = reference_rollout([model] * N, qpos0, qvel0, controls.numpy())
    assert not np.allclose(expected[2], nominal[2]) and not np.allclose(expected[4], nominal[4])
    assert backend.model_field("body_mass")[2, pole] == pytest.approx(3 * model.body_mass[pole])
    assert backend.model_field("body_mass")[0, pole] == pytest.approx(model.body_mass[pole])


def test_state_dict_round_trip_continues_identically(setup):
    model, backend, _, _, controls = setup
    backend.step(controls[0], SUBSTEPS)
    saved = backend.state_dict()
    for ctrl in controls[1:20]:
        backend.step(ctrl, SUBSTEPS)
    expected = physics_state(backend).copy()
    backend.load_state_dict(saved)
    for ctrl in controls[1:20]:
        backend.step(ctrl, SUBSTEPS)
    np.testing.assert_array_equal(physics_state(backend), expected)


def test_unknown_field_and_backend_are_user_errors(setup, cartpole_xml):
    _, backend, *_ = setup
    with pytest.raises(UserError, match="valid: body_mass"):
        backend.model_field("opt_timestep")
    with pytest.raises(UserError, match="unknown physics backend 'bullet'; valid: auto, warp, mjx, mujoco"):
        make_backend("bullet", load_model(cartpole_xml), 2, torch.device("cpu"))


def test_missing_and_broken_mjcf_name_the_file(tmp_path):
    with pytest.raises(UserError, match="MJCF file not found: .*nope.xml"):
        load_model(tmp_path / "nope.xml")
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body><geom type='sphere'/></worldbody></mujoco>")
    with pytest.raises(UserError, match=r"cannot load MJCF .*broken.xml: "):
        load_model(broken)


DELAYED = """<mujoco><option timestep="0.01"/><worldbody><body name="b"><joint name="j" type="slide" axis="1 0 0"/>
<geom type="box" size=".1 .1 .1" mass="1" contype="0" conaffinity="0"/></body></worldbody>
<actuator><motor name="m" joint="j" gear="1" delay="0.02" nsample="3"/></actuator></mujoco>"""


def test_reset_env_behaves_like_a_fresh_one_even_with_actuator_delay(tmp_path):
    # The FULLPHYSICS state also holds the actuator-delay history (a cursor and timestamps):
    # a reset must restore it as a new MjData has it, not zero it.
    path = tmp_path / "delayed.xml"
    path.write_text(DELAYED)
    model = load_model(path)
    assert model.nhistory > 0
    used = make_backend("mujoco", model, 2, torch.device("cpu"), {"num_threads": 1})
    ctrl = torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
    for _ in range(7):
        used.step(ctrl, 2)
    zeros = torch.zeros(2, model.nq)
    used.reset(torch.tensor([True, False]), zeros, zeros)
    fresh = make_backend("mujoco", model, 2, torch.device("cpu"), {"num_threads": 1})
    for _ in range(5):
        used.step(ctrl, 2)
        fresh.step(ctrl, 2)
    np.testing.assert_array_equal(physics_state(used)[0], physics_state(fresh)[0])
    assert not np.array_equal(physics_state(used)[1], physics_state(fresh)[1])
    used.close()
    fresh.close()


def test_every_thread_schedule_steps_to_the_same_state(make_env):
    """The backend picks how to spread a step over threads by timing (rollout_schedule.py); that
    may only change speed. Every candidate, on a model with contacts, from the same state under
    the same controls, ends bit for bit in the same state; the choice is made after ROUNDS calls
    of each and then kept."""
    env = make_env("quadruped_flat", num_envs=9)
    backend = env.physics
    schedule = backend.schedule
    assert len(schedule.candidates) == 3  # the calling thread; 2 threads in small and large chunks
    gen = torch.Generator().manual_seed(0)
    controls = (torch.rand(40, 9, env.model.nu, generator=gen) * 2 - 1).double()
    start = backend.state_dict()
    for _ in range(schedule.ROUNDS * len(schedule.candidates)):
        assert schedule.chosen is None and backend.host_threads  # the pool takes part while timing
        backend.step(controls[0], env.decimation)
    assert schedule.chosen is not None and backend.host_threads == (schedule.chosen != 0)
    alone = make_backend("mujoco", env.model, 4, torch.device("cpu"), {"num_threads": 1})
    assert len(alone.schedule.candidates) == 1 and not alone.host_threads  # one thread: no pool at all
    alone.close()
    ends = []
    for i in range(len(schedule.candidates)):
        backend.load_state_dict(start)
        schedule.chosen = i
        for ctrl in controls:
            backend.step(ctrl, env.decimation)
        ends.append(physics_state(backend))
    assert np.abs(ends[0] - physics_state_of(start)).max() > 1e-3  # the robots moved
    for end in ends[1:]:
        np.testing.assert_array_equal(end, ends[0])


def physics_state_of(state: dict) -> np.ndarray:
    return state["physics_state"].numpy()
