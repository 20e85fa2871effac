"""`robolearn tune`'s own options (tune.scheduler=pbt, tune.cpus_per_trial=2, ...): what they are,
and each value checked before Ray starts: Ray would raise with a traceback, or run trials that wait
forever for resources no machine has."""

from __future__ import annotations

import math
import os

from robolearn.errors import UserError

SCHEDULERS = ("pbt", "asha", "fifo")
OPTIONS = {
    "scheduler": ("asha", "pbt (population-based training), asha (early stopping) or fifo (run every trial to the end)"),
    "num_samples": ("4", "trials (the PBT population)"),
    "perturbation_interval": ("", "PBT: iterations between exploit/explore steps; default max_iterations / 5"),
    "quantile_fraction": ("0.25", "PBT: the bottom fraction copies the top fraction (0 to 0.5)"),
    "resample_probability": ("0.25", "PBT: chance (0 to 1) a perturbed value is resampled instead of scaled by 0.8 or 1.2"),
    "synch": ("false", "PBT: true waits for every trial at each perturbation (small populations, one machine)"),
    "grace_period": ("", "ASHA: iterations before a trial may be stopped; default max_iterations / 10"),
    "reduction_factor": ("3", "ASHA: keep 1 / this of the trials at each rung"),
    "max_concurrent": ("0", "trials at once (0: as many as the resources allow)"),
    "cpus_per_trial": ("1", "CPU cores each trial reserves (at most what the Ray instance has)"),
    "gpus_per_trial": ("0", "GPUs each trial reserves (fractions share one GPU: 0.25; at most what it has)"),
    "num_cpus": ("", "CPU cores of the local Ray instance; default all"),
    "address": ("", "a Ray cluster (ray://host:10001 or auto); default RAY_ADDRESS, else a local instance"),
    "dir": ("", "the search's folder; default runs/tune/<time>"),
}


def split_args(args: list[str]) -> tuple[dict, list[str]]:
    """(tune.* options with their defaults filled in, the training overrides)."""
    options = {key: default for key, (default, _) in OPTIONS.items()}
    overrides, given = [], {}
    for arg in args:
        if arg.startswith("tune."):
            key, sep, value = arg[len("tune."):].partition("=")
            if key not in OPTIONS or not sep:
                raise UserError(f"unknown option '{arg}'; valid: {', '.join(f'tune.{k}=' for k in OPTIONS)}")
            if key in given:
                raise UserError(f"tune.{key}= is given twice ({given[key]}, {arg}); give it once")
            if not value.strip():
                raise UserError(f"tune.{key}= is empty; valid: {OPTIONS[key][1]} (leave the option out for the default)")
            options[key], given[key] = value, arg
        elif arg in ("-m", "--multirun") or arg.startswith(("hydra.", "hydra/", "resume=")):
            raise UserError(f"robolearn tune does not take '{arg}': it runs the search itself (tune.* options)")
        else:
            overrides.append(arg)
    return options, overrides


def settings(options: dict, address: str | None) -> dict:
    """Every tune.* value checked and converted, whichever scheduler uses it (before Ray starts: Ray
    would raise with a traceback, or run trials that wait forever for resources no machine has)."""
    if options["scheduler"] not in SCHEDULERS:
        raise UserError(f"tune.scheduler={options['scheduler']} is not valid; valid: {', '.join(SCHEDULERS)}")

    def optional(key: str) -> int | None:  # an option whose default is worked out later: None unless given
        return _number(options, key, int, 1) if options[key] else None

    half = " (the bottom fraction copies the top one: at most half)"
    settings = {
        "scheduler": options["scheduler"],
        "num_samples": _number(options, "num_samples", int, 1),
        "perturbation_interval": optional("perturbation_interval"),
        "quantile_fraction": _number(options, "quantile_fraction", float, 0, 0.5, why=half),
        "resample_probability": _number(options, "resample_probability", float, 0, 1, why=" (a probability)"),
        "synch": _flag(options, "synch"),
        "grace_period": optional("grace_period"),
        "reduction_factor": _number(options, "reduction_factor", float, 1, above=True),
        "max_concurrent": _number(options, "max_concurrent", int, 0),
        "cpus_per_trial": _number(options, "cpus_per_trial", float, 0, above=True,
                                  why=" (a trial's env and learner run on at least part of a core)"),
        "gpus_per_trial": _number(options, "gpus_per_trial", float, 0),
        "num_cpus": optional("num_cpus"),
    }  # fmt: skip
    if not address:  # a local instance: what this machine has (a cluster's nodes are Ray's to count)
        _fits_this_machine(settings, options)
    return settings


def _fits_this_machine(settings: dict, options: dict) -> None:
    """A trial asking for more CPU cores or GPUs than the local Ray instance has would stay PENDING
    forever (behind Ray's autoscaler warning)."""
    import torch

    cpus, gpus = settings["cpus_per_trial"], settings["gpus_per_trial"]
    given = f"tune.cpus_per_trial={options['cpus_per_trial']}"
    ray_cluster = "or a Ray cluster (tune.address= or RAY_ADDRESS)"
    if settings["num_cpus"] is not None and cpus > settings["num_cpus"]:
        have = settings["num_cpus"]
        raise UserError(f"{given} is more than tune.num_cpus={have}: the trials would wait forever; valid: a number "
                        f"> 0 up to {have}, a larger tune.num_cpus, {ray_cluster}")  # fmt: skip
    if settings["num_cpus"] is None and cpus > (have := _local_cpus()):
        raise UserError(f"{given} is more than this machine's {have} CPU cores: the trials would wait forever; "
                        f"valid: a number > 0 up to {have}, {ray_cluster}")  # fmt: skip
    if gpus == 0:
        return
    given, have = f"tune.gpus_per_trial={options['gpus_per_trial']}", torch.cuda.device_count()
    if gpus > have and not have:
        raise UserError(f"{given} asks for a GPU and this machine has none: the trials would wait forever; valid: 0, "
                        f"{ray_cluster.replace('cluster', 'cluster with GPUs')}")  # fmt: skip
    if gpus > have:
        raise UserError(f"{given} is more than this machine's {have} GPU{'s' if have > 1 else ''}: the trials would "
                        f"wait forever; valid: a number from 0 to {have}, {ray_cluster}")  # fmt: skip


def _local_cpus() -> int:
    """The CPU cores a local Ray instance counts (it reads cgroup quotas and the affinity mask)."""
    try:
        from ray._private.utils import get_num_cpus

        return int(get_num_cpus())
    except Exception:  # Ray's private helper moved: what the process may run on
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _flag(options: dict, key: str) -> bool:
    value = options[key].lower()
    if value not in ("true", "false"):
        raise UserError(f"tune.{key}={options[key]} is not valid; valid: true or false")
    return value == "true"


def _number(options: dict, key: str, kind: type, low: float, high: float | None = None, above: bool = False,
            why: str = ""):  # fmt: skip
    """tune.<key> as an int or a float, finite, >= low (> low with `above`), <= high if given."""
    try:
        value = kind(options[key])
    except ValueError:
        value = None
    if (value is None or not math.isfinite(value) or value < low or (above and value == low)
            or (high is not None and value > high)):  # fmt: skip
        noun = "an integer" if kind is int else "a number"
        valid = f"{noun} from {low:g} to {high:g}" if high is not None else f"{noun} {'>' if above else '>='} {low:g}"
        raise UserError(f"tune.{key}={options[key]} is out of range; valid: {valid}{why}")
    return value


def usage() -> str:
    """The tune.<option>s with their defaults (robolearn tune --help)."""
    lines = ["", "options (every other argument is a training override; one written as a sweep is searched):"]
    for key, (default, text) in OPTIONS.items():
        lines.append(f"  tune.{key}={default or '...'}".ljust(34) + text)
    return "\n".join(lines) + "\n"
