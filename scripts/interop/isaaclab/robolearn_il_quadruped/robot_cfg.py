"""ArticulationCfg for the robolearn quadruped (USD converted from the bundle's MJCF with mujoco-usd-converter).

Default pose and PD gains are those of docs/reference/quadruped_flat_cpu/bundle/robot.yaml:
hip +-0.1 (left +, right -), front thigh 0.8, rear thigh 1.0, calf -1.5; kp 25, kd 0.5;
effort limits hip/thigh 23.7, calf 45.4; joint armature 0.01 (MJCF default).
"""
from isaaclab_newton.sim.schemas import NewtonArticulationCfg

import isaaclab.sim as sim_utils
from isaaclab.actuators import ImplicitActuatorCfg
from isaaclab.assets.articulation import ArticulationCfg
from isaaclab.utils.assets import ISAACLAB_NUCLEUS_DIR

ROBOLEARN_QUADRUPED_CFG = ArticulationCfg(
    spawn=sim_utils.UsdFileCfg(
        usd_path=f"{ISAACLAB_NUCLEUS_DIR}/Robots/RoboLearn/Quadruped/quadruped.usdc",
        activate_contact_sensors=True,
        articulation_props=NewtonArticulationCfg(self_collision_enabled=False),
    ),
    init_state=ArticulationCfg.InitialStateCfg(
        pos=(0.0, 0.0, 0.34),
        joint_pos={
            ".*L_hip_joint": 0.1,
            ".*R_hip_joint": -0.1,
            "F[L,R]_thigh_joint": 0.8,
            "R[L,R]_thigh_joint": 1.0,
            ".*_calf_joint": -1.5,
        },
        joint_vel={".*": 0.0},
    ),
    soft_joint_pos_limit_factor=0.9,
    actuators={
        "legs": ImplicitActuatorCfg(
            joint_names_expr=[".*_hip_joint", ".*_thigh_joint", ".*_calf_joint"],
            stiffness={".*_hip_joint": 25.0, ".*_thigh_joint": 25.0, ".*_calf_joint": 25.0},
            damping={".*_hip_joint": 0.5, ".*_thigh_joint": 0.5, ".*_calf_joint": 0.5},
            joint_effort_limit={".*_hip_joint": 23.7, ".*_thigh_joint": 23.7, ".*_calf_joint": 45.4},
            armature=0.01,
        ),
    },
)
