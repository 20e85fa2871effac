"""Reusable term functions. `TERMS` is the namespace every task's YAML can name."""

from __future__ import annotations

from collections.abc import Callable

from robolearn.mdp import curriculum, events, manipulation, metrics, observations, rewards, terminations

_MODULES = (observations, rewards, terminations, events, metrics, curriculum, manipulation)

TERMS: dict[str, Callable] = {
    name: getattr(module, name)
    for module in _MODULES
    for name in dir(module)
    if not name.startswith("_") and callable(getattr(module, name)) and getattr(module, name).__module__ == module.__name__
}
