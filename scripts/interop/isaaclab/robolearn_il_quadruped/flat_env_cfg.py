"""Flat velocity-tracking env for the robolearn quadruped, built like Isaac Lab's stock
``UnitreeGo2RoughEnvCfg`` -> ``UnitreeGo2FlatEnvCfg`` pair (core/velocity/config/go2)."""
from isaaclab.utils import configclass, replace

from isaaclab_tasks.core.velocity.velocity_env_cfg import LocomotionVelocityRoughEnvCfg

from .robot_cfg import ROBOLEARN_QUADRUPED_CFG

BASE = "trunk"


@configclass
class RoboLearnQuadrupedRoughEnvCfg(LocomotionVelocityRoughEnvCfg):
    def __post_init__(self):
        super().__post_init__()
        # scene
        self.scene.robot = replace(ROBOLEARN_QUADRUPED_CFG, prim_path="{ENV_REGEX_NS}/Robot")
        self.scene.height_scanner.prim_path = "{ENV_REGEX_NS}/Robot/" + BASE
        # the MJCF->USD converter nests the rigid bodies (Robot/Geometry/trunk/FL_hip/...), unlike the
        # flat body layout of Isaac Lab's robot USDs, so the contact sensor matches bodies at any depth
        self.scene.contact_forces.prim_path = "{ENV_REGEX_NS}/Robot/.*"
        # actions (same as the stock Unitree configs)
        self.actions.joint_pos.scale = 0.25
        # events: the base body is called "trunk" in this model
        self.events.add_base_mass.params["asset_cfg"].body_names = BASE
        self.events.base_com.params["asset_cfg"].body_names = BASE
        self.events.base_external_force_torque.params["asset_cfg"].body_names = BASE
        # rewards (weights as the stock Go2 config); the feet are spheres on the calf bodies
        self.rewards.feet_air_time.params["sensor_cfg"].body_names = ".*_calf"
        self.rewards.feet_air_time.weight = 0.01
        self.rewards.undesired_contacts.params["sensor_cfg"].body_names = ".*_thigh"
        self.rewards.dof_torques_l2.weight = -0.0002
        self.rewards.track_lin_vel_xy_exp.weight = 1.5
        self.rewards.track_ang_vel_z_exp.weight = 0.75
        self.rewards.dof_acc_l2.weight = -2.5e-7
        self.rewards.action_rate_l2.weight = -0.005
        # terminations
        self.terminations.base_contact.params["sensor_cfg"].body_names = BASE


@configclass
class RoboLearnQuadrupedFlatEnvCfg(RoboLearnQuadrupedRoughEnvCfg):
    def __post_init__(self):
        super().__post_init__()
        # physics (as the stock flat configs)
        newton_mjwarp = self.sim.physics.newton_mjwarp
        newton_mjwarp.solver_cfg.njmax = 65
        newton_mjwarp.solver_cfg.nconmax = 35
        self.sim.physics.default = newton_mjwarp
        # scene
        self.scene.terrain.terrain_type = "plane"
        self.scene.terrain.terrain_generator = None
        self.scene.height_scanner = None
        # observations
        self.observations.policy.height_scan = None
        # rewards
        self.rewards.flat_orientation_l2.weight = -2.5
        self.rewards.feet_air_time.weight = 0.25
        # curriculum
        self.curriculum.terrain_levels = None
