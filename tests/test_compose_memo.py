"""compose_train remembers what Hydra composed (compose_memo.py): a repeat hands out its own copy,
and a change to a task's YAML, to a config file or to the ConfigStore is composed afresh."""

import os
import shutil

import pytest

from robolearn import compose, compose_memo, registry
from robolearn.errors import UserError
from robolearn.paths import configs_dir


def test_a_repeat_is_an_equal_copy_of_its_own():
    first = compose.compose_train(["task=cartpole", "algo.gamma=0.9"])
    first.algo.learning_rate = 123.0  # a caller changes its config
    again = compose.compose_train(["task=cartpole", "algo.gamma=0.9"])
    assert again is not first and again.algo.learning_rate != 123.0 and again.algo.gamma == 0.9
    assert compose.compose_train(["task=cartpole"]).algo.gamma != 0.9


def test_a_changed_task_yaml_is_composed_afresh(installed_tasks, tmp_path):
    yaml = tmp_path / "mine.yaml"
    yaml.write_text("extends: cartpole\nepisode_length_s: 2.0\n")
    installed_tasks["mine"] = registry.TaskPlugin(config=yaml)
    assert compose.compose_train(["task=mine"]).task.episode_length_s == 2.0
    yaml.write_text("extends: cartpole\nepisode_length_s: 3.0\n")
    assert compose.compose_train(["task=mine"]).task.episode_length_s == 3.0


def test_a_task_stored_anew_is_composed_afresh(installed_tasks, tmp_path):
    """The same task name and file, but its ConfigStore entry removed and stored again (what
    installed_tasks does between tests): the config comes from the new entry."""
    from hydra.core.config_store import ConfigStore

    yaml = tmp_path / "mine.yaml"
    yaml.write_text("extends: cartpole\nepisode_length_s: 2.0\n")
    installed_tasks["mine"] = registry.TaskPlugin(config=yaml)
    compose.compose_train(["task=mine"])
    ConfigStore.instance().repo["task"].pop("mine.yaml")
    del installed_tasks["mine"]
    other = tmp_path / "other.yaml"
    other.write_text("extends: cartpole\nepisode_length_s: 4.0\n")
    installed_tasks["mine"] = registry.TaskPlugin(config=other)
    assert compose.compose_train(["task=mine"]).task.episode_length_s == 4.0


def test_a_changed_config_file_is_composed_afresh(monkeypatch, tmp_path):
    configs = tmp_path / "configs"
    shutil.copytree(configs_dir(), configs)
    monkeypatch.setattr(compose, "configs_dir", lambda: configs)
    ppo = configs / "algo" / "ppo.yaml"
    before = compose.compose_train(["task=pendulum"]).algo.entropy_coef
    ppo.write_text(ppo.read_text().replace("entropy_coef:", "entropy_coef: 0.0421 #", 1))
    os.utime(ppo, ns=(ppo.stat().st_atime_ns, ppo.stat().st_mtime_ns + 10**9))  # a later time whatever the clock
    assert before != 0.0421 and compose.compose_train(["task=pendulum"]).algo.entropy_coef == 0.0421


def test_a_remembered_config_is_checked_again_and_a_failed_one_is_not_remembered():
    for _ in range(2):  # composed, then refused by the checks: each time
        with pytest.raises(UserError, match="algo.gamma=2.0 is out of range"):
            compose.compose_train(["task=cartpole", "algo.gamma=2"])
        with pytest.raises(UserError, match="algo.learnin_rate is not a setting of algo"):
            compose.compose_train(["task=cartpole", "algo.learnin_rate=2"])
    assert not [key for key in compose_memo._MEMO if "algo.learnin_rate=2" in key[0]]
