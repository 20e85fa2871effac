"""A term's YAML params against its annotations (robolearn/envs/param_types.py): values of another
kind are one line naming the term and the param; what Python would accept passes."""

import pytest
import torch

from robolearn.envs.param_types import check_param_types, expected
from robolearn.errors import UserError
from robolearn.scene.entities import Joints


def term(env, joints: Joints | None = None, std: float = 0.5, bounds: list[float] = (0.0, 1.0), name: str = "x",
         flag: bool = False, count: int | None = None, pair: tuple[float, float] = (0.0, 0.0), loose=None,
         threshold: float = None):  # noqa: RUF013 (a sloppy plugin annotation: null is its default)
    return None


@pytest.mark.parametrize(("params", "message"), [
    ({"std": [1, 2]}, "std=[1, 2] is not valid; valid: a number"),
    ({"std": "wide"}, "std='wide' is not valid; valid: a number"),
    ({"std": None}, "std=null is not valid; valid: a number"),
    ({"std": True}, "valid: a number"),
    ({"bounds": 3}, "bounds=3 is not valid; valid: a list of numbers"),
    ({"bounds": [0, "high"]}, "valid: a list of numbers"),
    ({"name": 3}, "name=3 is not valid; valid: a string"),
    ({"flag": 2}, "valid: true or false"),
    ({"count": "many"}, "count='many' is not valid; valid: a number, or null"),
    ({"pair": [1, 2, 3]}, "valid: a list of 2 numbers"),
    ({"bounds": [1.0, -1.0]}, "bounds=[1.0, -1.0] is not valid; valid: [low, high] with low <= high"),
])  # fmt: skip
def test_a_value_of_another_kind_names_the_term_and_param(params, message):
    with pytest.raises(UserError) as err:
        check_param_types("reward", "my_reward", term, params)
    assert str(err.value).startswith("reward term 'my_reward' (term): ") and message in str(err.value), err.value


@pytest.mark.parametrize("params", [
    {"std": 1}, {"std": 0.25}, {"bounds": [0, 1.5]}, {"bounds": (0, 1)}, {"name": "base"}, {"flag": True},
    {"flag": 0}, {"count": None}, {"count": 3}, {"count": 2.5}, {"pair": [1, 2]}, {"loose": [1, "a"]},
    {"threshold": None}, {"threshold": 0.3},
    {"joints": 7},  # entity params are checked where they resolve (scene.entities), not here
    {"bounds": torch.zeros(4, 2)},  # a value the code passes itself (an adaptive range's per-env values)
])  # fmt: skip
def test_values_python_accepts_pass(params):
    check_param_types("reward", "my_reward", term, params)


def test_a_class_term_is_checked_against_its_init():
    class counter:  # noqa: N801
        def __init__(self, env, window_s: float = 1.0):
            pass

    with pytest.raises(UserError, match=r"window_s=\[1\] is not valid; valid: a number"):
        check_param_types("metric", "m", counter, {"window_s": [1]})


def test_annotations_that_cannot_be_evaluated_check_nothing():
    def plugin_term(env, scale: "NotImported" = 1.0):  # noqa: F821
        return None

    check_param_types("reward", "r", plugin_term, {"scale": "anything"})
    assert expected(dict[str, float], 3) is None  # a type not checked here


def test_a_reversed_range_of_an_event_its_preset_does_not_run_is_refused(make_env):
    """quadruped_flat's push runs only under randomization=sim2real; its params are checked in every
    preset, a [low, high] pair by name (`*_range`, `range`, `bounds`) the right way round too; a pair
    of another name (a height scan's `size`) may be anything."""
    with pytest.raises(UserError, match=r"event term 'push' \(push_by_setting_velocity\): velocity_range=\[1, -1\] "
                                        r"is not valid; valid: \[low, high\] with low <= high"):
        make_env("quadruped_flat", ["task.events.push.params.velocity_range=[1,-1]"], num_envs=2)
    check_param_types("observation", "scan", term, {"pair": [2.0, 1.0]})
    # a class term's own value check (`check`, without an env: building the class would enable its buffers)
    with pytest.raises(UserError, match=r"event 'action_delay' \(runs from randomization=sim2real\): "
                                        r"randomize_action_delay: steps must be 0 <= low <= high, got \[-1, 2\]"):
        make_env("quadruped_flat", ["task.events.action_delay.params.steps=[-1,2]"], num_envs=2)
    assert make_env("quadruped_flat", num_envs=2).actions.history.shape[0] == 0  # an unbuilt delay keeps no past controls


def test_a_rewards_kernel_width_must_be_positive_an_events_std_may_be_zero():
    """exp(-e^2 / std^2) with std 0 is nan at e = 0 and 0 elsewhere; a negative std reads as its square.
    An event's or noise's std of 0 may mean none, so only rewards and metrics are checked."""

    def track(env, command: str, std: float) -> torch.Tensor: ...

    for std in (0.0, -0.5):
        with pytest.raises(UserError, match=rf"reward term 'r' \(track\): std={std} is not valid; valid: a number > 0"):
            check_param_types("reward", "r", track, {"command": "c", "std": std})
    check_param_types("reward", "r", track, {"command": "c", "std": 0.25})
    check_param_types("event", "e", track, {"command": "c", "std": 0.0})
