"""`play command=` with a schedule: the task's first command follows it in every env, switching at
the scheduled time, through the recording loop."""

import numpy as np
import torch

from robolearn.app import policy_from_run
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
