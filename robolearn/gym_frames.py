"""Frames of a robolearn gymnasium env (`render_mode="rgb_array"`): each environment's robot as
`robolearn play` films it (tracking camera, floor grid, velocity arrows, reach targets), without
the text overlay. MuJoCo renders offscreen (EGL or OSMesa), one environment after another."""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.play import velocity_arrows
from robolearn.play_markers import marker_radius, position_targets, target_markers, velocity_command
from robolearn.render import CameraCfg, FrameRenderer, set_state
from robolearn.scene.floating_base import floating_base_addresses

WIDTH, HEIGHT = 640, 480


class EnvFrames:
    def __init__(self, env, width: int = WIDTH, height: int = HEIGHT):
        self.env, self.model = env, env.model
        self.renderer = FrameRenderer(self.model, CameraCfg(mode="track"), width, height)
        self.data = mujoco.MjData(self.model)
        self.base = floating_base_addresses(self.model)
        self.velocity, self.targets = velocity_command(env), position_targets(env)
        self.radius = marker_radius(self.model)

    def frame(self, i: int) -> np.ndarray:
        """Environment i as it is now: an RGB array [height, width, 3] (uint8)."""
        env, data = self.env, self.data
        set_state(self.model, data, env.physics.qpos[i].double().cpu().numpy(), env.physics.qvel[i].double().cpu().numpy())
        command = env.commands.get(self.velocity)[i].cpu().numpy() if self.velocity else None
        values = {t.command: env.commands.get(t.command)[i].cpu().numpy() for t in self.targets}
        arrows = velocity_arrows(data.qpos, data.qvel, command, self.base)
        return self.renderer.render(data, arrows, markers=target_markers(self.model, data, self.targets, values, self.radius))

    def close(self) -> None:
        self.renderer.close()
