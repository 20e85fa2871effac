"""The rows of `robolearn tune`'s summary (sweeps.write_summary writes them): each trial's run, how
far it trained and its objective, and the grid points a stopped search never started."""

from __future__ import annotations

import json
import math
from pathlib import Path

from robolearn.errors import UserError, one_line
from robolearn.tune_space import grid


def summary_row(result, cfg) -> dict:
    """A trial's line of the summary table (sweeps.write_summary)."""
    from robolearn.tune_trial import format_value

    metrics = result.metrics or {}
    # the run's own record: Tune's last reported row lags it when a trial is stopped (Ctrl+C, ASHA)
    iteration = _last_iteration(Path(metrics["run_dir"])) if metrics.get("run_dir") else None
    iteration = iteration if iteration is not None else metrics.get("iteration", 0)
    if result.error is not None:
        status, error = "failed", trial_error(result.error)
    elif metrics.get("not_started") or not metrics.get("run_dir"):  # the search stopped before it started
        status, error = "not started", ""
    elif iteration < int((result.config or {}).get("runner.max_iterations", cfg.runner.max_iterations)):
        status, error = f"stopped at iteration {iteration}", ""
    else:
        status, error = "finished", ""
    value = metrics.get("objective_run")
    swept = " ".join(f"{k}={format_value(v)}" for k, v in (result.config or {}).items())
    objective = value if value is not None and math.isfinite(value) else None
    run_dir = metrics.get("run_dir", "" if status == "not started" else str(result.path))
    return _row(cfg, metrics.get("trial_index", -1), swept, objective, status, error, run_dir)


def _row(cfg, job: int, overrides: str, objective: float | None, status: str, error: str, run_dir: str) -> dict:
    """One row of the summary table, in sweeps.write_summary's layout."""
    return {"job": job, "overrides": overrides, "metric": cfg.objective.metric, "mode": cfg.objective.mode,
            "direction": cfg.objective.direction, "objective": objective, "status": status, "error": error,
            "run_dir": run_dir}  # fmt: skip


def unstarted_grid(space: dict, num_samples: int, rows: list[dict], cfg) -> list[dict]:
    """Summary rows for the grid points a stopped search never started (Tune never made their trials):
    where every searched key is a grid (a,b,c), each point num_samples times; a sampled space has no
    values to list."""
    import collections
    import itertools

    from robolearn.tune_trial import format_value

    grids = {key: grid(domain) for key, domain in space.items()}
    if not grids or any(values is None for values in grids.values()):
        return []
    wanted = collections.Counter(" ".join(f"{k}={format_value(v)}" for k, v in zip(grids, point))
                                 for point in itertools.product(*grids.values()))  # fmt: skip
    wanted = collections.Counter({point: n * num_samples for point, n in wanted.items()})
    wanted.subtract(r["overrides"] for r in rows)
    return [_row(cfg, -1, point, None, "not started", "", "") for point, n in wanted.items() for _ in range(max(n, 0))]


def _last_iteration(run_dir: Path) -> int | None:
    """The last iteration in a run's metrics.jsonl (a line cut short when the trial was killed is
    skipped); None where it has none."""
    try:
        lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return int(json.loads(line)["iteration"])
        except (ValueError, KeyError, TypeError):
            continue
    return None


def trial_error(error: BaseException) -> str:
    """The cause of a trial's failure in one line (Ray wraps it in its own task error)."""
    cause = getattr(error, "cause", None) or error
    text = str(cause) if isinstance(cause, UserError) else f"{type(cause).__name__}: {cause}"
    return one_line(text)[:300]
