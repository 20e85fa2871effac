"""`robolearn <verb> [args]`: train (Hydra overrides), tune (Ray Tune), export, import, eval, sim2sim, play,
list, runs, terms, new-task (USAGE in cli_usage.py; each verb's --help prints its part).

A mistake a user can fix ends in one line on stderr and exit code 2; Hydra's own composition
errors (unknown group option, bad key or type, malformed override) are translated the same way.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import warnings
from contextlib import nullcontext
from pathlib import Path

from robolearn.cli_args import bundle_path, flag, flags, key_values, number, optional_path
from robolearn.hydra_errors import hydra_error_message
from robolearn.cli_usage import USAGE, verb_help
from robolearn.run_dir import resolve_run



def _train(args: list[str]) -> int:
    from robolearn.train_cli import train_verb

    return train_verb(args)


def _tune(args: list[str]) -> int:
    from robolearn.tune import tune_verb

    return tune_verb(args)


def _export(args: list[str]) -> int:
    from robolearn import run_policy
    from robolearn.compose import register_configs
    from robolearn.errors import UserError

    register_configs()
    opts = key_values(args, {"run": None, "checkpoint": None, "out": None, "format": "onnx", "precision": "fp32"}, "export")
    if not opts["run"]:
        raise UserError("export needs run=<run dir>")
    run_policy.export_run(resolve_run(opts["run"]), optional_path(opts["checkpoint"]), optional_path(opts["out"]),
                          opts["format"], opts["precision"])  # fmt: skip
    return 0


def _import(args: list[str]) -> int:
    from robolearn.errors import UserError
    from robolearn.export.bundle import PRECISIONS
    from robolearn.interop.importer import import_run
    from robolearn.interop.report import print_import

    valid = {"run": None, "robot": None, "joint_order": None, "task": None, "checkpoint": None, "obs": None,
             "precision": "fp32", "out": None}  # fmt: skip
    opts = key_values(args, valid, "import")
    if not opts["run"]:
        raise UserError("import needs run=<rsl_rl run dir> (an Isaac Lab or mjlab run: params/env.yaml, model_<N>.pt)")
    if opts["precision"] not in PRECISIONS:
        raise UserError(f"unknown precision '{opts['precision']}'; valid: {', '.join(PRECISIONS)}")
    if opts["task"]:
        from robolearn.compose import register_configs

        register_configs()
    result = import_run(
        optional_path(opts["run"]), out=optional_path(opts["out"]), robot=optional_path(opts["robot"]),
        task=opts["task"], joint_order=opts["joint_order"], checkpoint=opts["checkpoint"], obs=optional_path(opts["obs"]),
        precision=opts["precision"],
    )  # fmt: skip
    print_import(result)
    return 0


def _eval(args: list[str]) -> int:
    from robolearn import run_policy
    from robolearn.compose import register_configs
    from robolearn.errors import UserError

    register_configs()
    opts = key_values(args, {"run": None, "episodes": "64", "checkpoint": None, "conditions": "trained"}, "eval")
    if not opts["run"]:
        raise UserError("eval needs run=<run dir>")
    episodes = number("episodes", opts["episodes"], int)
    run_policy.eval_run(resolve_run(opts["run"]), episodes, optional_path(opts["checkpoint"]), opts["conditions"])
    return 0


def _sim2sim(args: list[str]) -> int:
    from robolearn.compose import register_configs
    from robolearn.errors import UserError
    from robolearn.sim2sim import print_report, sim2sim
    from robolearn.sim2sim_files import prepare_outputs, write_report

    valid = {"bundle": None, "episodes": "10", "realtime": "false", "timestep": None, "integrator": None,
             "engine": "auto", "seed": "0", "report": None, "log": None, "conditions": "trained"}  # fmt: skip
    opts = key_values(args, valid, "sim2sim")
    if not opts["bundle"]:
        raise UserError("sim2sim needs bundle=<bundle dir> (a run's export/ folder)")
    register_configs()
    bundle = bundle_path(opts["bundle"])
    prepare_outputs(optional_path(opts["report"]), optional_path(opts["log"]))
    result = sim2sim(
        bundle, episodes=number("episodes", opts["episodes"], int), realtime=flag("realtime", opts["realtime"]),
        timestep=number("timestep", opts["timestep"], float) if opts["timestep"] else None,
        integrator=opts["integrator"], engine=opts["engine"], seed=number("seed", opts["seed"], int),
        log=optional_path(opts["log"]), conditions=opts["conditions"],
    )  # fmt: skip
    print_report(result)
    if opts["report"]:
        write_report(result, optional_path(opts["report"]))
    return 0


def _play(args: list[str]) -> int:
    from robolearn.compose import register_configs
    from robolearn.errors import UserError
    from robolearn.command_script import CommandScript
    from robolearn.play import PlayCfg, play_run
    from robolearn.play_bundle import play_bundle
    from robolearn.render import CameraCfg

    valid = {"run": None, "bundle": None, "checkpoint": None, "mode": "video", "out": None, "duration": "10",
             "fps": "30", "num_envs": "1", "camera": "track", "distance": None, "elevation": "-20", "azimuth": "135",
             "command": None, "width": "640", "height": "480", "seed": "0", "port": "8080",
             "host": "127.0.0.1"}  # fmt: skip
    opts = key_values(args, valid, "play")
    given = [a.split("=", 1)[0] for a in args if "=" in a]
    unused = [k for k in given if k in VIDEO_ONLY] if opts["mode"] == "web" else [k for k in given if k in ("port", "host")]
    if unused and opts["mode"] in ("web", "video", "viewer"):  # an option the mode does not use is no silent no-op
        takes = "run=, checkpoint=, num_envs=, port=, host=" if opts["mode"] == "web" else "every option but port= and host="
        raise UserError(f"{unused[0]}= is not used in mode={opts['mode']}; valid there: {takes}")
    if bool(opts["run"]) == bool(opts["bundle"]):
        raise UserError("play needs run=<run dir> or bundle=<bundle dir> (one of them)")
    if opts["bundle"] and opts["checkpoint"]:
        raise UserError("checkpoint= chooses a run's checkpoint and goes with run=; a bundle holds one policy")
    command = CommandScript.parse(opts["command"]) if opts["command"] else None
    distance = opts["distance"] if opts["distance"] not in (None, "", "auto") else None
    camera = CameraCfg(opts["camera"], number("distance", distance, float) if distance is not None else None,
                       number("elevation", opts["elevation"], float), number("azimuth", opts["azimuth"], float))  # fmt: skip
    cfg = PlayCfg(opts["mode"], optional_path(opts["out"]), number("duration", opts["duration"], float),
                  number("fps", opts["fps"], float), number("num_envs", opts["num_envs"], int), camera, command,
                  number("width", opts["width"], int), number("height", opts["height"], int),
                  number("seed", opts["seed"], int), number("port", opts["port"], int), opts["host"])  # fmt: skip
    register_configs()
    if opts["run"]:
        play_run(resolve_run(opts["run"]), optional_path(opts["checkpoint"]), cfg)
    else:
        play_bundle(bundle_path(opts["bundle"]), cfg)
    return 0


VIDEO_ONLY = ("out", "duration", "fps", "camera", "distance", "elevation", "azimuth", "width", "height", "seed")
"""play's options that shape a video (and the native viewer), which the web viewer does not use."""


def _list(args: list[str]) -> int:
    import torch

    from robolearn.compose import register_configs
    from robolearn.task_yaml import load_task_yaml
    from robolearn.errors import UserError
    from robolearn.physics import BACKENDS, resolve_backend
    from robolearn.registry import BROKEN, task_configs

    if args:
        raise UserError(f"list takes no arguments, got {' '.join(args)}")
    tasks = register_configs()
    configs = task_configs(tasks)
    width = max(16, *(len(n) for n in [*tasks, *BROKEN]))
    print("tasks:")
    for name, plugin in sorted(tasks.items()):
        description = load_task_yaml(plugin.config, configs).get("description", "")
        print(f"  {name:<{width}} {description}")
    for name, reason in sorted(BROKEN.items()):
        print(f"  {name:<{width}} [broken: {reason}]")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"physics backends (device {device}):")
    for name, info in BACKENDS.items():
        reason = info.available(device)
        status = "available" if reason is None else f"unavailable: {reason}"
        print(f"  {name:<16} {info.summary} [{status}]")
    print(f"  {'auto':<16} -> {resolve_backend('auto', device)}")
    return 0


def _runs(args: list[str]) -> int:
    from robolearn.runs import runs_verb

    return runs_verb(args)


def _terms(args: list[str]) -> int:
    """`terms [--kind K] [name]`: the generic term catalogue (robolearn/term_catalog.py)."""
    from robolearn import term_catalog
    from robolearn.errors import UserError

    kinds = ", ".join(term_catalog.KINDS)
    options, name = flags(args, {"--kind": None}, {"--kind": kinds}, "terms takes [--kind <kind>] [<term name>]")
    kind = None
    if options["--kind"] is not None:
        try:
            kind = term_catalog.parse_kind(options["--kind"])
        except ValueError as exc:
            raise UserError(str(exc)) from None
    entries = term_catalog.catalog()
    if kind is not None:
        entries = [e for e in entries if kind in e.kinds]
    if name is not None:
        try:
            print(term_catalog.format_term(term_catalog.find(entries, name)), end="")
        except ValueError as exc:
            raise UserError(str(exc) + (f" (among the {kind} terms)" if kind else "")) from None
    else:
        print(term_catalog.format_catalog(entries), end="")
    return 0


def _new_task(args: list[str]) -> int:
    """`new-task NAME [--template T] [--robot FILE] [--out DIR]`: scaffold a task package (robolearn/scaffold/)."""
    from robolearn.errors import UserError
    from robolearn.scaffold import TEMPLATE_NAMES, new_task

    options, name = flags(args, {"--template": "minimal", "--robot": None, "--out": None},
                           {"--template": ", ".join(TEMPLATE_NAMES)},
                           "new-task takes NAME [--template minimal|locomotion|reach|pose] [--robot model.xml|model.urdf] "
                           "[--out DIR]")  # fmt: skip
    if name is None:
        raise UserError("new-task needs the task's NAME, e.g. robolearn new-task my_robot_walk --template locomotion")
    result = new_task(name, options["--template"], optional_path(options["--robot"]), optional_path(options["--out"]))
    print(f"wrote {result.folder}/: task '{result.name}' (template {result.template})")
    for line in result.lines:
        print(f"  {line}")
    print(f"next: pip install -e {result.folder} && robolearn train task={result.name}")
    return 0


def rank_prefix() -> str:
    """'rank N: ' in a torchrun process other than rank 0, else ''."""
    from robolearn.distributed import launched_by_torchrun

    rank = os.environ.get("RANK", "0") if launched_by_torchrun() else "0"
    return f"rank {rank}: " if rank != "0" else ""


def import_mujoco() -> None:
    """MuJoCo picks its OpenGL library (MUJOCO_GL) when it is imported: a value it does not know, or
    a library that is not installed (osmesa without libosmesa6), is one line here, not a traceback."""
    from robolearn.errors import UserError, one_line

    try:
        import mujoco  # noqa: F401
    except Exception as exc:
        backend = os.environ.get("MUJOCO_GL")
        if backend is None:
            raise
        raise UserError(f"cannot load MuJoCo with MUJOCO_GL={backend} ({type(exc).__name__}: {one_line(exc)[:150]}); "
                        "valid: egl (libegl1), osmesa (libosmesa6), glfw (a display), or unset it") from None  # fmt: skip


def _once_per_text(show):
    """warnings.showwarning that prints each warning text once per command. Python's own "once"
    is once per calling module, and MuJoCo 4 warns at every compile of a model that sets compiler
    settotalmass (gymnasium's and dm_control's cheetahs), which new-task and train do from several."""
    seen: set[tuple[str, type]] = set()

    def show_once(message, category, *args, **kwargs):
        key = (str(message), category)
        if key not in seen:
            seen.add(key)
            show(message, category, *args, **kwargs)

    show_once.once_per_text = True
    return show_once


VERBS = {"train": _train, "export": _export, "import": _import, "eval": _eval, "sim2sim": _sim2sim, "play": _play,
         "list": _list, "runs": _runs, "terms": _terms, "new-task": _new_task, "tune": _tune}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 2
    verb, rest = args[0], args[1:]
    if verb not in VERBS:
        print(f"robolearn: unknown command '{verb}'; valid: {', '.join(VERBS)}", file=sys.stderr)
        return 2
    if verb != "train" and any(a in ("-h", "--help") for a in rest):  # train: Hydra's own --help
        print(verb_help(verb), end="")
        if verb == "tune":
            from robolearn.tune_options import usage

            print(usage(), end="")
        return 0
    from robolearn.errors import UserError
    from robolearn.interrupts import Interrupted, Terminated, terminate_raises

    if not getattr(warnings.showwarning, "once_per_text", False):  # main() may run again in one process
        warnings.showwarning = _once_per_text(warnings.showwarning)
    try:
        import_mujoco()
        # SIGTERM stops every verb where it is, its cleanup run (train's start-up leaves no empty run
        # behind); train's iterations stop at their boundary instead (interrupts.stop_on_signals), as do
        # tune's trials; a torchrun rank other than 0 keeps the default (rank 0 says what stopped)
        with nullcontext() if verb == "tune" or (verb == "train" and rank_prefix()) else terminate_raises():
            return VERBS[verb](rest)
    except UserError as exc:
        message = rank_prefix() + str(exc)
    except BrokenPipeError:  # `robolearn list | head`: the reader left; flushing at exit would fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Interrupted as exc:  # training stopped at an iteration boundary, with a checkpoint
        if not rank_prefix():  # under torchrun rank 0 says it for every rank
            print(f"robolearn {verb}: {exc.line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        return _stopped(verb, written=getattr(exc, "bundle_written", None))
    except Terminated as exc:
        return _stopped(verb, signal.SIGTERM, getattr(exc, "bundle_written", None))
    except Exception as exc:
        if _interrupted(exc):
            return _stopped(verb)
        message = _error_message(exc, rest)
        if message is None:
            raise
    print(f"robolearn {verb}: error: {message}", file=sys.stderr)
    return 2


def _interrupted(exc: BaseException | None) -> bool:
    """Ctrl-C that a library turned into an error of its own (torch's ONNX exporter does)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _error_message(exc: Exception, rest: list[str]) -> str | None:
    """A bundle error's or Hydra's one line; None for anything else (a bug: its traceback shows)."""
    deploy = sys.modules.get("robolearn_deploy.errors")  # the deploy runtime is imported only by the verbs that use it
    if deploy is not None and isinstance(exc, deploy.DeployError):
        return str(exc)
    from robolearn.errors import disk_full

    full = disk_full(exc)
    if full is not None:
        return f"{full}; free some space (or write somewhere else) and run the command again"
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:  # a path the user gave: checked wherever it is used
        where = str(exc.filename or "")
        longest = max(where.split(os.sep), key=len, default="")
        return (f"a file name is too long for the file system: {longest[:40]}... ({len(longest.encode())} bytes); "
                "valid: at most 255 bytes per folder or file name on most file systems")  # fmt: skip
    if isinstance(exc, PermissionError) and exc.filename:  # a file or folder of the user's that this user may not read or write
        return (f"{exc.filename}: permission denied; valid: a path this user may read (and write, where the command "
                "writes): check its owner and mode (ls -ld)")  # fmt: skip
    return hydra_error_message(exc, rest, _compose_choices)


def _compose_choices(choices: list[str]):
    """The training config of the command line's group choices (what hydra_errors lists keys from)."""
    from robolearn.compose import compose_train

    return compose_train(choices)


def _stopped(verb: str, signum: int = signal.SIGINT, written: Path | None = None) -> int:
    """Ctrl-C outside a training iteration, or SIGTERM in a verb other than train/tune: one line,
    exit 130 (143). `written`: a bundle the verb finished putting in place before the signal acted."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a further Ctrl-C must not break the exit (JAX's atexit)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if verb == "train":
        print(f"robolearn {verb}: stopped at once (a second signal, or outside training); only checkpoints "
              f"written before can be resumed", file=sys.stderr)  # fmt: skip
    else:
        how = "Ctrl+C" if signum == signal.SIGINT else signal.Signals(signum).name
        done = f" once the bundle was in place: {written} is complete" if written is not None else ""
        print(f"robolearn {verb}: stopped ({how}){done}", file=sys.stderr)
    return 128 + signum


if __name__ == "__main__":
    sys.exit(main())
