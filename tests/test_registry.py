"""Tasks are discovered through entry points; one name registered twice is an error."""

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


def test_same_name_twice_is_an_error(monkeypatch):
    monkeypatch.setattr(registry, "entry_points", fake_entry_points(
        ("cartpole", "robolearn_tasks.cartpole:TASK"), ("cartpole", "robolearn_tasks.pendulum:TASK")))
    with pytest.raises(UserError, match="task 'cartpole' is registered twice"):
        registry.discover_tasks()


def test_entry_point_name_must_match_task_name(monkeypatch):
    monkeypatch.setattr(registry, "entry_points", fake_entry_points(("swing", "robolearn_tasks.pendulum:TASK")))
    with pytest.raises(UserError, match="holds a task named 'pendulum'"):
        registry.discover_tasks()


def test_unknown_task_lists_valid_ones():
    with pytest.raises(UserError, match="unknown task 'nope'; valid tasks: cartpole, pendulum, quadruped_flat"):
        registry.get_task("nope")
