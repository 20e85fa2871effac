"""Small constant tensors that terms index or scale with, made once per device and dtype.

A Python list used as an index (`x[:, [3, 2, 1, 0]]`) or a fresh `torch.tensor(...)` is copied
from host memory on every call: a copy on the rollout path, and not allowed inside a CUDA-graph
capture. `constant` makes the tensor at its first call (a first step or reset runs before any
capture) and hands out the same one afterwards."""

from __future__ import annotations

import torch

_MADE: dict[tuple, torch.Tensor] = {}


def constant(values: tuple, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """torch.tensor(values) on `device` as `dtype`, made once (values: numbers or nested tuples)."""
    key = (values, torch.device(device), dtype)
    if key not in _MADE:
        _MADE[key] = torch.tensor(values, dtype=dtype, device=device)
    return _MADE[key]
