"""`robolearn train [overrides]`: Hydra composes the config (one run, or a --multirun sweep with
any sweeper and launcher), `resume=<run>` continues a run from its own config.yaml.

Under torchrun (`torchrun --nproc_per_node=K -m robolearn train ...`) only rank 0 does either: it
composes and checks the config, claims the run directory, and hands the config to the other
ranks (`Handover`), which train on their own environments and write nothing (distributed.py).
If rank 0 stops before handing over (a bad override), the others exit quietly: rank 0 has
printed why.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from robolearn import distributed
from robolearn.errors import UserError, disk_full
from robolearn.manifest import refuse_if_training
from robolearn.run_dir import check_run_writable, discard_launch, lock_run_dir, release_run_locks, resolve_run
from robolearn.train_flags import check_flags, flags_first, is_completion_flag


def train_verb(args: list[str]) -> int:
    ranks = distributed.join()
    try:
        if not ranks.main:
            return _follow(ranks)
        handover = Handover(ranks)
        try:
            return _lead(list(args), handover)
        finally:
            handover.release()
            release_run_locks()
    finally:
        ranks.close()


class Handover:
    """Rank 0 sends the other ranks (config, run directory) once, or tells them there is none."""

    def __init__(self, ranks: distributed.Ranks):
        self.ranks, self.sent = ranks, False

    def send(self, cfg: DictConfig, run_dir: Path) -> None:
        if self.ranks.distributed:
            from robolearn import app

            app.preflight(cfg, run_dir, self.ranks)
            distributed.send_from_main(self.ranks, (OmegaConf.to_container(cfg, resolve=True), str(run_dir)))
        self.sent = True

    def release(self) -> None:
        if self.ranks.distributed and not self.sent:
            self.sent = True
            distributed.send_from_main(self.ranks, None)


def _follow(ranks: distributed.Ranks) -> int:
    """A rank > 0: train with the config rank 0 sends."""
    from robolearn import app

    message = distributed.send_from_main(ranks, None)
    if message is None:
        return 2  # rank 0 stopped before training and said why
    container, run_dir = message
    app.train(app.config_of(container), Path(run_dir), ranks)
    return 0


def _check_command_line(overrides: list[str], ranks: distributed.Ranks) -> bool:
    """What the command line alone shows to be wrong, before Hydra makes a folder or composes
    anything; returns whether it is a sweep (--multirun)."""
    from robolearn.compose import (
        check_empty_entries,
        check_group_choices,
        check_switches,
        refuse_broken_task,
        register_configs,
    )
    from robolearn.config_checks import RUN_NAME, RUN_NAME_VALID

    completion = [a for a in overrides if is_completion_flag(a)]
    if completion:  # Hydra's completion scripts assume `python script.py`; for `robolearn train` they break
        raise UserError(f"{completion[0]}: shell completion is not offered; `robolearn train --help` lists the "
                        f"config groups and values, `robolearn --help` the commands")  # fmt: skip
    check_flags(overrides)
    multirun = any(a in ("-m", "--multirun") for a in overrides)
    if multirun and ranks.distributed:
        raise UserError("--multirun cannot run under torchrun; valid: a sweep of single-process runs (robolearn "
                        "train --multirun ...), or one torchrun launch per configuration")  # fmt: skip
    register_configs()
    check_group_choices(overrides)
    check_switches(overrides)
    check_empty_entries(overrides)
    refuse_broken_task(overrides)
    names = [a.split("=", 1)[1] for a in overrides if a.startswith("run_name=")]
    if names and not RUN_NAME.fullmatch(names[-1]):  # before Hydra makes a folder of it
        shown = names[-1] if len(names[-1]) <= 40 else f"{names[-1][:20]}... ({len(names[-1])} characters)"
        raise UserError(f"run_name={shown} is out of range; valid: {RUN_NAME_VALID}")
    return multirun


def _settings(overrides: list[str]) -> list[str]:
    """The overrides of the training config: no flags (-m, --cfg job) and no hydra.* settings."""
    return [a for a in overrides if "=" in a and not a.startswith("-") and not a.lstrip("+~").startswith("hydra")]


def _prints_config(overrides: list[str]) -> bool:
    """Hydra's --cfg/-c job|hydra|all: print the config and run nothing."""
    return any(a in ("--cfg", "-c") or a.startswith("--cfg=") for a in overrides)


def _help(overrides: list[str]) -> str:
    """`robolearn train --help [overrides]`: configs/train.yaml's hydra.help template, filled in with
    the groups and the config as composed. Hydra's own --help lists every group's options through a
    copy of the whole config store per group and option (~19 s with the built-in tasks)."""
    import string

    from robolearn.compose import compose_train
    from robolearn.paths import configs_dir

    settings = [a for a in overrides if "=" in a and not a.startswith("-") and not a.lstrip("+~").startswith("hydra")]
    cfg = compose_train(settings)
    text = OmegaConf.create({"hydra": {"help": OmegaConf.load(configs_dir() / "train.yaml").hydra.help}}).hydra.help.template
    config = OmegaConf.to_yaml(cfg, resolve="--resolve" in overrides)
    return string.Template(text).safe_substitute(CONFIG=config, FLAGS_HELP="", HYDRA_CONFIG_GROUPS="", APP_CONFIG_GROUPS="")


def _train_job(handover: Handover, had_run_dir: bool, failures: list[UserError]):
    """The function Hydra runs for each job: train into its output folder. A single run's UserError
    goes into `failures` (raised after Hydra returns); a stopped or failed start leaves no run
    folder behind (`had_run_dir`: the folder existed before, so only what was added goes)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf.errors import InterpolationResolutionError

    from robolearn import app, sweeps
    from robolearn.hydra_errors import interpolation_message
    from robolearn.interrupts import Terminated

    def job(cfg) -> float | None:
        hydra_cfg = HydraConfig.get()
        run_dir = Path(hydra_cfg.runtime.output_dir)
        swept = hydra_cfg.mode == RunMode.MULTIRUN
        try:
            handover.send(cfg, run_dir)
            value = app.train(cfg, run_dir, handover.ranks)
        except BaseException as exc:
            if swept:
                sweeps.write_job_result(run_dir, hydra_cfg.job.num, list(hydra_cfg.overrides.task), cfg.objective,
                                        None, exc)  # fmt: skip
            elif isinstance(exc, (KeyboardInterrupt, Terminated)) and handover.ranks.main:
                discard_launch(run_dir, keep_dir=had_run_dir)  # stopped while starting: no empty run left behind
            if isinstance(exc, InterpolationResolutionError):  # one the command line's check did not see
                exc = UserError(interpolation_message(exc, list(hydra_cfg.overrides.task)))
            exc = exc if isinstance(exc, UserError) else _full_disk_error(exc, run_dir)
            if exc is None:
                raise
            failures.append(exc)
            # A single run keeps its error to raise after Hydra returns (raised here, Hydra would first
            # print its own "Error executing job" line); a sweep's job fails, so that the sweeper and
            # launcher (submitit, SLURM) see it fail.
            if swept:
                raise
            if handover.ranks.main:
                discard_launch(run_dir, keep_dir=had_run_dir)
            return None
        if swept:
            sweeps.write_job_result(run_dir, hydra_cfg.job.num, list(hydra_cfg.overrides.task), cfg.objective,
                                    value, None)  # fmt: skip
        return value

    return job


def _lead(overrides: list[str], handover: Handover) -> int:
    import hydra

    from robolearn import sweeps
    from robolearn.compose import check_sweep_jobs, compose_train
    from robolearn.config_additions import as_merges
    from robolearn.interrupts import Terminated, signals_deferred
    from robolearn.paths import configs_dir

    multirun = _check_command_line(overrides, handover.ranks)
    overrides = flags_first(overrides)
    if any(a in ("--help", "-h") for a in overrides):
        print(_help(overrides), flush=True)
        return 0
    resume = [a for a in overrides if a.startswith("resume=")]
    if resume and not resume[-1].split("=", 1)[1].strip():  # Path("") is the current directory
        raise UserError("resume= names no run; valid: resume=<run directory>, latest or <task>/latest")
    if resume:
        return _resume(resolve_run(resume[-1].split("=", 1)[1], "resume").resolve(),
                       [a for a in overrides if not a.startswith("resume=")], handover)  # fmt: skip
    sweeps.check_plugins(overrides)
    if multirun:
        check_sweep_jobs(overrides)  # every job's config, before the first one trains
    elif _prints_config(overrides) or any("${" in a.partition("=")[2] for a in _settings(overrides)):
        # --cfg job: the config it prints is one a run would accept; an interpolation (`${algo.gamma}`)
        # that does not resolve is refused before Hydra makes the run's folder
        compose_train(_settings(overrides))
    overrides = as_merges(sweeps.sweeper_direction(overrides))
    claimed, had_run_dir = None, False
    asked, overwrite = (None, False) if multirun else _asked_run_dir(overrides)
    if multirun:
        _claim_sweep_dir(overrides)
    failures: list[UserError] = []
    os.environ["HYDRA_FULL_ERROR"] = "1"  # let composition errors reach us instead of Hydra's report
    if "--hydra-help" in overrides:  # configs/hydra/hydra_help/robolearn.yaml: the flags train takes
        overrides = [*overrides, "hydra/hydra_help=robolearn"]
    saved = sys.argv
    try:  # from here a signal frees the claimed folder (making the job imports the trainer: ~2 s)
        if asked is not None:
            with signals_deferred():  # claimed, locked and noted here as one step: a signal lands before or after
                had_run_dir = _claim_run_dir(asked, overwrite)
                claimed = Path(asked).expanduser()
        job = _train_job(handover, had_run_dir, failures)
        main = hydra.main(config_path=str(configs_dir()), config_name="train", version_base="1.3")(job)
        sys.argv = ["robolearn train", *overrides]
        with _mode_without_composing(overrides):
            main()
    except UserError as exc:
        if multirun:
            _summarize(failed_with=exc)
        raise
    except (KeyboardInterrupt, Terminated):
        if claimed is not None:  # stopped before Hydra ran the job: the folder claimed for it goes again
            discard_launch(claimed, keep_dir=had_run_dir)
        raise
    finally:
        sys.argv = saved
    if multirun:
        _summarize()
    if failures:
        more = f" (and {len(failures) - 1} more failed jobs)" if len(failures) > 1 else ""
        raise UserError(f"{failures[0]}{more}")
    return 0


@contextlib.contextmanager
def _mode_without_composing(overrides: list[str]):
    """Hydra (hydra-core 1.3, Hydra.get_mode) composes the whole config once only to read
    `hydra.mode`, then composes it again to run. In robolearn's configs only a `hydra.mode=`
    override sets it; without one, get_mode answers what it answers for an unset mode (None: the
    mode follows --multirun), without composing: ~0.6 s less before every run starts and every
    mistake is reported (2-core VM)."""
    from hydra._internal.hydra import Hydra

    if not hasattr(Hydra, "get_mode") or any(a.lstrip("+~").startswith("hydra.mode") for a in overrides):
        yield
        return
    original = Hydra.get_mode
    Hydra.get_mode = lambda self, *args, **kwargs: None
    try:
        yield
    finally:
        Hydra.get_mode = original


def _full_disk_error(exc: BaseException, run_dir: Path) -> UserError | None:
    """The one line for a training that filled the disk (None: `exc` is something else), with what
    to do once space is free: resume from the run's last checkpoint (whole: checkpoint.save_atomic
    writes each whole or not at all), or start again where it wrote none."""
    from robolearn.checkpoint import list_checkpoints

    full = disk_full(exc)
    if full is None:
        return None
    kept = list_checkpoints(run_dir / "checkpoints") if (run_dir / "checkpoints").is_dir() else []
    if not kept:
        return UserError(f"{full}; no checkpoint was written: free some space and run the command again")
    return UserError(f"{full}; its last checkpoint, {kept[-1].name}, is whole: free some space, then "
                     f"`robolearn train resume={run_dir}`")  # fmt: skip


def _summarize(failed_with: UserError | None = None) -> None:
    from robolearn import sweeps

    line = sweeps.summarize_launched()
    if line:
        print(line, file=sys.stderr if failed_with else sys.stdout, flush=True)


def _claim_sweep_dir(overrides: list[str]) -> None:
    """An explicit hydra.sweep.dir is new, empty, or not a sweep's yet: a second sweep into one would
    replace the first one's summary and job folders' numbering."""
    dirs = [a.split("=", 1)[1] for a in overrides if a.startswith("hydra.sweep.dir=")]
    if not dirs or "${" in dirs[-1]:
        return
    path = Path(dirs[-1]).expanduser()
    if path.exists() and not path.is_dir():
        raise UserError(f"hydra.sweep.dir={path} is a file; choose a directory for the sweep")
    if path.is_dir() and any(path.iterdir()):
        raise UserError(f"hydra.sweep.dir={path} is not empty (an earlier sweep's?); choose a new directory for the sweep")


def _asked_run_dir(overrides: list[str]) -> tuple[str | None, bool]:
    """An explicit hydra.run.dir as given, which is checked and locked before Hydra writes its
    .hydra/ files into it (None: Hydra makes the run's folder), and whether overwrite=true."""
    run_dirs = [a.split("=", 1)[1] for a in overrides if a.startswith("hydra.run.dir=")]
    flags = [a.split("=", 1)[1].strip().lower() for a in overrides if a.startswith("overwrite=")]
    if flags and flags[-1] not in ("true", "false"):
        raise UserError(f"overwrite={flags[-1]} is not valid: use overwrite=true or overwrite=false")
    overwrite = bool(flags) and flags[-1] == "true"
    if run_dirs and "${" not in run_dirs[-1]:
        return run_dirs[-1], overwrite
    return None, overwrite


def _claim_run_dir(asked: str, overwrite: bool) -> bool:
    """Check the folder hydra.run.dir=`asked` names (overwrite=true: move the run in it aside) and lock
    it; returns whether it was there before this launch (a folder of the user's, kept if the run
    fails at once)."""
    from robolearn.run_dir import claim_run_dir, lock_run_dir

    path = Path(asked).expanduser()
    existed = path.is_dir()
    aside = claim_run_dir(path, overwrite=overwrite)
    lock_run_dir(path, f"hydra.run.dir={asked}")  # before Hydra writes into it
    if aside is not None:
        print(f"moved the run that was in {asked} aside to {aside}")
        existed = False  # the folder it was in went aside with it
    return existed


def _resume(run_dir: Path, overrides: list[str], handover: Handover) -> int:
    """Continue a run with the config it was trained with (its config.yaml), plus overrides such as
    runner.max_iterations=300. Hydra does not compose anything here: today's defaults and task
    YAML may have changed since the run started, and the run must not silently pick that up."""
    from robolearn import app, checkpoint, run_policy

    if any(a in ("-m", "--multirun") for a in overrides):
        raise UserError("resume= cannot be combined with --multirun; resume one run at a time")
    checkpoint.latest(run_dir)  # no checkpoint: say so before anything else
    refuse_if_training(run_dir, f"resume={run_dir}")  # also: a manifest that does not parse, before anything is written
    check_run_writable(run_dir, f"resume={run_dir}")
    lock_run_dir(run_dir, f"resume={run_dir}")
    cfg = run_policy.load_run_config(run_dir, overrides)
    cfg.resume = str(run_dir)
    handover.send(cfg, run_dir)
    app.train(cfg, run_dir, handover.ranks)
    return 0
