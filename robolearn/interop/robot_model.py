"""The robot= MJCF of an import: its joint order, the gains its position actuators carry, and
the edit that makes it the robot the run trained (the run's PD actuators and armature added where
the model has none, as mjlab adds them to its specs), for the bundle's copy and sim-to-sim; for a
bundle refereed without a robolearn task also the run's initial state as the `home` keyframe and
a ground plane where the model has none (the robot on the run's flat ground)."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from robolearn.errors import UserError
from robolearn_deploy.actuator_kinds import servo_bias
from robolearn.scene.floating_base import floating_base_joint
from robolearn.scene.ground import add_floor, has_ground
from robolearn.scene.sim_options import set_options

ONE_DOF = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


class RobotModel:
    def __init__(self, path: Path):
        if not path.is_file():
            raise UserError(f"robot={path} " + ("is a folder" if path.is_dir() else "does not exist") + "; give the robot's "
                            "MuJoCo model (.xml)")  # fmt: skip
        if path.suffix.lower() != ".xml":
            raise UserError(f"robot={path} is not an MJCF file (.xml); give the robot's MuJoCo model (.xml)")
        try:
            self.model = mujoco.MjModel.from_xml_path(str(path))
        except Exception as exc:
            raise UserError(f"robot={path} does not load in MuJoCo: {' '.join(str(exc).split())[:200]}") from None
        self.path = path
        m = self.model
        self.joint_ids = [j for j in range(m.njnt) if int(m.jnt_type[j]) in ONE_DOF]
        self.joints = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in self.joint_ids]

    def _joint_actuators(self) -> list[tuple[int, str]]:
        """(actuator id, joint name) of every actuator with a joint transmission, in model order."""
        m = self.model
        return [(a, mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(m.actuator_trnid[a, 0])))
                for a in range(m.nu) if int(m.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT)]  # fmt: skip

    def position_gains(self) -> dict[str, dict]:
        """{joint: {kp, kd}} for joints driven by a position servo."""
        m = self.model
        return {joint: {"kp": float(m.actuator_gainprm[a, 0]), "kd": float(-m.actuator_biasprm[a, 2])}
                for a, joint in self._joint_actuators() if servo_bias(self.model, a)}  # fmt: skip

    def joint_limits(self) -> dict[str, list[float]]:
        m = self.model
        return {n: [float(v) for v in m.jnt_range[j]] for j, n in zip(self.joint_ids, self.joints) if m.jnt_limited[j]}

    def actuated(self) -> set[str]:
        return {joint for _, joint in self._joint_actuators()}

    def actuators_of(self, joints: list[str]) -> list[str]:
        """The name of the actuator that drives each joint (its position servo where it has several)."""
        names = []
        for joint in joints:
            mine = sorted((a for a, j in self._joint_actuators() if j == joint), key=lambda a: not servo_bias(self.model, a))
            name = mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_ACTUATOR, mine[0]) if mine else None
            if not name:
                raise UserError(f"the actuator of joint {joint!r} in {self.path.name} has no name; name it in the MJCF "
                                "(sim2sim's referee drives actuators by name) or give task=<robolearn task of the robot>")  # fmt: skip
            names.append(name)
        return names

    def has_floor(self) -> bool:
        """A plane or height field on the world body: ground the robot can stand on."""
        return has_ground(self.model)

    def home_qpos(self, base_pos: list[float] | None, base_quat: list[float] | None, pose: dict[str, float]) -> np.ndarray:
        """The model's qpos (its `home` keyframe's, else qpos0) with the floating base at `base_pos`
        turned by `base_quat` (w, x, y, z) and the named joints at `pose`: a run's initial state."""
        m = self.model
        key = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "home")
        qpos = np.array(m.key_qpos[key] if key >= 0 else m.qpos0, dtype=np.float64)
        free = floating_base_joint(m)
        if free is not None and base_pos is not None:
            adr = int(m.jnt_qposadr[free])
            qpos[adr : adr + 3] = base_pos
            quat = np.asarray(base_quat if base_quat is not None else [1.0, 0.0, 0.0, 0.0], dtype=np.float64)
            norm = np.linalg.norm(quat)
            qpos[adr + 3 : adr + 7] = quat / norm if norm > 1e-9 else [1.0, 0.0, 0.0, 0.0]
        for j, name in zip(self.joint_ids, self.joints):
            if name in pose:
                qpos[m.jnt_qposadr[j]] = pose[name]
        return qpos

    def edit(self, actuators: list[dict], armature: dict[str, float], physics: dict | None = None,
             home: np.ndarray | None = None, floor: bool = False):  # fmt: skip
        """The spec edit for the bundle's model: a position actuator (the run's kp, kd, effort
        limit) for each action joint the model does not actuate, the run's armature and physics
        options (timestep, integrator, solver, ...: robolearn.scene.sim_options); with
        `home`, that qpos as the `home` keyframe; with `floor`, a ground plane. Keyframes that set
        ctrl get the added actuators' ctrl too (their joint's position in that keyframe)."""
        actuated = self.actuated()
        missing = [a for a in actuators if a["joint"] not in actuated]
        if not missing and not armature and not physics and home is None and not floor:
            return None
        m = self.model

        def apply(spec: mujoco.MjSpec) -> None:
            set_options(spec, physics or {})
            for name, value in armature.items():
                spec.joint(name).armature = value
            for a in missing:
                act = spec.add_actuator(name=f"{a['joint']}_pd", target=a["joint"], trntype=mujoco.mjtTrn.mjTRN_JOINT)
                act.set_to_position(kp=a["kp"], kv=a["kd"])
                if "effort_range" in a:
                    act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
                    act.forcerange = a["effort_range"]
            if home is not None:
                key = spec.key("home") or spec.add_key(name="home")
                key.qpos = list(home)
                key.qvel = []
            adr = {a["joint"]: int(m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, a["joint"])]) for a in missing}
            for key in spec.keys:
                if len(key.ctrl) and missing:  # the added actuators hold the keyframe's joint positions
                    qpos = key.qpos if len(key.qpos) else m.qpos0
                    key.ctrl = list(key.ctrl) + [float(qpos[adr[a["joint"]]]) for a in missing]
            if floor:
                add_floor(spec, _unused(m, mujoco.mjtObj.mjOBJ_GEOM, "floor"))
                if m.nlight == 0:
                    spec.worldbody.add_light(pos=[0, 0, 4], dir=[0, 0, -1])

        return apply


def _unused(m: mujoco.MjModel, kind: mujoco.mjtObj, name: str) -> str:
    """`name`, or `name_2`, `name_3`, ... where the model already has an object of that kind and name."""
    candidate, i = name, 1
    while mujoco.mj_name2id(m, kind, candidate) >= 0:
        i += 1
        candidate = f"{name}_{i}"
    return candidate
