"""Task YAMLs: the entry point names the task, `extends:` takes an installed task (with its
plugin's terms, spec edit and model file) or a file."""

import pytest

from robolearn import compose, registry
from robolearn.errors import UserError
from robolearn.registry import inherit, task_configs
from robolearn.task_yaml import _merged, load_task_yaml


@pytest.fixture
def installed(installed_tasks):
    return installed_tasks


def test_extends_an_installed_task_by_name(installed, tmp_path):
    (tmp_path / "fast.yaml").write_text("extends: cartpole\nepisode_length_s: 2.0\nrewards: {alive: {weight: 2.0}}\n")
    installed["fast_cartpole"] = registry.TaskPlugin(config=tmp_path / "fast.yaml")
    node = load_task_yaml(tmp_path / "fast.yaml", task_configs(installed))
    assert "name" not in node and node["episode_length_s"] == 2.0 and node["decimation"] == 2
    assert node["rewards"]["alive"] == {"func": "is_alive", "weight": 2.0}  # merged key by key
    cfg = compose.compose_train(["task=fast_cartpole"])
    assert cfg.task.name == "fast_cartpole" and cfg.env.num_envs == 128  # cartpole's recipe comes along
    assert cfg.task.rewards.upright.func == "joint_pos_cos"


def test_extending_a_task_brings_its_terms_edit_and_model_file(installed, tmp_path):
    base_dir, variant_dir = tmp_path / "base_pkg", tmp_path / "variant_pkg"
    base_dir.mkdir(), variant_dir.mkdir()
    (base_dir / "arm.xml").write_text("<mujoco/>")
    (base_dir / "base.yaml").write_text("asset: arm.xml\ndecimation: 3\n")
    (variant_dir / "variant.yaml").write_text("extends: base_task\ndecimation: 5\n")
    calls = []
    installed["base_task"] = registry.TaskPlugin(config=base_dir / "base.yaml", terms={"a": len, "b": len},
                                                 edit_spec=lambda spec: calls.append("base"))  # fmt: skip
    installed["variant"] = registry.TaskPlugin(name="variant", config=variant_dir / "variant.yaml", terms={"b": abs},
                                               edit_spec=lambda spec: calls.append("variant"))  # fmt: skip
    node = load_task_yaml(variant_dir / "variant.yaml", task_configs(installed))
    assert node == {"asset": str((base_dir / "arm.xml").resolve()), "decimation": 5}
    plugin = registry.get_task("variant")
    assert plugin.terms == {"a": len, "b": abs}  # the variant's own term wins a clash
    plugin.edit_spec(None)
    assert calls == ["base", "variant"]
    assert inherit(installed["base_task"], installed) is installed["base_task"]


def test_quadruped_rough_extends_flat_by_name():
    tasks = registry.discover_tasks()
    rough = registry.get_task("quadruped_rough")
    assert rough.edit_spec is tasks["quadruped_flat"].edit_spec  # robot constants applied once
    cfg = compose.compose_train(["task=quadruped_rough"])
    assert cfg.task.name == "quadruped_rough" and cfg.task.rewards.feet_air_time.weight == 0.5


def test_a_variant_removes_a_base_term_with_null():
    """pendulum_partial: pendulum without the policy's angular velocity (the critic keeps it), its
    recipe's GRU; a null on a plain value still just sets it."""
    cfg = compose.compose_train(["task=pendulum_partial"])
    assert list(cfg.task.observations.policy.terms) == ["angle"]
    assert list(cfg.task.observations.critic.terms) == ["angle", "angular_vel", "pole_mass"]
    assert cfg.algo.policy == "gru" and cfg.algo.critic_network == "mlp"
    assert load_task_yaml(registry.get_task("pendulum_partial").config, task_configs(registry.discover_tasks()))[
        "observations"]["policy"]["terms"]["angle"]["func"] == "joint_pos_cos_sin"  # fmt: skip
    assert _merged({"term": {"func": "f"}, "clip": 5.0}, {"term": None, "clip": None}) == {"clip": None}


def test_a_file_path_still_works_and_an_unknown_base_is_one_line(installed, tmp_path):
    (tmp_path / "base.yaml").write_text("name: base\nasset: cartpole.xml\ndecimation: 3\n")
    (tmp_path / "child.yaml").write_text("extends: base.yaml\n")
    assert load_task_yaml(tmp_path / "child.yaml", task_configs(installed)) == {"asset": "cartpole.xml", "decimation": 3}
    (tmp_path / "bad.yaml").write_text("extends: quadruped_flatt\n")
    with pytest.raises(UserError, match=r"extends: quadruped_flatt is neither an installed task nor a YAML file next "
                                        r"to it; installed tasks: .*cartpole, pendulum, pendulum_partial, quadruped_flat"):  # fmt: skip
        load_task_yaml(tmp_path / "bad.yaml", task_configs(installed))
    installed["bad"] = registry.TaskPlugin(config=tmp_path / "bad.yaml")
    with pytest.raises(UserError, match="task 'bad' is installed but cannot be used: .*extends: quadruped_flatt"):
        compose.compose_train(["task=bad"])


def test_a_stated_name_must_match_the_entry_point(installed, tmp_path):
    (tmp_path / "t.yaml").write_text("name: other\nasset: cartpole.xml\n")
    installed["mine"] = registry.TaskPlugin(config=tmp_path / "t.yaml")
    with pytest.raises(UserError, match="task 'mine': .* says name 'other'; the names must match"):
        compose.compose_train(["task=mine"])


def test_the_guides_variant_example_composes(installed, tmp_path):
    from pathlib import Path

    guide = (Path(__file__).parents[1] / "docs" / "authoring.md").read_text()
    section = guide.split("### A variant of a task")[1]
    example = section.split("```yaml\n")[1].split("```")[0]
    (tmp_path / "stiff.yaml").write_text(example)
    installed["stiff_walk"] = registry.TaskPlugin(config=tmp_path / "stiff.yaml")
    cfg = compose.compose_train(["task=stiff_walk"])
    assert cfg.task.episode_length_s == 10.0 and cfg.task.sim.integrator == "implicitfast"
    assert cfg.task.rewards.feet_air_time.weight == 1.0 and cfg.task.rewards.feet_air_time.params.target == 0.5
    assert cfg.algo.actor_hidden_dims == [128, 128, 128]  # quadruped_flat's recipe


def test_a_null_for_a_term_the_base_lacks_is_one_line(installed, tmp_path):
    """A misspelt term to remove (quadruped_flat's policy has base_ang_vel, not angular_vel) used to
    fail later in the schema, without the name."""
    (tmp_path / "child.yaml").write_text("extends: quadruped_flat\nobservations: {policy: {terms: {angular_vel: null}}}\n")
    with pytest.raises(UserError) as err:
        load_task_yaml(tmp_path / "child.yaml", task_configs(installed))
    assert str(err.value).startswith(f"task config {tmp_path / 'child.yaml'} (extends: quadruped_flat): "
                                     "observations.policy.terms.angular_vel: null removes a term or group of the base "
                                     "task, and it has no 'angular_vel' there; valid: base_ang_vel, projected_gravity")  # fmt: skip
    # a null for a plain field the base leaves out (a task's top level holds plain values) still sets it
    base = {"asset": "robot.xml", "terms": {"a": {}}}
    assert _merged(base, {"terms": {"a": None}, "terrain": None}) == {"asset": "robot.xml", "terms": {}, "terrain": None}


def test_names_are_written_so_that_they_read_back_as_the_same_names():
    """What new-task writes into a task YAML for a joint, body or sensor name: bare where that is
    read back as the name, quoted where YAML would read a number, a boolean, null or a comment."""
    import yaml

    from robolearn.task_yaml import _TaskYamlLoader, yaml_string

    odd = ["null", "Null", "NULL", "~", "yes", "no", "on", "off", "True", "false", "1.5", "1e3", "0x1F", ".inf",
           "#wrist: roll", "*x", "a b", "[x]", "", "ü-joint"]  # fmt: skip
    plain = ["FL_hip", "arm.joint_1", "link-2", "_x"]
    text = "{" + ", ".join(f"{yaml_string(n)}: [{yaml_string(n)}]" for n in odd + plain) + "}"
    assert yaml.load(text, Loader=_TaskYamlLoader) == {n: [n] for n in odd + plain}
    assert [yaml_string(n) for n in plain] == plain


@pytest.mark.parametrize("text, expected", [
    ("reward: {alive: {func: is_alive, weight: 1.0}}\n", r"task\.reward is not a setting of task; valid: name, description"),
    ("rewards: {alive: {weight: big}}\n", r"task\.rewards\.alive\.weight = 'big' is not a number; valid: a number"),
    ("rewards: {alive: 5}\n", r"task\.rewards\.alive is '5', not a mapping; valid: a mapping of its settings \(func, weight"),
    ("rewards: [1, 2]\n", r"a list where the config takes a mapping"),
])  # fmt: skip
def test_a_mistake_in_a_task_yaml_names_the_file_the_key_and_what_is_valid(installed, tmp_path, text, expected):
    """OmegaConf's own text ("In 'task/x': ConfigKeyError raised while composing config: Key 'reward' not in
    'TaskCfg' full_key: ... object_type=TaskCfg") said neither the file nor what is valid."""
    (tmp_path / "mine.yaml").write_text("extends: cartpole\n" + text)
    installed["mine"] = registry.TaskPlugin(config=tmp_path / "mine.yaml")
    with pytest.raises(UserError, match=rf"^task 'mine' \({tmp_path / 'mine.yaml'}\): {expected}"):
        compose.compose_train(["task=mine"])


def test_a_misspelled_term_param_lists_the_params_the_term_takes(make_env, installed, tmp_path):
    (tmp_path / "typo.yaml").write_text("extends: pendulum\nrewards: {hold: {params: {treshold: 0.3}}}\n")
    installed["typo"] = registry.TaskPlugin(config=tmp_path / "typo.yaml")
    with pytest.raises(UserError, match=r"reward term 'hold' \(upright_bonus\): got an unexpected keyword argument "
                                        r"'treshold'; valid params: joints, threshold \(did you mean 'threshold'\?\)$"):  # fmt: skip
        make_env("typo")
