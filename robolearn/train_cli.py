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

    completion = [a for a in overrides if _is_completion_flag(a)]
    if completion:  # Hydra's completion scripts assume `python script.py`; for `robolearn train` they break
        raise UserError(f"{completion[0]}: shell completion is not offered; `robolearn train --help` lists the "
                        f"config groups and values, `robolearn --help` the commands")  # fmt: skip
    _check_flags(overrides)
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
    from robolearn.interrupts import Terminated
    from robolearn.paths import configs_dir

    multirun = _check_command_line(overrides, handover.ranks)
    overrides = _flags_first(overrides)
    if any(a in ("--help", "-h") for a in overrides):
        print(_help(overrides), flush=True)
        return 0
    resume = [a for a in overrides if a.startswith("resume=")]
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
    if not multirun:
        claimed, had_run_dir = _claim_run_dir(overrides)
    else:
        _claim_sweep_dir(overrides)
    failures: list[UserError] = []
    os.environ["HYDRA_FULL_ERROR"] = "1"  # let composition errors reach us instead of Hydra's report
    if "--hydra-help" in overrides:  # configs/hydra/hydra_help/robolearn.yaml: the flags train takes
        overrides = [*overrides, "hydra/hydra_help=robolearn"]
    saved = sys.argv
    try:  # from here a signal frees the claimed folder (making the job imports the trainer: ~2 s)
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


HYDRA_FLAGS = {"--help": None, "-h": None, "--hydra-help": None, "--version": None, "--run": None, "-r": None,
               "--multirun": None, "-m": None, "--cfg": "job, hydra or all", "-c": "job, hydra or all",
               "--resolve": None, "--package": "a config package, e.g. _global_", "-p": "a config package, e.g. _global_",
               "--info": None, "-i": None, "--config-dir": "a folder", "-cd": "a folder",
               "--experimental-rerun": "a pickle file"}  # fmt: skip
"""Hydra's flags a train may use, and what the ones that take a value take."""
MODES = {"--run": "--run", "-r": "--run", "--multirun": "--multirun", "-m": "--multirun", "--cfg": "--cfg",
         "-c": "--cfg", "--info": "--info", "-i": "--info"}  # fmt: skip
"""Hydra's flags that each choose what train does: one at a time."""


def _check_flags(overrides: list[str]) -> None:
    """An unknown flag, or one without its value, in one line (argparse would print Hydra's usage)."""
    for i, arg in enumerate(overrides):
        flag, eq, value = arg.partition("=")
        if arg.lstrip("+~").startswith("="):  # `seed =3` in a script: Hydra's traceback for a number
            raise UserError(f"override '{arg}' has no key; valid: key=value, e.g. seed=3 (no space around '=')")
        if not arg.startswith("-") or _is_completion_flag(arg):
            continue
        if flag not in HYDRA_FLAGS:
            raise UserError(f"unexpected argument '{arg}'; train takes key=value overrides and Hydra's flags "
                            f"{', '.join(f for f in HYDRA_FLAGS if f.startswith('--'))} (robolearn train --help)")  # fmt: skip
        takes = HYDRA_FLAGS[flag]
        following = overrides[i + 1] if i + 1 < len(overrides) else ""
        if takes is not None and not (value if eq else following and not following.startswith("-")):
            raise UserError(f"{flag} needs a value: {takes}")
        if flag == "--experimental-rerun":
            _check_rerun_file(Path(value if eq else following))
        given = value if eq else following
        if flag in ("--cfg", "-c") and given not in ("job", "hydra", "all"):
            raise UserError(f"{flag} {given}: not a part of the config to print; valid: {takes}")
        bare = following and "=" not in following and not following.startswith("-")  # --info's optional value
        info = value if eq else following if bare else None
        if flag in ("--info", "-i") and info is not None and info not in INFO_CHOICES:
            raise UserError(f"{flag} {info}: not something Hydra's --info shows; valid: {', '.join(INFO_CHOICES)}")
    modes = sorted({MODES[a.partition("=")[0]] for a in overrides if a.partition("=")[0] in MODES})
    if len(modes) > 1:
        raise UserError(f"{' and '.join(modes)} cannot go together; valid: one of --run, --multirun, --cfg, --info")


INFO_CHOICES = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")
"""What Hydra's --info may be given (without one: all)."""


def _flags_first(args: list[str]) -> list[str]:
    """Hydra's flags, each with its value, in front of the overrides, in their order otherwise:
    argparse (Python 3.11) takes no override after a flag once it has read overrides before it
    (`seed=1 --cfg job algo.gamma=0.9`: "unrecognized arguments: algo.gamma=0.9"). A bare --info is
    written --info=all (what it means), so that it does not take the first override for its value."""
    flags, rest, i = [], [], 0
    while i < len(args):
        arg = args[i]
        flag, eq, _ = arg.partition("=")
        if not arg.startswith("-") or flag not in HYDRA_FLAGS:
            rest.append(arg)
        elif flag in ("--info", "-i") and not eq:
            if i + 1 < len(args) and args[i + 1] in INFO_CHOICES:
                flags.append(f"--info={args[i + 1]}")
                i += 1
            else:
                flags.append("--info=all")
        elif HYDRA_FLAGS[flag] is not None and not eq and i + 1 < len(args):
            flags += [arg, args[i + 1]]  # _check_flags has seen that a value follows
            i += 1
        else:
            flags.append(arg)
        i += 1
    return [*flags, *rest]


def _check_rerun_file(path: Path) -> None:
    """--experimental-rerun's file is a pickle (Hydra unpickles it and fails with a traceback otherwise)."""
    try:
        with path.open("rb") as f:
            head = f.read(2)
    except OSError as exc:
        head, reason = b"", exc.strerror or type(exc).__name__
    else:
        reason = "not a pickle file"
    if len(head) < 2 or head[0] != 0x80:  # a pickle of protocol 2 or later starts with PROTO
        raise UserError(f"--experimental-rerun {path}: {reason}; valid: the config.pickle Hydra's PickleJobInfoCallback "
                        "wrote into a run's .hydra folder")  # fmt: skip


def _is_completion_flag(arg: str) -> bool:
    """Hydra's -sc / --shell-completion, also as --flag=value or abbreviated (argparse takes --shell)."""
    flag = arg.split("=", 1)[0]
    return flag == "-sc" or (len(flag) > 2 and "--shell-completion".startswith(flag))


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


def _claim_run_dir(overrides: list[str]) -> tuple[Path | None, bool]:
    """An explicit hydra.run.dir is checked before Hydra writes its .hydra/ files into it; returns
    it (None: Hydra makes the run's folder) and whether it existed before this launch (a folder of
    the user's, kept if the run fails at once)."""
    from robolearn.run_dir import claim_run_dir, lock_run_dir

    run_dirs = [a.split("=", 1)[1] for a in overrides if a.startswith("hydra.run.dir=")]
    flags = [a.split("=", 1)[1].strip().lower() for a in overrides if a.startswith("overwrite=")]
    if flags and flags[-1] not in ("true", "false"):
        raise UserError(f"overwrite={flags[-1]} is not valid: use overwrite=true or overwrite=false")
    existed = False
    if run_dirs and "${" not in run_dirs[-1]:
        existed = Path(run_dirs[-1]).expanduser().is_dir()
        aside = claim_run_dir(Path(run_dirs[-1]).expanduser(), overwrite=bool(flags) and flags[-1] == "true")
        lock_run_dir(Path(run_dirs[-1]).expanduser(), f"hydra.run.dir={run_dirs[-1]}")  # before Hydra writes into it
        if aside is not None:
            print(f"moved the run that was in {run_dirs[-1]} aside to {aside}")
            existed = False  # the folder it was in went aside with it
        return Path(run_dirs[-1]).expanduser(), existed
    return None, existed


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
