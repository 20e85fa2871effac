"""The PPO update as one CUDA graph (algo.cuda_graph=true): captured at the first update, replayed
at every later one.

The update is sync-free (ppo.py): the learning rate, Adam's step count, the skip decision of a
non-finite minibatch and every metric live on the device, and the parameters and gradients are
fixed buffers (optimizer.py), so every epoch's shuffles, gathers, forward and backward passes,
clipped Adam steps and normalizer updates can be recorded once. Capturing needs eager warm-up
updates first (autograd and cuBLAS initialize lazily); they change the weights, so the learner's
state is saved before them and put back, in place, before the graph's first replay.
"""

from __future__ import annotations

import torch

WARMUP_UPDATES = 2


class GraphedUpdate:
    def __init__(self, ppo):
        self.ppo = ppo
        device = ppo.learning_rate.device
        saved = learner_state(ppo)
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(WARMUP_UPDATES):
                ppo._update(capturable=True)
        torch.cuda.current_stream(device).wait_stream(side)
        load_learner_state(ppo, saved)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.outputs = ppo._update(capturable=True)

    def __call__(self) -> dict[str, torch.Tensor]:
        self.graph.replay()
        self.ppo.storage.clear()
        return {name: value.clone() for name, value in self.outputs.items()}  # the next replay overwrites them


def learner_state(ppo) -> tuple:
    return ({k: v.clone() for k, v in ppo.ac.state_dict().items()}, ppo.optimizer.state_dict())


def load_learner_state(ppo, state: tuple) -> None:
    weights, optimizer = state
    with torch.no_grad():
        for name, value in ppo.ac.state_dict().items():  # in place: the graph holds these tensors
            value.copy_(weights[name])
    ppo.optimizer.load_state_dict(optimizer)
