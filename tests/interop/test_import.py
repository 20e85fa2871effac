"""robolearn import against real runs made here: an mjlab Go1 run and an Isaac Lab 3 (Newton)
run of our quadruped (tests/fixtures/interop; scripts/interop made them). reference.npz holds each
framework's own policy outputs (rsl_rl's inference policy) on observations from its own env."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from robolearn.errors import UserError
from robolearn.interop.importer import import_run
from robolearn.interop.names import match_names, per_name
from robolearn.interop.run_yaml import load_run_yaml
from robolearn_deploy import Policy
from robolearn_deploy.bundle import Bundle
from robolearn_deploy.observations import ObservationBuilder
from robolearn_deploy.robot import RobotState

FIXTURES = Path(__file__).parent.parent / "fixtures" / "interop"
MJLAB_RUN, MJLAB_REF = FIXTURES / "mjlab_go1_run", FIXTURES / "mjlab_go1_reference.npz"
ISAAC_RUN, ISAAC_REF = FIXTURES / "isaaclab_quadruped_run", FIXTURES / "isaaclab_quadruped_reference.npz"
QUADRUPED = Path(__file__).resolve().parents[2] / "docs" / "reference" / "quadruped_flat_cpu" / "bundle" / "quadruped.xml"


def _actions(bundle: Path, obs: np.ndarray) -> np.ndarray:
    policy = Policy(bundle)
    return np.stack([policy.engine.run(o[None])[0] for o in obs.astype(np.float32)])


def test_mjlab_run_becomes_a_bundle_that_acts_as_the_run(tmp_path):
    ref = np.load(MJLAB_REF)
    out = import_run(MJLAB_RUN, out=tmp_path / "b", progress=False)
    assert "metadata" in out.joint_order_from and out.run_onnx_max_abs_diff < 1e-5
    # the bundle's ONNX, through the deploy runtime, against rsl_rl's own policy on mjlab's observations
    np.testing.assert_allclose(_actions(out.path, ref["obs"]), ref["actions"], atol=2e-5)
    b = Bundle.load(out.path)
    assert [a.joint for a in b.actuators] == list(ref["joint_names"])
    assert [b.default_pose[j] for j in ref["joint_names"]] == pytest.approx(ref["default_joint_pos"])
    env = load_run_yaml(MJLAB_RUN / "params" / "env.yaml")
    scales = env["actions"]["joint_pos"]["scale"]  # exact values from env.yaml, not the ONNX's 3 decimals
    hip, calf = b.actuators[0], b.actuators[2]
    assert (hip.joint, hip.action_scale, hip.action_offset) == ("FR_hip_joint", scales[".*_hip_joint"], 0.1)
    assert (calf.action_scale, calf.action_offset, calf.kp) == (scales[".*_calf_joint"], -1.8, pytest.approx(35.76429596977857))
    assert calf.effort_range == (-35.55, 35.55) and math.isinf(calf.ctrl_max)
    assert b.control_period_s == pytest.approx(0.02)
    layout = [(t.name, t.source, t.start, t.stop) for t in b.terms]
    assert layout == [("base_lin_vel", "base_lin_vel", 0, 3), ("base_ang_vel", "base_ang_vel", 3, 6),
                      ("projected_gravity", "projected_gravity", 6, 9), ("joint_pos", "joint_pos", 9, 21),
                      ("joint_vel", "joint_vel", 21, 33), ("actions", "last_action", 33, 45), ("command", "command", 45, 48)]
    assert b.meta["commands"]["twist"]["ranges"]["ang_vel_z"] == [-0.5, 0.5]


def test_isaaclab_run_needs_the_joint_order_and_takes_it_from_the_robot(tmp_path):
    with pytest.raises(UserError, match="joint_order="):
        import_run(ISAAC_RUN, out=tmp_path / "refused", progress=False)
    assert not (tmp_path / "refused").exists()
    ref = np.load(ISAAC_REF)
    out = import_run(ISAAC_RUN, out=tmp_path / "b", robot=QUADRUPED, obs=ISAAC_REF, progress=False)
    b = Bundle.load(out.path)
    assert [a.joint for a in b.actuators] == list(ref["joint_names"])  # Newton's order is the MJCF's
    assert [b.default_pose[j] for j in ref["joint_names"]] == pytest.approx(ref["default_joint_pos"])
    assert [a.action_scale for a in b.actuators] == [0.25] * 12 and b.actuators[2].effort_range == (-45.4, 45.4)
    np.testing.assert_allclose(_actions(out.path, ref["obs"]), ref["actions"], atol=2e-5)
    # the same joints in another order give another bundle: the order is what joint_order= says
    order = list(reversed(ref["joint_names"]))
    other = import_run(ISAAC_RUN, out=tmp_path / "c", joint_order=",".join(order), progress=False)
    assert [a.joint for a in Bundle.load(other.path).actuators] == order


def test_imported_layout_builds_the_observation_isaac_lab_defines(tmp_path):
    """joint_pos_rel = q - default, joint_vel_rel = qd, last_action, command: from a robot reading."""
    out = import_run(ISAAC_RUN, out=tmp_path / "b", robot=QUADRUPED, progress=False)
    b = Bundle.load(out.path)
    joints = [a.joint for a in b.actuators]
    builder = ObservationBuilder(b, joints)
    q, qd = np.linspace(-0.5, 0.5, 12), np.linspace(1.0, 2.0, 12)
    signals = {"base_lin_vel": np.array([0.1, 0.2, 0.3]), "base_ang_vel": np.array([0.4, 0.5, 0.6]),
               "projected_gravity": np.array([0.0, 0.0, -1.0]), "base_velocity": np.array([0.7, 0.8, 0.9])}
    builder.last_action[:] = np.arange(12) / 10
    obs = builder.build(RobotState(q, qd, signals))
    default = np.array([b.default_pose[j] for j in joints])
    expected = np.concatenate([[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.0, 0.0, -1.0, 0.7, 0.8, 0.9], q - default, qd, np.arange(12) / 10])
    np.testing.assert_allclose(obs, expected, rtol=1e-6)


def test_sim2sim_runs_an_imported_bundle_with_a_robolearn_task(tmp_path):
    from robolearn.sim2sim import sim2sim

    from robolearn.sim2sim import Referee

    out = import_run(ISAAC_RUN, out=tmp_path / "b", robot=QUADRUPED, task="quadruped_flat", progress=False)
    referee = Referee(out.path, Bundle.load(out.path).meta["model_file"], seed=0)
    # the bundle's model steps at Newton's 2.5 ms substep; the task's 4 steps per action would make 10 ms
    assert referee.env.dt == pytest.approx(0.02) and referee.env.max_episode_length == 1000
    referee.close()
    result = sim2sim(out.path, episodes=1)
    assert result["episodes"] == 1 and result["return_comparison"] is None
    assert result["episode_length_mean"] > 50  # the 5-iteration policy stands for a while at least


def test_task_without_robot_puts_the_tasks_own_robot_in_the_bundle(tmp_path):
    from robolearn.sim2sim import sim2sim

    order = ",".join(np.load(ISAAC_REF)["joint_names"])
    out = import_run(ISAAC_RUN, out=tmp_path / "b", joint_order=order, task="quadruped_flat", progress=False)
    b = Bundle.load(out.path)
    assert b.meta["model_file"] == "quadruped.xml" and (out.path / "quadruped.xml").is_file()
    assert b.joint_limits  # read from the bundled model
    assert sim2sim(out.path, episodes=1)["episodes"] == 1


def _edited_run(tmp_path: Path, edit) -> Path:
    run = shutil.copytree(ISAAC_RUN, tmp_path / "run")
    env = load_run_yaml(run / "params" / "env.yaml")
    edit(env)
    (run / "params" / "env.yaml").write_text(yaml.safe_dump(env))
    return run


def test_clip_before_scale_becomes_scale_then_clip_and_history_widens_the_slice(tmp_path):
    def edit(env):
        obs = env["observations"]["policy"]
        obs["base_ang_vel"].update(scale=0.25, clip=[-2.0, 2.0])  # Isaac Lab: clip to [-2, 2], then x 0.25
        obs["projected_gravity"]["history_length"] = 3

    run = _edited_run(tmp_path, edit)
    # 6 more inputs than the checkpoint has: the layout no longer fits its actor
    with pytest.raises(UserError, match="add up to 54 values but the checkpoint's actor takes 48"):
        import_run(run, out=tmp_path / "b", robot=QUADRUPED, progress=False)

    def no_history(env):
        env["observations"]["policy"]["base_ang_vel"].update(scale=0.25, clip=[-2.0, 2.0])

    out = import_run(_edited_run(tmp_path / "2", no_history), out=tmp_path / "c", robot=QUADRUPED, progress=False)
    term = next(t for t in Bundle.load(out.path).terms if t.name == "base_ang_vel")
    assert (term.scale, term.clip) == (0.25, 0.5)  # clip(x, -2, 2) * 0.25 == clip(0.25 x, -0.5, 0.5)

    def asymmetric(env):
        env["observations"]["policy"]["base_ang_vel"]["clip"] = [-1.0, 2.0]

    with pytest.raises(UserError, match=r"clipped to \[-1.0, 2.0\]"):
        import_run(_edited_run(tmp_path / "3", asymmetric), out=tmp_path / "d", robot=QUADRUPED, progress=False)


def test_an_unknown_term_takes_the_rest_of_the_input_and_two_are_refused(tmp_path):
    def one(env):
        env["observations"]["policy"]["projected_gravity"]["func"] = "my_pkg.mdp:tilt_sensor"

    out = import_run(_edited_run(tmp_path, one), out=tmp_path / "b", robot=QUADRUPED, progress=False)
    term = next(t for t in Bundle.load(out.path).terms if t.name == "projected_gravity")
    assert (term.source, term.stop - term.start) == ("isaaclab.tilt_sensor", 3)

    def two(env):
        one(env)
        env["observations"]["policy"]["base_lin_vel"]["func"] = "my_pkg.mdp:odometry"

    with pytest.raises(UserError, match="widths of observations base_lin_vel, projected_gravity cannot be told"):
        import_run(_edited_run(tmp_path / "2", two), out=tmp_path / "c", robot=QUADRUPED, progress=False)


def test_a_failed_import_keeps_the_bundle_that_was_there(tmp_path):
    out = import_run(MJLAB_RUN, out=tmp_path / "b", progress=False).path
    before = (out / "robot.yaml").read_bytes()
    with pytest.raises(UserError):
        import_run(MJLAB_RUN, out=out, checkpoint="model_99.pt", progress=False)
    assert (out / "robot.yaml").read_bytes() == before


def test_joint_patterns_resolve_as_isaac_lab_resolves_them():
    joints = ["FL_hip", "FL_knee", "FR_hip", "FR_knee"]
    assert match_names([".*_knee", "FR_hip"], joints) == ["FL_knee", "FR_hip", "FR_knee"]
    assert match_names([".*_knee", "FR_hip"], joints, preserve_order=True) == ["FL_knee", "FR_knee", "FR_hip"]
    with pytest.raises(UserError, match="matched by two patterns"):
        match_names([".*_knee", "FL_.*"], joints)
    with pytest.raises(UserError, match="matches none"):
        match_names(["hip"], joints)  # a whole-name match, not a search
    assert per_name({".*_hip": 0.1, ".*_knee": -0.2}, joints, "x") == {"FL_hip": 0.1, "FL_knee": -0.2, "FR_hip": 0.1, "FR_knee": -0.2}
    with pytest.raises(UserError, match="no x for joint 'FL_knee'"):
        per_name({".*_hip": 0.1}, joints, "x")


def test_run_yaml_reads_python_tags_without_running_them(tmp_path):
    path = tmp_path / "env.yaml"
    path.write_text("a: !!python/tuple [1, 2]\nb: !!python/name:os.system ''\n"
                    "c: !!python/object/apply:builtins.slice [null, null, null]\n"
                    "d: !!python/object/apply:os.system ['touch /tmp/robolearn-pwned']\n")
    data = load_run_yaml(path)
    assert data["a"] == [1, 2] and data["b"] == "os.system" and data["c"] == {"slice": [None, None, None]}
    assert data["d"]["object"] == "os.system" and not Path("/tmp/robolearn-pwned").exists()


def test_older_rsl_rl_layout_and_heteroscedastic_head(tmp_path):
    """rsl_rl 2-3 checkpoints (model_state_dict, actor.<i>) and a [2, A] mean/std head."""
    from robolearn.interop.rsl_checkpoint import load_actor

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    mean, std = torch.randn(5), torch.rand(5) + 0.5
    state = {f"actor.{k}": v for k, v in net.state_dict().items()}
    state.update({"actor_obs_normalizer._mean": mean[None], "actor_obs_normalizer._std": std[None], "std": torch.ones(3)})
    torch.save({"model_state_dict": state, "iter": 7}, tmp_path / "model_7.pt")
    ck = load_actor(tmp_path / "model_7.pt", {"policy": {"class_name": "ActorCritic", "activation": "tanh", "actor_obs_normalization": True}})
    x = torch.randn(4, 5)
    torch.testing.assert_close(ck.policy(x), net((x - mean) / (std + 1e-2)))
    assert ck.iteration == 7 and ck.layout == "rsl_rl<4"

    hetero = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ELU(), torch.nn.Linear(8, 6))
    torch.save({"actor_state_dict": {f"mlp.{k}": v for k, v in hetero.state_dict().items()}}, tmp_path / "model_1.pt")
    agent = {"actor": {"class_name": "MLPModel", "activation": "elu", "obs_normalization": False,
                       "distribution_cfg": {"class_name": "HeteroscedasticGaussianDistribution"}}}
    ck = load_actor(tmp_path / "model_1.pt", agent)
    torch.testing.assert_close(ck.policy(x), hetero(x).unflatten(-1, (2, 3))[..., 0, :])  # rsl_rl's slice 0
    # rsl_rl 3's ActorCritic(state_dependent_std=True): the same [2, A] head under actor.<i>, then Unflatten (no weights)
    torch.save({"model_state_dict": {f"actor.{k}": v for k, v in hetero.state_dict().items()}}, tmp_path / "model_2.pt")
    ck = load_actor(tmp_path / "model_2.pt", {"policy": {"class_name": "ActorCritic", "activation": "elu",
                                                         "state_dependent_std": True}})  # fmt: skip
    assert ck.policy.num_actions == 3
    torch.testing.assert_close(ck.policy(x), hetero(x).unflatten(-1, (2, 3))[..., 0, :])
    agent["actor"]["distribution_cfg"] = {"class_name": "BetaDistribution"}
    with pytest.raises(UserError, match="BetaDistribution"):
        load_actor(tmp_path / "model_1.pt", agent)
    agent["actor"].update(class_name="RNNModel", rnn_type="lstm", distribution_cfg=None)
    with pytest.raises(UserError, match="has no recurrent layers"):  # recurrent actors: test_import_recurrent.py
        load_actor(tmp_path / "model_1.pt", agent)
    agent["actor"].update(class_name="MLPModel", rnn_type="lstm")
    with pytest.raises(UserError, match="the run's actor is a MLPModel with rnn_type lstm"):
        load_actor(tmp_path / "model_1.pt", agent)


def _bare_robot(tmp_path: Path) -> Path:
    """The quadruped's MJCF without its floor and its home keyframe, as a robot description ships."""
    import mujoco

    spec = mujoco.MjSpec.from_file(str(QUADRUPED))
    spec.delete(spec.geom("floor"))
    spec.delete(spec.key("home"))
    path = tmp_path / "bare_quadruped.xml"
    path.write_text(spec.to_xml())
    return path


def test_robot_alone_gives_the_bundle_a_referee_and_the_run_s_physics(tmp_path):
    """robot= without task=: the bundle's model is the robot as the run simulated it (its initial
    state as `home`, a floor, MuJoCo Warp's substep and options) and task.yaml referees sim2sim
    with generic terms from the run's config."""
    import mujoco

    from robolearn.sim2sim import sim2sim

    out = import_run(ISAAC_RUN, out=tmp_path / "b", robot=_bare_robot(tmp_path), progress=False)
    b = Bundle.load(out.path)
    # Newton: sim.dt 0.005 in num_substeps=2 MuJoCo steps, MuJoCo Warp's integrator and tolerance
    assert (b.meta["physics_dt_s"], b.meta["decimation"], b.control_period_s) == (0.0025, 8, pytest.approx(0.02))
    model = mujoco.MjModel.from_xml_path(str(out.path / b.meta["model_file"]))
    assert model.opt.timestep == 0.0025 and model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert model.opt.tolerance == 1e-6
    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    assert floor >= 0 and model.geom_type[floor] == mujoco.mjtGeom.mjGEOM_PLANE
    home = model.key_qpos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")]
    # init_state pos (0, 0, 0.34), rot (x, y, z, w) = (0, 0, 0, 1): the identity, (1, 0, 0, 0) in MuJoCo's order
    np.testing.assert_allclose(home[:7], [0, 0, 0.34, 1, 0, 0, 0])
    joints = [a.joint for a in b.actuators]
    assert [home[model.jnt_qposadr[model.joint(j).id]] for j in joints] == pytest.approx([b.default_pose[j] for j in joints])

    task = yaml.safe_load((out.path / "task.yaml").read_text())
    # the run ends episodes on base contact, which has no generic equivalent: tilt and height stand in
    assert task["terminations"] == {"bad_orientation": {"func": "bad_orientation", "params": {"limit_angle": 1.0}},
                                    "base_too_low": {"func": "base_height_below", "params": {"minimum": 0.17}}}
    assert task["commands"]["base_velocity"] == {"ranges": {"lin_vel_x": [-1.0, 1.0], "lin_vel_y": [-1.0, 1.0], "ang_vel_z": [-1.0, 1.0]},
                                                 "resampling_time_s": [10.0, 10.0], "standing_probability": 0.02}
    assert task["events"]["reset_base"]["params"]["yaw_range"] == [-3.14, 3.14] and task["episode_length_s"] == 20.0
    result = sim2sim(out.path, episodes=1)
    assert result["episodes"] == 1 and result["return_comparison"] is None
    assert result["metric_names"] == ["lin_vel_error", "yaw_rate_error"]
    assert result["episode_length_mean"] > 50  # the 5-iteration policy stands for a while at least


def test_the_referee_reads_odd_values_in_the_run_s_config_as_unset(tmp_path):
    """The referee reads what it can; a value of the wrong shape falls back to its default."""
    def odd(env):
        env["commands"]["base_velocity"]["resampling_time_range"] = "often"
        env["events"]["reset_base"]["params"]["pose_range"] = ["x"]
        env["terminations"]["base_contact"]["params"] = [1]
        env["scene"]["robot"]["init_state"]["rot"] = ["a", 0, 0, 1]

    out = import_run(_edited_run(tmp_path, odd), out=tmp_path / "b", robot=QUADRUPED, progress=False)
    task = yaml.safe_load((out.path / "task.yaml").read_text())
    assert task["commands"]["base_velocity"]["resampling_time_s"] == [10.0, 10.0]
    assert task["events"]["reset_base"]["params"]["yaw_range"] == pytest.approx([-math.pi, math.pi])
    assert set(task["terminations"]) == {"bad_orientation", "base_too_low"}


def test_the_referee_takes_mjlab_s_falls_tracking_widths_and_quaternion_order():
    from robolearn.interop.dialects import dialect
    from robolearn.interop.layout import RunLayout
    from robolearn.interop.referee import initial_base, referee_task

    env, agent = load_run_yaml(MJLAB_RUN / "params" / "env.yaml"), load_run_yaml(MJLAB_RUN / "params" / "agent.yaml")
    d = dialect(env, agent)
    assert d.solver_options() == {"integrator": "implicitfast", "solver": "newton", "cone": "elliptic", "iterations": 10,
                                  "ls_iterations": 20, "tolerance": 1e-8, "impratio": 10.0}
    assert d.substeps() == 1
    ranges = {"lin_vel_x": [-1.0, 1.0], "lin_vel_y": [-1.0, 1.0], "ang_vel_z": [-0.5, 0.5]}
    layout = RunLayout([], [], {}, [], [], 0.02, 0.005, 4, {"twist": {"components": list(ranges), "ranges": ranges}})
    task = referee_task(d, layout, "go1.xml", ["a"], 0.278, floating=True)
    assert task["terminations"] == {"fell_over": {"func": "bad_orientation", "params": {"limit_angle": pytest.approx(1.2217304763960306)}}}
    assert task["rewards"]["track_ang_vel_z"]["params"] == {"command": "twist", "std": pytest.approx(0.7071067811865476)}
    assert task["commands"]["twist"]["resampling_time_s"] == [3.0, 8.0] and task["commands"]["twist"]["standing_probability"] == 0.1
    assert initial_base(d, d.robot("robot")) == ([0.0, 0.0, 0.278], [1.0, 0.0, 0.0, 0.0])  # mjlab: (w, x, y, z)
    # Isaac Lab 3 writes (x, y, z, w): a yaw of 90 degrees
    isaac = dialect(load_run_yaml(ISAAC_RUN / "params" / "env.yaml"), {})
    robot = {"init_state": {"pos": [0, 0, 0.3], "rot": [0.0, 0.0, 0.7071, 0.7071]}}
    assert initial_base(isaac, robot)[1] == [0.7071, 0.0, 0.0, 0.7071]
    # a robot without a floating base is scored by how long it runs, with no falls or commands
    fixed = referee_task(d, layout, "arm.xml", ["a"], None, floating=False)
    assert (fixed["rewards"], fixed["terminations"], fixed["commands"], fixed["events"]) == (
        {"alive": {"func": "is_alive", "weight": 1.0}}, {}, {}, {})


def test_added_actuators_extend_the_keyframes_that_set_ctrl(tmp_path):
    """A model that actuates one of two action joints: the run's servo is added on the other, and a
    keyframe with ctrl gets the new servo's ctrl: its joint's position there (MuJoCo would pad it with
    0, a target that pulls the joint away from the keyframe's pose)."""
    import mujoco

    from robolearn.interop.robot_model import RobotModel

    (tmp_path / "arm.xml").write_text("""<mujoco><worldbody><body><joint name="a"/><geom size="0.1"/>
      <body><joint name="b"/><geom size="0.1"/></body></body></worldbody>
      <actuator><position name="a_servo" joint="a" kp="10"/></actuator>
      <keyframe><key name="pose" qpos="0.3 -0.4" ctrl="0.3"/></keyframe></mujoco>""")
    robot = RobotModel(tmp_path / "arm.xml")
    servos = [{"joint": "a", "kp": 5.0, "kd": 0.1}, {"joint": "b", "kp": 5.0, "kd": 0.1}]
    home = robot.home_qpos(None, None, {"a": 0.1, "b": 0.2})
    spec = mujoco.MjSpec.from_file(str(tmp_path / "arm.xml"))
    robot.edit(servos, {}, home=home)(spec)
    model = spec.compile()
    assert model.nu == 2 and model.actuator(1).name == "b_pd"
    np.testing.assert_allclose(model.key("pose").ctrl, [0.3, -0.4])
    np.testing.assert_allclose(model.key("home").qpos, [0.1, 0.2])



def _obs_term(term: str, **values):
    return lambda env: env["observations"]["policy"][term].update(values)


def _default_pose(value: float):
    return lambda env: env["scene"]["robot"]["init_state"]["joint_pos"].update({".*_calf_joint": value})


def _legs(key: str, value: float):
    return lambda env: env["scene"]["robot"]["actuators"]["legs"][key].update({".*_hip_joint": value})


@pytest.mark.parametrize("edit,expected", [
    (lambda e: e["sim"].update(dt=math.nan), ["sim.dt: nan", "valid: a positive finite number of seconds"]),
    (lambda e: e["sim"].update(dt=0.0), ["sim.dt: 0.0", "valid: a positive finite number of seconds"]),
    (lambda e: e["sim"].update(dt=-0.005), ["sim.dt: -0.005", "valid: a positive finite number of seconds"]),
    (lambda e: e["sim"].update(dt="fast"), ["sim.dt: 'fast'", "valid: a positive finite number of seconds"]),
    (lambda e: e["actions"]["joint_pos"].update(scale=math.nan), ["action scale of joint", "is nan", "valid: a finite non-zero number"]),
    (lambda e: e["actions"]["joint_pos"].update(scale=0.0), ["action scale of joint", "is 0.0", "valid: a finite non-zero number"]),
    (lambda e: e["actions"]["joint_pos"].update(clip={".*": [1.0, -1.0]}), ["action clip of '.*' is [1.0, -1.0]", "min <= max"]),
    (lambda e: e["actions"]["joint_pos"].update(clip={".*": [math.nan, 1.0]}), ["action clip of '.*' is [nan, 1.0]", "min <= max"]),
    (_legs("stiffness", -25.0), ["stiffness of joint", "_hip_joint' is -25.0", "valid: a finite number >= 0"]),
    (_legs("damping", -0.5), ["damping of joint", "_hip_joint' is -0.5", "valid: a finite number >= 0"]),
    (_legs("stiffness", math.nan), ["stiffness of joint", "is nan", "valid: a finite number >= 0"]),
    (_legs("joint_effort_limit", -23.7), ["effort limit of joint", "is -23.7", "valid: a positive number (.inf: unbounded)"]),
    (_obs_term("base_lin_vel", history_length=-1), ["observation 'base_lin_vel' has history_length -1", "valid: a whole number >= 0"]),
    (_obs_term("base_lin_vel", history_length=1.5), ["observation 'base_lin_vel' has history_length 1.5", "valid: a whole number >= 0"]),
    (_obs_term("base_lin_vel", history_length="many"), ["history_length 'many'", "valid: a whole number >= 0"]),
    (lambda e: e["observations"]["policy"].update(history_length=-2), ["observation group 'policy' has history_length -2"]),
    (_obs_term("base_lin_vel", clip=[1.0, -1.0]), ["observation 'base_lin_vel' is clipped to [1.0, -1.0]", "low <= high"]),
    (_default_pose(math.nan), ["default position (the action's offset) of joint", "_calf_joint' is nan", "valid: a finite number"]),
    # with an offset of its own the action does not read the default pose, which the layout does not check:
    # the deploy runtime's own bundle checks (run on the staged bundle) refuse it
    (lambda e: (_default_pose(math.nan)(e), e["actions"]["joint_pos"].update(use_default_offset=False)),
     ["the deploy runtime refuses", "default_pose of", ": nan; valid: a finite number", "nothing was written"]),
])  # fmt: skip
def test_impossible_values_in_env_yaml_are_refused_before_anything_is_written(tmp_path, edit, expected):
    """A value the deploy runtime refuses (NaN), or one it would run unsafely (a negative gain),
    ends the import in one line naming the field and what is valid; no bundle, no staging folder."""
    run = _edited_run(tmp_path, edit)
    order = ",".join(np.load(ISAAC_REF)["joint_names"])
    with pytest.raises(UserError) as refused:
        import_run(run, out=tmp_path / "out" / "b", joint_order=order, progress=False)
    message = str(refused.value)
    assert "\n" not in message and all(e in message for e in expected), message
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_task_whose_commands_differ_from_the_run_s_is_refused(tmp_path):
    """mjlab names its velocity command `twist`, quadruped_flat `base_velocity`: sim2sim would hand
    the robot a signal the policy does not read and the watchdog would end every episode at once."""
    with pytest.raises(UserError) as refused:
        import_run(MJLAB_RUN, out=tmp_path / "b", task="quadruped_flat", progress=False)
    message = str(refused.value)
    assert "task=quadruped_flat does not provide the command the run's policy reads" in message, message
    assert "needs twist (lin_vel_x, lin_vel_y, ang_vel_z)" in message and "provides base_velocity (" in message
    assert not (tmp_path / "b").exists()


def _mlp_checkpoint(path: Path, edit=None, hetero: bool = False) -> Path:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ELU(), torch.nn.Linear(8, 6 if hetero else 3))
    weights = {f"mlp.{k}": v for k, v in net.state_dict().items()}
    weights.update({"obs_normalizer._mean": torch.zeros(1, 5), "obs_normalizer._std": torch.ones(1, 5)})
    if edit is not None:
        edit(weights)
    torch.save({"actor_state_dict": weights, "iter": 1}, path)
    return path


MLP_AGENT = {"actor": {"class_name": "MLPModel", "activation": "elu", "obs_normalization": True}}
HETERO = {"distribution_cfg": {"class_name": "HeteroscedasticGaussianDistribution"}}


@pytest.mark.parametrize("edit,cfg,expected", [
    (lambda w: w.update({"mlp.0.bias": torch.zeros(4)}), {}, "mlp.0.bias has 4 values but mlp.0.weight [8, 5] gives 8 outputs"),
    (lambda w: w.update({"mlp.0.bias": torch.zeros(8, 1)}), {}, "mlp.0.bias has shape [8, 1]; valid: a 1-D tensor"),
    (lambda w: w.update({"mlp.0.weight": 5}), {}, "mlp.0.weight is int 5, not a tensor; valid: a 2-D tensor"),
    (lambda w: w.update({"mlp.2.weight": torch.zeros(24)}), {}, "mlp.2.weight has shape [24]; valid: a 2-D tensor"),
    (lambda w: w.update({"obs_normalizer._mean": torch.full((1, 5), math.nan)}), {}, "normalizer's statistics"),
    (lambda w: w.update({"obs_normalizer._std": torch.full((1, 5), -0.01)}), {}, "finite means and stds >= 0"),
    (lambda w: w.update({"mlp.2.weight": torch.zeros(7, 8), "mlp.2.bias": torch.zeros(7)}), HETERO,
     "last layer has 7 outputs, but a HeteroscedasticGaussianDistribution gives 2 x actions"),
    (lambda w: w.update({f"rnn.rnn.{k}": v for k, v in torch.nn.GRU(5, 8).state_dict().items()}), {},
     "holds a recurrent core (rnn.rnn.weight_ih_l0, ...) but the run's agent.yaml says class_name: MLPModel"),
])  # fmt: skip
def test_malformed_mlp_checkpoints_are_one_line(tmp_path, edit, cfg, expected):
    from robolearn.interop.rsl_checkpoint import load_actor

    path = _mlp_checkpoint(tmp_path / "model_1.pt", edit, hetero=bool(cfg))
    with pytest.raises(UserError) as refused:
        load_actor(path, {"actor": {**MLP_AGENT["actor"], **cfg}})
    assert expected in str(refused.value) and "\n" not in str(refused.value), str(refused.value)
    assert load_actor(_mlp_checkpoint(tmp_path / "model_2.pt", hetero=bool(cfg)), {"actor": {**MLP_AGENT["actor"], **cfg}})
