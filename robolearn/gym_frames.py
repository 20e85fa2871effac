"""Frames of a robolearn gymnasium env (`render_mode="rgb_array"`): each environment's robot as
`robolearn play` films it (tracking camera, floor grid, velocity arrows, reach targets), without
the text overlay. MuJoCo renders offscreen (EGL or OSMesa), one environment after another."""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.play_markers import Marks
from robolearn.render import CameraCfg, FrameRenderer, set_state

WIDTH, HEIGHT = 640, 480


class EnvFrames:
    def __init__(self, env, width: int = WIDTH, height: int = HEIGHT):
        self.env, self.model = env, env.model
        self.renderer = FrameRenderer(self.model, CameraCfg(mode="track"), width, height)
        self.data = mujoco.MjData(self.model)
        self.marks = Marks(env)

    def frame(self, i: int) -> np.ndarray:
        """Environment i as it is now: an RGB array [height, width, 3] (uint8)."""
        env, data = self.env, self.data
        set_state(self.model, data, env.physics.qpos[i].double().cpu().numpy(), env.physics.qvel[i].double().cpu().numpy())
        values = {name: env.commands.get(name)[i].cpu().numpy() for name in self.marks.commands}
        arrows, markers = self.marks.draw(self.model, data, values)
        return self.renderer.render(data, arrows, markers=markers)

    def close(self) -> None:
        self.renderer.close()
