"""One base for every manager: its terms, names, reset, and a state restored in place.

A term is a plain function `f(env, **params)` named in the task YAML and found in the task's own
terms or robolearn.mdp. A term that keeps state across steps (per-foot timers, ...) is a class:
it is built once with its params, then called as `term(env)`; its optional `reset(mask)` runs
when environments reset, and its state (its own `state_dict()`, else its tensor attributes)
goes into checkpoints. Params annotated with an entity type (robolearn.scene.entities) arrive
resolved to indices.

State is restored *in place* (`copy_`), never by rebinding: a CUDA graph or a term that holds a
manager's tensor keeps seeing the live values after `load_state_dict`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from omegaconf import DictConfig, OmegaConf

from robolearn.envs.param_types import check_param_types
from robolearn.errors import UserError, one_line
from robolearn.scene.entities import resolve_entities


def plain(params: Any) -> dict[str, Any]:
    """YAML params as plain Python (lists stay lists) so term functions never see OmegaConf."""
    if isinstance(params, DictConfig):
        return OmegaConf.to_container(params, resolve=True)  # type: ignore[return-value]
    return dict(params or {})


def resolve_term(kind: str, term: str, func: str, namespace: Mapping[str, Callable]) -> Callable:
    """The function named `func`; an unknown name is a UserError listing the functions of that kind
    (generic terms that declare it, and the task's own, which declare none) and the closest name."""
    if func in namespace:
        return namespace[func]
    import difflib

    from robolearn.mdp.kinds import KINDS, kinds_of

    fitting = sorted(name for name, f in namespace.items() if kind in kinds_of(f) or not kinds_of(f)) or sorted(namespace)
    close = difflib.get_close_matches(func, fitting, n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    params = f" (robolearn terms --kind {kind} shows their params)" if kind in KINDS else ""
    raise UserError(f"{kind} term '{term}': unknown function '{func}'{hint}; valid: {', '.join(fitting)}{params}")


def check_params(kind: str, name: str, func: Callable, /, *args: Any, **params: Any) -> None:
    """Wrong or missing YAML params are a UserError at build time; the step then calls terms directly."""
    try:
        signature = inspect.signature(func)
    except ValueError:  # a builtin without one (torch.ones_like): its call says what is wrong
        signature = None
    try:
        if signature is not None:
            signature.bind(*args, **params)
    except TypeError as exc:
        raise UserError(f"{kind} term '{name}' ({_name(func)}): {exc}{_valid_params(signature, len(args), params)}") from None
    check_param_types(kind, name, func, params)


def _valid_params(signature: inspect.Signature, given: int, params: dict) -> str:
    """'; valid params: std, command (did you mean 'std'?)': what the YAML's params may name (after
    the `given` positional arguments robolearn passes, the env and such)."""
    import difflib

    names = [p.name for p in list(signature.parameters.values())[given:]
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]  # fmt: skip
    if not names:
        return "; it takes no params"
    unknown = [k for k in params if k not in names]
    close = difflib.get_close_matches(unknown[0], names, n=1, cutoff=0.6) if unknown else []
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"; valid params: {', '.join(names)}{hint}"


def resolved(kind: str, name: str, func: Callable, params: dict, env) -> dict:
    """Entity params (joints, sensors, ...) resolved to indices, a wrong name naming the term."""
    try:
        return resolve_entities(func, params, env)
    except UserError as exc:
        raise UserError(f"{kind} term '{name}' ({_name(func)}): {exc}") from None


def _name(func: Callable) -> str:
    """A term's function by name (a partial or a callable object has none of its own)."""
    return getattr(func, "__name__", None) or type(func).__name__


def copy_into(target: Any, source: Any) -> None:
    """Copy a saved tensor, or a dict/list of them, into the live one(s) in place."""
    if isinstance(target, torch.Tensor):
        target.copy_(source)
    elif isinstance(target, dict):
        for key, value in target.items():
            copy_into(value, source[key])
    elif isinstance(target, (list, tuple)):
        for value, saved in zip(target, source):
            copy_into(value, saved)
    else:
        raise TypeError(f"cannot restore a {type(target).__name__} in place")


def clone_state(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: clone_state(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clone_state(v) for v in value]
    raise TypeError(f"cannot checkpoint a {type(value).__name__}")


def term_state(term: Any) -> dict:
    """What a class term keeps across steps: its own state_dict(), else its tensor attributes."""
    if hasattr(term, "state_dict"):
        return term.state_dict()
    return {k: v.clone() for k, v in vars(term).items() if isinstance(v, torch.Tensor)}


def load_term_state(term: Any, state: Mapping) -> None:
    if hasattr(term, "load_state_dict"):
        term.load_state_dict(state)
        return
    for key, value in state.items():
        getattr(term, key).copy_(value)


@dataclass
class Term:
    """One built term: `func(env, *args, **params)` is what runs each call."""

    name: str
    func: Callable
    """The function, or the built instance of a class term."""
    params: dict = field(default_factory=dict)
    """Keyword arguments of each call, entity params resolved ({} for most class terms)."""
    source: str = ""
    """The function's name in the task YAML."""
    stateful: bool = False
    """Built from a class: it keeps state (reset with its envs, saved in checkpoints)."""


class ManagerBase:
    """Terms of one kind, in config order, plus the manager's own state tensors (`STATE`)."""

    KIND: ClassVar[str] = "term"
    """What the manager's terms are called in error messages (observation, reward, ...)."""
    STATE: ClassVar[tuple[str, ...]] = ()
    """Attributes (tensors, or dicts of tensors) that checkpoints hold and load restores in place."""
    CALL_ARGS: ClassVar[tuple[str, ...]] = ()
    """Positional arguments a term takes after env (events and curricula: the env mask)."""

    def __init__(self, env):
        self._env = env
        self.terms: list[Term] = []

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.terms]

    def named_terms(self) -> list[tuple[str, Callable]]:
        """(name, function or built class instance) of each term, in config order."""
        return [(t.name, t.func) for t in self.terms]

    def term_error(self, term: Term, exc: Exception) -> UserError:
        """A term that raised (at build or while stepping), named with its task in one line."""
        task = getattr(getattr(self._env, "cfg", None), "name", "?")
        where = f"task '{task}': {self.KIND} term '{term.name}' ({term.source})"
        if isinstance(exc, UserError):  # already says what is wrong and what is valid
            return UserError(f"{where}: {exc}")
        return UserError(f"{where} failed: {type(exc).__name__}: {one_line(exc)}")

    def call_once(self, term: Term):
        """One call of a term at build, to check what it returns; an exception names the term."""
        try:
            return term.func(self._env, **term.params)
        except Exception as exc:
            raise self.term_error(term, exc) from exc

    def build_term(self, name: str, source: str, params: dict, namespace: Mapping[str, Callable]) -> Term:
        """Find `source` in the namespace, check `params` against its signature, resolve entity
        params and, for a class term, build it once."""
        func = resolve_term(self.KIND, name, source, namespace)
        extra = (None,) * len(self.CALL_ARGS)
        if inspect.isclass(func):
            check_params(self.KIND, name, func, self._env, **params)
            built = func(self._env, **resolved(self.KIND, name, func, params, self._env))
            return Term(name, built, {}, source, stateful=True)
        check_params(self.KIND, name, func, self._env, *extra, **params)
        return Term(name, func, resolved(self.KIND, name, func, params, self._env), source)

    def add_terms(self, cfgs: Mapping[str, Any], namespace: Mapping[str, Callable]) -> None:
        for name, cfg in cfgs.items():
            self.terms.append(self.build_term(name, cfg.func, plain(cfg.params), namespace))

    def reset(self, mask: torch.Tensor) -> None:
        for term in self.terms:
            if term.stateful and hasattr(term.func, "reset"):
                term.func.reset(mask)

    def state_dict(self) -> dict:
        return {
            "state": {attr: clone_state(getattr(self, attr)) for attr in self.STATE},
            "terms": {t.name: term_state(t.func) for t in self.terms if t.stateful},
        }

    def load_state_dict(self, state: Mapping) -> None:
        for attr in self.STATE:
            copy_into(getattr(self, attr), state["state"][attr])
        for term in self.terms:
            if term.stateful and term.name in state["terms"]:
                load_term_state(term.func, state["terms"][term.name])
