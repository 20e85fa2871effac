"""The fixture's rsl_rl runner: the example's, with the small network (64 x 64) and 5 iterations the fixture has."""

from isaaclab_rl.rsl_rl import RslRlMLPModelCfg

from isaaclab.utils import configclass
from robolearn.isaaclab.examples.quadruped_agent import QuadrupedFlatRunnerCfg


@configclass
class RoboLearnQuadrupedFlatPPORunnerCfg(QuadrupedFlatRunnerCfg):
    max_iterations = 5
    actor = RslRlMLPModelCfg(hidden_dims=[64, 64], activation="elu", obs_normalization=True,
                             distribution_cfg=RslRlMLPModelCfg.GaussianDistributionCfg(init_std=1.0))  # fmt: skip
    critic = RslRlMLPModelCfg(hidden_dims=[64, 64], activation="elu", obs_normalization=True)
