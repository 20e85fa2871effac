"""Per-joint action scale / offset / clip (by name or pattern), physics options from the task YAML,
and what they must refuse."""

import mujoco
import numpy as np
import pytest
import torch
import yaml

from robolearn import compose, registry
from robolearn.config import AlgoCfg
from robolearn.envs.batched_env import BatchedEnv
from robolearn.errors import UserError
from robolearn.export.bundle import export_bundle
from robolearn.rl.models import ActorCritic
from robolearn_deploy.actions import ActionMapper
from robolearn_deploy.bundle import Bundle

PER_JOINT = """
extends: quadruped_flat
action:
  scale: {".*_hip_joint": 0.1, ".*_thigh_joint": 0.2, "(FL|FR|RL|RR)_calf": 0.3}
  offset: {FL_hip_joint: 0.05}
  clip: {".*_calf_joint": [-2.0, -1.0]}
sim: {integrator: rk4, solver: cg, iterations: 7, cone: elliptic, impratio: 2.0, timestep: 0.004}
"""


@pytest.fixture
def variant(installed_tasks, tmp_path):
    """variant(yaml_text) -> (cfg, plugin) of a task 'variant' installed next to the built-in ones."""
    tasks = installed_tasks

    def make(text, overrides=()):
        (tmp_path / "variant.yaml").write_text(text)
        tasks["variant"] = registry.TaskPlugin(config=tmp_path / "variant.yaml")
        return compose.compose_train(["task=variant", *overrides]), registry.get_task("variant")

    return make


def build(cfg, plugin, num_envs=4):
    return BatchedEnv(cfg.task, plugin, num_envs, physics="mujoco", seed=0, physics_settings={"num_threads": 1})


def test_per_joint_scale_offset_clip_reach_ctrl_bundle_and_runtime(variant, tmp_path):
    env = build(*variant(PER_JOINT))
    try:
        joints = env.actions.joint_names
        assert joints[:3] == ["FL_hip_joint", "FL_thigh_joint", "FL_calf_joint"]
        expect_scale = [{"hip": 0.1, "thigh": 0.2, "calf": 0.3}[j.split("_")[1]] for j in joints]
        assert env.actions.scale.tolist() == pytest.approx(expect_scale)
        home = {"hip": None, "thigh": None, "calf": -1.5}
        assert env.actions.offset[0].item() == pytest.approx(0.1 + 0.05)  # FL hip: default pose + offset
        assert env.actions.offset[3].item() == pytest.approx(-0.1)  # FR hip: default pose only
        calf = [k for k, j in enumerate(joints) if "calf" in j]
        assert env.actions.ctrl_low[calf].tolist() == pytest.approx([-2.0] * 4)  # inside ctrlrange [-2.723, -0.838]
        assert env.actions.ctrl_high[calf].tolist() == pytest.approx([-1.0] * 4)
        # ctrl = clip(offset + scale * action): a calf's +1 action (-1.5 + 0.3 = -1.2) passes, +3 clips at -1.0
        env.reset()
        action = torch.zeros(env.num_envs, 12)
        action[:, calf[0]] = 1.0
        action[:, calf[1]] = 3.0
        env.actions.process(action)
        ctrl = env.actions.ctrl[0, env.actions.actuator_ids]
        assert ctrl[calf[0]].item() == pytest.approx(home["calf"] + 0.3)
        assert ctrl[calf[1]].item() == pytest.approx(-1.0)

        opt = env.model.opt
        assert (opt.integrator, opt.solver, opt.iterations, opt.cone) == (
            int(mujoco.mjtIntegrator.mjINT_RK4), int(mujoco.mjtSolver.mjSOL_CG), 7, int(mujoco.mjtCone.mjCONE_ELLIPTIC))
        assert (opt.impratio, opt.timestep) == (2.0, 0.004)

        ac = ActorCritic.from_config(AlgoCfg(actor_hidden_dims=[16], critic_hidden_dims=[16]), env.observation_dims(), 12)
        export_bundle(ac, env, tmp_path / "bundle", progress=False)
    finally:
        env.close()
    meta = yaml.safe_load((tmp_path / "bundle" / "robot.yaml").read_text())
    assert [a["action_scale"] for a in meta["actuators"]] == pytest.approx(expect_scale)
    assert meta["actuators"][2]["ctrl_min"] == pytest.approx(-2.0) and meta["actuators"][2]["ctrl_max"] == pytest.approx(-1.0)
    assert meta["physics_dt_s"] == 0.004
    bundled = mujoco.MjModel.from_xml_path(str(tmp_path / "bundle" / meta["model_file"]))
    assert bundled.opt.integrator == int(mujoco.mjtIntegrator.mjINT_RK4) and bundled.opt.iterations == 7
    mapper = ActionMapper(Bundle.load(tmp_path / "bundle"), joints)
    command = mapper.map(np.array([0.0, 0.0, 1.0] + [0.0] * 9))
    assert mapper.scale.tolist() == pytest.approx(expect_scale)
    assert command.position[:3].tolist() == pytest.approx([0.15, 0.8, -1.2])


@pytest.mark.parametrize("action, message", [
    ('{scale: {".*_knee_joint": 0.3}}', r"task.action.scale: '.\*_knee_joint' matches no policy actuator or its joint; "
                                        r"actuators \(joints\): FL_hip \(FL_hip_joint\)"),
    ('{scale: {"FL_.*": 0.3, ".*_hip_joint": 0.1}}', "actuator 'FL_hip' is matched by both 'FL_.*' and '.*_hip_joint'"),
    ('{clip: {".*_calf_joint": [1.0, 2.0]}}', r"task.action.clip \[1.0, 2.0\] of actuator 'FL_calf' lies outside its ctrlrange"),
    # two policy outputs for one motor: the bundle would send the robot two commands for it
    ("{actuators: [FL_hip, FL_thigh, FL_hip]}", r"actuator 'FL_hip' is named twice in \[FL_hip, FL_thigh, FL_hip\]; "
                                                r"valid: each actuator once"),
])  # fmt: skip
def test_model_dependent_mistakes_are_one_line(variant, action, message):
    cfg, plugin = variant(f"extends: quadruped_flat\naction: {action}\n")
    with pytest.raises(UserError, match=message):
        build(cfg, plugin)


@pytest.mark.parametrize("text, message", [
    ("action: {scale: {'[': 0.3}}", "task.action.scale: '\\[' is not a valid regular expression"),
    ("action: {scale: {FL_hip_joint: 0}}", "task.action.scale.FL_hip_joint=0 is out of range; valid: a number other than 0"),
    ("action: {scale: fast}", "task.action.scale=fast is out of range; valid: a number other than 0, or a mapping"),
    ("action: {clip: {FL_hip_joint: [1, 0]}}", r"task.action.clip.FL_hip_joint=\[1,0\] is out of range; valid: \[low, high\]"),
    ("sim: {integrator: rk5}", "task.sim.integrator=rk5 is out of range; valid: euler, rk4, implicit, implicitfast"),
    ("sim: {solver: jacobi}", "task.sim.solver=jacobi is out of range; valid: pgs, cg, newton"),
    ("sim: {cone: round}", "task.sim.cone=round is out of range; valid: pyramidal, elliptic"),
    ("sim: {iterations: 0}", "task.sim.iterations=0 is out of range; valid: an integer >= 1"),
    ("sim: {timestep: 0.001}\nsim_dt: 0.002", "task.sim_dt and task.sim.timestep both set the timestep"),
])  # fmt: skip
def test_schema_mistakes_are_one_line_before_anything_is_built(variant, text, message):
    with pytest.raises(UserError, match=message):
        variant(f"extends: quadruped_flat\n{text}\n")


def test_a_model_without_actuators_is_one_line(variant, tmp_path):
    (tmp_path / "bare.xml").write_text('<mujoco><worldbody><body><joint name="j" type="hinge"/>'
                                       '<geom size="0.1" mass="1"/></body></worldbody></mujoco>')  # fmt: skip
    cfg, plugin = variant(f"asset: {tmp_path / 'bare.xml'}\nobservations: {{policy: {{terms: {{q: {{func: joint_pos}}}}}}}}\n")
    with pytest.raises(UserError, match="the task's model has no actuators, so the policy has nothing to drive"):
        build(cfg, plugin)
