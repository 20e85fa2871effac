"""The one number a run reports to a sweep: `objective.metric` (a metrics.jsonl column, or eval/<key>
of the end-of-run evaluation) reduced over the run by `objective.mode`. `robolearn train` returns
it, so Hydra's Optuna sweeper and Ray Tune can rank trials, and a sweep's summary table sorts by it.
"""

from __future__ import annotations

import math
from collections import deque
from fnmatch import fnmatch

from robolearn.config_scale import ObjectiveCfg
from robolearn.errors import UserError

EVAL_PREFIX = "eval/"
LAST_K = 10
"""Iterations averaged by mode=last10."""


def check_objective(cfg: ObjectiveCfg, env) -> None:
    """A metric this run will report, or a one-line UserError listing the valid names."""
    from robolearn.evaluate import evaluation_names
    from robolearn.rl.ppo import UPDATE_KEYS
    from robolearn.rl.runner import ROW_KEYS

    if cfg.metric.startswith(EVAL_PREFIX):
        valid = [EVAL_PREFIX + name for name in evaluation_names(env)]
    else:
        valid = [*ROW_KEYS, *env.logged_names(), *UPDATE_KEYS]
    if not any(fnmatch(cfg.metric, name) if "*" in name else cfg.metric == name for name in valid):
        other = "eval/<key> of the end-of-run evaluation" if not cfg.metric.startswith(EVAL_PREFIX) else "a metrics.jsonl column"
        raise UserError(f"objective.metric={cfg.metric} is not a metric of this run; valid: {', '.join(valid)}, "
                        f"or {other}")  # fmt: skip


class Objective:
    """Follows the objective through a run: `see` every metrics row, `see_evaluation` the end-of-run
    evaluation; `value` is the objective (NaN while the metric has not been reported)."""

    def __init__(self, cfg: ObjectiveCfg):
        self.cfg = cfg
        self.needs_evaluation = cfg.metric.startswith(EVAL_PREFIX)
        """An eval/ metric: its one value comes from the end-of-run evaluation."""
        self.best: float | None = None
        self.recent: deque[float] = deque(maxlen=LAST_K)

    def see(self, row: dict) -> None:
        value = row.get(self.cfg.metric)
        if self.needs_evaluation or value is None or not math.isfinite(value):
            return
        self.recent.append(float(value))
        better = max if self.cfg.direction == "maximize" else min
        self.best = value if self.best is None else better(self.best, value)

    def see_evaluation(self, evaluation: dict) -> None:
        if self.needs_evaluation:
            self.best = float(evaluation[self.cfg.metric[len(EVAL_PREFIX):]])
            self.recent.append(self.best)

    def value(self) -> float:
        if not self.recent:
            return math.nan
        if self.needs_evaluation or self.cfg.mode == "final":
            return self.recent[-1]
        if self.cfg.mode == "best":
            return self.best
        return sum(self.recent) / len(self.recent)
