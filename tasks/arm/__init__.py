"""Arm reaching: a 6-DoF cobot-class arm (assets/arm.xml) brings its end-effector site to a
commanded position in its base frame, obstacle-free (arm_reach), and also to a commanded
orientation (arm_pose). The robot's constants (link lengths, masses,
joint limits, servo gains, the `home` pose) live in the MJCF; the reaching terms are generic
(robolearn/mdp/manipulation.py)."""

from pathlib import Path

from robolearn.registry import TaskPlugin

REACH = TaskPlugin(config=Path(__file__).with_name("reach.yaml"))
POSE = TaskPlugin(config=Path(__file__).with_name("pose.yaml"))
