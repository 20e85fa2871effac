"""robolearn's quadruped in Isaac Lab: flat-ground velocity tracking, built the way Isaac Lab builds
its stock Go2 flat task (LocomotionVelocityRoughEnvCfg, then the flat variant), with assets from
robolearn (the robot converted from assets/quadruped.xml, a local ground plane).

Robot constants are the MJCF's and robolearn's quadruped_flat task's: default pose hip +-0.1,
thigh 0.8 front / 1.0 rear, calf -1.5; PD kp 25, kd 0.5; effort limits 23.7 (hip, thigh) and
45.4 (calf); armature 0.01. Newton keeps the MJCF's depth-first joint order.
"""

from isaaclab_newton.sim.schemas import NewtonArticulationCfg
from isaaclab_tasks.core.velocity.velocity_env_cfg import LocomotionVelocityRoughEnvCfg

import isaaclab.sim as sim_utils
from isaaclab.actuators import ImplicitActuatorCfg
from isaaclab.assets.articulation import ArticulationCfg
from isaaclab.utils import configclass

from robolearn.isaaclab.examples.local_ground import LocalGroundImporter
from robolearn.paths import assets_dir

BASE = "trunk"

QUADRUPED = ArticulationCfg(
    prim_path="{ENV_REGEX_NS}/Robot",
    spawn=sim_utils.UsdFileCfg(
        usd_path=str(assets_dir() / "isaaclab" / "quadruped.usdc"),
        activate_contact_sensors=True,
        articulation_props=NewtonArticulationCfg(self_collision_enabled=False),
    ),
    init_state=ArticulationCfg.InitialStateCfg(
        pos=(0.0, 0.0, 0.34),
        joint_pos={".*L_hip_joint": 0.1, ".*R_hip_joint": -0.1, "F[L,R]_thigh_joint": 0.8, "R[L,R]_thigh_joint": 1.0,
                   ".*_calf_joint": -1.5},  # fmt: skip
        joint_vel={".*": 0.0},
    ),
    soft_joint_pos_limit_factor=0.9,
    actuators={
        "legs": ImplicitActuatorCfg(
            joint_names_expr=[".*_hip_joint", ".*_thigh_joint", ".*_calf_joint"],
            stiffness=25.0,
            damping=0.5,
            joint_effort_limit={".*_hip_joint": 23.7, ".*_thigh_joint": 23.7, ".*_calf_joint": 45.4},
            armature=0.01,
        ),
    },
)


@configclass
class QuadrupedFlatEnvCfg(LocomotionVelocityRoughEnvCfg):
    def __post_init__(self):
        super().__post_init__()
        # scene: the converter nests the bodies (Robot/Geometry/trunk/FL_hip/...), so the contact
        # sensor matches bodies at any depth; flat local ground, no height scanner
        self.scene.robot = QUADRUPED
        self.scene.contact_forces.prim_path = "{ENV_REGEX_NS}/Robot/.*"
        self.scene.terrain.terrain_type = "plane"
        self.scene.terrain.terrain_generator = None
        self.scene.terrain.class_type = LocalGroundImporter
        self.scene.height_scanner = None
        self.observations.policy.height_scan = None
        # physics: Newton's MuJoCo Warp solver, sized for flat ground (as the stock flat tasks)
        newton_mjwarp = self.sim.physics.newton_mjwarp
        newton_mjwarp.solver_cfg.njmax = 65
        newton_mjwarp.solver_cfg.nconmax = 35
        self.sim.physics.default = newton_mjwarp
        # actions, events, rewards and terminations as the stock Go2 flat task, on this robot's bodies
        self.actions.joint_pos.scale = 0.25
        for event in (self.events.add_base_mass, self.events.base_com, self.events.base_external_force_torque):
            event.params["asset_cfg"].body_names = BASE
        self.rewards.feet_air_time.params["sensor_cfg"].body_names = ".*_calf"  # the feet are spheres on the calves
        self.rewards.undesired_contacts.params["sensor_cfg"].body_names = ".*_thigh"
        self.terminations.base_contact.params["sensor_cfg"].body_names = BASE
        self.rewards.track_lin_vel_xy_exp.weight = 1.5
        self.rewards.track_ang_vel_z_exp.weight = 0.75
        self.rewards.dof_torques_l2.weight = -0.0002
        self.rewards.dof_acc_l2.weight = -2.5e-7
        self.rewards.action_rate_l2.weight = -0.005
        self.rewards.feet_air_time.weight = 0.25
        self.rewards.flat_orientation_l2.weight = -2.5
        self.curriculum.terrain_levels = None
