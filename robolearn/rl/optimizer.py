"""Adam with its learning rate and step count on the device: an update never reads the host.

The adaptive schedule changes the learning rate with tensor ops on the device, so the rate is a
0-d tensor here, not a Python float. (torch.optim.Adam takes a tensor rate too, but its CPU
implementations read their step counter back to the host, and constructing any torch.optim
optimizer imports torch._dynamo, about a second of start-up.) The math is Adam's (Kingma & Ba,
bias-corrected, no weight decay), written with foreach ops: one kernel per op for all params.
"""

from __future__ import annotations

import torch


class Adam:
    def __init__(self, params, lr: torch.Tensor, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.params = [p for p in params if p.requires_grad]
        self.lr = lr
        """The learning rate, a 0-d tensor on the params' device; change it in place."""
        self.beta1, self.beta2, self.eps = betas[0], betas[1], eps
        device = self.params[0].device
        self.step_count = torch.zeros((), device=device)
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        self.step_count += 1
        torch._foreach_lerp_(self.exp_avg, grads, 1 - self.beta1)
        torch._foreach_mul_(self.exp_avg_sq, self.beta2)
        torch._foreach_addcmul_(self.exp_avg_sq, grads, grads, 1 - self.beta2)
        correction1 = 1 - torch.pow(self.beta1, self.step_count)
        correction2 = 1 - torch.pow(self.beta2, self.step_count)
        # p -= lr / c1 * m / (sqrt(v) / sqrt(c2) + eps)
        denom = torch._foreach_sqrt(self.exp_avg_sq)
        torch._foreach_div_(denom, torch.sqrt(correction2))
        torch._foreach_add_(denom, self.eps)
        updates = torch._foreach_div(self.exp_avg, denom)
        torch._foreach_mul_(updates, -self.lr / correction1)
        torch._foreach_add_(self.params, updates)

    def state_dict(self) -> dict:
        return {"lr": self.lr.clone(), "step": self.step_count.clone(),
                "exp_avg": [t.clone() for t in self.exp_avg], "exp_avg_sq": [t.clone() for t in self.exp_avg_sq]}  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        """In place: tensors captured by a compiled update keep seeing the loaded values."""
        if len(state["exp_avg"]) != len(self.params):
            raise ValueError(f"optimizer state has {len(state['exp_avg'])} parameters, the model {len(self.params)}")
        self.lr.copy_(state["lr"])
        self.step_count.copy_(state["step"])
        for live, saved in zip(self.exp_avg + self.exp_avg_sq, state["exp_avg"] + state["exp_avg_sq"]):
            live.copy_(saved)
