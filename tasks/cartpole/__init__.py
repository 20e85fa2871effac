"""Cart-pole balance: keep the pole up and the cart near the centre from a near-upright start."""

from pathlib import Path

from robolearn.registry import TaskPlugin

TASK = TaskPlugin(config=Path(__file__).with_name("cartpole.yaml"))
