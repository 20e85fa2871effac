"""Adam over one flat parameter buffer, with its learning rate and step count on the device.

An update never reads the host: the adaptive schedule changes the learning rate with tensor ops,
so the rate is a 0-d device tensor here, not a Python float. (torch.optim.Adam takes a tensor
rate too, but its CPU implementations read their step counter back to the host, and building
any torch.optim optimizer imports torch._dynamo, about a second of start-up.)

The parameters of each group (actor, critic) are re-pointed into consecutive slices of one
buffer, and their gradients into slices of another, so that zeroing, per-group gradient
clipping and the Adam step are a handful of ops on two tensors instead of a dozen ops per
parameter; for the small networks of robot policies that per-op cost is most of the update.
The math is Adam's (Kingma & Ba, bias-corrected, no weight decay).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


class Adam:
    def __init__(self, groups: Sequence[Sequence[torch.nn.Parameter]], lr: torch.Tensor,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):  # fmt: skip
        params = [p for group in groups for p in group]
        if len({id(p) for p in params}) != len(params):
            raise ValueError("a parameter is listed twice in the optimizer's groups")
        first = params[0]
        total = sum(p.numel() for p in params)
        self.flat = torch.zeros(total, device=first.device, dtype=first.dtype)
        """Every parameter's values, one slice each: the parameters are views into it."""
        self.flat_grad = torch.zeros_like(self.flat)
        """Every parameter's gradient (autograd accumulates into these views)."""
        self.group_slices: list[slice] = []
        offset = 0
        for group in groups:
            start = offset
            for p in group:
                n = p.numel()
                self.flat[offset : offset + n].copy_(p.detach().reshape(-1))
                p.data = self.flat[offset : offset + n].view_as(p)
                p.grad = self.flat_grad[offset : offset + n].view_as(p)
                offset += n
            self.group_slices.append(slice(start, offset))
        self.params = params
        self.lr = lr
        """The learning rate, a 0-d tensor on the params' device; change it in place."""
        self.beta1, self.beta2, self.eps = betas[0], betas[1], eps
        self.step_count = torch.zeros((), device=first.device)
        self.exp_avg = torch.zeros_like(self.flat)
        self.exp_avg_sq = torch.zeros_like(self.flat)

    def group_grads(self) -> list[torch.Tensor]:
        """Each group's gradients as one flat view (for per-network clipping, in place)."""
        return [self.flat_grad[s] for s in self.group_slices]

    def zero_grad(self) -> None:
        self.flat_grad.zero_()

    @torch.no_grad()
    def step(self, enabled: torch.Tensor | None = None) -> None:
        """One Adam step. With `enabled` (a 0-d bool device tensor), False leaves the parameters,
        moments and step count exactly as they were, decided on the device (no host read): the
        gradient is zeroed and every increment is scaled by 0."""
        b1, b2 = self.beta1, self.beta2
        grad = self.flat_grad
        on = 1.0
        if enabled is not None:
            grad.masked_fill_(~enabled, 0.0)  # a non-finite gradient must not reach the moments
            on = enabled.to(self.flat.dtype)
        self.step_count += on
        self.exp_avg.lerp_(grad, (1 - b1) * on)
        self.exp_avg_sq.mul_(1 - (1 - b2) * on).addcmul_(grad, grad, value=1 - b2)  # grad is 0 when off
        step = self.step_count.clamp(min=1)  # a skipped first step: nothing to correct, no 0/0
        correction1 = 1 - torch.pow(b1, step)
        correction2 = 1 - torch.pow(b2, step)
        # p -= lr / c1 * m / (sqrt(v) / sqrt(c2) + eps)
        denom = (self.exp_avg_sq.sqrt() / correction2.sqrt()).add_(self.eps)
        self.flat.sub_(self.exp_avg / denom * (self.lr * on / correction1))

    def state_dict(self) -> dict:
        return {"lr": self.lr.clone(), "step": self.step_count.clone(), "exp_avg": self.exp_avg.clone(),
                "exp_avg_sq": self.exp_avg_sq.clone()}  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        """In place: tensors captured by a compiled update keep seeing the loaded values."""
        if state["exp_avg"].shape != self.exp_avg.shape:
            raise ValueError(f"optimizer state holds {state['exp_avg'].numel()} values, the model has {self.flat.numel()}")
        self.lr.copy_(state["lr"])
        self.step_count.copy_(state["step"])
        self.exp_avg.copy_(state["exp_avg"])
        self.exp_avg_sq.copy_(state["exp_avg_sq"])
