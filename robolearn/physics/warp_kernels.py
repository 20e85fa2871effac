"""Compile the Warp kernels a model's physics needs up front, in parallel, instead of one module
at a time on first launch.

Warp loads (and, with an empty kernel cache, compiles) a module the first time one of its kernels
is launched, so a cold first step of mujoco_warp compiles its ~50 modules one after another on
one CPU core: most of a cold start. `compile_ahead` first runs the given work with module loading
recorded instead of done (no kernel runs), then loads what it recorded with Warp's parallel
`force_load`. The real run that follows finds every module loaded. Anything the record missed still
loads lazily as before, so this changes when kernels compile, never what runs.

The record pass relies on Warp internals (`Module.load` returning no executable makes a launch a
no-op, checked against warp-lang 1.19): where they are missing, or the pass fails, it is skipped.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

import warp as wp

from robolearn.errors import UserError

try:
    from warp._src.context import Module as _Module
except ImportError:  # another Warp layout: compile lazily as Warp does by itself
    _Module = None


def workers() -> int:
    """Compile threads: the cores this process may use (`ROBOLEARN_WARP_COMPILE_WORKERS` overrides;
    0 or 1: Warp's own loading, one module at a time on first launch)."""
    text = os.environ.get("ROBOLEARN_WARP_COMPILE_WORKERS", "").strip()
    if text:
        if not text.isdigit():
            raise UserError(f"ROBOLEARN_WARP_COMPILE_WORKERS={text} is not valid; valid: a whole number >= 0 "
                            "(threads compiling Warp kernels; 0: one module at a time)")  # fmt: skip
        return int(text)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def _recording() -> Iterator[dict]:
    """Inside: a kernel launch records (module, device, block_dim) and runs nothing; solver loops run
    their body once, both branches of a conditional run, occupancy queries answer a placeholder."""
    wanted: dict = {}  # (module id, device alias, block_dim) -> (module, device, block_dim)
    real = (_Module.load, wp.capture_while, wp.capture_if, wp.get_suggested_block_size)

    def load(module, device, block_dim=None, *args, **kwargs):
        device = wp.get_device(device)
        wanted[(id(module), device.alias, block_dim)] = (module, device, block_dim)
        return None

    def capture_while(condition, while_body, stream=None, **kwargs):
        if callable(while_body):
            while_body(**kwargs)

    def capture_if(condition, on_true=None, on_false=None, stream=None, **kwargs):
        for branch in (on_true, on_false):
            if callable(branch):
                branch(**kwargs)

    def suggested_block_size(kernel, device=None):
        if not wp.get_device(device).is_cuda:
            return 1, 1  # what Warp answers on the CPU, loading nothing
        load(kernel.module, device)  # the real query loads the module's default block size
        return 256, 1

    _Module.load, wp.capture_while, wp.capture_if, wp.get_suggested_block_size = (
        load, capture_while, capture_if, suggested_block_size)  # fmt: skip
    try:
        yield wanted
    finally:
        _Module.load, wp.capture_while, wp.capture_if, wp.get_suggested_block_size = real


def compile_ahead(work: Callable[[], None], max_workers: int | None = None) -> int:
    """Load every module `work` would launch, `max_workers` at a time (default: `workers()`);
    returns how many (module, block size) variants were asked for. `work` must tolerate running
    with no kernel executed (its native copies and sorts still run): run it on a Data that is
    reset afterwards. With one worker there is nothing to gain and nothing is done."""
    max_workers = workers() if max_workers is None else max_workers
    if _Module is None or max_workers <= 1:
        return 0
    try:
        with _recording() as wanted:
            work()
    except Exception:  # the record pass is an optimization: the real run compiles what it needs
        return 0
    groups: dict[tuple, list] = {}
    for module, device, block_dim in wanted.values():
        groups.setdefault((device.alias, block_dim), []).append(module)
    for (device, block_dim), modules in groups.items():
        wp.force_load(device=device, modules=modules, block_dim=block_dim, max_workers=max_workers)
    return len(wanted)
