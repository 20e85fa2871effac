"""The fixture's env: robolearn's shipped Isaac Lab example (robolearn/isaaclab/examples/quadruped_flat.py).

The committed fixture (2026-11-24) was made with an earlier standalone copy of the same settings
that loaded the robot USD and the ground plane through ISAACSIM_ASSET_ROOT (HOW.md, steps 2-3);
the example ships both in robolearn's assets instead. The values are the same.
"""

from robolearn.isaaclab.examples.quadruped_flat import QuadrupedFlatEnvCfg as RoboLearnQuadrupedFlatEnvCfg

__all__ = ["RoboLearnQuadrupedFlatEnvCfg"]
