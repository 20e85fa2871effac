"""Hydra's flags on `robolearn train`'s command line (--cfg, --multirun, --info, ...): which are taken
and what each takes, checked in one line before argparse would print Hydra's usage, and moved in
front of the overrides, where Python 3.11's argparse reads them."""

from __future__ import annotations

from pathlib import Path

from robolearn.errors import UserError

HYDRA_FLAGS = {"--help": None, "-h": None, "--hydra-help": None, "--version": None, "--run": None, "-r": None,
               "--multirun": None, "-m": None, "--cfg": "job, hydra or all", "-c": "job, hydra or all",
               "--resolve": None, "--package": "a config package, e.g. _global_", "-p": "a config package, e.g. _global_",
               "--info": None, "-i": None, "--config-dir": "a folder", "-cd": "a folder",
               "--experimental-rerun": "a pickle file"}  # fmt: skip
"""Hydra's flags a train may use, and what the ones that take a value take."""
MODES = {"--run": "--run", "-r": "--run", "--multirun": "--multirun", "-m": "--multirun", "--cfg": "--cfg",
         "-c": "--cfg", "--info": "--info", "-i": "--info"}  # fmt: skip
"""Hydra's flags that each choose what train does: one at a time."""


def check_flags(overrides: list[str]) -> None:
    """An unknown flag, or one without its value, in one line (argparse would print Hydra's usage)."""
    for i, arg in enumerate(overrides):
        flag, eq, value = arg.partition("=")
        if arg.lstrip("+~").startswith("="):  # `seed =3` in a script: Hydra's traceback for a number
            raise UserError(f"override '{arg}' has no key; valid: key=value, e.g. seed=3 (no space around '=')")
        if not arg.startswith("-") or is_completion_flag(arg):
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
    named = {a.partition("=")[0] for a in overrides}
    if named & {"--package", "-p"} and not named & {"--cfg", "-c"}:  # Hydra would ignore it and train
        raise UserError("--package chooses the part of the config --cfg prints; valid: with --cfg, e.g. "
                        "robolearn train --cfg job --package algo")  # fmt: skip
    modes = sorted({MODES[a.partition("=")[0]] for a in overrides if a.partition("=")[0] in MODES})
    if len(modes) > 1:
        raise UserError(f"{' and '.join(modes)} cannot go together; valid: one of --run, --multirun, --cfg, --info")


INFO_CHOICES = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")
"""What Hydra's --info may be given (without one: all)."""


def flags_first(args: list[str]) -> list[str]:
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
            flags += [arg, args[i + 1]]  # check_flags has seen that a value follows
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


def is_completion_flag(arg: str) -> bool:
    """Hydra's -sc / --shell-completion, also as --flag=value or abbreviated (argparse takes --shell)."""
    flag = arg.split("=", 1)[0]
    return flag == "-sc" or (len(flag) > 2 and "--shell-completion".startswith(flag))
