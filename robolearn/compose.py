"""Hydra config registration and in-process composition (the CLI and the tests share this).

A task YAML may carry its own training recipe: `algo:`, `runner:`, `env:` and `physics:` sections with
any of those settings (network sizes, learning rate, steps per env, iterations, number of envs, physics
options but not the backend, ...). Precedence, lowest first: the schema defaults (config.py) <
configs/algo/<name>.yaml, configs/physics/<name>.yaml and configs/train.yaml < the task's recipe <
command-line overrides. The task is stored in Hydra's ConfigStore at the root
package, so choosing `task=<name>` also brings its recipe, and train.yaml lists the task after
its own values.
"""

from __future__ import annotations

import dataclasses
import re

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import GrammarParseError, InterpolationResolutionError

from robolearn.config import SCHEMAS, AlgoCfg, EnvCfg, PhysicsCfg, RunnerCfg
from robolearn.config_additions import as_merges
from robolearn.compose_memo import compose_train_config
from robolearn.config_checks import check_train_cfg
from robolearn.errors import UserError
from robolearn.hydra_errors import RANGE_VALID, empty_sweep_message, hydra_error_message, interpolation_message
from robolearn.isaaclab import isaaclab_task
from robolearn.paths import configs_dir
from robolearn.registry import BROKEN, TaskPlugin, discover_tasks, task_configs
from robolearn.task_yaml import load_task_yaml

RECIPE_SECTIONS = {"algo": AlgoCfg, "runner": RunnerCfg, "env": EnvCfg, "physics": PhysicsCfg}
"""Sections of a task YAML that set training defaults for that task, and their schemas."""
NOT_IN_RECIPES = {"physics": {"backend": "the command line chooses it (physics=<name>)"}}
"""Schema fields a recipe may not set, and why."""


def split_recipe(name: str, node: dict) -> tuple[dict, dict]:
    """(the task config, its recipe {section: {key: value}}); a recipe key the schema does not
    know is a UserError naming the task (types are checked when the task is composed)."""
    node, recipe = dict(node), {}
    for section, schema in RECIPE_SECTIONS.items():
        values = node.pop(section, None)
        if values is None:
            continue
        if not isinstance(values, dict):
            raise UserError(f"task '{name}': its {section}: section must be a mapping of {section} settings")
        barred = NOT_IN_RECIPES.get(section, {})
        refused = [k for k in values if k in barred]
        if refused:
            raise UserError(f"task '{name}': its recipe sets {section}.{refused[0]}, which a task's recipe may not set: "
                            f"{barred[refused[0]]}")  # fmt: skip
        valid = [f.name for f in dataclasses.fields(schema) if f.name not in barred]
        unknown = [k for k in values if k not in valid]
        if unknown:
            article = "an" if section[0] in "aeiou" else "a"
            raise UserError(f"task '{name}': its recipe sets {section}.{unknown[0]}, which is not {article} {section} "
                            f"setting; valid: {', '.join(valid)}")  # fmt: skip
        recipe[section] = values
    return node, recipe


def register_configs() -> dict[str, TaskPlugin]:
    """Put the schemas and every installed task's YAML into Hydra's ConfigStore. A task's YAML is
    checked against the schema when it is composed (`task=<name>`), so one broken task does not
    stop the others from running."""
    cs = ConfigStore.instance()
    for group, name, schema in SCHEMAS:
        _store(cs, group, name, schema)
    OmegaConf.register_new_resolver("robolearn.suffix", lambda name: f"_{name}" if name else "", replace=True)
    OmegaConf.register_new_resolver("robolearn.groups", _groups_help, replace=True)
    tasks = discover_tasks()
    for name, plugin in list(tasks.items()):
        BROKEN.pop(name, None)  # found again: judged afresh
        try:
            task, recipe = split_recipe(name, load_task_yaml(plugin.config, task_configs(tasks)))
            task.setdefault("name", name)  # the entry point's name is the task's name
            if task["name"] != name:
                raise UserError(f"task '{name}': {plugin.config} says name '{task.get('name')}'; the names must match")
        except UserError as exc:  # this task is unusable; the others are not
            BROKEN[name] = str(exc)
            del tasks[name]
            continue
        _store(cs, "task", name, {"task": task, **recipe}, package="_global_")
    return tasks


_STORED: dict[tuple, tuple[object, object]] = {}
"""Each node as last stored, by (group, name), with the ConfigStore entry made of it."""


def _store(cs: ConfigStore, group: str | None, name: str, node, package: str | None = None) -> None:
    """Store a node in Hydra's ConfigStore, unless the store still holds this very node: every
    composition registers the schemas and tasks again, and OmegaConf's conversion of them was ~40 %
    of a compose_train; an entry left as it was also lets compose_memo.py know the config is too."""
    entry = lambda: (cs.repo.get(group, {}) if group else cs.repo).get(f"{name}.yaml")  # noqa: E731
    last = _STORED.get((group, name))
    if last is not None and entry() is last[1] and last[0] == node:
        return
    cs.store(group=group, name=name, node=node, package=package)
    _STORED[(group, name)] = (node, entry())


GROUPS = ("task", "algo", "physics", "randomization")
"""The config groups a command line chooses one option of (`task=pendulum`)."""


def group_options(group: str) -> list[str]:
    """The options a command line may choose in `group` (not the `<group>_schema` they extend)."""
    if group == "task":
        return sorted(discover_tasks())
    return sorted(f.stem for f in (configs_dir() / group).glob("*.yaml") if not f.stem.endswith("_schema"))


def _groups_help() -> str:
    """`robolearn train --help`'s list of groups (configs/train.yaml's hydra.help.template)."""
    return "\n".join(f"{group}: {', '.join(group_options(group))}" for group in sorted(GROUPS))


def check_group_choices(overrides: list[str]) -> None:
    """`task=null`, `task=[cartpole,pendulum]`, `algo=`, `~algo`, `task=a task=b`: a group takes one
    option's name (a sweep over several is `--multirun task=cartpole,pendulum`); say so, with the
    valid names, before Hydra fails on it or composes without it."""
    chosen: dict[str, str] = {}
    for override in overrides:
        group, eq, value = override.partition("=")
        if eq and group in GROUPS and chosen.setdefault(group, value) != value:  # Hydra would keep the last in silence
            raise UserError(f"{group}= is given twice ({group}={chosen[group]}, {override}); valid: one {group}= (several "
                            f"in a sweep: --multirun {group}={chosen[group]},{value})")  # fmt: skip
        if group.startswith("~") and group[1:] in GROUPS:  # Hydra would train on the bare schema's defaults
            options = ", ".join(f"{group[1:]}={name}" for name in group_options(group[1:]))
            raise UserError(f"{override}: the {group[1:]} group cannot be removed; valid: choose one of its options ({options})")
        if not eq or group not in GROUPS:
            continue
        schema = [v for v in value.split(",") if v.strip().endswith("_schema")] if group != "task" else []
        if not schema and value and value.strip()[0] not in "[{" and value != "null":
            continue
        valid = group_options(group)
        if schema:  # the typed schema every option of the group extends, registered beside them
            raise UserError(f"{override}: {schema[0].strip()} is the schema {group}'s options are checked against, not an "
                            f"option; valid: {', '.join(valid)}")  # fmt: skip
        raise UserError(f"{override}: {group}= takes one name (several: --multirun {group}=a,b); valid: {', '.join(valid)}")


def check_switches(overrides: list[str]) -> None:
    """A true/false setting of the training schema given a number other than 0 or 1
    (`runner.export_onnx=2`, `env.stagger_timeouts=-1`): OmegaConf takes any such number for true,
    so say it in one line instead. Words it cannot read are its own error already."""
    from omegaconf import BooleanNode, DictConfig

    from robolearn.config import TrainCfg

    schema = None
    for override in overrides:
        key, eq, value = override.partition("=")
        key = key.lstrip("+~")
        if not eq or key.startswith("hydra"):
            continue
        schema = schema or OmegaConf.structured(TrainCfg)
        node = schema
        for part in key.split("."):
            node = node._get_node(part) if isinstance(node, DictConfig) and part in node else None
            if node is None:
                break
        if not isinstance(node, BooleanNode):
            continue
        for item in value.split(","):  # a sweep's values too
            try:
                number = float(item)
            except ValueError:
                continue
            if number not in (0.0, 1.0):
                unset = ", or null (unset)" if node._is_optional() else ""
                raise UserError(f"{key}={item} is out of range; valid: true or false{unset}")


def check_empty_entries(overrides: list[str]) -> None:
    """`task.rewards={}` or `task.rewards.alive={}`: an override merges into the task's dict of terms
    or into one term (OmegaConf merges an empty mapping as nothing), so every term, or that one,
    would stay without a word; `~task.rewards` and `task.rewards.alive=null` (what a task YAML
    writes to remove a term) the schema refuses in Hydra's words. Say how one term goes instead. A
    sweep's values are each checked."""
    from robolearn.config_additions import holds_entries

    for override in overrides:
        key, eq, value = override.partition("=")
        if key.startswith("~") and holds_entries(key[1:].strip()):  # `~task.rewards`: the schema refuses it
            noun = _entry_noun(key)
            raise UserError(f"{override}: the task's {key[1:].rpartition('.')[2]} cannot be removed as a whole; valid: "
                            f"~{key[1:]}.<name> removes one {noun}")  # fmt: skip
        path = key.strip().lstrip("+")
        if not eq or key.startswith("~"):
            continue
        parent, _, name = path.rpartition(".")
        values = _values(override) if "{" in value or "null" in value.lower() else []
        if any(v is None for v in values):
            if holds_entries(path):
                noun = _entry_noun(path)
                raise UserError(f"{override}: the task's {name} cannot be removed as a whole; valid: ~{path}.<name> "
                                f"removes one {noun}")  # fmt: skip
            if parent and holds_entries(parent):
                noun = _entry_noun(parent)
                raise UserError(f"{override}: null removes a {noun} only in a task YAML that extends another, not on "
                                f"the command line; valid: ~{path} removes it")  # fmt: skip
        if not any(isinstance(v, dict) and not v for v in values):
            continue
        if holds_entries(path):
            noun = _entry_noun(path)
            raise UserError(f"{override} keeps every {noun} (an override merges into the task's {name}); "
                            f"valid: ~{path}.<name> removes one {noun}")  # fmt: skip
        if parent and holds_entries(parent) and not re.match(r"\+[^+]", key):  # `+task.rewards.new={}` adds one
            noun = _entry_noun(parent)
            raise UserError(f"{override} keeps {noun} '{name}' as it is (an override merges into it); valid: "
                            f"~{path} removes it")  # fmt: skip


def _entry_noun(entries: str) -> str:
    """What the entries of a dict of the task (config_additions.holds_entries) are called."""
    return "group" if entries.endswith("observations") else "term"


def _values(override: str) -> list:
    """The override's value, or each of its sweep's values; none where Hydra cannot parse it (it
    says what is wrong with it when it composes)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides([override])[0]
        return list(parsed.sweep_iterator()) if parsed.is_sweep_override() else [parsed.value()]
    except Exception:  # noqa: BLE001
        return []


def refuse_broken_task(overrides: list[str]) -> None:
    """`task=<name>` of an installed task that failed to load: say why, not "unknown task".
    `task=isaaclab:<id>` is registered here, as it is chosen (robolearn/isaaclab/task_config.py)."""
    chosen = [o.split("=", 1)[1] for o in overrides if o.startswith("task=")]
    if chosen and isaaclab_task(chosen[-1]) is not None:
        from robolearn.isaaclab.task_config import register_chosen

        register_chosen(overrides)
    if chosen and chosen[-1] in BROKEN:
        raise UserError(f"task '{chosen[-1]}' is installed but cannot be used: {BROKEN[chosen[-1]]}")


def compose_train(overrides: list[str] | None = None) -> DictConfig:
    """The training config `robolearn train <overrides>` would run with, composed in-process and
    checked (config_checks.py). A mistake in the overrides is a UserError with the CLI's one line
    (Hydra's and OmegaConf's own errors translated by hydra_errors.py)."""
    overrides = list(overrides or [])
    register_configs()
    check_group_choices(overrides)
    check_switches(overrides)
    check_empty_entries(overrides)
    refuse_broken_task(overrides)
    try:
        cfg = compose_train_config(as_merges(overrides), configs_dir())
    except Exception as exc:
        message = hydra_error_message(exc, overrides, compose_train)
        if message is None:
            raise
        raise UserError(message) from None
    try:
        check_train_cfg(cfg)  # reads every value: an interpolation (`${algo.gamma}`) resolves here
    except (InterpolationResolutionError, GrammarParseError) as exc:
        raise UserError(interpolation_message(exc, overrides)) from None
    return cfg


MAX_CHECKED_JOBS = 256
"""How many of a basic sweep's jobs check_sweep_jobs composes before the first one trains."""


def check_sweep_jobs(overrides: list[str]) -> None:
    """Compose every job of a basic sweep (comma lists, range()) before the first one trains: a value
    that is out of range in its last job is refused now, in one line naming that job, not after the
    others have trained. Sweeps a sweeper plugin samples (interval(), Optuna) are checked job by job."""
    import itertools

    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = [a for a in overrides if "=" in a and not a.startswith("-")]  # no flags (-m, --cfg job)
    if any(a.replace(" ", "").startswith("hydra/sweeper=") for a in given):
        return
    axes = []
    for override in OverridesParser.create().parse_overrides(given):
        key = override.get_key_element()
        if key.lstrip("+~").startswith("hydra"):
            continue
        if override.is_sweep_override() and not override.is_discrete_sweep():
            return  # sampled, not listed
        values = _sweep_values(override)
        axes.append([f"{key}={v}" for v in values] if values is not None else [override.input_line])
    for number, job in enumerate(itertools.islice(itertools.product(*axes), MAX_CHECKED_JOBS)):
        try:
            compose_train(list(job))
        except UserError as exc:
            swept = " ".join(a for a, axis in zip(job, axes) if len(axis) > 1)
            raise UserError(f"job {number} ({swept}): {exc}; no job has run") from None


def _glob_values(override) -> list[str]:
    """glob(include[, exclude]) over a config group's options (`task=glob(cart*)`), as Hydra's
    sweeper expands it; of anything but a group, one line."""
    key = override.get_key_element().lstrip("+~")
    if key not in GROUPS:
        raise UserError(f"{override.input_line}: glob() sweeps the options of a config group ({', '.join(GROUPS)}), "
                        f"and {key} is not one; valid: {key}=a,b,c or range(start, stop)")  # fmt: skip
    values = override.value().filter(group_options(key))
    if not values:
        raise UserError(f"{override.input_line} matches no {key} option; valid: {', '.join(group_options(key))}")
    return values


def _sweep_values(override) -> list[str] | None:
    """The values a listed sweep gives (None: not a sweep); a range() with a step of 0 (a bare
    ValueError from Python's range) and a sweep of no value in one line."""
    if not override.is_sweep_override():
        return None
    from hydra.core.override_parser.types import Glob

    if isinstance(override.value(), Glob):  # Hydra expands it against the group's options when it launches
        return _glob_values(override)
    try:
        values = list(override.sweep_string_iterator())
    except ValueError as exc:
        if "must not be zero" not in str(exc):
            raise
        key = override.input_line.partition("=")[0]
        raise UserError(f"{override.input_line}: a range() step of 0 sweeps nothing; valid: {RANGE_VALID}, e.g. "
                        f"{key}=range(0,3)") from None  # fmt: skip
    if not values:  # `range(3,0)`: Hydra would launch no job and succeed
        raise UserError(empty_sweep_message(override.input_line))
    return values
