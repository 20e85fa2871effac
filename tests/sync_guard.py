"""A guard that fails a test when code reads a tensor's value back to the host.

On a GPU each such read (`.item()`, `float(t)`, `bool(t)`, `.tolist()`, `.cpu()`, boolean-mask
indexing, ...) stalls the host until the device catches up. On the CPU nothing stalls, so the
guard catches the same calls where they happen: every one of them dispatches an op that produces
a host value (`aten._local_scalar_dense`) or a data-dependent shape (`aten.nonzero`), or goes
through a Tensor method that copies to host memory. With CUDA, `torch.cuda.set_sync_debug_mode`
is turned on as well.
"""

from __future__ import annotations

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten
HOST_READS = {aten._local_scalar_dense.default, aten.nonzero.default, aten.masked_select.default, aten.equal.default,
              aten.is_nonzero.default}  # fmt: skip
HOST_METHODS = ("item", "tolist", "numpy", "cpu", "__float__", "__int__", "__bool__", "__index__", "__array__")


class HostSyncError(AssertionError):
    pass


MASK_INDEXING = {aten.index.Tensor, aten.index_put.default, aten.index_put_.default}


def _bool_index(args) -> bool:
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in indices)


class _NoHostReads(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in HOST_READS:
            raise HostSyncError(f"reads a device value back to the host: {func}")
        if func in MASK_INDEXING and _bool_index(args):
            raise HostSyncError(f"indexes with a boolean mask (its size is read on the host): {func}")
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def no_host_sync():
    saved = {name: getattr(torch.Tensor, name) for name in HOST_METHODS if hasattr(torch.Tensor, name)}

    def forbid(name):
        def method(self, *args, **kwargs):
            raise HostSyncError(f"calls Tensor.{name}() on a {self.device} tensor")

        return method

    for name in saved:
        setattr(torch.Tensor, name, forbid(name))
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_sync_debug_mode("error")
    try:
        with _NoHostReads():
            yield
    finally:
        for name, method in saved.items():
            setattr(torch.Tensor, name, method)
        if cuda:
            torch.cuda.set_sync_debug_mode("default")
