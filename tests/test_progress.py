"""The evaluation's progress on stderr: a few plain lines when piped, a bar on a terminal, and the
device-side episode count read only at checkpoints."""

import io
import re

import torch
from rich.console import Console

from robolearn.evaluate import evaluate
from robolearn.progress import EvalProgress

LINE = re.compile(r"^evaluating: (\d+)% \((\d+)/250 steps\), (\d+)/4 episodes ended, \d+:\d\d:\d\d elapsed$")


def zero_policy(env):
    return lambda obs: torch.zeros(obs.shape[0], env.num_actions)


def test_piped_evaluation_prints_a_few_lines(make_env, capsys):
    env = make_env("cartpole", num_envs=4)  # 250 steps of 0.02 s
    metrics, _ = evaluate(env, zero_policy(env))
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == "" and 1 <= len(lines) <= 5, captured.err
    found = [LINE.match(line) for line in lines]
    assert all(found), lines
    assert [(int(m.group(1)), int(m.group(2))) for m in found] == [(25, 63), (50, 125), (75, 188), (100, 250)]
    assert int(found[-1].group(3)) == 4 and metrics["episodes"] == 4  # every episode ended by the last step
    ended = [int(m.group(3)) for m in found]
    assert ended == sorted(ended)


def test_no_progress_when_asked_for_none(make_env, capsys):
    env = make_env("cartpole", num_envs=2)
    evaluate(env, zero_policy(env), progress=False)
    assert capsys.readouterr().err == ""


class CountedSum:
    """Stands for the device tensor of ended episodes; counts the reads (host syncs on a GPU)."""

    def __init__(self, value):
        self.value, self.reads = value, 0

    def sum(self):
        self.reads += 1
        return torch.tensor(self.value)


def test_the_episode_count_is_read_only_at_checkpoints():
    ended = CountedSum(3)
    plain = Console(file=io.StringIO(), force_terminal=False)
    with EvalProgress("evaluating", 1000, 8, console=plain) as shown:
        for step in range(1, 1001):
            shown.update(step, ended)
    assert ended.reads == 4 and len(plain.file.getvalue().splitlines()) == 4

    ended = CountedSum(8)
    terminal = Console(file=io.StringIO(), force_terminal=True, width=120)
    with EvalProgress("evaluating", 1000, 8, console=terminal) as shown:
        for step in range(1, 1001):
            shown.update(step, ended)
    assert 1 <= ended.reads <= 3  # the last step, and at most every 0.25 s before it
    screen = terminal.file.getvalue()
    assert "1000/1000" in screen and "8/8 episodes ended" in screen
