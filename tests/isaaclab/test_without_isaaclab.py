"""What needs no Isaac Lab: the refusal where it is missing, and the rsl_rl config -> recipe mapping."""

import importlib.util
import subprocess
import sys

import pytest

from robolearn.isaaclab import isaaclab_task
from robolearn.isaaclab.recipe import recipe


@pytest.mark.skipif(importlib.util.find_spec("isaaclab") is not None, reason="Isaac Lab is installed here")
def test_isaaclab_task_without_isaaclab_is_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "robolearn.cli", "train", "task=isaaclab:RoboLearn-Velocity-Flat-Quadruped"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr
    (line,) = [l for l in result.stderr.splitlines() if l.strip()]
    assert "Isaac Lab tasks need the isaaclab package (3.x), which is not installed" in line
    assert "scripts/isaaclab/make_venv.sh" in line
    assert not (tmp_path / "runs").exists()


def test_task_names():
    assert isaaclab_task("isaaclab:Isaac-Velocity-Flat-AnymalD") == "Isaac-Velocity-Flat-AnymalD"
    assert isaaclab_task("isaaclab:my_pkg.tasks:My-Task") == "my_pkg.tasks:My-Task"
    assert isaaclab_task("quadruped_flat") is None


def test_recipe_from_an_rsl_rl_runner_config():
    agent = {  # what RslRlOnPolicyRunnerCfg.to_dict() gives (rsl_rl 5 schema, abridged)
        "num_steps_per_env": 24, "max_iterations": 1500, "save_interval": 50, "seed": 42,
        "actor": {"class_name": "MLPModel", "hidden_dims": [512, 256, 128], "activation": "elu", "obs_normalization": True,
                  "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 0.8}},
        "critic": {"class_name": "MLPModel", "hidden_dims": [256, 128], "activation": "elu", "obs_normalization": False},
        "algorithm": {"learning_rate": 1e-3, "schedule": "adaptive", "gamma": 0.99, "lam": 0.95, "entropy_coef": 0.005,
                      "num_learning_epochs": 5, "num_mini_batches": 4, "clip_param": 0.2, "desired_kl": 0.01,
                      "max_grad_norm": 1.0, "value_loss_coef": 1.0, "use_clipped_value_loss": True,
                      "symmetry_cfg": {"use_data_augmentation": True}, "rnd_cfg": None},
    }  # fmt: skip
    train, skipped = recipe(agent)
    assert train["runner"] == {"num_steps_per_env": 24, "max_iterations": 1500, "save_interval": 50}
    algo = train["algo"]
    assert algo["actor_hidden_dims"] == [512, 256, 128] and algo["critic_hidden_dims"] == [256, 128]
    assert algo["init_noise_std"] == 0.8 and algo["normalize_observations"] is True and algo["activation"] == "elu"
    assert algo["normalizer_schedule"] == "step"  # rsl_rl's: the statistics merge every step before acting
    assert algo["learning_rate"] == 1e-3 and algo["entropy_coef"] == 0.005 and algo["num_mini_batches"] == 4
    assert skipped == ["algorithm.symmetry_cfg"]  # said on stderr, not silently dropped
    assert algo["policy"] == algo["critic_network"] == "mlp"
    # rsl_rl's recurrent actor: a GRU (or, for any other rnn_type, an LSTM) core before the MLP head
    recurrent = {**agent, "actor": {"class_name": "RNNModel", "hidden_dims": [64], "rnn_type": "gru", "rnn_hidden_dim": 128,
                                    "rnn_num_layers": 2},
                 "critic": {"class_name": "RNNModel", "hidden_dims": [64], "rnn_type": "lstm", "rnn_hidden_dim": 256}}  # fmt: skip
    train, skipped = recipe(recurrent)
    assert {k: train["algo"][k] for k in ("policy", "critic_network", "rnn_hidden_size", "rnn_num_layers", "actor_hidden_dims")} == {
        "policy": "gru", "critic_network": "lstm", "rnn_hidden_size": 128, "rnn_num_layers": 2, "actor_hidden_dims": [64]}
    assert skipped == ["critic.rnn_hidden_dim=256 (robolearn's actor and critic cores share the actor's size)",
                       "algorithm.symmetry_cfg"]  # fmt: skip
    plain = {**agent, "actor": {**agent["actor"], "obs_normalization": False}}
    assert "normalizer_schedule" not in recipe(plain)[0]["algo"] and recipe(plain)[0]["algo"]["normalize_observations"] is False
    cnn = {**agent, "actor": {"class_name": "CNNModel", "hidden_dims": [64]}}
    assert "actor.class_name=CNNModel" in recipe(cnn)[1]
    assert recipe(None) == ({}, [])
