"""Hydra configs compose in-process; wrong keys and types fail at composition, naming the key."""

import pytest
from omegaconf import OmegaConf

from robolearn.errors import UserError
from robolearn.compose import compose_train
from robolearn.config_task import EventMode


def test_default_config_composes():
    cfg = compose_train()
    assert cfg.task.name == "cartpole" and cfg.physics.backend == "auto"
    assert cfg.env.num_envs == 128 and cfg.algo.num_mini_batches == 2  # cartpole's recipe
    assert cfg.algo.learning_rate == 1e-3 and compose_train(["task=pendulum"]).env.num_envs == 256  # train.yaml
    assert cfg.task.events.reset_state.mode == EventMode.reset


def test_no_schema_declares_a_setting_twice():
    """A dataclass keeps the last of two declarations of a field, with its docstring: the first
    silently disappears."""
    import ast
    from pathlib import Path

    import robolearn

    package = Path(robolearn.__file__).parent
    for path in sorted(package.glob("config*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
                assert len(names) == len(set(names)), (path.name, node.name, sorted(n for n in names if names.count(n) > 1))


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
    """compose_train (also used by robolearn.gym, Ray Tune trials and sweep checks) raises the CLI's
    one line as a UserError, not Hydra's exception."""
    with pytest.raises(UserError) as info:
        compose_train([override])
    message = str(info.value)
    assert expected in message and "\n" not in message


@pytest.mark.parametrize(("override", "expected"), [
    ("task=nope", "unknown task 'nope'; valid: arm_pose, arm_reach, cartpole, pendulum, pendulum_partial, quadruped_flat, quadruped_flat_gru, quadruped_rough"),
    ("physics=nope", "unknown physics backend 'nope'; valid: auto, mjx, mujoco, warp"),
    ("randomization=nope", "unknown randomization preset 'nope'; valid: default, none, sim2real"),
])
def test_unknown_group_option_lists_valid_ones(override, expected):
    with pytest.raises(UserError) as info:
        compose_train([override])
    assert str(info.value) == expected


def fake_task(monkeypatch, tmp_path, text: str, name: str = "fake"):
    """Install a task plugin whose YAML is `text` (cartpole's model) for this test only."""
    from robolearn import compose, registry

    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nasset: cartpole.xml\n" + text)
    monkeypatch.setattr(compose, "discover_tasks", lambda: {name: registry.TaskPlugin(name, path)})
    return path


def test_task_yaml_is_validated_against_schema_when_chosen(tmp_path, monkeypatch):
    fake_task(monkeypatch, tmp_path, "rewardz: {}\n", name="bad")
    with pytest.raises(UserError) as info:
        compose_train(["task=bad"])
    message = str(info.value)
    assert "rewardz" in message and "\n" not in message


RECIPE = """
algo: {entropy_coef: 0.01, actor_hidden_dims: [32, 32], learning_rate: 5.0e-4}
runner: {max_iterations: 7, num_steps_per_env: 16}
env: {num_envs: 48}
"""


def test_precedence_schema_then_algo_config_then_task_recipe_then_command_line(tmp_path, monkeypatch):
    """schema defaults < configs/algo (and train.yaml) < the task's recipe < command-line overrides."""
    import shutil

    from robolearn import compose
    from robolearn.config import AlgoCfg
    from robolearn.paths import configs_dir

    configs = tmp_path / "configs"
    shutil.copytree(configs_dir(), configs)
    ppo = configs / "algo" / "ppo.yaml"
    ppo.write_text(ppo.read_text().replace("entropy_coef: 0.005", "entropy_coef: 0.02").replace(
        "num_learning_epochs: 5", "num_learning_epochs: 3").replace("gamma: 0.99", "gamma: 0.98"))  # fmt: skip
    monkeypatch.setattr(compose, "configs_dir", lambda: configs)
    fake_task(monkeypatch, tmp_path, RECIPE)
    cfg = compose_train(["task=fake", "algo.learning_rate=1e-4"])
    assert cfg.algo.value_clip == AlgoCfg().value_clip == 0.2  # schema default (also in ppo.yaml)
    assert cfg.algo.num_learning_epochs == 3 and cfg.algo.gamma == 0.98  # configs/algo over the schema
    assert cfg.runner.save_interval == 50  # train.yaml
    assert cfg.algo.entropy_coef == 0.01 and cfg.algo.actor_hidden_dims == [32, 32]  # the recipe over configs/algo
    assert cfg.runner.max_iterations == 7 and cfg.runner.num_steps_per_env == 16  # ... and over train.yaml
    assert cfg.env.num_envs == 48 and cfg.env.stagger_timeouts  # an env recipe over train.yaml, schema for the rest
    assert cfg.algo.learning_rate == pytest.approx(1e-4)  # the command line over the recipe
    other = compose_train(["task=fake", "runner.max_iterations=3", "algo.actor_hidden_dims=[8]", "env.num_envs=8"])
    assert other.runner.max_iterations == 3 and other.algo.actor_hidden_dims == [8] and other.env.num_envs == 8
    assert not {"algo", "runner", "env"} & set(other.task)  # the recipe is not a task setting


def refused(monkeypatch, tmp_path, recipe: str, pattern: str) -> None:
    """A task with this recipe fails to compose with a UserError matching `pattern`."""

    fake_task(monkeypatch, tmp_path, recipe)
    with pytest.raises(UserError, match=pattern):
        compose_train(["task=fake"])


def test_a_recipe_key_the_schema_does_not_know_is_refused_with_the_task_name(tmp_path, monkeypatch):
    refused(monkeypatch, tmp_path, "algo: {learnin_rate: 0.1}\n",
            r"task 'fake': its recipe sets algo.learnin_rate, which is not an? algo setting; valid: learning_rate, schedule")
    refused(monkeypatch, tmp_path, "env: {num_env: 64}\n", r"task 'fake': its recipe sets env.num_env, which is not "
            r"an env setting; valid: num_envs, cuda_graph, compile, stagger_timeouts")  # fmt: skip
    fake_task(monkeypatch, tmp_path, "runner: {max_iterations: lots}\n")
    with pytest.raises(UserError) as info:
        compose_train(["task=fake"])
    assert "max_iterations" in str(info.value)


def test_a_recipe_sets_physics_options_under_the_command_line_but_not_the_backend(tmp_path, monkeypatch):
    """physics: configs/physics/<backend>.yaml < the task's recipe < the command line, whichever
    backend is chosen; the backend itself stays the command line's choice."""
    fake_task(monkeypatch, tmp_path, "physics: {reset_sensors: kinematic, njmax: 77}\n")
    for backend in ("warp", "mujoco", "auto"):
        cfg = compose_train(["task=fake", f"physics={backend}"])
        assert cfg.physics.reset_sensors == "kinematic" and cfg.physics.njmax == 77
        assert cfg.physics.backend == backend and cfg.physics.nconmax == 0  # the group's and schema's
    assert compose_train(["task=fake", "physics.reset_sensors=exact"]).physics.reset_sensors == "exact"
    assert "physics" not in compose_train(["task=fake"]).task
    refused(monkeypatch, tmp_path, "physics: {backend: mjx}\n", r"task 'fake': its recipe sets physics.backend, "
            r"which a task's recipe may not set: the command line chooses it \(physics=<name>\)$")  # fmt: skip
    refused(monkeypatch, tmp_path, "physics: {reset_sensor: kinematic}\n", r"its recipe sets physics.reset_sensor, "
            r"which is not a physics setting; valid: num_threads, nconmax, njmax, deterministic, reset_sensors$")  # fmt: skip
    refused(monkeypatch, tmp_path, "physics: {reset_sensors: sometimes}\n", r"physics.reset_sensors=sometimes")


def test_the_quadruped_ships_its_locomotion_recipe():
    flat, cartpole = compose_train(["task=quadruped_flat"]), compose_train(["task=cartpole"])
    assert flat.algo.actor_hidden_dims != cartpole.algo.actor_hidden_dims
    assert compose_train(["task=quadruped_rough"]).algo.actor_hidden_dims == flat.algo.actor_hidden_dims


@pytest.mark.parametrize(("override", "expected"), [
    ("algo.gamma=1.5", "algo.gamma=1.5 is out of range; valid: 0 <= gamma <= 1"),
    ("algo.learning_rate=-0.001", "algo.learning_rate=-0.001 is out of range; valid: 0 < learning_rate <= 1"),
    ("algo.num_mini_batches=0", "algo.num_mini_batches=0 is out of range; valid: an integer >= 1"),
    ("algo.num_mini_batches=7", "algo.num_mini_batches=7 does not divide env.num_envs * runner.num_steps_per_env"),
    ("runner.save_interval=0", "runner.save_interval=0 is out of range; valid: an integer >= 1"),
    ("runner.num_steps_per_env=0", "runner.num_steps_per_env=0 is out of range; valid: an integer >= 1"),
    ("runner.episode_window=0", "runner.episode_window=0 is out of range; valid: an integer >= 1"),
    ("seed=-1", "seed=-1 is out of range; valid: an integer 0..4294967295"),
    ("seed=99999999999999999999", "seed=99999999999999999999 is out of range; valid: an integer 0..4294967295"),
    ("task.decimation=100000000", "task.decimation=100000000 is out of range; valid: an integer 1..1000"),
    ("runner.max_iterations=99999999999999999999", "runner.max_iterations=99999999999999999999 is out of range"),
    ("algo.value_clip=0", "algo.value_clip=0.0 is out of range; valid: > 0"),
    ("algo.normalizer_min_std=0", "algo.normalizer_min_std=0.0 is out of range; valid: > 0"),
    ("algo.normalizer_clip=-1", "algo.normalizer_clip=-1.0 is out of range; valid: > 0, or null for no clip"),
    ("algo.min_noise_std=2", "algo.min_noise_std=2.0 must be below algo.init_noise_std=1.0"),
    ("algo.actor_hidden_dims=[64,0]", "algo.actor_hidden_dims=[64,0] is out of range; valid: a list of layer sizes"),
    ("algo.schedule=linear", "algo.schedule=linear is out of range; valid: adaptive or fixed"),
    ("logger=foo", "logger=foo is out of range; valid: tensorboard, wandb, both, none"),
    ("wandb.mode=sometimes", "wandb.mode=sometimes is out of range; valid: online, offline, disabled, or empty"),
    ("runner.video_interval=-1", "runner.video_interval=-1 is out of range; valid: an integer >= 0 (0: no clips)"),
    ("runner.video_width=8", "runner.video_width=8 is out of range; valid: 16..3840 (pixels)"),
    ("runner.video_length_s=1e12", "runner.video_length_s=1000000000000.0 is out of range; valid: 0 < video_length_s <= 600"),
    ("task.action.scale=null", "task.action.scale=null is out of range; valid: a number other than 0, or a mapping"),
    ("task.events.pole_mass.interval_s=[2,1]", "task.events.pole_mass.interval_s=[2.0,1.0] is out of range; valid: [low, high]"),
    ("task=arm_reach task.metrics.ee_position_error_all_steps.window_s=-1",
     "task.metrics.ee_position_error_all_steps.window_s=-1.0 is out of range; valid: > 0 (seconds)"),
])
def test_values_out_of_range_fail_at_compose_time_naming_the_field(override, expected):

    with pytest.raises(UserError) as info:
        compose_train(override.split(" "))
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_a_new_term_can_be_added_from_the_command_line():
    """OmegaConf refuses a plain mapping for a new key of a dict of schema entries; robolearn hands
    such an addition to Hydra as a merge (config_additions.py), which builds the entry from its schema."""
    from robolearn.config_task import ObsTermCfg, RewardTermCfg

    cfg = compose_train(["task=pendulum", "+task.rewards.alive={func: is_alive, weight: 0.5}",
                         "+task.observations.policy.terms.speed.func=joint_vel", "+task.rewards.hold.weight=3"])  # fmt: skip
    alive = cfg.task.rewards.alive
    assert OmegaConf.get_type(alive) is RewardTermCfg and (alive.func, alive.weight, alive.params) == ("is_alive", 0.5, {})
    speed = cfg.task.observations.policy.terms.speed
    assert OmegaConf.get_type(speed) is ObsTermCfg and speed.func == "joint_vel" and speed.scale == 1.0
    assert list(cfg.task.observations.policy.terms) == ["angle", "angular_vel", "speed"]
    assert cfg.task.rewards.hold.weight == 3 and cfg.task.rewards.hold.func == "upright_bonus"  # an existing one: updated


def test_only_plain_additions_become_merges():
    from robolearn.config_additions import as_merges

    assert as_merges(["+task.rewards.a.weight=2", "++task.events.push.params.range=[1, 2]"]) == [
        "++task.rewards={a:{weight:2}}", "++task.events={push:{params:{range:[1, 2]}}}"]  # fmt: skip
    untouched = ["+task.rewards.a.weight=1,2", "+task.rewards.a.weight=choice(1, 2)", "+algo.foo=1",
                 "task.rewards.a.weight=1", "+task.rewards=x"]  # fmt: skip
    assert as_merges(untouched) == untouched


def test_a_setting_of_an_unset_terrain_or_adaptive_range_is_merged_into_its_parent():
    """task.terrain and an event's adaptive range are Optional[<schema>], None unless the task sets
    them, and OmegaConf could not merge into None (a traceback: "Unexpected type for root: NoneType");
    such an override is written as a merge into the setting's parent (task=... alone would choose a task)."""
    from robolearn.config_additions import as_merges
    from robolearn.terrain import TerrainCfg

    assert as_merges(["task.terrain.num_levels=2", "+task.terrain={num_levels: 2}", "task.events.push.adaptive.step=0.1",
                      "task.terrain=null", "task.terrain.num_levels=2,3"]) == [
        "++task={terrain:{num_levels:2}}", "++task={terrain:{num_levels: 2}}", "task.events.push={adaptive:{step:0.1}}",
        "task.terrain=null", "task.terrain.num_levels=2,3"]  # fmt: skip
    cfg = compose_train(["task=cartpole", "task.terrain.num_levels=3",
                         "task.events.pole_mass.adaptive={limits: [0.5, 1.5], step: 0.1}"])  # fmt: skip
    assert OmegaConf.get_type(cfg.task.terrain) is TerrainCfg and cfg.task.terrain.num_levels == 3
    assert cfg.task.terrain.tile_size == TerrainCfg().tile_size
    assert cfg.task.events.pole_mass.adaptive.step == 0.1 and cfg.task.events.pole_mass.func == "randomize_model_field"
    cfg = compose_train(["task=quadruped_rough", "task.terrain.num_levels=3"])  # the task's terrain: the rest kept
    assert cfg.task.terrain.num_levels == 3 and cfg.task.terrain.num_cols == 20
    with pytest.raises(UserError) as info:
        compose_train(["task=cartpole", "task.events.pole_mass.adaptive.stepp=0.1"])
    assert str(info.value).startswith("task.events.pole_mass.adaptive.stepp is not a setting of "
                                      "task.events.pole_mass.adaptive; valid: param, limits")  # fmt: skip


def test_a_term_added_without_plus_says_how_to_add_it():
    with pytest.raises(UserError) as info:
        compose_train(["task=pendulum", "task.rewards={alive: {func: is_alive}}"])
    assert str(info.value) == (
        "task.rewards: 'alive' is not in task.rewards; valid: upright, hold, velocity, effort "
        "(a new one: +task.rewards.alive=...)")  # fmt: skip


@pytest.mark.parametrize("override,line", [
    ("+task.rewards.alive={func: is_alive, wieght: 1}", "task.rewards.alive.wieght is not a setting of task.rewards.alive"),
    ("+task.rewards.upright.wieght=1", "task.rewards.upright.wieght is not a setting of task.rewards.upright"),
])  # fmt: skip
def test_a_misspelt_setting_in_an_added_term_is_named_as_written(override, line):
    with pytest.raises(UserError) as info:
        compose_train(["task=pendulum", override])
    assert str(info.value) == f"{line}; valid: func, weight, params"


@pytest.mark.parametrize("override,line", [
    ("runner.export_onnx=2", "runner.export_onnx=2 is out of range; valid: true or false"),
    ("env.cuda_graph=-1", "env.cuda_graph=-1 is out of range; valid: true or false, or null (unset)"),
    ("env.stagger_timeouts=1,5", "env.stagger_timeouts=5 is out of range; valid: true or false"),
])  # fmt: skip
def test_a_switch_given_a_number_is_refused_not_taken_for_true(override, line):
    """OmegaConf reads any number as a bool (2 -> true); only 0 and 1 are taken."""
    with pytest.raises(UserError) as info:
        compose_train([override])
    assert str(info.value) == line
    assert compose_train(["runner.export_onnx=0", "env.stagger_timeouts=1"]).runner.export_onnx is False


def test_integer_command_ranges_are_taken_as_numbers(tmp_path, monkeypatch):
    """`ranges: {x: [0, 1]}` in a task YAML or a `+task.commands...` addition: OmegaConf refuses ints
    in a Dict[str, List[float]], so ranges are checked when the env is built instead."""
    from robolearn.registry import TaskPlugin

    fake_task(monkeypatch, tmp_path, "action: {actuators: [slide]}\ncommands:\n  goal: {ranges: {a: [0, 1]}}\n"
              "observations: {policy: {terms: {x: {func: joint_pos}}}}\nrewards: {alive: {func: is_alive, weight: 1}}\n")
    cfg = compose_train(["task=fake", "+task.commands.two={ranges: {b: [-2, 3]}}"])
    assert cfg.task.commands.goal.ranges.a == [0, 1]
    from robolearn.envs.batched_env import BatchedEnv

    env = BatchedEnv(cfg.task, TaskPlugin("fake", tmp_path / "fake.yaml"), 2, physics="mujoco", device="cpu")
    try:
        assert env.commands.ranges["goal"].tolist() == [[0.0, 1.0]] and env.commands.ranges["two"].tolist() == [[-2.0, 3.0]]
    finally:
        env.close()


@pytest.mark.parametrize("override,line", [
    ("task.rewards.alive.weight=${oops}", "task.rewards.alive.weight=${oops}: interpolation key 'oops' is not in the "
                                          "config; valid: ${<key path>}, e.g. ${algo.gamma}"),
    ("+task.rewards.new={func: is_alive, weight: ${nope.x}}", "+task.rewards.new={func: is_alive, weight: ${nope.x}}: "
     "interpolation key 'nope.x' is not in the config; valid: ${<key path>}, e.g. ${algo.gamma}"),
    ("env.num_envs=${algo.gamma}", "env.num_envs=${algo.gamma}: what it resolves to is not an integer; valid: a whole "
                                   "number, e.g. 4"),
    ("algo.gamma=${oc.env:ROBOLEARN_UNSET_VARIABLE}", "algo.gamma=${oc.env:ROBOLEARN_UNSET_VARIABLE}: environment variable "
     "ROBOLEARN_UNSET_VARIABLE is not set; valid: set it, or give a default, e.g. ${oc.env:ROBOLEARN_UNSET_VARIABLE,0}"),
])  # fmt: skip
def test_an_interpolation_that_does_not_resolve_is_one_line_naming_the_override(override, line):
    """OmegaConf resolves `${...}` when a value is read: composed, the config checks read every one."""
    with pytest.raises(UserError) as info:
        compose_train([override])
    assert str(info.value) == line
    cfg = compose_train(["task.rewards.alive.weight=${algo.gamma}", "algo.gamma=0.9"])
    assert cfg.task.rewards.alive.weight == 0.9


@pytest.mark.parametrize("override,line", [
    ("task.rewards={}", "task.rewards={} keeps every term (an override merges into the task's rewards); valid: "
                        "~task.rewards.<name> removes one term"),
    ("task.observations.policy.terms={ }", "task.observations.policy.terms={ } keeps every term (an override merges "
                                           "into the task's terms); valid: ~task.observations.policy.terms.<name> removes one term"),
    ("++task.events={}", "++task.events={} keeps every term (an override merges into the task's events); valid: "
                         "~task.events.<name> removes one term"),
    ("task.observations={}", "task.observations={} keeps every group (an override merges into the task's "
                             "observations); valid: ~task.observations.<name> removes one group"),
    ("task.rewards.alive={}", "task.rewards.alive={} keeps term 'alive' as it is (an override merges into it); valid: "
                              "~task.rewards.alive removes it"),
    ("task.observations.policy={ }", "task.observations.policy={ } keeps group 'policy' as it is (an override merges "
                                     "into it); valid: ~task.observations.policy removes it"),
    ("task.rewards.alive={weight: 2},{}", "task.rewards.alive={weight: 2},{} keeps term 'alive' as it is"),  # a sweep's value
    ("+task.rewards.new={}", "task.rewards.new has no func; valid: {func: <a term function>, ...} (robolearn terms "
                             "lists them)"),
    ("+task.events.kick={mode: reset}", "task.events.kick has no func; valid: {func: <a term function>, ...}"),
])  # fmt: skip
def test_an_empty_mapping_for_a_dict_of_terms_is_refused_not_merged_as_nothing(override, line):
    with pytest.raises(UserError) as info:
        compose_train([override])
    assert str(info.value).startswith(line)
    cfg = compose_train(["~task.rewards.alive", "+task.rewards.new={func: is_alive, weight: 2}"])  # the ways that work
    assert "alive" not in cfg.task.rewards and cfg.task.rewards.new.weight == 2


@pytest.mark.parametrize("text, line", [
    ("observations: {policy: {terms: {q: {func: joint_pos}}}}\n",
     "task.rewards is empty: the policy would have nothing to learn; valid: at least one reward term"),
    ("observations: {policy: {terms: {q: {func: joint_pos}}}, critc: {terms: {q: {func: joint_pos}}}}\n"
     "rewards: {alive: {func: is_alive, weight: 1.0}}\n",
     "task.observations.critc is read by nothing (training reads the policy and critic groups); valid: policy, critic"),
])  # fmt: skip
def test_a_task_with_no_reward_or_a_group_nothing_reads_is_refused_by_training(tmp_path, monkeypatch, text, line):
    """What training checks before it builds anything (app.train, torchrun's preflight); such a task
    still composes (robolearn.gym, a test's env)."""
    from robolearn.config_checks import check_what_training_reads

    fake_task(monkeypatch, tmp_path, "action: {actuators: [slide]}\n" + text)
    cfg = compose_train(["task=fake"])
    with pytest.raises(UserError) as info:
        check_what_training_reads(cfg)
    assert str(info.value).startswith(line), info.value
    fake_task(monkeypatch, tmp_path, "action: {actuators: [slide]}\nobservations: {policy: {terms: {q: {func: joint_pos}}}, "
                                     "critic: {terms: {q: {func: joint_pos}}}}\nrewards: {alive: {func: is_alive, weight: 1.0}}\n")  # fmt: skip
    check_what_training_reads(compose_train(["task=fake"]))


def test_an_isaac_lab_task_trains_without_robolearn_rewards_or_groups(tmp_path, monkeypatch):
    """`task=isaaclab:<id>`: Isaac Lab's own managers compute rewards and observations, and its
    robolearn task config has neither, so what training reads is not checked there."""
    from robolearn.config_checks import check_what_training_reads

    fake_task(monkeypatch, tmp_path, "action: {actuators: [slide]}\n")
    cfg = compose_train(["task=fake"])
    with pytest.raises(UserError, match="task.rewards is empty"):
        check_what_training_reads(cfg)
    cfg.task.name = "isaaclab:RoboLearn-Velocity-Flat-Quadruped"
    check_what_training_reads(cfg)
