"""`play command=` with a schedule: the task's first command follows it in every env, switching at
the scheduled time, through the recording loop."""

import numpy as np
import pytest
import torch

from robolearn.run_policy import policy_from_run
from robolearn.command_script import CommandScript
from robolearn.play import Clip, _record
from robolearn.render import CameraCfg, FrameRenderer


class CommandLog:
    """An Mp4Writer stand-in that notes the command at each frame."""

    def __init__(self, env, name):
        self.env, self.name, self.seen, self.frames = env, name, [], 0

    def write(self, image):
        assert image.shape == (48, 64, 3)
        self.seen.append(self.env.commands.get(self.name).clone())
        self.frames += 1


def test_a_schedule_switches_the_command_in_every_env_at_its_time(tiny_quadruped_run):
    env, actor_critic, _, _ = policy_from_run(tiny_quadruped_run, None, 3)
    try:
        name = env.commands.names[0]
        script = CommandScript.parse("[[0,0,0,0],[0.1,0.8,0,0.5]]")  # switch after 5 steps of 20 ms
        env.commands.hold(name, torch.tensor(script.at(0.0)))  # as play_run does
        log = CommandLog(env, name)
        _record(env, actor_critic, Clip([FrameRenderer(env.model, CameraCfg(), 64, 48)], log, "t", 1, 10, script))
        seen = torch.stack(log.seen)  # [frames, envs, 3]
        assert log.frames == 10
        assert torch.equal(seen[:5], torch.zeros(5, 3, 3))  # t = 0 .. 0.08 s: standing, in every env
        assert torch.allclose(seen[5:], torch.tensor([0.8, 0.0, 0.5]).expand(5, 3, 3))  # from t = 0.1 s on
        with torch.inference_mode():
            env.reset()  # held through resets
        assert np.allclose(env.commands.get(name).numpy(), [0.8, 0.0, 0.5])
    finally:
        env.close()


def test_the_camera_frames_the_robot_not_its_floor():
    """A 20 m floor plane and the world's own geoms do not count: a 0.2 x 0.1 x 1.4 m robot standing on
    its 0.4 m foot is 1.4 m tall and is filmed from 3 x 1.4 m (MuJoCo's meansize put it 10 m away)."""
    import mujoco

    from robolearn.render import fit_distance, robot_size

    model = mujoco.MjModel.from_xml_string("""<mujoco><worldbody>
      <geom type="plane" size="20 20 0.1"/><geom type="box" pos="5 0 0" size="3 3 3"/>
      <body pos="0 0 0.75"><joint type="slide" axis="1 0 0"/><geom type="box" size="0.1 0.05 0.7"/>
        <body pos="0 0 -0.7"><geom type="capsule" fromto="-0.2 0 0 0.2 0 0" size="0.02"/></body></body>
    </worldbody></mujoco>""")
    assert robot_size(model) == pytest.approx(1.4 + 0.02)  # the foot's capsule reaches 2 cm below the box
    assert fit_distance(model) == pytest.approx(3 * 1.42)


def test_a_frame_rate_the_control_rate_does_not_divide_is_said_with_why():
    """A frame is drawn every k control steps: fps=30 at 50 Hz control is 25 fps, and the line says why."""
    from robolearn.play import frame_rate

    assert frame_rate(30, 2, 0.02) == "25 fps (fps=30 asked; a frame every 2 control steps of 0.02 s)"
    assert frame_rate(25, 2, 0.02) == "25 fps"
    assert frame_rate(60, 1, 0.02) == "50 fps (fps=60 asked; a frame every control step of 0.02 s)"
