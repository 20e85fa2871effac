"""RoboLearn quadruped velocity-tracking task for Isaac Lab 3.0 (flat terrain), registered with Gymnasium.

Use with Isaac Lab's CLI:  isaaclab train --rl_library rsl_rl --task RoboLearn-Velocity-Flat-Quadruped \
    --external_callback robolearn_il_quadruped.register ...
"""
import gymnasium as gym

TASK_ID = "RoboLearn-Velocity-Flat-Quadruped"


def register():
    if TASK_ID not in gym.registry:
        gym.register(
            id=TASK_ID,
            entry_point="isaaclab.envs:ManagerBasedRLEnv",
            disable_env_checker=True,
            kwargs={
                "env_cfg_entry_point": f"{__name__}.flat_env_cfg:RoboLearnQuadrupedFlatEnvCfg",
                "rsl_rl_cfg_entry_point": f"{__name__}.agent_cfg:RoboLearnQuadrupedFlatPPORunnerCfg",
                "default_agent": "rsl_rl",
            },
        )
    return None


register()
