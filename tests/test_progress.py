"""The evaluation's progress on stderr: a few plain lines when piped, a bar on a terminal, and the
device-side episode count read only at checkpoints."""

import io
import re

import torch
from rich.console import Console

from robolearn.evaluate import ALL_ENDED_EVERY, evaluate
from robolearn.progress import EvalProgress

LINE = re.compile(r"^evaluating: (\d+)% \((\d+)/500 steps\), (\d+)/4 episodes ended, \d+:\d\d:\d\d elapsed"
                  r"(, ~\d+:\d\d:\d\d left)?$")


def zero_policy(env):
    return lambda obs: torch.zeros(obs.shape[0], env.num_actions)


def test_piped_evaluation_prints_a_few_lines(make_env, capsys):
    env = make_env("pendulum", num_envs=4)  # 500 steps of 0.02 s, no terminations: every episode times out
    metrics, _ = evaluate(env, zero_policy(env))
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == "" and 1 <= len(lines) <= 5, captured.err
    found = [LINE.match(line) for line in lines]
    assert all(found), lines
    assert [(int(m.group(1)), int(m.group(2))) for m in found] == [(25, 125), (50, 250), (75, 375), (100, 500)]
    assert [int(m.group(3)) for m in found] == [0, 0, 0, 4] and metrics["episodes"] == 4


def test_the_evaluation_stops_once_every_episode_ended(make_env, capsys, monkeypatch):
    """cartpole's pole falls within ~50 steps of a zero action: the evaluation stops at the next
    check after the last episode ended, with the metrics of running the whole episode length."""
    env = make_env("cartpole", num_envs=4, seed=5)  # 250 steps
    early, _ = evaluate(env, zero_policy(env))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    stop = re.match(r"^evaluating: all 4 episodes ended after (\d+) of 250 steps, \d+:\d\d:\d\d elapsed$", lines[0])
    assert stop and int(stop.group(1)) % ALL_ENDED_EVERY == 0 and int(stop.group(1)) < 100, lines
    assert early["episode_length_mean"] < int(stop.group(1))
    monkeypatch.setattr("robolearn.evaluate.ALL_ENDED_EVERY", 10**9)  # never checked: all 250 steps
    full, _ = evaluate(make_env("cartpole", num_envs=4, seed=5), zero_policy(env))
    assert "100% (250/250 steps), 4/4 episodes ended" in capsys.readouterr().err
    assert early == full


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


def test_a_long_evaluation_in_a_log_says_how_far_it_is_every_minute_with_the_time_left(monkeypatch):
    """65,536 quadruped episodes on a CPU take hours: a line a minute between the quarters, with the
    time left at the pace so far; sim2sim counts its episodes (one after another) the same way."""
    clock = [0.0]
    monkeypatch.setattr("robolearn.progress.time.monotonic", lambda: clock[0])
    plain = Console(file=io.StringIO(), force_terminal=False, width=200)
    with EvalProgress("evaluating", 1000, 8, console=plain) as shown:
        for step in range(1, 101):
            clock[0] = 1.5 * step  # 1.5 s a step: 100 steps in 150 s
            shown.update(step, torch.zeros(8, dtype=torch.bool))
    assert plain.file.getvalue().splitlines() == [
        "evaluating: 4% (40/1000 steps), 0/8 episodes ended, 0:01:00 elapsed, ~0:24:00 left",
        "evaluating: 8% (80/1000 steps), 0/8 episodes ended, 0:02:00 elapsed, ~0:23:00 left",
    ]
    clock[0] = 0.0
    plain = Console(file=io.StringIO(), force_terminal=False, width=200)
    with EvalProgress("sim2sim", 4, None, console=plain, unit="episodes") as shown:
        for done in range(1, 5):
            clock[0] = 10.0 * done
            shown.update(done)
    assert plain.file.getvalue().splitlines() == [
        "sim2sim: 25% (1/4 episodes), 0:00:10 elapsed, ~0:00:30 left",
        "sim2sim: 50% (2/4 episodes), 0:00:20 elapsed, ~0:00:20 left",
        "sim2sim: 75% (3/4 episodes), 0:00:30 elapsed, ~0:00:10 left",
        "sim2sim: 100% (4/4 episodes), 0:00:40 elapsed",
    ]
