"""Test stand-in for `cuda.bindings.runtime` (cuda-python's runtime API): every call returns
(error, *values) as the real one does. Device memory is host memory in numpy arrays, and every
device pointer a copy touches is checked against the live allocations."""

from __future__ import annotations

import ctypes
import enum
import itertools
from dataclasses import dataclass

import numpy as np


class cudaError_t(enum.IntEnum):
    cudaSuccess = 0
    cudaErrorInvalidValue = 1
    cudaErrorMemoryAllocation = 2
    cudaErrorInvalidResourceHandle = 400


class cudaMemcpyKind(enum.IntEnum):
    cudaMemcpyHostToHost = 0
    cudaMemcpyHostToDevice = 1
    cudaMemcpyDeviceToHost = 2
    cudaMemcpyDeviceToDevice = 3


@dataclass
class cudaDeviceProp:
    name: bytes = b"Fake GPU (ONNX Runtime)"
    major: int = 8
    minor: int = 7


class cudaStream_t:
    def __init__(self, handle: int):
        self._handle = handle

    def __int__(self) -> int:
        return self._handle


_ALLOCATIONS: dict[int, np.ndarray] = {}
"""Live device allocations by address."""
_STREAMS: set[int] = set()
_STREAM_IDS = itertools.count(1001)
_OK = cudaError_t.cudaSuccess


def device_view(ptr: int, nbytes: int) -> np.ndarray | None:
    """The bytes [ptr, ptr + nbytes) of one live allocation, or None (unallocated, freed, or past
    its end). The fake tensorrt reads and writes engine tensors through this."""
    for start, block in _ALLOCATIONS.items():
        if start <= ptr and ptr + nbytes <= start + block.nbytes:
            return block[ptr - start : ptr - start + nbytes]
    return None


def live_allocations() -> int:
    return len(_ALLOCATIONS)


def cudaGetDeviceCount():
    return (_OK, 1)


def cudaGetDevice():
    return (_OK, 0)


def cudaGetDeviceProperties(device: int):
    if device != 0:
        return (cudaError_t.cudaErrorInvalidValue, None)
    return (_OK, cudaDeviceProp())


def cudaMalloc(nbytes: int):
    if nbytes <= 0:
        return (cudaError_t.cudaErrorInvalidValue, 0)
    block = np.zeros(nbytes, np.uint8)
    _ALLOCATIONS[block.ctypes.data] = block
    return (_OK, block.ctypes.data)


def cudaFree(ptr: int):
    if ptr == 0:
        return (_OK,)
    if _ALLOCATIONS.pop(int(ptr), None) is None:
        return (cudaError_t.cudaErrorInvalidValue,)
    return (_OK,)


def cudaStreamCreate():
    stream = cudaStream_t(next(_STREAM_IDS))
    _STREAMS.add(int(stream))
    return (_OK, stream)


def cudaStreamSynchronize(stream):
    return (_OK,) if int(stream) in _STREAMS else (cudaError_t.cudaErrorInvalidResourceHandle,)


def cudaStreamDestroy(stream):
    if int(stream) not in _STREAMS:
        return (cudaError_t.cudaErrorInvalidResourceHandle,)
    _STREAMS.discard(int(stream))
    return (_OK,)


def cudaMemcpyAsync(dst: int, src: int, count: int, kind, stream):
    """The copy happens at once (the fake has no asynchrony); the device side must lie inside a
    live allocation."""
    if int(stream) not in _STREAMS:
        return (cudaError_t.cudaErrorInvalidResourceHandle,)
    kind = cudaMemcpyKind(kind)
    device_sides = {cudaMemcpyKind.cudaMemcpyHostToDevice: [dst], cudaMemcpyKind.cudaMemcpyDeviceToHost: [src],
                    cudaMemcpyKind.cudaMemcpyDeviceToDevice: [dst, src]}.get(kind, [])  # fmt: skip
    if any(device_view(int(p), count) is None for p in device_sides):
        return (cudaError_t.cudaErrorInvalidValue,)
    ctypes.memmove(int(dst), int(src), count)
    return (_OK,)
