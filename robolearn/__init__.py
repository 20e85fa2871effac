"""robolearn: GPU-parallel MuJoCo environments, PPO, and deployable policy bundles."""

__version__ = "0.1.0"
