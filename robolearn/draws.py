"""Random numbers from an env's generator, in a form torch.compile keeps inside its graph.

Terms draw from `env.generator` (seeded, saved in checkpoints, registered with the env's CUDA
graphs). A plain `torch.rand(..., generator=env.generator)` splits a compiled function in two:
Dynamo does not trace generators, and every piece after such a split is compiled on its own,
again for each term that reaches it with other parameters, so a compiled reset path would fall
apart into dozens of small graphs and recompilations. These helpers draw the same numbers from
the same generator state: eagerly they are the plain torch call; while torch.compile traces them
they are one custom operation (`robolearn::draw`) that stays in the graph. Each draw declares that
it mutates the generator's token, so the compiled graph keeps the draws in the order the code
makes them (the generator's stream, as eager) and never merges two draws that look alike.

    u = draws.uniform(env, (env.num_envs, 3), -1.0, 1.0)
"""

from __future__ import annotations

import torch

_REGISTERED: list[tuple[torch.Generator, torch.Tensor]] = []
"""The generators compiled code may draw from, each with its order token (a 0-d tensor each draw
declares it mutates; never written). Held strongly: torch 2.11's generators take no weak reference
(2.13's do), a generator is a few bytes of state and refers to no env, and held, its id() is never
reused by another one. Compiled code names a generator by its place here: the same
number in every run, so Inductor's on-disk cache finds a graph compiled by an earlier run."""
_KEYS: dict[int, int] = {}
"""id(generator) -> its place in _REGISTERED."""


def register(generator: torch.Generator) -> None:
    """Let compiled code draw from `generator` (env.compile does this for the env's generator
    before anything is traced)."""
    if id(generator) in _KEYS:
        return
    with torch.inference_mode(False):  # a token made under inference mode could not be "mutated" outside it
        _KEYS[id(generator)] = len(_REGISTERED)
        _REGISTERED.append((generator, torch.empty((), device=generator.device)))


def uniform(env, shape: tuple[int, ...], low: float = 0.0, high: float = 1.0) -> torch.Tensor:
    """U[low, high) of `shape`, float32, on the env's device (low <= high)."""
    return _draw(env, "uniform", shape, low, high)


def normal(env, shape: tuple[int, ...]) -> torch.Tensor:
    """Standard normal values of `shape`, float32, on the env's device."""
    return _draw(env, "normal", shape, 0.0, 1.0)


def integers(env, shape: tuple[int, ...], low: int, high: int) -> torch.Tensor:
    """Integers uniform in [low, high) of `shape`, int64, on the env's device."""
    return _draw(env, "integers", shape, low, high)


def _fill(kind: str, shape: list[int], a: float, b: float, generator: torch.Generator, device) -> torch.Tensor:
    """The draw itself: what torch.rand / randn / randint do with these bounds, bit for bit."""
    if kind == "uniform":
        return torch.empty(shape, device=device).uniform_(a, b, generator=generator)
    if kind == "normal":
        return torch.empty(shape, device=device).normal_(a, b, generator=generator)
    return torch.empty(shape, dtype=torch.long, device=device).random_(int(a), int(b), generator=generator)


def _draw(env, kind: str, shape, a: float, b: float) -> torch.Tensor:
    generator = env.generator
    if not torch.compiler.is_compiling():
        return _fill(kind, list(shape), a, b, generator, env.device)
    key = _KEYS.get(id(generator))
    if key is None:
        raise RuntimeError("robolearn.draws: register(env.generator) before torch.compile traces a draw")
    return _op(_REGISTERED[key][1], kind, list(shape), float(a), float(b), key)


@torch.library.custom_op("robolearn::draw", mutates_args=("token",))
def _op(token: torch.Tensor, kind: str, shape: list[int], a: float, b: float, key: int) -> torch.Tensor:
    generator = _REGISTERED[key][0]
    return _fill(kind, shape, a, b, generator, token.device)


@_op.register_fake
def _(token, kind, shape, a, b, key):
    return token.new_empty(shape, dtype=torch.long if kind == "integers" else torch.float32)
