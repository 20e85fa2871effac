import shutil

import pytest
import torch

from robolearn.compose import compose_train
from robolearn.config import AlgoCfg
from robolearn.envs.batched_env import BatchedEnv
from robolearn.export.bundle import export_bundle
from robolearn.registry import get_task
from robolearn.rl.models import ActorCritic


def make_bundle(out, task="cartpole", overrides=(), hidden=(32, 32), seed=0, precision="fp32", fmt="onnx", **algo):
    """Export an (untrained) policy for `task` with non-trivial normalizer statistics; `algo`: more
    AlgoCfg fields (policy="gru", ...)."""
    cfg = compose_train([f"task={task}", *overrides])
    env = BatchedEnv(cfg.task, get_task(task), 8, physics="mujoco", seed=seed, physics_settings={"num_threads": 1})
    try:
        torch.manual_seed(seed)
        ac = ActorCritic.from_config(AlgoCfg(actor_hidden_dims=list(hidden), critic_hidden_dims=[16], **algo),
                                     env.observation_dims(), env.num_actions)
        obs = env.reset()["policy"]
        ac.actor_normalizer.update(obs + torch.randn_like(obs))
        export_bundle(ac, env, out, fmt=fmt, precision=precision, progress=False)
        return env, ac
    finally:
        env.close()


@pytest.fixture(scope="session")
def _bundle_template(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "cartpole"
    make_bundle(out)
    return out


@pytest.fixture
def cartpole_bundle(_bundle_template, tmp_path):
    """A fresh copy of an exported cartpole bundle that a test may damage."""
    return shutil.copytree(_bundle_template, tmp_path / "bundle")


SERVO_PENDULUM = """<mujoco model="servo_pendulum">
  <compiler angle="radian"/>
  <option timestep="0.01" integrator="implicitfast"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="pole"><joint name="hinge" type="hinge" axis="0 1 0" damping="0.05" range="-3.5 3.5"/>
      <geom name="pole" type="capsule" fromto="0 0 0 0 0 0.5" size="0.03" mass="1.0"/></body>
  </worldbody>
  <actuator><position name="torque" joint="hinge" kp="8" kv="0.4" ctrlrange="-3 3" forcerange="-2 2"/></actuator>
</mujoco>"""


@pytest.fixture
def servo_pendulum(tmp_path):
    """The pendulum task with a position servo (kp 8, kv 0.4, force limit 2 N m) instead of its motor."""
    path = tmp_path / "servo_pendulum.xml"
    path.write_text(SERVO_PENDULUM)
    return [f"task.asset={path}"]


TENDON_PENDULUM = """<mujoco model="tendon_pendulum">
  <option timestep="0.01" integrator="implicitfast"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="pole"><joint name="hinge" type="hinge" axis="0 1 0" damping="0.05"/>
      <geom name="pole" type="capsule" fromto="0 0 0 0 0 0.5" size="0.03" mass="1.0"/><site name="tip" pos="0 0 0.5"/></body>
  </worldbody>
  <tendon><fixed name="rope"><joint joint="hinge" coef="0.5"/></fixed></tendon>
  <actuator>
    <motor name="torque" joint="hinge" ctrlrange="-1 1"/>
    <general name="assist" tendon="rope" dyntype="filter" dynprm="0.05" gainprm="1.5" ctrlrange="-1 1"/>
  </actuator>
  <sensor><framepos name="tip_pos" objtype="site" objname="tip"/><actuatorfrc name="assist_force" actuator="assist"/></sensor>
</mujoco>"""


@pytest.fixture
def tendon_pendulum(tmp_path):
    """The pendulum task driven by its motor and by a tendon actuator with activation dynamics
    (which only its ctrl can command), with the policy also reading two MJCF sensors."""
    path = tmp_path / "tendon_pendulum.xml"
    path.write_text(TENDON_PENDULUM)
    return [f"task.asset={path}", "task.action.actuators=[torque,assist]",
            "++task.observations.policy.terms={tip:{func:sensor,params:{names:[tip_pos,assist_force]}}}"]  # fmt: skip
