"""`robolearn <verb> [args]`: train (Hydra overrides), export run=<dir>, list.

A mistake a user can fix ends in one line on stderr and exit code 2; Hydra's own composition
errors (unknown group option, bad key or type, malformed override) are translated the same way.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

USAGE = """usage: robolearn <command> [args]

commands:
  train  [overrides] [--multirun]   train a policy; any config value is an override, e.g.
                                     task=pendulum physics=mujoco env.num_envs=128 seed=3
                                     resume=<run dir> continues a run from its last checkpoint
  export run=<run dir> [checkpoint=<file>] [out=<dir>] [format=onnx]
                                     write policy.onnx + robot.yaml and check parity
  list                               print the installed tasks and physics backends
"""


_GROUP_NOUNS = {"task": "task", "physics": "physics backend", "algo": "algorithm config"}


def hydra_error_message(exc: BaseException) -> str | None:
    """One line for a Hydra/OmegaConf composition error, or None if `exc` is not one."""
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    from robolearn.errors import one_line

    if isinstance(exc, MissingConfigException):
        group, _, name = (exc.missing_cfg_file or "").rpartition("/")
        options = [o for o in (exc.options or []) if not o.endswith("_schema")]
        noun = _GROUP_NOUNS.get(group, f"'{group}' option")
        return f"unknown {noun} '{name}'; valid: {', '.join(options)}"
    if isinstance(exc, (HydraException, OmegaConfBaseException)):
        message = one_line(exc).replace(" To append to your config use +", "; to add a new key use +")
        cause = exc.__cause__
        if cause is not None and one_line(cause) not in message:
            message += f" ({one_line(cause).split(' full_key:')[0]})"
        return message
    return None


def _train(args: list[str]) -> int:
    import hydra
    from hydra.core.hydra_config import HydraConfig

    from robolearn import app
    from robolearn.compose import register_configs
    from robolearn.errors import UserError
    from robolearn.paths import configs_dir

    register_configs()
    overrides = list(args)
    resume = [a for a in overrides if a.startswith("resume=")]
    if resume:
        return _resume(Path(resume[-1].split("=", 1)[1]).expanduser().resolve(),
                       [a for a in overrides if not a.startswith("resume=")])

    failures: list[UserError] = []

    def job(cfg) -> None:
        # A UserError is kept and raised after Hydra returns: raised here, Hydra would first print
        # its own "Error executing job" line, and a sweep would stop at the first failing job.
        try:
            app.train(cfg, Path(HydraConfig.get().runtime.output_dir))
        except UserError as exc:
            failures.append(exc)

    os.environ["HYDRA_FULL_ERROR"] = "1"  # let composition errors reach us instead of Hydra's report
    main = hydra.main(config_path=str(configs_dir()), config_name="train", version_base="1.3")(job)
    saved = sys.argv
    sys.argv = ["robolearn train", *overrides]
    try:
        main()
    finally:
        sys.argv = saved
    if failures:
        more = f" (and {len(failures) - 1} more failed jobs)" if len(failures) > 1 else ""
        raise UserError(f"{failures[0]}{more}")
    return 0


def _resume(run_dir: Path, overrides: list[str]) -> int:
    """Continue a run with the config it was trained with (its config.yaml), plus overrides such as
    runner.max_iterations=300. Hydra does not compose anything here: today's defaults and task
    YAML may have changed since the run started, and the run must not silently pick that up."""
    from robolearn import app, checkpoint
    from robolearn.errors import UserError

    if any(a in ("-m", "--multirun") for a in overrides):
        raise UserError("resume= cannot be combined with --multirun; resume one run at a time")
    checkpoint.latest(run_dir)  # no checkpoint: say so before anything else
    cfg = app.load_run_config(run_dir, overrides)
    cfg.resume = str(run_dir)
    app.train(cfg, run_dir)
    return 0


def _key_values(args: list[str], valid: dict[str, str | None], verb: str) -> dict[str, str | None]:
    from robolearn.errors import UserError

    values = dict(valid)
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or key not in valid:
            raise UserError(f"unexpected argument '{arg}'; {verb} takes {', '.join(k + '=...' for k in valid)}")
        values[key] = value
    return values


def _export(args: list[str]) -> int:
    from robolearn import app
    from robolearn.compose import register_configs
    from robolearn.errors import UserError

    register_configs()
    opts = _key_values(args, {"run": None, "checkpoint": None, "out": None, "format": "onnx"}, "export")
    if not opts["run"]:
        raise UserError("export needs run=<run dir>")
    if opts["format"] != "onnx":
        raise UserError(f"unknown export format '{opts['format']}'; valid: onnx")
    app.export_run(
        Path(opts["run"]).expanduser(),
        Path(opts["checkpoint"]).expanduser() if opts["checkpoint"] else None,
        Path(opts["out"]).expanduser() if opts["out"] else None,
    )
    return 0


def _list(args: list[str]) -> int:
    import torch
    from omegaconf import OmegaConf

    from robolearn.compose import register_configs
    from robolearn.errors import UserError
    from robolearn.physics import BACKENDS, resolve_backend

    if args:
        raise UserError(f"list takes no arguments, got {' '.join(args)}")
    tasks = register_configs()
    print("tasks:")
    for name, plugin in sorted(tasks.items()):
        description = OmegaConf.load(plugin.config).get("description", "")
        print(f"  {name:<16} {description}")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"physics backends (device {device}):")
    for name, info in BACKENDS.items():
        reason = info.available(device)
        status = "available" if reason is None else f"unavailable: {reason}"
        print(f"  {name:<16} {info.summary} [{status}]")
    print(f"  {'auto':<16} -> {resolve_backend('auto', device)}")
    return 0


VERBS = {"train": _train, "export": _export, "list": _list}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 2
    verb, rest = args[0], args[1:]
    if verb not in VERBS:
        print(f"robolearn: unknown command '{verb}'; valid: {', '.join(VERBS)}", file=sys.stderr)
        return 2
    from robolearn.errors import UserError

    try:
        return VERBS[verb](rest)
    except UserError as exc:
        message = str(exc)
    except KeyboardInterrupt:
        print("robolearn: interrupted (checkpoints already written are kept)", file=sys.stderr)
        return 130
    except Exception as exc:
        message = hydra_error_message(exc)
        if message is None:
            raise
    print(f"robolearn {verb}: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
