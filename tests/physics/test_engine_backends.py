"""The warp and mjx backends (run here on Warp's CPU device and JAX's CPU) against native MuJoCo."""

import copy

import mujoco
import pytest
import torch

from robolearn.compose import compose_train
from robolearn.config import RunnerCfg
from robolearn.envs.batched_env import BatchedEnv
from robolearn.paths import assets_dir
from robolearn.physics import BACKENDS, load_model, make_backend
from robolearn.registry import discover_tasks
from robolearn.rl.runner import OnPolicyRunner

ENGINES = [pytest.param(name, marks=pytest.mark.skipif(BACKENDS[name].available(torch.device("cpu")) is not None,
                                                       reason=f"{name} not installed")) for name in ("warp", "mjx")]
N, STEPS = 8, 100
TOLERANCE = 5e-4  # float32 engines vs float64 MuJoCo after 100 control steps (measured: ~3e-5)
CPU = torch.device("cpu")


def rollout(backend, q0, v0, controls, substeps=2):
    backend.reset(torch.ones(N, dtype=torch.bool), q0, v0)
    for ctrl in controls:
        backend.step(ctrl, substeps)
    return backend.qpos.clone(), backend.qvel.clone()


def inputs(model, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q0 = (torch.rand(N, model.nq, generator=gen) - 0.5) * 0.4
    v0 = (torch.rand(N, model.nv, generator=gen) - 0.5) * 0.4
    return q0, v0, torch.rand(STEPS, N, model.nu, generator=gen) * 2 - 1


def started(engine, seed):
    """A cart-pole backend reset to random states, with its model and a control sequence."""
    model = load_model(assets_dir() / "cartpole.xml")
    q0, v0, controls = inputs(model, seed=seed)
    backend = make_backend(engine, model, N, CPU)
    backend.reset(torch.ones(N, dtype=torch.bool), q0, v0)
    return model, backend, q0, v0, controls


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("asset", ["cartpole.xml", "pendulum.xml"])
def test_trajectories_match_native_mujoco(engine, asset):
    model = load_model(assets_dir() / asset)
    q0, v0, controls = inputs(model)
    reference = rollout(make_backend("mujoco", model, N, CPU, {"num_threads": 1}), q0, v0, controls)
    got = rollout(make_backend(engine, model, N, CPU), q0, v0, controls)
    assert (got[0] - reference[0]).abs().max() < TOLERANCE
    assert (got[1] - reference[1]).abs().max() < TOLERANCE
    assert got[0].dtype == torch.float32 and got[0].device == CPU


@pytest.mark.parametrize("engine", ENGINES)
def test_partial_reset_and_per_env_parameters_behave_as_on_the_cpu(engine):
    model, backend, q0, v0, controls = started(engine, seed=1)
    for ctrl in controls[:10]:
        backend.step(ctrl, 2)
    before = backend.state_dict()
    mask = torch.tensor([True, False] * (N // 2))
    backend.reset(mask, torch.full((N, model.nq), 0.25), torch.full((N, model.nv), -0.5))
    after = backend.state_dict()
    assert torch.equal(after["qpos"][~mask], before["qpos"][~mask])
    assert torch.equal(after["qvel"][~mask], before["qvel"][~mask])
    assert torch.allclose(backend.qpos[mask], torch.tensor(0.25)) and torch.all(backend.time[mask] == 0)

    # A heavier pole in env 2 only: env 2 follows MuJoCo's heavy model, the others the nominal one.
    pole = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "pole")
    masses = backend.model_field("body_mass").clone()
    masses[:, pole] *= 3.0
    only_2 = torch.zeros(N, dtype=torch.bool)
    only_2[2] = True
    backend.set_model_field("body_mass", masses, only_2)
    assert backend.model_field("body_mass")[2, pole] == pytest.approx(3 * model.body_mass[pole], rel=1e-6)
    assert backend.model_field("body_mass")[0, pole] == pytest.approx(model.body_mass[pole], rel=1e-6)
    heavy = copy.deepcopy(model)
    heavy.body_mass[pole] *= 3.0
    mujoco.mj_setConst(heavy, mujoco.MjData(heavy))
    got = rollout(backend, q0, v0, controls)
    nominal = rollout(make_backend("mujoco", model, N, CPU, {"num_threads": 1}), q0, v0, controls)
    heavy_ref = rollout(make_backend("mujoco", heavy, N, CPU, {"num_threads": 1}), q0, v0, controls)
    others = torch.arange(N) != 2
    assert (got[0][others] - nominal[0][others]).abs().max() < TOLERANCE
    assert (got[0][2] - heavy_ref[0][2]).abs().max() < TOLERANCE
    assert (heavy_ref[0][2] - nominal[0][2]).abs().max() > 100 * TOLERANCE  # the change mattered


@pytest.mark.parametrize("engine", ENGINES)
def test_state_dict_round_trip_continues_identically(engine):
    _, backend, _, _, controls = started(engine, seed=2)
    backend.step(controls[0], 2)
    saved = backend.state_dict()
    for ctrl in controls[1:20]:
        backend.step(ctrl, 2)
    expected = backend.qpos.clone()
    backend.load_state_dict(saved)
    for ctrl in controls[1:20]:
        backend.step(ctrl, 2)
    assert torch.equal(backend.qpos, expected)


@pytest.mark.parametrize("engine", ENGINES)
def test_short_training_run_improves_the_return(engine):
    cfg = compose_train(["task=cartpole", f"physics={engine}"])
    torch.manual_seed(0)
    env = BatchedEnv(cfg.task, discover_tasks()["cartpole"], 64, physics=engine, seed=1)
    runner = OnPolicyRunner(env, cfg.algo, RunnerCfg(num_steps_per_env=24, max_iterations=12), CPU)
    rows = []
    runner.learn(rows.append)
    first = sum(r["mean_episode_length"] for r in rows[1:3]) / 2  # the first iteration mixes in short random starts
    last = sum(r["mean_episode_length"] for r in rows[-2:]) / 2
    assert last > 1.5 * first, [round(r["mean_episode_length"], 1) for r in rows]


PILE = """<mujoco><worldbody><geom type="plane" size="2 2 .1"/>
<body pos="0 0 .3"><freejoint/><geom type="sphere" size=".1"/></body>
<body pos=".05 0 .55"><freejoint/><geom type="sphere" size=".1"/></body>
<body pos="-.05 0 .8"><freejoint/><geom type="sphere" size=".1"/></body></worldbody></mujoco>"""


@pytest.mark.parametrize("engine", [p for p in ENGINES if p.values[0] == "warp"])
def test_warp_contact_overflow_is_reported_with_the_setting_to_raise(engine, tmp_path):
    path = tmp_path / "pile.xml"
    path.write_text(PILE)
    model = load_model(path)
    roomy = make_backend(engine, model, 2, CPU)
    cramped = make_backend(engine, model, 2, CPU, {"nconmax": 1})
    for _ in range(100):  # the spheres fall onto the plane and onto each other
        roomy.step(torch.zeros(2, 0), 2)
        cramped.step(torch.zeros(2, 0), 2)
    assert roomy.health() is None
    message = cramped.health()
    assert message is not None and "raise physics.nconmax" in message and "nconmax=1 " in message


ALL = ["mujoco", *ENGINES]


@pytest.mark.parametrize("engine", ALL)
def test_partial_reset_gives_reset_envs_fresh_sensors_and_keeps_the_others(engine, tmp_path):
    xml = (assets_dir() / "cartpole.xml").read_text().replace(
        "</mujoco>", '<sensor><jointpos joint="hinge"/><jointvel joint="hinge"/></sensor></mujoco>')
    path = tmp_path / "sensed.xml"
    path.write_text(xml)
    model = load_model(path)
    q0, v0, controls = inputs(model, seed=4)
    backend = make_backend(engine, model, N, CPU, {"num_threads": 1})
    backend.reset(torch.ones(N, dtype=torch.bool), q0, v0)
    assert torch.allclose(backend.sensordata[:, 0], q0[:, 1]) and torch.allclose(backend.sensordata[:, 1], v0[:, 1])
    for ctrl in controls[:5]:
        backend.step(ctrl, 2)
    before = backend.sensordata.clone()
    mask = torch.tensor([True, False] * (N // 2))
    backend.reset(mask, torch.full((N, model.nq), 0.3), torch.full((N, model.nv), -0.2))
    assert torch.equal(backend.sensordata[~mask], before[~mask])
    assert torch.allclose(backend.sensordata[mask], torch.tensor([0.3, -0.2]).expand(N // 2, 2))


@pytest.mark.parametrize("engine", ALL)
def test_state_restores_into_a_freshly_built_backend(engine):
    model = load_model(assets_dir() / "cartpole.xml")
    q0, v0, controls = inputs(model, seed=5)
    first = make_backend(engine, model, N, CPU, {"num_threads": 1})
    first.reset(torch.ones(N, dtype=torch.bool), q0, v0)
    masses = first.model_field("body_mass").clone()
    masses[:, 2] *= torch.linspace(0.5, 2.0, N, dtype=masses.dtype)
    first.set_model_field("body_mass", masses, torch.ones(N, dtype=torch.bool))
    for ctrl in controls[:10]:
        first.step(ctrl, 2)
    second = make_backend(engine, model, N, CPU, {"num_threads": 1})
    second.load_state_dict(first.state_dict())
    for ctrl in controls[10:30]:
        first.step(ctrl, 2)
        second.step(ctrl, 2)
    assert torch.equal(first.qpos, second.qpos) and torch.equal(first.qvel, second.qvel)


@pytest.mark.parametrize("engine", ALL)
def test_per_physics_step_controls_equal_stepping_one_step_at_a_time(engine):
    model = load_model(assets_dir() / "cartpole.xml")
    q0, v0, controls = inputs(model, seed=6)
    batched = make_backend(engine, model, N, CPU, {"num_threads": 1})
    single = make_backend(engine, model, N, CPU, {"num_threads": 1})
    for backend in (batched, single):
        backend.reset(torch.ones(N, dtype=torch.bool), q0, v0)
    for t in range(0, 30, 3):  # three different controls inside each 3-substep step
        batched.step(controls[t : t + 3].transpose(0, 1), 3)
        for k in range(3):
            single.step(controls[t + k], 1)
    assert torch.allclose(batched.qpos, single.qpos, atol=1e-6) and torch.allclose(batched.qvel, single.qvel, atol=1e-6)
    batched.step(controls[0], 3)  # held controls still work after per-step ones
    single.step(controls[0], 3)
    assert torch.allclose(batched.qvel, single.qvel, atol=1e-6)


@pytest.mark.parametrize("engine", ALL)
def test_set_velocity_changes_only_masked_velocities_and_keeps_time(engine):
    model = load_model(assets_dir() / "cartpole.xml")
    _, backend, q0, v0, controls = started(engine, seed=7)
    for ctrl in controls[:3]:
        backend.step(ctrl, 2)
    qpos, qvel, time = backend.qpos.clone(), backend.qvel.clone(), backend.time.clone()
    mask = torch.tensor([True, False] * (N // 2))
    kick = torch.full((N, model.nv), 0.7)
    backend.set_velocity(kick, mask)
    assert torch.equal(backend.qvel[mask], kick[mask]) and torch.equal(backend.qvel[~mask], qvel[~mask])
    assert torch.equal(backend.qpos, qpos) and torch.equal(backend.time, time)


@pytest.mark.parametrize("engine", ALL)
def test_per_environment_gravity(engine):
    # A free ball with no contacts: after t seconds its velocity is g_i * t in each environment.
    model = mujoco.MjModel.from_xml_string(
        '<mujoco><option timestep="0.01"/><worldbody><body><freejoint/><geom size="0.1" contype="0" '
        'conaffinity="0"/></body></worldbody></mujoco>')
    backend = make_backend(engine, model, N, CPU, {"num_threads": 1})
    assert torch.allclose(backend.model_field("opt.gravity").float(), torch.tensor([0.0, 0.0, -9.81]).expand(N, 3))
    gravity = torch.zeros(N, 3, dtype=backend.param_dtype)
    gravity[:, 0] = torch.linspace(-2, 2, N, dtype=backend.param_dtype)
    gravity[:, 2] = -9.81
    mask = torch.ones(N, dtype=torch.bool)
    mask[0] = False  # keeps the nominal gravity
    backend.set_model_field("opt.gravity", gravity, mask)
    backend.reset(torch.ones(N, dtype=torch.bool), torch.tensor([0, 0, 1.0, 1, 0, 0, 0]).expand(N, 7), torch.zeros(N, 6))
    for _ in range(10):
        backend.step(torch.zeros(N, 0), 5)
    expected = gravity.float() * 0.5
    expected[0] = torch.tensor([0.0, 0.0, -9.81 * 0.5])
    assert torch.allclose(backend.qvel[:, :3], expected, atol=1e-4)


HOME_ACT = """<mujoco><compiler angle="radian"/><option timestep="0.01"/>
  <worldbody><body><joint name="j" type="hinge" axis="0 1 0" range="-2 2"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05" mass="1"/></body></worldbody>
  <actuator><intvelocity name="a" joint="j" kp="30" kv="3" actrange="-2 2"/></actuator>
  <keyframe><key name="home" qpos="0.7" act="0.7"/></keyframe></mujoco>"""


@pytest.mark.parametrize("engine", ALL)
def test_an_episode_starts_from_the_home_keyframes_activations(engine, tmp_path):
    """An intvelocity actuator's activation is its position target: from the home keyframe's it
    holds the arm at home under zero control (from 0, as a fresh MjData has it, the servo would pull
    the arm down to 0 at every episode start). A partial reset leaves the other worlds' activations."""
    path = tmp_path / "arm.xml"
    path.write_text(HOME_ACT)
    model = load_model(path)
    backend = make_backend(engine, model, N, CPU, {"num_threads": 1})
    everyone = torch.ones(N, dtype=torch.bool)
    backend.reset(everyone, torch.full((N, 1), 0.7), torch.zeros(N, 1))
    assert torch.allclose(backend.act, torch.tensor(0.7))
    for _ in range(50):
        backend.step(torch.zeros(N, 1), 2)
    assert torch.allclose(backend.qpos, torch.tensor(0.7), atol=0.05)  # held (gravity sags it 0.04: 1.1 N m / kp 30)
    for _ in range(10):
        backend.step(torch.full((N, 1), -1.0), 2)  # the target moves: act = 0.7 - 0.2
    mask = torch.tensor([True, False] * (N // 2))
    backend.reset(mask, torch.full((N, 1), 0.7), torch.zeros(N, 1))
    assert torch.allclose(backend.act[mask], torch.tensor(0.7)) and torch.allclose(backend.act[~mask], torch.tensor(0.5), atol=1e-5)
