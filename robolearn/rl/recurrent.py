"""Recurrent cores (GRU, LSTM) stepped one control step at a time.

The equations and parameter shapes are PyTorch's nn.GRU / nn.LSTM (tests/rl/test_recurrent.py
compares them), written as linear layers and pointwise ops: the exported ONNX graph holds only
MatMul/Add/Sigmoid/Tanh, which every runtime and TensorRT precision handles, and what runs in
training is exactly what is exported. The state is batch-first, [B, layers, hidden], one tensor
for a GRU (h) and two for an LSTM (h, c); the state a new episode starts from is zero.

    GRU:  r = s(W_ir x + b_ir + W_hr h + b_hr)     LSTM: i, f, g, o = s, s, tanh, s of
          z = s(W_iz x + b_iz + W_hz h + b_hz)           (W_i* x + b_i* + W_h* h + b_h*)
          n = tanh(W_in x + b_in + r (W_hn h + b_hn))    c' = f c + i g
          h' = (1 - z) n + z h                            h' = o tanh(c')
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from robolearn.errors import UserError

KINDS = ("gru", "lstm")
STATE_NAMES = {"gru": ("h",), "lstm": ("h", "c")}
_GATES = {"gru": 3, "lstm": 4}

State = tuple[torch.Tensor, ...]
"""A recurrent state: one [B, layers, hidden] tensor per name in STATE_NAMES (empty: no memory)."""


class RecurrentCore(nn.Module):
    """A `kind` ('gru' or 'lstm') of `layers` stacked cells of `hidden` units each, over inputs of
    size `inputs`. Parameters weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} as in
    PyTorch, initialized as PyTorch does (uniform in +-1/sqrt(hidden))."""

    def __init__(self, kind: str, inputs: int, hidden: int, layers: int = 1):
        if kind not in KINDS:
            raise UserError(f"unknown recurrent kind '{kind}'; valid: {', '.join(KINDS)}")
        if hidden < 1 or layers < 1:
            raise UserError(f"a {kind} needs hidden size and layers >= 1, got {hidden} and {layers}")
        super().__init__()
        self.kind, self.hidden, self.layers = kind, hidden, layers
        gates = _GATES[kind] * hidden
        bound = 1.0 / math.sqrt(hidden)
        for k in range(layers):
            size = inputs if k == 0 else hidden
            for name, shape in ((f"weight_ih_l{k}", (gates, size)), (f"weight_hh_l{k}", (gates, hidden)),
                                (f"bias_ih_l{k}", (gates,)), (f"bias_hh_l{k}", (gates,))):  # fmt: skip
                self.register_parameter(name, nn.Parameter(torch.empty(shape).uniform_(-bound, bound)))

    @property
    def state_names(self) -> tuple[str, ...]:
        return STATE_NAMES[self.kind]

    def initial_state(self, batch: int, device: torch.device | str = "cpu") -> State:
        """The state an episode starts from: zeros, one [batch, layers, hidden] tensor per name."""
        return tuple(torch.zeros(batch, self.layers, self.hidden, device=device) for _ in self.state_names)

    def first_layer(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(weight, bias) applied to the input: what a normalizer change is folded into."""
        return self.weight_ih_l0, self.bias_ih_l0

    def _params(self, k: int) -> tuple[torch.Tensor, ...]:
        return tuple(getattr(self, f"{n}_l{k}") for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def forward(self, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """One step: input [B, inputs] and state -> (output [B, hidden], next state)."""
        h_all = state[0]
        hs, cs = [], []
        for k in range(self.layers):
            w_ih, w_hh, b_ih, b_hh = self._params(k)
            h = h_all[:, k]
            gx, gh = F.linear(x, w_ih, b_ih), F.linear(h, w_hh, b_hh)
            if self.kind == "gru":
                xr, xz, xn = gx.chunk(3, dim=-1)
                hr, hz, hn = gh.chunk(3, dim=-1)
                r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
                n = torch.tanh(xn + r * hn)
                x = n + z * (h - n)  # (1 - z) n + z h
            else:
                i, f, g, o = (gx + gh).chunk(4, dim=-1)
                c = torch.sigmoid(f) * state[1][:, k] + torch.sigmoid(i) * torch.tanh(g)
                x = torch.sigmoid(o) * torch.tanh(c)
                cs.append(c)
            hs.append(x)
        next_state = (torch.stack(hs, dim=1),) if self.kind == "gru" else (torch.stack(hs, dim=1), torch.stack(cs, dim=1))
        return x, next_state


def reset_where(state: State, done: torch.Tensor) -> None:
    """Zero, in place, the states of the environments whose episode ended (done [B] bool)."""
    keep = (~done).view(-1, 1, 1)
    for s in state:
        s.mul_(keep)
