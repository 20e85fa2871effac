"""Host memory: refuse in one line, before allocating, what would not fit (the kernel's OOM killer
would otherwise end the run with no message at all).

    require(need, "env.num_envs=4096 with per-environment model parameters", "lower env.num_envs")
    -> UserError: "env.num_envs=4096 with per-environment model parameters needs ~23.5 GiB of
       memory, 18.2 GiB free: lower env.num_envs"

GPU memory is handled where it is allocated (app.fits_in_memory): CUDA reports its own failures.
"""

from __future__ import annotations

import os

import mujoco

from robolearn.errors import UserError

HEADROOM = 0.9
"""Share of the free memory a single allocation may take (the rest: Python, torch, the OS)."""


def available_bytes() -> int:
    """Memory the kernel can give without swapping (MemAvailable), or free pages where there is no
    /proc/meminfo."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def gib(n: float) -> str:
    """A size in the unit that suits it: 23.5 GiB, 6 MiB, 34 kB."""
    if n >= 2**28:
        return f"{n / 2**30:.1f} GiB"
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} kB"


class NotEnoughMemory(UserError):
    """require()'s refusal, with the numbers, for a caller whose user set the size another way (eval's
    episodes= is its env.num_envs)."""

    def __init__(self, need: int, free: int, what: str, fix: str):
        self.need, self.free = need, free
        super().__init__(f"{what} needs ~{gib(need)} of memory, {gib(free)} free: {fix}")


def require(need: int, what: str, fix: str) -> None:
    """Raise NotEnoughMemory (a UserError) if `need` bytes would not fit in the free host memory."""
    free = available_bytes()
    if need > HEADROOM * free:
        raise NotEnoughMemory(need, free, what, fix)


def env_bytes(model: mujoco.MjModel, num_envs: int) -> int:
    """An estimate of what a BatchedEnv of `num_envs` takes on the host: the physics state rows
    (float64, with one step's outputs) and the env's own float32 tensors, which scale with the
    model's sizes. Calibrated with the process's resident memory at 50,000 environments
    (cart-pole ~0.9 kB and the quadruped ~8.6 kB per environment; the estimate is 1.3 and 10.5)."""
    row = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS) + model.nsensordata
    per_env = 8 * 3 * row + 4 * 32 * (model.nq + model.nv + model.nsensordata + model.nu) + 256
    return num_envs * per_env


def mlp_bytes(networks: list[list[int]], batch: int) -> int:
    """What fully connected networks, each given by its layer sizes (input, hidden..., output),
    take in training on minibatches of `batch` samples: float32 weights, their gradients and Adam's
    two moments (16 bytes a parameter), and each layer's outputs kept for the backward pass with
    their gradients (8 bytes a sample and unit)."""
    params = sum(a * b + b for sizes in networks for a, b in zip(sizes, sizes[1:]))
    units = sum(sum(sizes[1:]) for sizes in networks)
    return 16 * params + 8 * batch * units


def rnn_bytes(kind: str, inputs: int, hidden: int, layers: int) -> int:
    """A recurrent core's weights, gradients and Adam's moments (16 bytes a parameter): per layer,
    one input and one recurrent matrix and two biases per gate (a GRU has 3 gates, an LSTM 4)."""
    gates = {"gru": 3, "lstm": 4}.get(kind, 0)
    params = sum(gates * (n * hidden + hidden * hidden + 2 * hidden) for n in [inputs] + [hidden] * (layers - 1))
    return 16 * params
