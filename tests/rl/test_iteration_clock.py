"""The iteration clock splits an iteration into collection and learning by where the work ran:
the host's clock on the CPU, the device's own timestamps on a GPU (where the host only enqueues)."""

import time

import pytest
import torch

from robolearn.rl.iteration_clock import IterationClock


def test_cpu_phases_are_host_time_between_marks():
    clock = IterationClock("cpu")
    clock.mark("start")
    time.sleep(0.05)
    clock.mark("collection_s")
    time.sleep(0.01)
    clock.mark("learning_s")
    phases = clock.phases()
    assert list(phases) == ["collection_s", "learning_s"]
    assert 0.05 <= phases["collection_s"] < 0.5
    assert 0.01 <= phases["learning_s"] < phases["collection_s"]
    clock.mark("start")  # phases() starts the next iteration afresh
    clock.mark("collection_s")
    assert list(clock.phases()) == ["collection_s"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the GPU machine)")
def test_cuda_phases_charge_enqueued_work_to_the_phase_that_enqueued_it():
    """A long 'collection' is only enqueued when the host marks its end; a tiny 'update' follows.
    Host timing would give the update nearly all of the time; the device's events do not."""
    x = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    clock = IterationClock("cuda")
    clock.mark("start")
    for _ in range(200):
        x = torch.tanh(x @ x)
    clock.mark("collection_s")
    y = x.sum()
    clock.mark("learning_s")
    y.item()
    phases = clock.phases()
    assert phases["learning_s"] < 0.1 * phases["collection_s"]
