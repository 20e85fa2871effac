"""Hydra's and OmegaConf's composition errors as the one line the CLI prints: an unknown group
option with the valid ones, a key that is not a setting with the valid keys, a bad value."""

from __future__ import annotations

_GROUP_NOUNS = {"task": "task", "physics": "physics backend", "algo": "algorithm config",
                "randomization": "randomization preset"}


def hydra_error_message(exc: BaseException, overrides: list[str] = ()) -> str | None:
    """One line for a Hydra/OmegaConf composition error, or None if `exc` is not one. `overrides`:
    the command line, to list the valid keys where a key that is not there was overridden."""
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    from robolearn.errors import one_line

    if isinstance(exc, MissingConfigException):
        group, _, name = (exc.missing_cfg_file or "").rpartition("/")
        options = [o for o in (exc.options or []) if not o.endswith("_schema")]
        noun = _GROUP_NOUNS.get(group, f"'{group}' option")
        return f"unknown {noun} '{name}'; valid: {', '.join(options)}"
    if isinstance(exc, (HydraException, OmegaConfBaseException)):
        message = one_line(exc)
        unknown = _unknown_key_message(message, one_line(exc.__cause__ or ""), overrides)
        if unknown:
            return unknown
        cause = exc.__cause__
        if cause is not None and one_line(cause) not in message:
            message += f" ({one_line(cause).split(' full_key:')[0]})"
        return message
    return None


def _unknown_key_message(message: str, cause: str, overrides: list[str] = ()) -> str | None:
    """'algo.learnin_rate is not a setting of algo; valid: ...' for Hydra's "Could not override"
    (which would suggest adding the key with +, which the schema then refuses anyway)."""
    import dataclasses
    import re

    from robolearn import config, config_scale, config_task
    from robolearn.config_checks import not_a_setting

    key = re.search(r"Could not override '([^']+)'", message)
    if key is None:
        return None
    schema = re.search(r"not in '(\w+)'", cause or message)
    schemas = (config, config_task, config_scale)
    kind = next((getattr(m, schema.group(1)) for m in schemas if hasattr(m, schema.group(1))), None) if schema else None
    if dataclasses.is_dataclass(kind):
        return not_a_setting(key.group(1), kind)
    missing = re.search(r"Key '([^']+)' is not in struct", cause or message)
    if missing is None:
        return None
    return _not_a_key(key.group(1), missing.group(1), overrides)


def _not_a_key(key: str, missing: str, overrides: list[str]) -> str:
    """A key that is not in a dict of the config (a term, a group, a command): which keys are."""
    from omegaconf import DictConfig, OmegaConf

    from robolearn.compose import compose_train

    parts = key.split(".")
    parent = ".".join(parts[: parts.index(missing)]) if missing in parts else key.rpartition(".")[0]
    line = f"{key}: '{missing}' is not in {parent or 'the training config'}"
    choices = [a for a in overrides if "=" in a and "." not in a.split("=", 1)[0] and not a.startswith(("+", "~"))]
    try:  # the config with only the group choices (task=..., physics=...) shows what is there
        node = OmegaConf.select(compose_train(choices), parent) if parent else None
    except Exception:
        node = None
    if isinstance(node, DictConfig):
        return f"{line}; valid: {', '.join(str(k) for k in node.keys())}"
    return line
