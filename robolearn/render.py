"""Frames of a robot for videos: MuJoCo's offscreen renderer plus what makes motion readable.

    frames = FrameRenderer(model, CameraCfg(mode="track"), width=640, height=480)
    image = frames.render(data, arrows=[Arrow(start, end, GREEN)], lines=["return 12.3"])

- a floor grid (1 m lines, drawn as scene decorations on top of whatever floor the MJCF has), so
  that forward motion shows even when the camera follows the robot over a plain floor;
- a camera that tracks the robot's root body (`track`), stays where it is (`fixed`), or is placed
  by distance/elevation/azimuth around a point (`free`); its distance defaults to a few times the
  robot's size, so a small robot is not a speck;
- arrows (a command next to what the robot does) and lines of text in the top-left corner.

Headless rendering needs EGL or OSMesa: on Linux, importing robolearn sets MUJOCO_GL=egl unless
the user chose one (MuJoCo reads it when it is first imported).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import mujoco
import numpy as np

from robolearn.errors import UserError, one_line
from robolearn.scene.floating_base import root_body
from robolearn.scene.geometry import geom_corners
from robolearn.scene.ground import is_ground

CAMERAS = ("track", "fixed", "free")
GREEN, BLUE, RED = (0.1, 0.85, 0.2, 1.0), (0.15, 0.45, 1.0, 1.0), (0.95, 0.2, 0.15, 1.0)
GRID_SPACING_M = 1.0
GRID_HALF_LINES = 12


@dataclass
class CameraCfg:
    mode: str = "track"
    """track: follow the root body; fixed: where the first frame put it; free: distance/elevation/
    azimuth around `lookat`."""
    distance: float | None = None
    """Metres from the point looked at; None: fit_distance(model), 3x the robot's size (at least 1 m)."""
    elevation: float = -20.0
    azimuth: float = 135.0
    lookat: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])


@dataclass
class Arrow:
    start: np.ndarray
    end: np.ndarray
    rgba: tuple[float, float, float, float]


@dataclass
class Marker:
    """A sphere drawn into the frame (a reach target, the point that reaches for it)."""

    pos: np.ndarray
    radius: float
    rgba: tuple[float, float, float, float]


def robot_size(model: mujoco.MjModel) -> float:
    """What the camera frames: the longest side of the box around the robot's geoms at the model's
    default pose (the world's geoms, planes and height fields excluded), at least 0.3 m. (MuJoCo's
    own meansize counts a gymnasium hopper's 20 m floor, which framed the 1.4 m robot from 10 m.)"""
    geoms = [g for g in range(model.ngeom) if model.geom_bodyid[g] > 0 and not is_ground(model, g)]
    if not geoms:
        return float(max(model.stat.extent, 0.3))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    points = np.concatenate([geom_corners(model, data, g) for g in geoms])
    return float(max(np.ptp(points, axis=0).max(), 0.3))


def geom_groups(model: mujoco.MjModel) -> np.ndarray:
    """The geom groups to draw: MuJoCo's default (0-2), plus every group that holds a geom of a body
    where no geom of a body is drawn by default (a model whose only geoms are collision geoms in
    group 3, its visual meshes left out, would be an invisible robot)."""
    groups = np.array([1, 1, 1, 0, 0, 0], dtype=np.uint8)
    own = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) > 0]
    if own and all(int(model.geom_group[g]) > 2 for g in own):
        for g in own:
            groups[min(int(model.geom_group[g]), 5)] = 1
    return groups


def fit_distance(model: mujoco.MjModel) -> float:
    """How far a camera stands from the robot to frame it (videos, the native and the web viewer)."""
    return max(1.0, 3.0 * robot_size(model))


def set_depth_range(model: mujoco.MjModel, distance: float) -> None:
    """Move the far plane out for a camera `distance` metres from the robot beyond what MuJoCo's
    default (50x the model's extent) frames: past it the frame was black (distance=100 on the
    quadruped), and an infinite floor plane ends well before it. 40x the distance draws the floor to
    the horizon; the near plane moves out with it (1 % of the distance) to keep the depth buffer's
    precision. A default framing (fit_distance) is left as it was."""
    extent = max(float(model.stat.extent), 1e-3)
    if distance <= 0.1 * model.vis.map.zfar * extent:
        return
    model.vis.map.zfar = 40.0 * distance / extent
    model.vis.map.znear = max(float(model.vis.map.znear), 0.01 * distance / extent)


class FrameRenderer:
    def __init__(self, model: mujoco.MjModel, camera: CameraCfg, width: int = 640, height: int = 480,
                 fast: bool = False):  # fmt: skip
        """`fast`: no anti-aliasing, shadows or reflections, several times cheaper on a software
        renderer (training clips)."""
        if camera.mode not in CAMERAS:
            raise UserError(f"camera={camera.mode} is not a camera; valid: {', '.join(CAMERAS)}")
        model.vis.headlight.ambient[:] = np.maximum(model.vis.headlight.ambient, 0.35)  # unlit models render black
        model.vis.headlight.diffuse[:] = np.maximum(model.vis.headlight.diffuse, 0.55)
        model.vis.map.znear = min(model.vis.map.znear, 0.01 / max(model.stat.extent, 1e-3))
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        if fast:
            model.vis.quality.offsamples = 0
        distance = camera.distance if camera.distance is not None else fit_distance(model)
        set_depth_range(model, distance)  # before the GL context: it sizes an infinite plane's drawing by it
        try:
            with warnings.catch_warnings(record=True) as said:  # GLFW warns (no display) before it fails: one line
                warnings.simplefilter("always")
                self.renderer = mujoco.Renderer(model, height, width)
        except Exception as exc:  # no EGL/OSMesa, no GL library
            backend = os.environ.get("MUJOCO_GL", "egl")
            why = "".join(f"{one_line(w.message)}; " for w in said[:1])
            raise UserError(f"cannot render offscreen with MUJOCO_GL={backend} ({why}{type(exc).__name__}: {exc}); "
                            "install EGL (libegl1) or OSMesa (libosmesa6) and set MUJOCO_GL=egl or osmesa") from None  # fmt: skip
        for w in said:  # a warning of a renderer that works is still shown
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
        if fast:
            self.renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
            self.renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
        self.model, self.width, self.height = model, width, height
        self.camera = mujoco.MjvCamera()
        self.camera.distance = distance
        self.camera.elevation, self.camera.azimuth = camera.elevation, camera.azimuth
        self.camera.lookat[:] = camera.lookat
        self.mode = camera.mode
        self._root = root_body(model)
        if camera.mode == "track" and self._root > 0:
            self.camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
            self.camera.trackbodyid = self._root
        else:
            self.camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        self._placed = camera.mode == "free"
        self.option = mujoco.MjvOption()
        self.option.geomgroup[:] = geom_groups(model)

    def render(self, data: mujoco.MjData, arrows: list[Arrow] = (), lines: list[str] = (),
               markers: list[Marker] = ()) -> np.ndarray:  # fmt: skip
        """One RGB frame [height, width, 3] of `data` (its kinematics must be current)."""
        if not self._placed:  # fixed: look at where the robot starts, then stay
            self.camera.lookat[:] = data.xpos[self._root] if self._root > 0 else 0.0
            self._placed = True
        self.renderer.update_scene(data, self.camera, scene_option=self.option)
        scene = self.renderer.scene
        centre = data.xpos[1] if self.model.nbody > 1 else np.zeros(3)
        self._grid(scene, centre)
        for arrow in arrows:
            add_arrow(scene, arrow)
        for marker in markers:
            add_sphere(scene, marker)
        image = self.renderer.render()
        return overlay(image, lines) if lines else image

    def _grid(self, scene: mujoco.MjvScene, centre: np.ndarray) -> None:
        """Lines every GRID_SPACING_M on the ground plane z=0 around the robot, fixed in the world."""
        base = np.round(centre[:2] / GRID_SPACING_M) * GRID_SPACING_M
        half = GRID_HALF_LINES * GRID_SPACING_M
        for k in range(-GRID_HALF_LINES, GRID_HALF_LINES + 1):
            for axis in (0, 1):
                start, end = np.zeros(3), np.zeros(3)
                start[axis] = end[axis] = base[axis] + k * GRID_SPACING_M
                start[1 - axis], end[1 - axis] = base[1 - axis] - half, base[1 - axis] + half
                start[2] = end[2] = 0.002
                _connector(scene, mujoco.mjtGeom.mjGEOM_LINE, 2.0, start, end, (0.95, 0.95, 0.95, 0.55))

    def close(self) -> None:
        self.renderer.close()


def _connector(scene: mujoco.MjvScene, kind: mujoco.mjtGeom, width: float, start: np.ndarray, end: np.ndarray,
               rgba: tuple[float, ...]) -> None:  # fmt: skip
    """A line or arrow from start to end, added to the scene's decorations (dropped when it is full)."""
    if scene.ngeom >= scene.maxgeom:
        return
    geom = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(geom, kind, np.zeros(3), np.zeros(3), np.eye(3).ravel(), np.asarray(rgba, np.float32))
    mujoco.mjv_connector(geom, kind, width, start, end)
    scene.ngeom += 1


def add_arrow(scene: mujoco.MjvScene, arrow: Arrow) -> None:
    """An arrow added to the scene's decorations (dropped when it is full)."""
    _connector(scene, mujoco.mjtGeom.mjGEOM_ARROW, 0.02, arrow.start, arrow.end, arrow.rgba)


def add_sphere(scene: mujoco.MjvScene, marker: Marker) -> None:
    """A sphere added to the scene's decorations (dropped when it is full)."""
    if scene.ngeom >= scene.maxgeom:
        return
    mujoco.mjv_initGeom(scene.geoms[scene.ngeom], mujoco.mjtGeom.mjGEOM_SPHERE, np.full(3, marker.radius),
                        np.asarray(marker.pos, np.float64), np.eye(3).ravel(), np.asarray(marker.rgba, np.float32))  # fmt: skip
    scene.ngeom += 1


def set_state(model: mujoco.MjModel, data: mujoco.MjData, qpos: np.ndarray, qvel: np.ndarray) -> None:
    """Put one environment's state into `data` and compute its kinematics: what render() draws."""
    data.qpos[:] = qpos
    data.qvel[:] = qvel
    mujoco.mj_forward(model, data)



def overlay(image: np.ndarray, lines: list[str]) -> np.ndarray:
    """Lines of text on a dark band in the top-left corner."""
    from PIL import Image, ImageDraw

    picture = Image.fromarray(image)
    draw = ImageDraw.Draw(picture, "RGBA")
    height = 12 * len(lines) + 8
    width = min(image.shape[1], 8 + 6 * max(len(line) for line in lines))
    draw.rectangle([0, 0, width, height], fill=(0, 0, 0, 140))
    for k, line in enumerate(lines):
        draw.text((4, 4 + 12 * k), line, fill=(255, 255, 255, 255))
    return np.asarray(picture)


def tile(images: list[np.ndarray]) -> np.ndarray:
    """Several frames of one size side by side, in rows of ceil(sqrt(n))."""
    cols = int(np.ceil(np.sqrt(len(images))))
    rows = int(np.ceil(len(images) / cols))
    h, w, c = images[0].shape
    out = np.zeros((rows * h, cols * w, c), np.uint8)
    for k, image in enumerate(images):
        out[(k // cols) * h : (k // cols + 1) * h, (k % cols) * w : (k % cols + 1) * w] = image
    return out


class Mp4Writer:
    """H.264 (yuv420p, plays everywhere) through the ffmpeg that imageio-ffmpeg ships. `fast`: x264's
    veryfast preset, about half the encoder's CPU time (training clips)."""

    def __init__(self, path, width: int, height: int, fps: float, fast: bool = False):
        import imageio_ffmpeg

        self.path = path
        self._writer = imageio_ffmpeg.write_frames(str(path), (width, height), fps=fps, codec="libx264",
                                                   pix_fmt_out="yuv420p", quality=7, macro_block_size=1,
                                                   ffmpeg_log_level="error",
                                                   output_params=["-preset", "veryfast"] if fast else None)  # fmt: skip
        self._writer.send(None)
        self.frames = 0

    def write(self, image: np.ndarray) -> None:
        self._writer.send(np.ascontiguousarray(image))
        self.frames += 1

    def close(self) -> None:
        self._writer.close()
