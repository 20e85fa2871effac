"""Data-parallel training under torchrun: which rank this process is, its device, and the few
collectives the learner needs.

`torchrun --nproc_per_node=K -m robolearn train ...` starts K processes with RANK, WORLD_SIZE,
LOCAL_RANK and LOCAL_WORLD_SIZE in their environment. Rank 0 composes the config (Hydra, once)
and sends it to the others (cli.py); every rank then builds its own env.num_envs / WORLD_SIZE
environments on its own device (cuda:<local rank>, or the CPU) with its own seed stream, and the
learners stay identical: parameters are broadcast from rank 0 once, gradients and the KL of
every minibatch are averaged (one all-reduce), and the observation normalizers merge the
statistics of every rank's rollout (rl/ppo.py). Rank 0 logs and writes checkpoints, which hold
every rank's env and RNG state (rl/runner.py).

Tensors travel on NCCL between GPUs and gloo between CPU processes; Python objects (the config,
checkpoint parts) and the per-iteration stop vote always on gloo. Every collective after the
setup has `distributed.timeout_s`: a rank that died or hangs ends the job with one line on every
other rank instead of a hang. (torchrun itself also stops the other ranks when one exits with an
error.)
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from robolearn.errors import UserError, one_line

SETUP_TIMEOUT_S = 1800.0
"""How long a rank waits for the others while starting (rank 0 composing the config, every rank
building its environments and compiling kernels)."""


@dataclass
class Ranks:
    """This process's place in a torchrun job (the defaults: a single process, every collective a no-op)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    timeout_s: float = SETUP_TIMEOUT_S
    _tensors: object | None = field(default=None, repr=False)
    """The learner's group: NCCL on GPUs, gloo on the CPU (connect())."""
    _objects: object | None = field(default=None, repr=False)
    """gloo: Python objects and the stop vote."""

    @property
    def main(self) -> bool:
        """Rank 0: composes the config, logs, writes the run directory and its checkpoints."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    # --- setup ------------------------------------------------------------------------------------------
    def device(self, learner: torch.device) -> torch.device:
        """This rank's device: cuda:<local rank> where the config names cuda (or auto found it), the CPU as is."""
        if not self.distributed or learner.type != "cuda":
            return learner
        if learner.index is not None:
            raise UserError(f"device={learner} puts every rank on one GPU; with torchrun use device=cuda or auto "
                            f"(each rank takes cuda:<its local rank>) or device=cpu")  # fmt: skip
        if self.local_rank >= torch.cuda.device_count():
            raise UserError(more_ranks_than_gpus(self.local_world_size, torch.cuda.device_count()))
        torch.cuda.set_device(self.local_rank)
        return torch.device("cuda", self.local_rank)

    def connect(self, device: torch.device, timeout_s: float) -> None:
        """The groups training uses, with `timeout_s` on every collective (every rank calls this)."""
        if not self.distributed:
            return
        self.timeout_s = float(timeout_s)
        timeout = datetime.timedelta(seconds=self.timeout_s)
        backend = "nccl" if device.type == "cuda" else "gloo"
        self._tensors = self._call("starting the learner's group", dist.new_group, backend=backend, timeout=timeout)
        self._objects = self._call("starting the learner's group", dist.new_group, backend="gloo", timeout=timeout)

    def close(self) -> None:
        """Leave the job's groups (after a lost rank this may fail too: the error already said why)."""
        if self.distributed and dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:
                pass

    # --- collectives (no-ops for a single process) -----------------------------------------------------
    def average_(self, tensor: torch.Tensor) -> torch.Tensor:
        """All-reduce `tensor` in place to its mean over the ranks (every rank gets the same bits)."""
        if self.distributed:
            self._call("averaging gradients", dist.all_reduce, tensor, group=self._tensors)
            tensor.div_(self.world_size)
        return tensor

    def sum_(self, tensor: torch.Tensor) -> torch.Tensor:
        """All-reduce `tensor` in place to its sum over the ranks."""
        if self.distributed:
            self._call("merging statistics", dist.all_reduce, tensor, group=self._tensors)
        return tensor

    def broadcast_(self, tensor: torch.Tensor) -> torch.Tensor:
        """Overwrite `tensor` with rank 0's (in place)."""
        if self.distributed:
            self._call("sending the initial parameters", dist.broadcast, tensor, src=0, group=self._tensors)
        return tensor

    def any(self, flag: bool) -> bool:
        """True on every rank when it is true on any (e.g. a stop signal that reached one rank first)."""
        if not self.distributed:
            return flag
        vote = torch.tensor([1.0 if flag else 0.0])
        self._call("voting on stopping", dist.all_reduce, vote, op=dist.ReduceOp.MAX, group=self._objects)
        return bool(vote.item())

    def gather(self, obj) -> list | None:
        """Every rank's `obj` on rank 0 (a list in rank order), None on the others."""
        if not self.distributed:
            return [obj]
        out = [None] * self.world_size if self.main else None
        self._call("gathering checkpoint parts", dist.gather_object, obj, out, dst=0, group=self._objects)
        return out

    def _call(self, what: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (RuntimeError, dist.DistError) as exc:
            raise UserError(f"lost the other ranks while {what} (a rank stopped, or did not answer "
                            f"within distributed.timeout_s={self.timeout_s:g}): {one_line(exc)[:200]}") from None  # fmt: skip


def more_ranks_than_gpus(ranks_per_node: int, gpus: int) -> str:
    return (f"torchrun started {ranks_per_node} ranks per node but this node has {gpus} GPU{'s' * (gpus != 1)}; "
            f"valid: --nproc_per_node at most {gpus}, or device=cpu")  # fmt: skip


def launched_by_torchrun() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ or "LOCAL_RANK" in os.environ


def _env_int(name: str, default: str | None, least: int) -> int:
    """An integer torchrun sets in the environment; one set by hand that is not is a UserError."""
    text = os.environ.get(name, default)
    try:
        value = int(text) if text is not None else None
    except ValueError:
        value = None
    if value is None or value < least:
        raise UserError(f"{name}={text} in the environment is not valid; valid: an integer >= {least}, as torchrun sets "
                        "it (or unset it to train in one process)")  # fmt: skip
    return value


def join() -> Ranks:
    """This process's Ranks: joins the job's process group when torchrun started more than one
    process, a single process otherwise."""
    world = _env_int("WORLD_SIZE", "1", 1)
    if world <= 1 or not launched_by_torchrun():
        return Ranks()
    ranks = Ranks(_env_int("RANK", None, 0), world, _env_int("LOCAL_RANK", "0", 0),
                  _env_int("LOCAL_WORLD_SIZE", str(world), 1))  # fmt: skip
    ranks._call("starting", dist.init_process_group, backend="gloo",
                timeout=datetime.timedelta(seconds=SETUP_TIMEOUT_S))  # fmt: skip
    return ranks


def send_from_main(ranks: Ranks, message) -> object:
    """Rank 0's `message` on every rank (the default gloo group, with the setup timeout)."""
    if not ranks.distributed:
        return message
    box = [message]
    ranks._call("receiving the config from rank 0", dist.broadcast_object_list, box, src=0)
    return box[0]
