"""The command line's small argument forms: `key=value` lists (eval, export, play, sim2sim, runs,
tune), `--flag value` lists (terms, new-task), and the values they carry (paths, numbers, true/false).
Each mistake is a UserError: one line that says what is wrong and what is valid."""

from __future__ import annotations

from pathlib import Path

from robolearn.errors import UserError
from robolearn.run_dir import resolve_run


def key_values(args: list[str], valid: dict[str, str | None], verb: str) -> dict[str, str | None]:
    values, given = dict(valid), {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or key not in valid:
            raise UserError(f"unexpected argument '{arg}'; {verb} takes {', '.join(k + '=...' for k in valid)}")
        if key in given:
            raise UserError(f"{key}= is given twice ({given[key]}, {arg}); give it once")
        if not value and key not in ("run", "bundle"):  # those two say what they need themselves
            default = f" (leave it out for the default, {valid[key]})" if valid[key] is not None else " (leave it out if unused)"
            raise UserError(f"{key}= is empty; give it a value{default}")
        values[key], given[key] = value, arg
    return values


def bundle_path(value: str) -> Path:
    """A bundle directory, or `latest` / `<task>/latest`: that run's export/."""
    if value.rstrip("/") == "latest" or value.rstrip("/").endswith("/latest"):
        return resolve_run(value, "bundle") / "export"
    return Path(value).expanduser()


def optional_path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None


def number(key: str, value: str, kind: type):
    try:
        return kind(value)
    except ValueError:
        raise UserError(f"{key}={value} is not a{'n integer' if kind is int else ' number'}") from None


def flag(key: str, value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise UserError(f"{key}={value}: valid values are true and false")
    return value.lower() == "true"


def flags(args: list[str], options: dict[str, str | None], choices: dict[str, str], takes: str) -> tuple[dict, str | None]:
    """(option values, the one positional argument or None) of `--flag value` / `--flag=value`
    arguments; a flag without a value names its `choices` where it has them, anything else is
    refused with what the verb `takes`."""
    options, positional, rest, given = dict(options), None, list(args), {}
    while rest:
        arg = rest.pop(0)
        flag, eq, value = arg.partition("=")
        if flag in options:
            if not eq:
                value = rest.pop(0) if rest and not rest[0].startswith("--") else ""
            if not value:
                raise UserError(f"{flag} needs a value" + (f"; valid: {choices[flag]}" if flag in choices else ""))
            if flag in given:
                raise UserError(f"{flag} is given twice ({given[flag]} and {value}); valid: one {flag}")
            options[flag] = given[flag] = value
        elif arg.startswith("-") or positional is not None:
            raise UserError(f"unexpected argument '{arg}'; {takes}")
        else:
            positional = arg
    return options, positional
