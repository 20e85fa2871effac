"""An arm's end effector as the reach and pose templates see it: a point and a frame on a body,
looked at from the arm's base body, and where random joint configurations take them."""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.scaffold.inspect_model import ModelInfo


@dataclass
class Tool:
    body: int
    """The body the end effector is on."""
    point: np.ndarray
    """The end effector's point in the body's frame [m]."""
    frame: np.ndarray
    """The end effector's orientation in the body's frame (a site's quat; identity for a new site)."""
    ref: int
    """The body whose frame the targets are in (0: the world)."""

    def __post_init__(self):
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, np.asarray(self.frame, dtype=float))
        self._frame_rot = rot.reshape(3, 3)

    def pose(self, data: mujoco.MjData) -> tuple[np.ndarray, np.ndarray]:
        """The end effector's position [3] and rotation matrix [3, 3] in `ref`'s frame (after kinematics)."""
        ref_rot, body_rot = data.xmat[self.ref].reshape(3, 3), data.xmat[self.body].reshape(3, 3)
        world = data.xpos[self.body] + body_rot @ self.point
        return ref_rot.T @ (world - data.xpos[self.ref]), ref_rot.T @ body_rot @ self._frame_rot

    def samples(self, info: ModelInfo, model: mujoco.MjModel, joints: list[str], count: int = 2000, seed: int = 0,
                around: np.ndarray | None = None, spread: float = 0.0) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """Positions [count, 3] and rotations [count, 3, 3] over random configurations of `joints`
        within their limits (a joint without limits: a full turn, or 0.5 m either way for a slide),
        the others at qpos0; with `around` (a qpos), each joint within `spread` of its value there
        and the others at it."""
        positions, rotations = np.zeros((count, 3)), np.zeros((count, 3, 3))
        data = mujoco.MjData(model)
        for k, _ in enumerate(self.configurations(info, model, joints, data, count, seed, around, spread)):
            positions[k], rotations[k] = self.pose(data)
        return positions, rotations

    def rank(self, info: ModelInfo, model: mujoco.MjModel, joints: list[str], tries: int = 20) -> int:
        """How many independent directions (of 6: 3 translations, 3 rotations) `joints` move the end
        effector in relative to `ref`: the highest rank of their Jacobian over random configurations."""
        data = mujoco.MjData(model)
        dofs = [int(model.joint(name).dofadr[0]) for name in joints]
        best = 0
        for _ in self.configurations(info, model, joints, data, tries, seed=1):
            mujoco.mj_comPos(model, data)  # the Jacobian reads the joints' motion axes (cdof)
            jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
            point = data.xpos[self.body] + data.xmat[self.body].reshape(3, 3) @ self.point
            mujoco.mj_jac(model, data, jacp, jacr, point, self.body)
            jac = np.vstack([jacp, jacr])[:, dofs]  # the chain's joints are below ref: they do not move it
            best = max(best, int(np.linalg.matrix_rank(jac, tol=1e-6 * max(1.0, float(np.abs(jac).max())))))
        return best

    @staticmethod
    def configurations(info: ModelInfo, model: mujoco.MjModel, joints: list[str], data: mujoco.MjData, count: int,
                       seed: int, around: np.ndarray | None = None, spread: float = 0.0):  # fmt: skip
        """Set `data` to `count` random configurations of `joints` (kinematics computed), one per
        iteration (`around`, `spread`: as samples())."""
        gen = np.random.default_rng(seed)
        limits = {j.name: j.range or ((-0.5, 0.5) if j.slide else (-np.pi, np.pi)) for j in info.joints}
        addresses = [(int(model.joint(name).qposadr[0]), limits[name]) for name in joints]
        if around is not None:  # the limits cut down to `spread` either side of `around`
            centre = [(adr, low, high, float(np.clip(around[adr], low, high))) for adr, (low, high) in addresses]
            addresses = [(adr, (max(low, c - spread), min(high, c + spread))) for adr, low, high, c in centre]
        for k in range(count):
            data.qpos[:] = model.qpos0 if around is None else around
            for adr, (low, high) in addresses:
                data.qpos[adr] = gen.uniform(low, high)
            mujoco.mj_kinematics(model, data)
            yield k
