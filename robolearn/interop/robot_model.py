"""The robot= MJCF of an import: its joint order, the gains its position actuators carry, and
the edit that makes it the robot the run trained (the run's PD actuators and armature added where
the model has none, as mjlab adds them to its specs), for the bundle's copy and sim-to-sim."""

from __future__ import annotations

from pathlib import Path

import mujoco

from robolearn.errors import UserError

ONE_DOF = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


class RobotModel:
    def __init__(self, path: Path):
        if not path.is_file():
            raise UserError(f"robot={path} does not exist; give the robot's MuJoCo model (.xml)")
        try:
            self.model = mujoco.MjModel.from_xml_path(str(path))
        except Exception as exc:
            raise UserError(f"robot={path} does not load in MuJoCo: {' '.join(str(exc).split())[:200]}") from None
        self.path = path
        m = self.model
        self.joint_ids = [j for j in range(m.njnt) if int(m.jnt_type[j]) in ONE_DOF]
        self.joints = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in self.joint_ids]

    def position_gains(self) -> dict[str, dict]:
        """{joint: {kp, kd}} for joints driven by a position servo (gear 1, affine bias)."""
        m, out = self.model, {}
        for a in range(m.nu):
            if int(m.actuator_trntype[a]) != int(mujoco.mjtTrn.mjTRN_JOINT):
                continue
            gain, bias = m.actuator_gainprm[a], m.actuator_biasprm[a]
            if int(m.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_AFFINE) and bias[1] != 0 and bias[1] == -gain[0]:
                name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(m.actuator_trnid[a, 0]))
                out[name] = {"kp": float(gain[0]), "kd": float(-bias[2])}
        return out

    def joint_limits(self) -> dict[str, list[float]]:
        m = self.model
        return {n: [float(v) for v in m.jnt_range[j]] for j, n in zip(self.joint_ids, self.joints) if m.jnt_limited[j]}

    def actuated(self) -> set[str]:
        m = self.model
        return {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(m.actuator_trnid[a, 0]))
                for a in range(m.nu) if int(m.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT)}  # fmt: skip

    def edit(self, actuators: list[dict], armature: dict[str, float]):
        """The spec edit for the bundle's model: a position actuator (the run's kp, kd, effort
        limit) for each action joint the model does not actuate, and the run's armature."""
        actuated = self.actuated()
        missing = [a for a in actuators if a["joint"] not in actuated]
        if not missing and not armature:
            return None

        def apply(spec: mujoco.MjSpec) -> None:
            for name, value in armature.items():
                spec.joint(name).armature = value
            for a in missing:
                act = spec.add_actuator(name=f"{a['joint']}_pd", target=a["joint"], trntype=mujoco.mjtTrn.mjTRN_JOINT)
                act.set_to_position(kp=a["kp"], kv=a["kd"])
                if "effort_range" in a:
                    act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
                    act.forcerange = a["effort_range"]

        return apply
