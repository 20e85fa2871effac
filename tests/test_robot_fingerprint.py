"""A checkpoint keeps which robot its policy learned on (robolearn/robot_fingerprint.py): the
fingerprint changes with what a policy depends on (a gain, a joint, a mass, the timestep) and not
with what differs between runs of one robot (the seed, the terrain, the physics backend)."""

import mujoco
import pytest
import torch

from robolearn.app import build_env
from robolearn.compose import compose_train
from robolearn.robot_fingerprint import robot_fingerprint

ARM = """<mujoco><option timestep="0.01"/><worldbody><geom name="floor" type="plane" size="5 5 .1"/>
<body name="link"><joint name="hinge" axis="0 1 0" range="-2 2"/><geom type="capsule" fromto="0 0 0 0 0 .5" size=".04"/>
</body></worldbody><actuator><position name="servo" joint="hinge" kp="5"/></actuator></mujoco>"""


def fingerprint(xml: str) -> str:
    return robot_fingerprint(mujoco.MjModel.from_xml_string(xml))


def test_what_the_policy_depends_on_changes_it_and_the_world_does_not():
    base = fingerprint(ARM)
    assert fingerprint(ARM) == base
    for edit in (('kp="5"', 'kp="50"'), ('range="-2 2"', 'range="-1 1"'), ('size=".04"', 'size=".05"'),
                 ('timestep="0.01"', 'timestep="0.005"'), ('name="link"', 'name="upper"')):  # fmt: skip
        assert fingerprint(ARM.replace(*edit)) != base, edit
    extra = ARM.replace("</body></worldbody>", '<body name="tip" pos="0 0 .5"><joint name="wrist"/><geom size=".02"/>'
                        "</body></body></worldbody>")  # fmt: skip
    assert fingerprint(extra) != base
    assert fingerprint(ARM.replace('size="5 5 .1"', 'size="50 50 .1"')) == base  # the floor is the world's


@pytest.mark.parametrize("task", ["quadruped_rough"])
def test_seeds_and_terrain_do_not_change_it(task):
    fingerprints = set()
    for seed in (1, 2):
        env = build_env(compose_train([f"task={task}", f"seed={seed}"]), "mujoco", torch.device("cpu"), num_envs=2)
        fingerprints.add(env.robot_model)
        env.close()
    flat = build_env(compose_train(["task=quadruped_flat"]), "mujoco", torch.device("cpu"), num_envs=2)
    assert fingerprints == {flat.robot_model}
    flat.close()
