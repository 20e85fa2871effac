"""Which kind of term a generic term is, declared next to the term so nothing else can drift.

A module whose terms are all of one kind says so once, `TERM_KIND = "reward"`; a module that mixes
kinds marks each term with `@term_kind("metric")` (or several: `@term_kind("reward", "metric")`),
which wins over the module's TERM_KIND. The term catalogue (`robolearn terms`,
robolearn/term_catalog.py) reads the kinds from here, and its test requires every term of
robolearn.mdp.TERMS to have one. The kind is documentation: a task may still use a term where its
signature fits (a reward as a metric).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

KINDS: dict[str, str] = {
    "observation": "f(env, **params) -> Tensor[num_envs, D], concatenated into its group",
    "reward": "f(env, **params) -> Tensor[num_envs]; the step reward adds weight * value",
    "termination": "f(env, **params) -> BoolTensor[num_envs]; True ends the episode",
    "event": "f(env, mask, **params) -> None; acts where mask [num_envs] is True",
    "curriculum": "class: built with (env, **params), called (env, mask) where episodes end",
    "metric": "f(env, **params) -> Tensor[num_envs] per step; reported (per step, meter or final), not rewarded",
}
"""Every term kind, in catalogue order, with the call contract its terms follow."""

T = TypeVar("T", bound=Callable)


def term_kind(*kinds: str) -> Callable[[T], T]:
    """Decorator marking a term's kind(s) (in a module that mixes kinds), e.g.
    `@term_kind("reward", "metric")` for a distance both rewarded and reported; returns the term
    itself, only marked."""
    unknown = [k for k in kinds if k not in KINDS]
    if not kinds or unknown:
        raise ValueError(f"unknown term kind {unknown[0] if unknown else '(none given)'}; valid: {', '.join(KINDS)}")

    def mark(term: T) -> T:
        term.term_kind = kinds  # type: ignore[attr-defined]
        return term

    return mark


def kinds_of(term: Callable) -> tuple[str, ...]:
    """The term's own mark, else its module's TERM_KIND (a kind or a tuple of kinds), else ()."""
    marked = getattr(term, "term_kind", None)
    if marked is None:
        marked = getattr(sys.modules.get(term.__module__), "TERM_KIND", None)
    if marked is None:
        return ()
    return (marked,) if isinstance(marked, str) else tuple(marked)
