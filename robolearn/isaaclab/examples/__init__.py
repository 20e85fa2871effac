"""robolearn's own Isaac Lab tasks, with assets that ship in robolearn (they run offline).

    RoboLearn-Velocity-Flat-Quadruped   robolearn's 12-joint quadruped (assets/quadruped.xml, converted
                                        to assets/isaaclab/quadruped.usdc with mujoco-usd-converter)
                                        tracking a base velocity on flat ground, built like Isaac
                                        Lab's stock Go2 flat task

Registering costs nothing: the configs (which import Isaac Lab) load when the task is resolved.
"""

import gymnasium as gym

QUADRUPED_FLAT = "RoboLearn-Velocity-Flat-Quadruped"

if QUADRUPED_FLAT not in gym.registry:
    gym.register(
        id=QUADRUPED_FLAT,
        entry_point="isaaclab.envs:ManagerBasedRLEnv",
        disable_env_checker=True,
        kwargs={
            "env_cfg_entry_point": f"{__name__}.quadruped_flat:QuadrupedFlatEnvCfg",
            "rsl_rl_cfg_entry_point": f"{__name__}.quadruped_agent:QuadrupedFlatRunnerCfg",
            # the robolearn task of the same robot: exported bundles carry its MJCF + task.yaml for sim2sim
            "robolearn_sim2sim_task": "quadruped_flat",
        },
    )
