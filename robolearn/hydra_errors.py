"""Hydra's and OmegaConf's composition errors as the one line the CLI prints: an unknown group
option with the valid ones, a key that is not a setting with the valid keys, a bad value."""

from __future__ import annotations

import re

_GROUP_NOUNS = {"task": "task", "physics": "physics backend", "algo": "algorithm config",
                "randomization": "randomization preset"}


def hydra_error_message(exc: BaseException, overrides: list[str] = (), compose=None) -> str | None:
    """One line for a Hydra/OmegaConf composition error, or None if `exc` is not one. `overrides`:
    the command line, to list the valid keys where a key that is not there was overridden, from the
    config `compose(group choices)` gives (compose.compose_train; None: not listed)."""
    from hydra.errors import HydraException, MissingConfigException, OverrideParseException
    from omegaconf.errors import OmegaConfBaseException

    from robolearn.errors import one_line

    if isinstance(exc, MissingConfigException):
        group, _, name = (exc.missing_cfg_file or "").rpartition("/")
        options = [o for o in (exc.options or []) if not o.endswith("_schema")]
        noun = _GROUP_NOUNS.get(group, f"'{group}' option")
        return f"unknown {noun} '{name}'; valid: {', '.join(options)}"
    if isinstance(exc, (HydraException, OmegaConfBaseException)):
        message = one_line(exc)
        empty = re.search(r"Error parsing override '([^']*)'.*empty choice is not legal", message)
        if empty:
            return empty_sweep_message(empty.group(1))
        if "LexerNoViableAltException" in message or "NoViableAltException" in message:
            text = message.split(": ", 1)[-1].split(" ^")[0].strip()
            key, _, value = text.partition("=")
            return (f"cannot read the override {text}: a value with spaces, accents or other characters outside "
                    f"letters, digits and / . _ - must be quoted; valid: '{key}=\"{value}\"'")  # fmt: skip
        if isinstance(exc, OverrideParseException) and exc.override:  # `${oops`, `[1,2`, `b)c`
            return (f"cannot read the override {exc.override}: {message.split(' See https')[0]}; valid: key=value with "
                    "every [, {, ( and ${ closed, and a value with spaces or other special characters quoted, e.g. "
                    "'key=\"a b\"'")  # fmt: skip
        merged = _merged_addition(message, one_line(exc.__cause__ or ""))
        if merged:
            return merged
        in_file = _config_file_message(message, one_line(exc.__cause__ or ""))
        if in_file:
            return in_file
        unknown = _unknown_key_message(message, one_line(exc.__cause__ or ""), overrides, compose)
        if unknown:
            return unknown
        said = one_line(exc.__cause__ or "")
        wrong = _wrong_type(message, said) or _null(message, said, overrides, compose)
        if wrong:
            return wrong
        cause = exc.__cause__
        if cause is not None and one_line(cause) not in message:
            message += f" ({one_line(cause).split(' full_key:')[0]})"
        return message
    return None


def _merged_addition(message: str, cause: str) -> str | None:
    """A new entry added with `+` (handed to Hydra as a merge, config_additions.py) that sets a key
    its schema lacks: 'task.rewards.alive.wieght is not a setting of task.rewards.alive; valid: ...'."""
    import re

    from robolearn.config_additions import ORIGINAL
    from robolearn.config_checks import not_a_setting

    merge = re.search(r"Error merging override (\+\+\S+=.*?)(?: \(|$)", message)
    missing = re.search(r"Key '([^']+)' not in '(\w+)'", cause or message)
    original = ORIGINAL.get(merge.group(1)) if merge else None
    kind = _schema_named(missing.group(2)) if missing else None
    if original is None or kind is None:
        return None
    parts = original.lstrip("+").split("=", 1)[0].split(".")
    key = missing.group(1)
    path = parts[: parts.index(key) + 1] if key in parts else [*parts, key]
    return not_a_setting(".".join(path), kind)


def _config_file_message(message: str, cause: str) -> str | None:
    """A mistake in a config file (a task plugin's YAML): OmegaConf's "In 'task/my_robot': ... Key
    'reward' not in 'TaskCfg' full_key: task.reward" as 'task my_robot (<its YAML>): task.reward is not
    a setting of task; valid: ...', and a value of the wrong type as what it is not and what is valid."""
    found = re.match(r"In '(\w+)/([^']+)': \w+ raised while composing config: (.*)", message)
    if found is None:
        return None
    group, name, said = found.groups()
    mistake = schema_mistake(f"{said} {cause}")
    return mistake and f"{_GROUP_NOUNS.get(group, group)} '{name}'{_config_file(group, name)}: {mistake}"


def schema_mistake(text: str) -> str | None:
    """OmegaConf's text for a value its schema refuses (a key it lacks, a wrong type, a choice not
    among its values) as one line: the key, what the value is not, and what is valid; None for
    another text. Task YAMLs and a run's config.yaml share it."""
    from robolearn.config_checks import not_a_setting

    full = re.search(r"full_key: ([^\s=]+)(?:\s|$)", text)
    key = full.group(1) if full else None
    missing = re.search(r"Key '([^']+)' not in '(\w+)'", text)
    kind = _schema_named(missing.group(2)) if missing else None
    if kind is not None:
        return not_a_setting(key or missing.group(1), kind)
    value = re.search(r"Value '(.*?)' of type|\. value: (.*?)(?: full_key|$)", text)
    shown = f" {(value.group(1) if value.group(1) is not None else value.group(2))!r}" if value else ""
    choice = re.search(r"Invalid value '(.*?)', expected one of \[(.*?)\]", text)
    if choice:
        return f"{key or 'a value'} = {choice.group(1)!r} is not one of its choices; valid: {choice.group(2)}"
    assigned = re.search(r"Cannot assign (\w+) to Dict\[", text)
    if assigned:
        return f"{key or 'an entry'} is a {assigned.group(1)}, not a mapping; valid: a mapping of name: settings"
    subclass = re.search(r"is not a subclass of (\w+)", text)
    schema = _schema_named(subclass.group(1)) if subclass else None
    if schema is not None:
        import dataclasses

        fields = ", ".join(f.name for f in dataclasses.fields(schema))
        return f"{key or 'an entry'} is{shown}, not a mapping; valid: a mapping of its settings ({fields})"
    if "Cannot merge DictConfig with ListConfig" in text:
        return (f"a list where the config takes a mapping{f' ({key})' if key else ''}; valid: name: settings "
                "entries (rewards, observations, their terms, events, commands and terminations are mappings)")  # fmt: skip
    if "Missing mandatory value" in text and key:
        return f"{key} is missing; valid: a value for it (the schema has no default)"
    for kind_said, noun, valid in _KINDS:
        if kind_said in text:
            return f"{key or 'a value'}{shown and ' =' + shown} is not {noun}; valid: {valid}"
    return None


def _config_file(group: str, name: str) -> str:
    """' (<path of the task's YAML>)' for a task plugin, else ''."""
    if group != "task":
        return ""
    from robolearn.registry import discover_tasks

    plugin = discover_tasks().get(name)
    return f" ({plugin.config})" if plugin is not None else ""


_KINDS = (  # (what OmegaConf's conversion error says, what the value is not, what is valid)
    ("converted to Integer", "an integer", "a whole number, e.g. 4"),
    ("converted to Float", "a number", "a number, e.g. 0.5 or 1e-3"),
    ("not a valid bool", "true or false", "true or false"),
    ("is not a ListConfig", "a list", "a list in brackets, e.g. [64,64]"),
    ("is not a DictConfig", "a mapping", "a mapping in braces, e.g. {key: value}"),
    ("Cannot convert 'list' to string", "a single value", "one word or number, not a list"),
    ("Cannot convert 'dict' to string", "a single value", "one word or number, not a mapping"),
    ("Cannot convert 'ListConfig' to string", "a single value", "one word or number, not a list"),
    ("Cannot convert 'DictConfig' to string", "a single value", "one word or number, not a mapping"),
)


def _wrong_type(message: str, cause: str) -> str | None:
    """An override whose value does not have its setting's type (`task.decimation=1.5`,
    `algo.learning_rate=abc`): 'task.decimation=1.5 is not an integer; valid: a whole number, e.g. 4'.
    A key or element inside the value is named in full: 'algo.actor_hidden_dims[1] (in ...=[64,abc])'."""
    import re

    from robolearn.config_additions import ORIGINAL

    merge = re.match(r"Error merging override (\S+?=.*?)(?: \(|$)", message)
    if merge is None:
        return None
    override = ORIGINAL.get(merge.group(1), merge.group(1)).lstrip("+")  # a `+` addition: as the user wrote it
    full = re.search(r"full_key: (\S+)", cause)
    key = override.partition("=")[0]
    inside = full is not None and full.group(1).startswith((key + ".", key + "["))  # a key or element of the value
    where = f"{full.group(1)} (in {override})" if inside else override
    for said, kind, valid in _KINDS:
        if said in cause or said in message:
            return f"{where} is not {kind}; valid: {valid}"
    return None


def _null(message: str, cause: str, overrides: list[str] = (), compose=None) -> str | None:
    """`seed=null`, `task.rewards.alive.weight=null`: a setting that takes a value was given none
    (OmegaConf: "field 'seed' is not Optional"); the valid example is its value in the config with
    only the command line's group choices (compose.compose_train; none without `compose`)."""
    from omegaconf import OmegaConf

    from robolearn.config_additions import ORIGINAL

    merge = re.match(r"Error merging override (\S+?=.*?)(?: \(|$)", message)
    field = re.search(r"field '([^']+)' is not Optional", f"{message} {cause}")
    if merge is None or field is None:
        return None
    override, key = ORIGINAL.get(merge.group(1), merge.group(1)).lstrip("+"), field.group(1)
    choices = [a for a in overrides if a.partition("=")[0] in _GROUP_NOUNS]  # task=..., physics=...: no setting
    try:
        value = OmegaConf.select(compose(choices), key) if compose is not None else None
    except Exception:  # noqa: BLE001 (the line is still right without the example)
        value = None
    shown = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
    if isinstance(shown, list):  # as an override writes it: no spaces
        shown = "[" + ",".join(map(str, shown)) + "]"
    example = f", e.g. {key}={shown}" if shown is not None and not isinstance(shown, dict) else ""
    return f"{override}: {key} cannot be null; valid: a value of its type{example}"


def _unknown_key_message(message: str, cause: str, overrides: list[str] = (), compose=None) -> str | None:
    """'algo.learnin_rate is not a setting of algo; valid: ...' for Hydra's "Could not override"
    (which would suggest adding the key with +, which the schema then refuses anyway)."""
    import re

    from robolearn.config_checks import not_a_setting

    key = re.search(r"Could not override '([^']+)'", message)
    if key is None:
        return None
    schema = re.search(r"not in '(\w+)'", cause or message)
    kind = _schema_named(schema.group(1)) if schema else None
    if kind is not None:  # the key in full: an override as_merges wrote into its parent names the parent
        full = re.search(r"full_key: (\S+)", cause or "")
        return not_a_setting(full.group(1) if full else key.group(1), kind)
    missing = re.search(r"Key '([^']+)' is not in struct", cause or message)
    if missing is None:
        return None
    return _not_a_key(key.group(1), missing.group(1), overrides, compose)


def _not_a_key(key: str, missing: str, overrides: list[str], compose=None) -> str:
    """A key that is not in a dict of the config (a term, a group, a command): which keys are."""
    from omegaconf import DictConfig, OmegaConf

    from robolearn.config_additions import takes_new_entries

    parts = key.split(".")
    parent = ".".join(parts[: parts.index(missing)]) if missing in parts else key  # else: a key of the value
    line = f"{key}: '{missing}' is not in {parent or 'the training config'}"
    choices = [a for a in overrides if "=" in a and "." not in a.split("=", 1)[0] and not a.startswith(("+", "~"))]
    try:  # the config with only the group choices (task=..., physics=...) shows what is there
        node = OmegaConf.select(compose(choices), parent) if parent and compose is not None else None
    except Exception:
        node = None
    if isinstance(node, DictConfig):
        line = f"{line}; valid: {', '.join(str(k) for k in node.keys())}"
        if takes_new_entries(parent):
            line += f" (a new one: +{parent}.{missing}=...)"
    return line


def _schema_named(name: str) -> type | None:
    """The config schema (dataclass) of that class name, as OmegaConf's messages name it."""
    import dataclasses

    from robolearn import config, config_scale, config_task

    kind = next((getattr(m, name) for m in (config, config_task, config_scale) if hasattr(m, name)), None)
    return kind if dataclasses.is_dataclass(kind) else None


RANGE_VALID = "range(start, stop[, step]) with start < stop (start > stop with a negative step)"


def empty_sweep_message(line: str) -> str:
    """A sweep that lists no value (`seed=range(3,0)`, `seed=choice()`): Hydra would launch no job."""
    key, _, value = line.partition("=")
    if "range(" in value:
        return f"{line} sweeps no value; valid: {RANGE_VALID}, e.g. {key}=range(0,3)"
    return f"{line} sweeps no value; valid: one value or more, e.g. {key}=choice(1,2) or {key}=1,2"


def interpolation_message(exc: BaseException, overrides: list[str] = ()) -> str:
    """One line for an interpolation (`${algo.gamma}`) in the config that does not resolve, naming
    the override that wrote it (`overrides`: as the user wrote them)."""
    full_key = str(getattr(exc, "full_key", None) or "")
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    shown = next((o for o in reversed(overrides) if "${" in o.partition("=")[2] and _covers(o, full_key)), full_key)
    example = "${<key path>}, e.g. ${algo.gamma}"
    if key := re.search(r"Interpolation key '([^']+)' not found", text):
        return f"{shown}: interpolation key '{key.group(1)}' is not in the config; valid: {example}"
    if env := re.search(r"Environment variable '([^']+)' not found", text):
        return (f"{shown}: environment variable {env.group(1)} is not set; valid: set it, or give a default, e.g. "
                f"${{oc.env:{env.group(1)},0}}")  # fmt: skip
    if kind := re.search(r"Unsupported interpolation type (\S+)", text):
        return f"{shown}: '{kind.group(1)}' is not a resolver; valid: {example}, or ${{oc.env:<variable>}}"
    for said, noun, valid in _KINDS:
        if said in text:
            return f"{shown}: what it resolves to is not {noun}; valid: {valid}"
    return f"{shown}: {text}; valid: {example}"


def _covers(override: str, full_key: str) -> bool:
    """Whether the override sets `full_key` (itself, or a mapping or list that holds it)."""
    key = override.partition("=")[0].lstrip("+~")
    return not full_key or full_key == key or full_key.startswith((key + ".", key + "["))
