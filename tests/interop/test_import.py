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

    out = import_run(ISAAC_RUN, out=tmp_path / "b", robot=QUADRUPED, task="quadruped_flat", progress=False)
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
    agent["actor"]["distribution_cfg"] = {"class_name": "BetaDistribution"}
    with pytest.raises(UserError, match="BetaDistribution"):
        load_actor(tmp_path / "model_1.pt", agent)
    agent["actor"].update(class_name="RNNModel", rnn_type="lstm")
    with pytest.raises(UserError, match="RNNModel with lstm"):
        load_actor(tmp_path / "model_1.pt", agent)
