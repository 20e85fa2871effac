"""What videos mark: the velocity command the arrows show, reach targets where the reward puts them."""

import mujoco
import numpy as np
import pytest

from robolearn.play_markers import (SensorTarget, position_targets, sensed_in_world, target_in_world, target_markers,
                                    velocity_command)
from robolearn.render import GREEN, CameraCfg, FrameRenderer, Marker


def test_the_arm_reach_target_is_in_the_sensors_frame_and_lands_where_the_reading_would(make_env):
    """arm_reach's ee_target is in the frame of the arm's base body (its ee_pos sensor's refname):
    a command equal to the sensor's current reading marks the end effector itself."""
    env = make_env("arm_reach", num_envs=2)
    model = env.model
    [target] = position_targets(env)
    assert target == SensorTarget("ee_target", mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, "ee_pos"))
    assert velocity_command(env) is None
    data = mujoco.MjData(model)
    data.qpos[:] = [0.3, -0.4, 0.9, 0.2, -0.5, 0.1]
    model.body_pos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "base")] += [0.2, -0.1, 0.05]  # base not at the origin
    mujoco.mj_forward(model, data)
    reading = data.sensordata[model.sensor_adr[target.sensor]:][:3].copy()
    assert np.linalg.norm(reading - sensed_in_world(model, data, target)) > 0.05  # the frames differ
    np.testing.assert_allclose(target_in_world(model, data, target, reading), sensed_in_world(model, data, target), atol=1e-9)


def test_a_world_frame_target_and_the_velocity_command(make_env):
    quadruped = make_env("quadruped_flat", num_envs=1)
    assert velocity_command(quadruped) == "base_velocity" and position_targets(quadruped) == []
    cartpole = make_env("cartpole", num_envs=1)
    assert velocity_command(cartpole) is None and position_targets(cartpole) == []
    model = mujoco.MjModel.from_xml_string("""<mujoco><worldbody><body><joint type="slide" axis="1 0 0"/>
      <geom size="0.1"/><site name="tip" pos="0 0 0.3"/></body></worldbody>
      <sensor><framepos name="tip_pos" objtype="site" objname="tip"/></sensor></mujoco>""")
    data = mujoco.MjData(model)
    data.qpos[0] = 0.7
    mujoco.mj_forward(model, data)
    target = SensorTarget("goal", 0)
    np.testing.assert_allclose(target_in_world(model, data, target, np.array([1.0, 2.0, 3.0])), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(sensed_in_world(model, data, target), [0.7, 0.0, 0.3])


def test_a_target_marker_is_drawn_in_the_frame(make_env):
    """The target's green sphere (and the end effector's blue one) in the rendered frame."""
    env = make_env("arm_reach", num_envs=1)
    model = env.model
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    [target] = position_targets(env)
    renderer = FrameRenderer(model, CameraCfg(mode="fixed"), 320, 240)
    try:
        plain = renderer.render(data)
        markers = target_markers(model, data, [target], {"ee_target": np.array([0.45, 0.1, 0.35])}, 0.05)
        assert [m.rgba for m in markers][0] == GREEN and isinstance(markers[0], Marker) and len(markers) == 2
        marked = renderer.render(data, markers=markers)
    finally:
        renderer.close()
    green = lambda image: (image[..., 1] > 150) & (image[..., 0] < 100) & (image[..., 2] < 100)  # noqa: E731
    assert green(plain).sum() == 0 and green(marked).sum() > 30  # a 5 cm sphere ~2.4 m away: ~110 px


def test_an_orientation_target_draws_the_commanded_and_the_actual_tool_axis(make_env):
    """arm_pose at home: the tool points down; the command (roll pi, pitch 0, yaw pi) is the same
    orientation, so both arrows point down from the end effector; pitch 0.5 more tilts the
    commanded one by 0.5 rad. Marks also finds the reach target and no velocity command."""
    from robolearn.play_markers import Marks, orientation_arrows, orientation_targets

    env = make_env("arm_pose", num_envs=1)
    model = env.model
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    [target] = orientation_targets(env)
    assert target.command == "ee_orientation"
    commanded, actual = orientation_arrows(model, data, [target], {"ee_orientation": np.array([np.pi, 0.0, np.pi])}, 0.2)
    for arrow in (commanded, actual):
        np.testing.assert_allclose(arrow.start, sensed_in_world(model, data, target))
        np.testing.assert_allclose(arrow.end - arrow.start, [0.0, 0.0, -0.2], atol=1e-6)
    tilted, _ = orientation_arrows(model, data, [target], {"ee_orientation": np.array([np.pi, 0.5, np.pi])}, 0.2)
    direction = (tilted.end - tilted.start) / 0.2
    assert np.arccos(np.clip(-direction[2], -1, 1)) == pytest.approx(0.5, abs=1e-6)
    marks = Marks(env)
    assert marks.velocity is None and marks.commands == ["ee_orientation", "ee_target"]
    arrows, markers = marks.draw(model, data, {"ee_orientation": np.array([np.pi, 0.0, np.pi]), "ee_target": np.zeros(3)})
    assert len(arrows) == 2 and len(markers) == 2


@pytest.mark.parametrize(("task", "arrows", "spheres"), [("arm_pose", 2, 2), ("quadruped_flat", 2, 0), ("cartpole", 0, 0)])
def test_the_native_viewer_draws_what_the_videos_draw(make_env, task, arrows, spheres):
    """native_viewer.mark puts Marks.draw's arrows and spheres into the viewer's own scene, replacing
    the previous frame's: the arm's orientation arrows and reach spheres, the quadruped's velocity
    arrows (commanded and actual), nothing for a task without targets."""
    import contextlib
    from types import SimpleNamespace

    from robolearn.native_viewer import mark
    from robolearn.play_markers import Marks

    env = make_env(task, num_envs=1)
    data = mujoco.MjData(env.model)
    mujoco.mj_forward(env.model, data)
    viewer = SimpleNamespace(user_scn=mujoco.MjvScene(env.model, maxgeom=50), lock=contextlib.nullcontext)
    marks = Marks(env)
    values = {c: env.commands.get(c)[0].numpy() for c in marks.commands}
    if marks.velocity:  # moving forward at 0.5 m/s, asked for 0.8 m/s (a still robot draws no arrow)
        data.qvel[0], values[marks.velocity] = 0.5, np.array([0.8, 0.0, 0.0])
    for _ in range(2):
        mark(viewer, env.model, data, marks, values)
    kinds = [int(viewer.user_scn.geoms[k].type) for k in range(viewer.user_scn.ngeom)]
    assert kinds.count(int(mujoco.mjtGeom.mjGEOM_ARROW)) == arrows and kinds.count(int(mujoco.mjtGeom.mjGEOM_SPHERE)) == spheres


@pytest.mark.parametrize("group", [0, 3])
def test_a_robot_of_collision_geoms_alone_is_drawn(group):
    """A model whose only geoms are in group 3 (collision geoms, its visual meshes left out: MuJoCo
    draws groups 0-2) is still drawn, a red box in the middle of the frame, not an empty scene."""
    from robolearn.render import geom_groups

    model = mujoco.MjModel.from_xml_string(f"""<mujoco><worldbody><light pos="0 0 3"/>
      <body name="robot" pos="0 0 0.5"><freejoint/><geom type="box" size="0.3 0.3 0.3" rgba="1 0 0 1" group="{group}"/>
      </body></worldbody></mujoco>""")
    assert geom_groups(model).tolist() == ([1, 1, 1, 0, 0, 0] if group < 3 else [1, 1, 1, 1, 0, 0])
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    renderer = FrameRenderer(model, CameraCfg(mode="fixed"), 160, 120)
    try:
        image = renderer.render(data).astype(int)
    finally:
        renderer.close()
    red = (image[..., 0] > 120) & (image[..., 1] < 60) & (image[..., 2] < 60)
    assert red.sum() > 200, red.sum()


def test_a_camera_far_beyond_the_models_far_plane_still_sees_the_robot():
    """distance=100 on a 0.6 m robot: MuJoCo's far plane (50x the model's extent, ~40 m here) cut
    everything away and the video was black; the renderer moves it behind the robot."""
    model = mujoco.MjModel.from_xml_string("""<mujoco><worldbody><light pos="0 0 3"/>
      <body name="robot" pos="0 0 0.5"><freejoint/><geom type="box" size="0.3 0.3 0.3" rgba="1 0 0 1"/>
      </body></worldbody></mujoco>""")
    assert model.vis.map.zfar * model.stat.extent < 100
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    renderer = FrameRenderer(model, CameraCfg(mode="fixed", distance=100.0, elevation=0.0), 640, 480)
    try:
        image = renderer.render(data).astype(int)
    finally:
        renderer.close()
    red = (image[..., 0] > 120) & (image[..., 1] < 60) & (image[..., 2] < 60)
    assert 4 <= red.sum() < 100, red.sum()  # a few pixels: 0.6 m seen from 100 m
