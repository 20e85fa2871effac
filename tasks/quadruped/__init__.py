"""Quadruped velocity tracking: a 12-joint robot follows a commanded base velocity (forward,
lateral, yaw rate). Robot constants: robot.py; flat ground: flat.yaml; rough terrain with
curricula: rough.yaml (flat.yaml plus what differs)."""

from pathlib import Path

from robolearn.registry import TaskPlugin

from . import robot

FLAT = TaskPlugin(config=Path(__file__).with_name("flat.yaml"), edit_spec=robot.apply)
ROUGH = TaskPlugin(config=Path(__file__).with_name("rough.yaml"))  # extends quadruped_flat: its edit_spec too
FLAT_GRU = TaskPlugin(config=Path(__file__).with_name("flat_gru.yaml"))  # extends quadruped_flat
