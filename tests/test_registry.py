"""Tasks are discovered through entry points; a plugin that cannot be used is set aside with the reason."""

import sys
from importlib.metadata import EntryPoint

import pytest

from robolearn import registry
from robolearn.errors import UserError


def test_builtin_tasks_are_registered_through_entry_points():
    tasks = registry.discover_tasks()
    assert {"cartpole", "pendulum"} <= set(tasks)
    assert tasks["cartpole"].config.name == "cartpole.yaml" and tasks["cartpole"].config.is_file()
    assert "upright_bonus" in tasks["pendulum"].terms


def fake_entry_points(*pairs):
    eps = [EntryPoint(name, value, registry.ENTRY_POINT_GROUP) for name, value in pairs]
    return lambda group: [ep for ep in eps if ep.group == group]


def test_same_name_twice_sets_both_aside(monkeypatch):
    monkeypatch.setattr(registry, "entry_points", fake_entry_points(
        ("cartpole", "robolearn_tasks.cartpole:TASK"), ("cartpole", "robolearn_tasks.pendulum:TASK"),
        ("pendulum", "robolearn_tasks.pendulum:TASK")))  # fmt: skip
    assert set(registry.discover_tasks()) == {"pendulum"}
    with pytest.raises(UserError, match="task 'cartpole' is installed but cannot be used: task 'cartpole' is registered twice"):
        registry.get_task("cartpole")


NAMED = registry.TaskPlugin(name="pendulum", config=registry.discover_tasks()["pendulum"].config)
"""A plugin that states its own name (optional: the entry point's name is the task's name)."""


def test_a_plugin_without_a_name_takes_its_entry_points():
    assert registry.discover_tasks()["pendulum"].name == "pendulum"  # tasks/pendulum states no name


def test_entry_point_name_must_match_task_name(monkeypatch):
    monkeypatch.setattr(registry, "entry_points", fake_entry_points(("swing", "tests.test_registry:NAMED")))
    assert registry.discover_tasks() == {}
    with pytest.raises(UserError, match="holds a task named 'pendulum'"):
        registry.get_task("swing")


def test_a_plugin_that_fails_to_import_leaves_the_others_working(monkeypatch):
    monkeypatch.setattr(registry, "entry_points", fake_entry_points(
        ("cartpole", "robolearn_tasks.cartpole:TASK"), ("broken", "no_such_package.tasks:TASK"),
        ("notaplugin", "robolearn.registry:ENTRY_POINT_GROUP")))  # fmt: skip
    assert set(registry.discover_tasks()) == {"cartpole"}
    assert "failed to import: ModuleNotFoundError: No module named 'no_such_package'" in registry.BROKEN["broken"]
    with pytest.raises(UserError, match="task 'broken' is installed but cannot be used: no_such_package.tasks:TASK"):
        registry.get_task("broken")
    with pytest.raises(UserError, match="is not a robolearn TaskPlugin"):
        registry.get_task("notaplugin")
    assert registry.get_task("cartpole").name == "cartpole"


def test_a_task_yaml_that_cannot_be_read_sets_only_that_task_aside(monkeypatch, tmp_path):
    from robolearn import compose

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nasset: [unclosed\n")
    plugin = registry.TaskPlugin(name="bad", config=bad)
    real = registry.discover_tasks
    monkeypatch.setattr(compose, "discover_tasks", lambda: {**real(), "bad": plugin})
    tasks = compose.register_configs()
    assert "bad" not in tasks and "cartpole" in tasks and "cannot read task config" in registry.BROKEN["bad"]
    with pytest.raises(UserError, match="task 'bad' is installed but cannot be used: cannot read task config"):
        compose.compose_train(["task=bad"])
    assert compose.compose_train(["task=cartpole"]).task.name == "cartpole"


def test_unknown_task_lists_valid_ones():
    with pytest.raises(UserError, match="unknown task 'nope'; valid tasks: .*cartpole, pendulum, pendulum_partial, quadruped_flat"):
        registry.get_task("nope")


def exiting_module(tmp_path, monkeypatch):
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(3)  # argparse at import does this\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_plugin_that_exits_on_import_is_set_aside_and_the_others_work(monkeypatch, tmp_path):
    exiting_module(tmp_path, monkeypatch)
    monkeypatch.setattr(registry, "entry_points", fake_entry_points(
        ("cartpole", "robolearn_tasks.cartpole:TASK"), ("exits", "exits_on_import:TASK")))  # fmt: skip
    assert set(registry.discover_tasks()) == {"cartpole"}
    assert "exited while it was imported (SystemExit: 3)" in registry.BROKEN["exits"]


def test_a_plugin_s_fields_are_checked_when_it_is_made(tmp_path):
    assert registry.TaskPlugin(config=str(tmp_path / "t.yaml")).config == tmp_path / "t.yaml"  # a path as text
    with pytest.raises(TypeError, match=r"TaskPlugin terms\['r'\] is a int; valid: a term function"):
        registry.TaskPlugin(config=tmp_path / "t.yaml", terms={"r": 3})
    with pytest.raises(TypeError, match="TaskPlugin terms= is a list; valid: a mapping of names"):
        registry.TaskPlugin(config=tmp_path / "t.yaml", terms=[len])
    with pytest.raises(TypeError, match="TaskPlugin config= is a int"):
        registry.TaskPlugin(config=3)
    with pytest.raises(TypeError, match="TaskPlugin edit_spec= is a str"):
        registry.TaskPlugin(config=tmp_path / "t.yaml", edit_spec="add_terrain")


def test_a_project_folder_that_hides_the_installed_package_is_named(monkeypatch, tmp_path):
    """new-task writes ./NAME/NAME/__init__.py; `python -m robolearn` run beside it imports ./NAME (no
    __init__.py) as a namespace package, which has no TASK: the reason names that folder."""
    (tmp_path / "my_robot" / "my_robot").mkdir(parents=True)
    (tmp_path / "my_robot" / "my_robot" / "__init__.py").write_text("TASK = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "entry_points", fake_entry_points(("my_robot", "my_robot:TASK")))
    try:
        assert registry.discover_tasks() == {}
    finally:
        sys.modules.pop("my_robot", None)
    reason = registry.BROKEN["my_robot"]
    assert "has no attribute 'TASK'" in reason and f"from the folder {tmp_path / 'my_robot'}, which has no __init__.py" in reason
