#!/bin/bash
cd /tmp/il/work
ISAACSIM_ASSET_ROOT=/tmp/il/assets PYTHONPATH=/tmp/il_fixture/scripts /tmp/il/venv/bin/isaaclab train --rl_library rsl_rl --task RoboLearn-Velocity-Flat-Quadruped --external_callback robolearn_il_quadruped.register --num_envs 32 --device cpu --max_iterations 5 --seed 42 agent.device=cpu "$@"
