"""glibc's malloc held steady for training's allocation pattern.

A PPO minibatch step allocates and frees a few dozen activation and gradient buffers of a few
MB each. With glibc's defaults, whether those come from fresh mmaps, or from a heap top that is
trimmed back to the kernel after every free, depends on the allocation history (its dynamic
mmap threshold): the same quadruped update then took 0.85 s in one process and 1.1 s in the next,
the difference being page faults on memory the kernel had just taken back (docs/benchmarks.md,
"The update's memory churn"). Fixing the thresholds keeps freed buffers in the heap for the next
minibatch: resident memory stays at its peak instead of going up and down.
ROBOLEARN_MALLOPT=0 leaves malloc as it is; elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import os

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
SETTINGS = ((M_MMAP_THRESHOLD, 32 << 20), (M_TRIM_THRESHOLD, 1 << 30), (M_TOP_PAD, 64 << 20))
"""Allocations under 32 MiB from the heap (glibc's largest threshold), freed memory returned to
the kernel only past 1 GiB at the heap's top, and the heap grown 64 MiB at a time."""


def hold_heap() -> bool:
    """Set SETTINGS through glibc's mallopt; whether they were set."""
    if os.environ.get("ROBOLEARN_MALLOPT", "1") == "0":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # not glibc (musl, macOS; Windows has no CDLL(None))
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return all(mallopt(option, value) == 1 for option, value in SETTINGS)
