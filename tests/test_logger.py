"""The run logger: the warning about diverged environments (one line with the rate, then rate-limited),
the piped progress lines, and what goes to the loggers (sinks)."""

import json

from robolearn.logger import WARN_EVERY, RunLogger


def row(it, resets):
    # 1000 env steps per iteration: steps_per_s * (collection_s + learning_s)
    return {"iteration": it, "env_steps": 1000 * it, "steps_per_s": 2000.0, "collection_s": 0.3, "learning_s": 0.2,
            "health/nonfinite_resets": float(resets)}  # fmt: skip


def test_diverged_envs_are_reported_once_then_at_most_every_warn_every_iterations(tmp_path, capsys):
    logger = RunLogger(tmp_path, 300, 0, progress=False)
    logger.log(row(1, 0))
    assert "warning" not in capsys.readouterr().err
    logger.log(row(2, 5))
    first = capsys.readouterr().err.strip().splitlines()
    assert first == ["warning: iteration 2: 5 of 2,000 env steps (0.25%) diverged (non-finite state, reward or "
                     "observation, or beyond env.state_limit) and were reset without being learned from; "
                     "see health/nonfinite_resets"]  # fmt: skip
    for it in range(3, 2 + WARN_EVERY):
        logger.log(row(it, 1))
    assert "warning" not in capsys.readouterr().err
    logger.log(row(2 + WARN_EVERY, 1))
    assert f"{WARN_EVERY} of {WARN_EVERY * 1000:,} env steps" in capsys.readouterr().err
    logger.log(row(3 + WARN_EVERY, 2))
    logger.close()  # what was not reported yet is, at the end
    last = capsys.readouterr().err
    assert f"iteration {3 + WARN_EVERY}: 2 of 1,000 env steps (0.2%) since iteration {2 + WARN_EVERY}" in last


def test_episodes_that_a_termination_ends_at_once_are_a_warning_once(tmp_path, capsys):
    """A start state that trips a termination (a diverging model, a pose below a height threshold):
    every episode ends after ~1 step and nothing else says so. Time-outs that short (the task's
    episode length) are no warning; the warning comes once."""
    logger = RunLogger(tmp_path, 10, 0, progress=False)
    ended = {"episodes": 64.0, "mean_episode_return": -1.0}
    logger.log({**row(1, 0), **ended, "mean_episode_length": 1.0, "termination/too_low": 0.0})  # time-outs
    logger.log({**row(2, 0), "episodes": 0.0})  # none ended
    logger.log({**row(3, 0), **ended, "mean_episode_length": 12.0, "termination/too_low": 1.0})
    assert "warning" not in capsys.readouterr().err
    logger.log({**row(4, 0), **ended, "mean_episode_length": 1.2, "termination/too_low": 0.25,
                "termination/joint_limits": 0.75})  # fmt: skip
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: iteration 4: episodes end after 1.2 steps on average, "
                                                   "75% of them by termination 'joint_limits': "), lines  # fmt: skip
    logger.log({**row(5, 0), **ended, "mean_episode_length": 1.0, "termination/joint_limits": 1.0})
    logger.close()
    assert "warning" not in capsys.readouterr().err


class FakeSink:
    def __init__(self):
        self.calls = []

    def scalars(self, values, step):
        self.calls.append(("scalars", values, step))

    def video(self, clip, step):
        self.calls.append(("video", clip, step))

    def final(self, values, step):
        self.calls.append(("final", values, step))

    def close(self):
        self.calls.append(("close",))


class FakeClips:
    """A train_clips.ClipRecorder as RunLogger sees it."""

    def __init__(self):
        self.ready, self.error, self.closed = [], None, False

    def finished(self):
        ready, self.ready = self.ready, []
        return ready

    def close(self):
        self.closed = True
        return self.finished()


def test_piped_lines_show_elapsed_time_eta_from_this_process_and_the_run_directory(tmp_path, capsys, monkeypatch):
    """A run resumed at iteration 4 of 10 that takes 2 s an iteration: the ETA counts only the
    iterations this process ran (4 s for 2), not the 4 it resumed from."""
    clock = iter([100.0, 102.0, 104.0])
    monkeypatch.setattr("robolearn.logger.time.perf_counter", lambda: next(clock))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "cartpole" / "a").mkdir(parents=True)
    logger = RunLogger(tmp_path / "runs" / "cartpole" / "a", 10, 4, progress=True)  # piped: plain lines
    logger.log({**row(5, 0), "mean_episode_return": 1.234, "mean_episode_length": 45.0})
    logger.log(row(6, 0))
    logger.close()
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        "iteration 5/10 | 2,000 steps/s | return 1.23 | length 45.0 | 0:00:02 elapsed, ETA 0:00:10 | runs/cartpole/a",
        "iteration 6/10 | 2,000 steps/s | no episode finished yet | 0:00:04 elapsed, ETA 0:00:08 | runs/cartpole/a",
    ]


def test_rows_clips_and_the_evaluation_go_to_every_sink(tmp_path):
    sinks, clips = [FakeSink(), FakeSink()], FakeClips()
    logger = RunLogger(tmp_path, 3, 0, progress=False, sinks=sinks, clips=clips)
    logger.log({**row(1, 0), "kl": float("nan"), "mean_episode_return": 2.0, "mean_episode_length": 9.0})
    clips.ready = ["clip-1"]
    logger.log(row(2, 0))
    clips.ready = ["clip-2"]  # drawn while the last iterations ran: handed out at the end of training
    logger.log(row(3, 0))
    clips.ready = ["clip-3"]
    logger.end_training()
    logger.evaluation({"return_mean": 480.0, "episodes": 16, "note": "text"}, 3)
    logger.close()
    for sink in sinks:
        scalars = [c for c in sink.calls if c[0] == "scalars"]
        assert [c[2] for c in scalars] == [1, 2, 3]
        first = scalars[0][1]
        assert first["train/mean_episode_return"] == 2.0 and first["health/nonfinite_resets"] == 0.0
        assert "train/kl" not in first and "iteration" not in first and "train/iteration" not in first  # nan, the step
        assert [c[1:] for c in sink.calls if c[0] == "video"] == [("clip-1", 2), ("clip-2", 3), ("clip-3", 3)]
        assert [c[1:] for c in sink.calls if c[0] == "final"] == [({"eval/return_mean": 480.0, "eval/episodes": 16.0}, 3)]
        assert sink.calls[-1] == ("close",)
    assert clips.closed
    assert [json.loads(line)["iteration"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]


def test_a_clip_renderer_that_fails_is_one_warning_and_training_goes_on(tmp_path, capsys):
    clips = FakeClips()
    logger = RunLogger(tmp_path, 3, 0, progress=False, clips=clips)
    clips.error = "cannot render offscreen with MUJOCO_GL=egl (no EGL)"
    for it in (1, 2, 3):
        logger.log(row(it, 0))
    logger.close()
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warnings == ["warning: training clips are off: cannot render offscreen with MUJOCO_GL=egl (no EGL)"]


def test_a_long_run_prints_a_plain_line_at_least_once_a_minute(tmp_path, capsys, monkeypatch):
    """1,000 iterations print every 50th; an iteration more than a minute after the last line prints too."""
    clock = iter([0.0, 10.0, 75.0, 80.0])
    monkeypatch.setattr("robolearn.logger.time.perf_counter", lambda: next(clock))
    logger = RunLogger(tmp_path, 1000, 0, progress=True)
    for it in (1, 2, 3):
        logger.log(row(it, 0))
    logger.close()
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split(" |")[0] for line in lines] == ["iteration 2/1000"]
