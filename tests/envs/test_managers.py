"""The manager base: state restored in place, entity params resolved once at build, staggered
time-outs and interval timers."""

import re

import pytest
import torch

from robolearn.config_task import EventMode
from robolearn import registry
from robolearn.envs.manager_base import clone_state
from robolearn.errors import UserError
from robolearn.mdp import observations
from robolearn.scene.entities import Joints, Sensors

SIM2REAL = ["randomization=sim2real"]


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _perturbed(value):
    if isinstance(value, torch.Tensor):
        return torch.ones_like(value) if value.dtype == torch.bool else value + 3
    if isinstance(value, dict):
        return {k: _perturbed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_perturbed(v) for v in value]
    return value


def test_every_manager_restores_its_state_in_place(make_env):
    """A tensor captured before load_state_dict (as a CUDA graph or a term holds it) must see the
    loaded values: no manager may rebind its state."""
    env = make_env("quadruped_flat", SIM2REAL, num_envs=4)
    env.reset()
    for _ in range(3):
        env.step(torch.randn(4, 12))
    checked = 0
    for name, manager in env.managers().items():
        state = manager.state_dict()
        held = _tensors({attr: getattr(manager, attr) for attr in manager.STATE})
        held_terms = [t for term in manager.terms if term.stateful for t in _tensors(vars(term.func))]
        changed = _perturbed(clone_state(state))
        manager.load_state_dict(changed)
        expected = _tensors(changed["state"])
        assert len(held) == len(expected), name
        for live, want in zip(held, expected):
            assert torch.equal(live, want), name
            checked += 1
        for live in held_terms:  # term tensors are still the ones the term computes with
            assert any(live is t for term in manager.terms if term.stateful for t in _tensors(vars(term.func)))
    # commands (values, ranges, timers), actions (5), observations (2 groups), rewards, events, ...
    assert checked >= 12
    # the commands' values in particular: the bug this guards against rebound them on resume
    values = env.commands.values["base_velocity"]
    saved = env.commands.state_dict()
    saved["state"]["values"]["base_velocity"] = torch.full_like(values, 0.25)
    env.commands.load_state_dict(saved)
    assert env.commands.values["base_velocity"] is values and torch.all(values == 0.25)


def test_entity_params_are_resolved_once_at_build(make_env):
    env = make_env("quadruped_flat", num_envs=2)
    term = next(t for t in env.observations.terms if t.name == "policy/joint_pos")
    assert isinstance(term.params["joints"], Joints) and len(term.params["joints"].names) == 12
    assert term.params["joints"].qpos == slice(7, 19)  # consecutive: a view, not a gather
    contact = next(t for t in env.terminations.terms if t.name == "trunk_contact")
    assert isinstance(contact.params["sensors"], Sensors) and contact.params["sensors"].names == ("trunk_contact",)
    # a term called directly with names (from another term, a test) resolves them too
    env.reset()
    by_name = observations.joint_pos(env, ["FL_hip_joint", "RR_calf_joint"])
    assert torch.equal(by_name, env.physics.qpos[:, [7, 18]])


def test_a_wrong_entity_name_fails_at_build_naming_the_term(make_env):
    with pytest.raises(UserError, match=r"termination term 'pole_fell' \(joint_pos_out_of_bounds\): no joint named "
                                        r"'hinj' in the model; valid: slider, hinge"):  # fmt: skip
        make_env(overrides=["task.terminations.pole_fell.params.joints=[hinj]"])


def test_a_term_of_the_wrong_shape_fails_at_build(make_env):
    with pytest.raises(UserError, match=r"reward term 'alive' \(joint_pos\) must return \[num_envs\], got \(16, 1\)"):
        make_env(overrides=["task.rewards.alive.func=joint_pos", "+task.rewards.alive.params={joints: [hinge]}"])
    from robolearn.envs.manager_base import Term

    env = make_env()
    env.metrics.terms.append(Term("pole", lambda env: env.physics.qpos, {}, "all_qpos"))
    with pytest.raises(UserError, match=r"metric term 'pole' \(all_qpos\) must return \[num_envs\], got \(16, 2\)"):
        env.metrics.check_outputs()  # what the env runs at build for every metric


def test_time_outs_are_staggered_unless_switched_off(make_env, tmp_path):
    env = make_env(num_envs=64)
    env.reset()
    assert env.episode_length.float().std() > 10  # spread over [0, 250)
    assert env.stagger_timeouts
    env.stagger_timeouts = False
    env.reset()
    assert (env.episode_length == 0).all()


def test_an_interval_event_never_fires_on_the_first_step_of_an_episode(make_env):
    # pushes every 0.1-0.2 s, episodes of 0.3 s (15 steps of 0.02 s); the timer is drawn again
    # at every reset, so the first push of an episode comes 5-10 steps after its reset.
    env = make_env("quadruped_flat", SIM2REAL + ["task.events.push.interval_s=[0.1,0.2]", "task.episode_length_s=0.3",
                                                 "task.events.push.adaptive=null"], num_envs=16)  # fmt: skip
    env.reset()
    fired_at = []
    push, params = env.events._interval[0]

    def spy(env_, mask, **kwargs):
        fired_at.append(env.episode_steps[mask])
        return push(env_, mask, **kwargs)

    env.events._interval[0] = (spy, params)
    for _ in range(60):
        env.step(torch.zeros(16, 12))
    steps = torch.cat(fired_at)
    assert steps.numel() > 16 and steps.min() >= 5, steps


def test_a_term_that_raises_is_named_with_its_task_at_build_and_while_stepping(make_env):
    from robolearn.envs.manager_base import Term

    env = make_env(num_envs=4)

    def broken(env):
        raise ZeroDivisionError("division by zero")

    with pytest.raises(UserError, match=r"task 'cartpole': reward term 'mine' \(my_module.broken\) failed: "
                                        r"ZeroDivisionError: division by zero"):  # fmt: skip
        env.rewards.call_once(Term("mine", broken, {}, "my_module.broken"))
    env.reset()
    k = env.rewards.names.index("alive") if "alive" in env.rewards.names else 0
    name, source = env.rewards.terms[k].name, env.rewards.terms[k].source
    env.rewards._calls[k] = (lambda env: torch.zeros(3), {})  # the wrong shape, from the second step on
    with pytest.raises(UserError, match=rf"task 'cartpole': reward term '{name}' \({source}\): must return \[num_envs\] "
                                        r"torch.float32 on cpu, got \(3,\) torch.float32 on cpu$"):  # fmt: skip
        env.step(torch.zeros(4, 1))
    obs_term = env.observations.terms[1]
    env.rewards._calls[k] = (env.rewards.terms[k].func, env.rewards.terms[k].params)
    group = env.observations._groups["policy"]
    group[1] = (group[1][0], lambda env: torch.ones(4, 7), {})
    with pytest.raises(UserError, match=rf"observation term '{obs_term.name}' \({obs_term.source}\): must return "
                                        r"\[num_envs, \d+\] on cpu as it did at build, got \(4, 7\) on cpu$"):  # fmt: skip
        env.step(torch.zeros(4, 1))


def test_an_event_or_curriculum_term_that_raises_is_named_with_its_task(make_env):
    env = make_env(num_envs=4)
    env.reset()
    term = env.events.modes[EventMode.reset][0]
    real = term.func
    term.func = lambda env, mask, **params: torch.zeros(2)[mask]  # a mask of 4 into 2: IndexError
    with pytest.raises(UserError, match=rf"task 'cartpole': event term '{term.name}' \({term.source}\) failed: "
                                        r"IndexError: "):  # fmt: skip
        env.reset()
    term.func = real

    def refuses(env, mask):
        raise UserError("value 3 is out of range; valid: 0..2")

    from robolearn.envs.manager_base import Term

    env.curriculum.terms.append(Term("levels", refuses, {}, "my_module.levels"))
    with pytest.raises(UserError, match=r"^task 'cartpole': curriculum term 'levels' \(my_module.levels\): value 3 "
                                        r"is out of range; valid: 0..2$"):  # fmt: skip
        env.curriculum.apply(torch.ones(4, dtype=torch.bool))


def test_an_observation_term_of_no_values_is_one_line(make_env, installed_tasks, tmp_path):
    (tmp_path / "empty.yaml").write_text("extends: cartpole\nobservations:\n  policy:\n    terms:\n"
                                         "      nothing: {func: no_values}\n")  # fmt: skip
    terms = {"no_values": lambda env: torch.zeros(env.num_envs, 0)}
    installed_tasks["cartpole_empty"] = registry.TaskPlugin(config=tmp_path / "empty.yaml", terms=terms)
    with pytest.raises(UserError, match=re.escape("observation term 'policy/nothing' (no_values) returns no values")):
        make_env("cartpole_empty", ["randomization=none"], num_envs=2)
