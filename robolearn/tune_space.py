"""The search space of `robolearn tune` (tune.py): training overrides in Hydra's sweep syntax read
into Ray Tune domains, and every value a trial may get checked against the composed config before
Ray starts."""

from __future__ import annotations

from robolearn.errors import UserError, one_line

TAGS = ("log", "int")
"""The tags an interval() takes: sampled on a log scale, as whole numbers."""

CHECKED_VALUES = 64
"""At most this many values of each searched key are checked before Ray starts (every one of a
smaller set; of a larger one, this many spread evenly, both ends among them)."""


def search_space(overrides: list[str]) -> tuple[list[str], dict]:
    """(fixed overrides, {key: Ray Tune domain, or a grid}) of training overrides in Hydra's syntax:
    a,b,c is a grid (every value, in each of tune.num_samples repetitions: Hydra's own meaning of
    a list), choice(), range() and interval() are sampled."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from ray import tune

    fixed, space = [], {}
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception as exc:
        raise UserError(f"cannot read the overrides: {one_line(exc)[:200]}") from None
    for text, override in zip(overrides, parsed):
        if not override.is_sweep_override():
            fixed.append(text)
            continue
        key, value = override.key_or_group, override.value()
        unknown = sorted(set(getattr(value, "tags", ())) - set(TAGS))
        if unknown:
            raise UserError(f"{text}: unknown tag '{unknown[0]}'; valid: {', '.join(TAGS)} (tag(log,interval(a,b)), "
                            "tag(int,interval(a,b)))")  # fmt: skip
        if value.tags and not override.is_interval_sweep():
            raise UserError(f"{text}: tags ({', '.join(sorted(value.tags))}) shape an interval(); a,b,c, choice() and "
                            "range() take none")  # fmt: skip
        if override.is_choice_sweep() and value.simple_form:
            space[key] = tune.grid_search(list(override.sweep_iterator()))
        elif override.is_choice_sweep():
            space[key] = tune.choice(list(override.sweep_iterator()))
        elif override.is_range_sweep():
            try:
                values = list(override.sweep_iterator())
            except ValueError as exc:  # range(1,5,0)
                raise UserError(f"{text}: {one_line(exc)}; valid: range(start,stop) or range(start,stop,step) with a step "
                                "towards stop") from None  # fmt: skip
            if not values:
                raise UserError(f"{text}: the range has no values; valid: range(start,stop) with start < stop, "
                                f"or range(start,stop,step) with a step towards stop")  # fmt: skip
            space[key] = tune.choice(values)
        elif override.is_interval_sweep():
            integer, log = "int" in value.tags, "log" in value.tags
            low, high = value.start, value.end
            if not low < high:
                swapped = f", e.g. interval({high:g},{low:g})" if low > high else ""
                raise UserError(f"{text}: the interval's start {low:g} is not below its end {high:g}; valid: "
                                f"interval(low,high) with low < high{swapped}")  # fmt: skip
            if log and low <= 0:
                raise UserError(f"{text}: a log interval needs a start above 0")
            if integer:
                space[key] = (tune.lograndint if log else tune.randint)(int(low), int(high) + 1)
            else:
                space[key] = (tune.loguniform if log else tune.uniform)(low, high)
        else:
            raise UserError(f"{text}: valid search spaces: a,b,c, choice(...), range(...), interval(a,b), "
                            f"tag(log,interval(a,b)), tag(int,interval(a,b))")  # fmt: skip
    if not space:
        raise UserError("robolearn tune needs a search space: sweep at least one override, e.g. "
                        "'algo.learning_rate=tag(log,interval(1e-4,1e-2))' or algo.entropy_coef=0.0,0.005,0.01")  # fmt: skip
    return fixed, space


def check_space(fixed: list[str], space: dict):
    """Compose and check the config with a sample of the space, and the objective against the task,
    before Ray starts."""
    from robolearn import app
    from robolearn.compose import compose_train
    from robolearn.isaaclab import isaaclab_task
    from robolearn.objective import EVAL_PREFIX, check_objective
    from robolearn.tune_trial import format_value

    sample = {key: format_value(_values(domain)[0]) for key, domain in space.items()}  # the first, not a random draw
    cfg = compose_train([*fixed, *(f"{k}={v}" for k, v in sample.items())])
    for key, domain in space.items():  # a value that fails fails here, not in trial 7
        _check_values(cfg, fixed, sample, key, domain)
    if cfg.objective.metric.startswith(EVAL_PREFIX):
        raise UserError(f"objective.metric={cfg.objective.metric}: Tune's schedulers compare trials every iteration; "
                        f"valid: a metrics.jsonl column, e.g. mean_episode_return")  # fmt: skip
    if isaaclab_task(cfg.task.name) is None:
        import torch

        env = app.build_env(cfg, "mujoco", torch.device("cpu"), num_envs=1)
        try:
            check_objective(cfg.objective, env)
        finally:
            env.close()
    return cfg


def _check_values(cfg, fixed: list[str], sample: dict, key: str, domain) -> None:
    """The values of `key` a trial may get, the others as in `sample`: its ends composed as a trial
    composes them (a value of the wrong type), the rest checked against the composed config
    (config_checks: algo.num_mini_batches=5 of interval(1,8) does not divide the batch)."""
    from omegaconf import OmegaConf

    from robolearn.compose import compose_train
    from robolearn.config_checks import check_train_cfg
    from robolearn.tune_trial import format_value

    def compose(value) -> None:
        compose_train([*fixed, *(f"{k}={format_value(value) if k == key else v}" for k, v in sample.items())])

    values = _values(domain)
    for value in {0, len(values) - 1} if values else ():
        compose(values[value])
    for value in values[1:-1]:
        trial = cfg.copy()
        try:
            OmegaConf.update(trial, key, value, merge=False)
            check_train_cfg(trial)
        except Exception:  # composed as a trial composes it: the one line of what is wrong, or nothing is
            try:
                compose(value)
            except UserError as exc:
                raise UserError(f"{one_line(exc)} (a value the search over {key} may give; search only valid "
                                "values, e.g. with choice())") from None  # fmt: skip


def _values(domain) -> list:
    """The values of a grid or a choice, or of a sampled range (CHECKED_VALUES at most, spread
    evenly, both ends among them)."""
    values = grid(domain) or categories(domain)
    if values is None:
        lower, upper = getattr(domain, "lower", None), getattr(domain, "upper", None)
        if lower is None or upper is None:
            return []
        if type(domain).__name__ != "Integer":  # a float range: its two ends
            return [lower, upper]
        values = range(lower, upper)  # randint's upper bound is exclusive
    values = list(values)
    if len(values) <= CHECKED_VALUES:
        return values
    picks = sorted({round(i * (len(values) - 1) / (CHECKED_VALUES - 1)) for i in range(CHECKED_VALUES)})
    return [values[i] for i in picks]


def grid(domain) -> list | None:
    """The values of a grid entry of the search space (None for a sampled one)."""
    return domain["grid_search"] if isinstance(domain, dict) else None


def categories(domain) -> list | None:
    """The values of a choice() (PBT picks among them; it would scale the choice object otherwise)."""
    return list(domain.categories) if hasattr(domain, "categories") else None
