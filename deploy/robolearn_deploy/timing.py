"""Batch-1 latency of a callable: what export reports per artifact and the benchmarks record."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def latency_ms(fn: Callable[[], object], repeats: int = 1000, warmup: int = 100) -> dict[str, float]:
    """Median and 99th percentile of `fn()` in milliseconds, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    samples = np.empty(repeats)
    clock = time.perf_counter
    for i in range(repeats):
        start = clock()
        fn()
        samples[i] = clock() - start
    samples *= 1e3
    return {"median": float(np.median(samples)), "p99": float(np.percentile(samples, 99))}
