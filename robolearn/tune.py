"""`robolearn tune`: hyperparameter search on Ray Tune, with population-based training (PBT) or
early stopping (ASHA), over ordinary robolearn runs.

    robolearn tune tune.scheduler=pbt tune.num_samples=8 task=quadruped_flat \\
        'algo.learning_rate=tag(log,interval(1e-4,1e-2))' algo.entropy_coef=0.0,0.005,0.01

Arguments starting with `tune.` set the search (OPTIONS); every other argument is a training
override, and a Hydra sweep expression makes that key part of the search space: a,b,c is a grid
(every value, times tune.num_samples), choice() / range() / interval() / tag(log,interval()) are
sampled for each trial; PBT perturbs them all.
Each trial is a robolearn run in <tune.dir>/<trial name>/ (config.yaml, metrics, checkpoints,
bundle: tune_trial.py); Ray's own records go to <tune.dir>/ray/. The search ends with the same
summary.md / summary.csv as a Hydra sweep (sweeps.py). With tune.address (or RAY_ADDRESS) the
trials run on that Ray cluster, unchanged; tune.dir must then be on storage every node sees.
"""

from __future__ import annotations

import datetime
import math
import os
import socket
from pathlib import Path

from robolearn.errors import UserError, one_line

SCHEDULERS = ("pbt", "asha", "fifo")
OPTIONS = {
    "scheduler": ("asha", "pbt (population-based training), asha (early stopping) or fifo (run every trial to the end)"),
    "num_samples": ("4", "trials (the PBT population)"),
    "perturbation_interval": ("", "PBT: iterations between exploit/explore steps; default max_iterations / 5"),
    "quantile_fraction": ("0.25", "PBT: the bottom fraction copies the top fraction"),
    "resample_probability": ("0.25", "PBT: chance a perturbed value is resampled instead of scaled by 0.8 or 1.2"),
    "synch": ("false", "PBT: true waits for every trial at each perturbation (small populations, one machine)"),
    "grace_period": ("", "ASHA: iterations before a trial may be stopped; default max_iterations / 10"),
    "reduction_factor": ("3", "ASHA: keep 1 / this of the trials at each rung"),
    "max_concurrent": ("0", "trials at once (0: as many as the resources allow)"),
    "cpus_per_trial": ("1", "CPU cores each trial reserves"),
    "gpus_per_trial": ("0", "GPUs each trial reserves (fractions share one GPU: 0.25)"),
    "num_cpus": ("", "CPU cores of the local Ray instance; default all"),
    "address": ("", "a Ray cluster (ray://host:10001 or auto); default RAY_ADDRESS, else a local instance"),
    "dir": ("", "the search's folder; default runs/tune/<time>"),
}


def tune_verb(args: list[str]) -> int:
    options, overrides = _split(args)
    try:
        import ray
        from ray import tune
    except ImportError:
        raise UserError("robolearn tune needs Ray Tune, an optional extra: pip install 'robolearn[tune]'") from None
    fixed, space = search_space(overrides)
    cfg = _check(fixed, space)
    scheduler, mode = _scheduler(options, cfg, space, fixed)
    cpus, gpus = _number(options, "cpus_per_trial", float, 0), _number(options, "gpus_per_trial", float, 0)
    if cpus <= 0:
        raise UserError(f"tune.cpus_per_trial={options['cpus_per_trial']} is out of range; valid: a number > 0 "
                        "(a trial's env and learner run on at least part of a core)")  # fmt: skip
    samples, concurrent = _number(options, "num_samples", int, 1), _number(options, "max_concurrent", int, 0)
    num_cpus = _number(options, "num_cpus", int, 1) if options["num_cpus"] else None
    address = options["address"] or os.environ.get("RAY_ADDRESS") or None
    _reachable(address)
    folder = _folder(options["dir"])  # the last check: nothing is written before the others pass

    from robolearn import sweeps
    from robolearn.tune_trial import run_trial

    try:
        ray.init(address=address, num_cpus=None if address else num_cpus, include_dashboard=False,
                 configure_logging=False)  # fmt: skip
    except Exception as exc:  # no cluster there, refused, another Ray version
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise UserError(f"cannot start {where}: {type(exc).__name__}: {one_line(exc)[:200]}") from None
    try:
        trainable = tune.with_resources(tune.with_parameters(run_trial, base=fixed, folder=str(folder), cpus=cpus),
                                        {"cpu": cpus, "gpu": gpus})  # fmt: skip
        tuner = tune.Tuner(
            trainable, param_space=space,
            tune_config=tune.TuneConfig(metric="objective", mode=mode, scheduler=scheduler,
                                        num_samples=samples, max_concurrent_trials=concurrent or None),
            # every reported checkpoint is kept: PBT may exploit one a trial reported several perturbations ago
            run_config=tune.RunConfig(name="ray", storage_path=str(folder), verbose=1,
                                      failure_config=tune.FailureConfig(max_failures=0)),
        )  # fmt: skip
        where = "the Ray cluster" if address else "a local Ray instance"
        print(f"tuning {cfg.task.name} with {options['scheduler']} into {folder} on {where} at "
              f"{ray.get_runtime_context().gcs_address}", flush=True)  # fmt: skip
        results = tuner.fit()
    finally:
        ray.shutdown()
    rows = [_summary_row(r, cfg) for r in results]
    written = sweeps.write_summary(folder, rows)
    if written is not None:
        print(sweeps.summary_line(*written), flush=True)
    failed = [r for r in results if r.error is not None]
    if failed:
        raise UserError(f"{len(failed)} of {len(rows)} trials failed; the first: {trial_error(failed[0].error)}")
    return 0


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
        if override.is_choice_sweep() and value.simple_form:
            space[key] = tune.grid_search(list(override.sweep_iterator()))
        elif override.is_choice_sweep():
            space[key] = tune.choice(list(override.sweep_iterator()))
        elif override.is_range_sweep():
            space[key] = tune.choice(list(override.sweep_iterator()))
        elif override.is_interval_sweep():
            integer, log = "int" in value.tags, "log" in value.tags
            low, high = value.start, value.end
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


def _check(fixed: list[str], space: dict):
    """Compose and check the config with a sample of the space, and the objective against the task,
    before Ray starts."""
    from robolearn import app
    from robolearn.compose import compose_train
    from robolearn.isaaclab import isaaclab_task
    from robolearn.objective import EVAL_PREFIX, check_objective
    from robolearn.tune_trial import format_value

    sample = {key: format_value(grid(domain)[0] if grid(domain) else domain.sample()) for key, domain in space.items()}
    cfg = compose_train([*fixed, *(f"{k}={v}" for k, v in sample.items())])
    for key, domain in space.items():  # every grid value and each end of a range: a bad one fails here, not in trial 7
        for value in _extremes(domain):
            compose_train([*fixed, *(f"{k}={format_value(value) if k == key else v}" for k, v in sample.items())])
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


def _extremes(domain) -> list:
    """The values of a grid or a choice, or the two ends of a sampled range."""
    values = grid(domain) or categories(domain)
    if values is not None:
        return list(values)
    lower, upper = getattr(domain, "lower", None), getattr(domain, "upper", None)
    if lower is None or upper is None:
        return []
    integer = type(domain).__name__ == "Integer"  # randint's upper bound is exclusive
    return [lower, upper - 1 if integer else upper]


def _scheduler(options: dict, cfg, space: dict, fixed: list[str]):
    """(Tune scheduler, mode); PBT checkpoints at every perturbation: runner.save_interval is set to the
    perturbation interval (appended to `fixed`) unless given."""
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, PopulationBasedTraining

    name, iterations = options["scheduler"], int(cfg.runner.max_iterations)
    mode = "max" if cfg.objective.direction == "maximize" else "min"
    if name not in SCHEDULERS:
        raise UserError(f"tune.scheduler={name} is not valid; valid: {', '.join(SCHEDULERS)}")
    if name == "fifo":
        return FIFOScheduler(), mode
    if name == "asha":
        grace = _number(options, "grace_period", int, 1) if options["grace_period"] else max(1, iterations // 10)
        factor = _number(options, "reduction_factor", float, 1.0001)
        return ASHAScheduler(time_attr="iteration", max_t=iterations, grace_period=min(grace, iterations),
                             reduction_factor=factor), mode  # fmt: skip
    interval = (_number(options, "perturbation_interval", int, 1) if options["perturbation_interval"]
                else max(1, iterations // 5))  # fmt: skip
    if "algo.learning_rate" in space and cfg.algo.schedule != "fixed":
        raise UserError(f"PBT searching algo.learning_rate needs algo.schedule=fixed (algo.schedule="
                        f"{cfg.algo.schedule} sets the rate itself, and a copied checkpoint carries it)")  # fmt: skip
    if not any(o.startswith("runner.save_interval=") for o in fixed):
        fixed.append(f"runner.save_interval={interval}")
    elif interval % cfg.runner.save_interval:
        raise UserError(f"tune.perturbation_interval={interval} is not a multiple of runner.save_interval="
                        f"{cfg.runner.save_interval}: PBT copies the checkpoint written at each perturbation; "
                        f"set runner.save_interval={interval} or a divisor of it")  # fmt: skip
    scheduler = PopulationBasedTraining(
        time_attr="iteration", perturbation_interval=interval,
        hyperparam_mutations={key: grid(domain) or categories(domain) or domain for key, domain in space.items()},
        quantile_fraction=_number(options, "quantile_fraction", float, 0), resample_probability=
        _number(options, "resample_probability", float, 0), require_attrs=True, synch=_flag(options, "synch"),
    )  # fmt: skip
    return scheduler, mode


def _summary_row(result, cfg) -> dict:
    """A trial's line of the summary table (sweeps.write_summary)."""
    from robolearn.tune_trial import format_value

    metrics = result.metrics or {}
    iteration = metrics.get("iteration", 0)
    if result.error is not None:
        status, error = "failed", trial_error(result.error)
    elif iteration < cfg.runner.max_iterations:
        status, error = f"stopped at iteration {iteration}", ""
    else:
        status, error = "finished", ""
    value = metrics.get("objective_run")
    swept = " ".join(f"{k}={format_value(v)}" for k, v in (result.config or {}).items())
    return {"job": metrics.get("trial_index", -1), "overrides": swept, "metric": cfg.objective.metric,
            "mode": cfg.objective.mode, "direction": cfg.objective.direction,
            "objective": value if value is not None and math.isfinite(value) else None, "status": status,
            "error": error, "run_dir": metrics.get("run_dir", str(result.path))}  # fmt: skip


def _reachable(address: str | None) -> None:
    """A host:port cluster address that nothing answers at is one line now (Ray would retry for minutes)."""
    if not address or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not port.isdigit():
        raise UserError(f"tune.address={address} is not valid; valid: auto, <host>:<port> or ray://<host>:<port>")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as exc:
        raise UserError(f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}); start it with ray start "
                        f"--head, or give its address with tune.address= or RAY_ADDRESS") from None  # fmt: skip


def grid(domain) -> list | None:
    """The values of a grid entry of the search space (None for a sampled one)."""
    return domain["grid_search"] if isinstance(domain, dict) else None


def categories(domain) -> list | None:
    """The values of a choice() (PBT picks among them; it would scale the choice object otherwise)."""
    return list(domain.categories) if hasattr(domain, "categories") else None


def trial_error(error: BaseException) -> str:
    """The cause of a trial's failure in one line (Ray wraps it in its own task error)."""
    cause = getattr(error, "cause", None) or error
    text = str(cause) if isinstance(cause, UserError) else f"{type(cause).__name__}: {cause}"
    return one_line(text)[:300]


def _split(args: list[str]) -> tuple[dict, list[str]]:
    options = {key: default for key, (default, _) in OPTIONS.items()}
    overrides = []
    for arg in args:
        if arg.startswith("tune."):
            key, sep, value = arg[len("tune."):].partition("=")
            if key not in OPTIONS or not sep:
                raise UserError(f"unknown option '{arg}'; valid: {', '.join(f'tune.{k}=' for k in OPTIONS)}")
            options[key] = value
        elif arg in ("-m", "--multirun") or arg.startswith(("hydra.", "hydra/", "resume=")):
            raise UserError(f"robolearn tune does not take '{arg}': it runs the search itself (tune.* options)")
        else:
            overrides.append(arg)
    return options, overrides


def _flag(options: dict, key: str) -> bool:
    if options[key] not in ("true", "false"):
        raise UserError(f"tune.{key}={options[key]} is not valid; valid: true or false")
    return options[key] == "true"


def _number(options: dict, key: str, kind: type, minimum: float):
    try:
        value = kind(options[key])
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise UserError(f"tune.{key}={options[key]} is out of range; valid: "
                        f"{'an integer' if kind is int else 'a number'} >= {minimum:g}")  # fmt: skip
    return value


def _folder(given: str) -> Path:
    folder = Path(given).expanduser() if given else Path("runs/tune") / datetime.datetime.now().strftime(
        "%Y-%m-%d_%H-%M-%S_%f")  # fmt: skip
    if folder.exists() and not folder.is_dir():
        raise UserError(f"tune.dir={folder} is a file; choose a new folder for the search")
    if folder.exists() and any(folder.iterdir()):
        raise UserError(f"tune.dir={folder} is not empty; choose a new folder (a search never writes over runs)")
    folder.mkdir(parents=True, exist_ok=True)
    return folder.resolve()


def usage() -> str:
    """The tune.<option>s with their defaults (robolearn tune --help)."""
    lines = ["", "options (every other argument is a training override; one written as a sweep is searched):"]
    for key, (default, text) in OPTIONS.items():
        lines.append(f"  tune.{key}={default or '...'}".ljust(34) + text)
    return "\n".join(lines) + "\n"
