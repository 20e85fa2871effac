"""`play command=`: a constant or a schedule of rows [from_s, values...]."""

import re

import pytest

from robolearn.command_script import CommandScript
from robolearn.errors import UserError


def test_a_constant_holds_for_the_whole_clip():
    script = CommandScript.parse("[0.8,0,0]")
    assert script.width == 3 and script.at(0.0) == script.at(99.0) == (0.8, 0.0, 0.0)


def test_a_schedule_switches_at_its_times():
    script = CommandScript.parse("[[1,0,0],[2,0.8,0],[6,0,1.5]]")
    assert script.width == 2
    assert script.at(0.0) == (0.0, 0.0)  # before the first row's time: the first row
    assert script.at(1.99) == (0.0, 0.0) and script.at(2.0) == (0.8, 0.0) and script.at(5.99) == (0.8, 0.0)
    assert script.at(6.0) == script.at(60.0) == (0.0, 1.5)


@pytest.mark.parametrize(("text", "message"), [
    ("fast", "is not a list of finite numbers or a schedule"),
    ("[]", "is not a list of finite numbers or a schedule"),
    ("[0.8, x]", "is not a list of finite numbers or a schedule"),
    ("[true, 0]", "is not a list of finite numbers or a schedule"),
    ("[.nan, 0, 0]", "is not a list of finite numbers or a schedule"),  # the policy would act on NaN
    ("[[0,1],[.inf,2]]", "is not a list of finite numbers or a schedule"),  # a time never reached
    ("[[0,1],[1,2,3]]", "every schedule row is [from_s, values...] of one length"),
    ("[[0],[1]]", "every schedule row is [from_s, values...] of one length"),
    ("[[2,1],[1,0]]", "times must be >= 0 and rise strictly"),
    ("[[-1,1]]", "times must be >= 0 and rise strictly"),
    ("[1e30, 0]", "1e+30 is far past any command a policy was trained on; valid: values of magnitude at most 1e+06"),
    ("[[0,1],[2,-2e6]]", "-2e+06 is far past any command"),  # float32 observations would overflow
])
def test_bad_scripts_are_one_line(text, message):
    with pytest.raises(UserError, match=re.escape(message)):
        CommandScript.parse(text)


def test_numbers_in_exponent_form_are_numbers():
    """YAML 1.1 reads 1e-1 (no dot) as a string."""
    assert CommandScript.parse("[1e-1,0,-2E+0]").values == ((0.1, 0.0, -2.0),)
    assert CommandScript.parse("[[0,1],[1e1,0]]").starts == (0.0, 10.0)
    assert CommandScript.parse("[[0,1e6],[1e30,0]]").values == ((1e6,), (0.0,))  # a time past the clip: never reached


def test_the_width_must_fit_the_command():
    with pytest.raises(UserError, match="'base_velocity' has 3 values, the command given has 2"):
        CommandScript.parse("[0.8,0]").check_width(3, "base_velocity")
