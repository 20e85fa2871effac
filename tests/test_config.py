"""Hydra configs compose in-process; wrong keys and types fail at composition, naming the key."""

import pytest
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf import OmegaConf

from robolearn.cli import hydra_error_message
from robolearn.compose import compose_train
from robolearn.config import EventMode


def test_default_config_composes():
    cfg = compose_train()
    assert cfg.task.name == "cartpole" and cfg.physics.backend == "auto"
    assert cfg.env.num_envs == 256 and cfg.algo.learning_rate == 1e-3
    assert cfg.task.events.reset_state.mode == EventMode.reset


def test_overrides_apply_and_are_typed():
    cfg = compose_train(["task=pendulum", "physics=mujoco", "env.num_envs=128", "seed=3", "algo.learning_rate=3e-4"])
    assert (cfg.task.name, cfg.physics.backend, cfg.env.num_envs, cfg.seed) == ("pendulum", "mujoco", 128, 3)
    assert cfg.algo.learning_rate == pytest.approx(3e-4)
    assert OmegaConf.is_missing(cfg, "resume") is False and cfg.resume is None


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("algo.learning_rat=1", "learning_rat"),
        ("env.num_envs=many", "num_envs"),
        ("task.rewards.alive.wieght=2", "wieght"),
        ("task.events.reset_state.mode=sometimes", "sometimes"),
    ],
)
def test_bad_key_or_type_fails_naming_it(override, expected):
    with pytest.raises(ConfigCompositionException) as info:
        compose_train([override])
    message = hydra_error_message(info.value)
    assert expected in message and "\n" not in message


@pytest.mark.parametrize(("override", "expected"), [
    ("task=nope", "unknown task 'nope'; valid: cartpole, pendulum, quadruped_flat, quadruped_rough"),
    ("physics=nope", "unknown physics backend 'nope'; valid: auto, mjx, mujoco, warp"),
    ("randomization=nope", "unknown randomization preset 'nope'; valid: default, none, sim2real"),
])
def test_unknown_group_option_lists_valid_ones(override, expected):
    with pytest.raises(MissingConfigException) as info:
        compose_train([override])
    assert hydra_error_message(info.value) == expected


def test_task_yaml_is_validated_against_schema(tmp_path, monkeypatch):
    from robolearn import compose, registry
    from robolearn.errors import UserError

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nasset: x.xml\nrewardz: {}\n")
    monkeypatch.setattr(compose, "discover_tasks", lambda: {"bad": registry.TaskPlugin("bad", bad)})
    with pytest.raises(UserError, match=r"task 'bad': invalid config .*bad.yaml: .*rewardz"):
        compose.register_configs()
