"""The run logger's warning about diverged environments: one line with the rate, then rate-limited."""

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
