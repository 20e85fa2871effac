"""The actor of an rsl_rl checkpoint (model_<N>.pt), rebuilt as a plain torch module.

Two layouts are read, chosen by the checkpoint's keys:
- rsl_rl >= 4 (Isaac Lab 3, mjlab): `actor_state_dict` with `mlp.<i>.weight/bias`,
  `obs_normalizer._mean/_std` and the distribution's parameters; agent.yaml `actor:` gives the
  activation, `obs_normalization` and the distribution class.
- rsl_rl 2.x/3.x (Isaac Lab 2): `model_state_dict` with `actor.<i>.weight/bias` and
  `actor_obs_normalizer._mean/_std` (or `obs_norm_state_dict`); agent.yaml `policy:`.
rsl_rl's normalizer is (x - mean) / (std + eps), eps 1e-2; the deterministic action is the
Gaussian's mean (a heteroscedastic Gaussian's first output slice). Recurrent, convolutional and
Beta-distribution actors are refused in one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from robolearn.errors import UserError

NORMALIZER_EPS = 1e-2
"""rsl_rl's EmpiricalNormalization default eps, added to the standard deviation."""
ACTIVATIONS = {"elu": nn.ELU, "selu": nn.SELU, "relu": nn.ReLU, "crelu": nn.CELU, "lrelu": nn.LeakyReLU,
               "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "softplus": nn.Softplus, "gelu": nn.GELU,
               "swish": nn.SiLU, "mish": nn.Mish, "identity": nn.Identity}  # fmt: skip
GAUSSIANS = ("GaussianDistribution", "HeteroscedasticGaussianDistribution")


class RslNormalizer(nn.Module):
    """rsl_rl's observation normalizer, frozen: (x - mean) / (std + eps). `mean`/`std` are what
    the parity probes read (onnx.probe_observations)."""

    def __init__(self, mean: torch.Tensor, std: torch.Tensor, eps: float = NORMALIZER_EPS):
        super().__init__()
        self.register_buffer("mean", mean.reshape(-1).float().clone())
        self.register_buffer("std", std.reshape(-1).float().clone())
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / (self.std + self.eps)


class IdentityNormalizer(nn.Module):
    """A run trained without a normalizer: the probes spread over mean 0, std 1."""

    def __init__(self, dim: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("std", torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class ImportedPolicy(nn.Module):
    """normalizer -> MLP: obs [B, D] -> actions [B, A], the same interface as
    robolearn.rl.models.InferencePolicy (feed-forward), so export and parity treat it alike."""

    memory = None
    state_names: tuple[str, ...] = ()

    def __init__(self, normalizer: nn.Module, actor: nn.Sequential):
        super().__init__()
        self.normalizer = normalizer
        self.actor = actor

    def initial_state(self, batch: int) -> tuple:
        return ()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.normalizer(obs))

    @property
    def obs_dim(self) -> int:
        return int(self.actor[0].in_features)

    @property
    def num_actions(self) -> int:
        return int(self.actor[-1].out_features)


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    iteration: int | None
    policy: ImportedPolicy
    layout: str
    """'rsl_rl>=4' or 'rsl_rl<4': which of the two key layouts the file has."""


def checkpoints(run_dir: Path) -> list[Path]:
    """model_<N>.pt files in the run directory, oldest iteration first."""
    found = [(int(m.group(1)), p) for p in run_dir.glob("model_*.pt") if (m := re.fullmatch(r"model_(\d+)\.pt", p.name))]
    return [p for _, p in sorted(found)]


def _load(path: Path) -> dict:
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated file, a pickle that needs code: never executed (weights_only)
        raise UserError(f"{path} is not a readable rsl_rl checkpoint ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} does not hold an rsl_rl checkpoint (a {type(data).__name__}, not a dict of state dicts)")
    return data


def _mlp(weights: dict[str, torch.Tensor], prefix: str, activation: str, path: Path) -> nn.Sequential:
    """Linear layers <prefix><i>.weight/bias at even positions, the activation between them."""
    if activation.lower() not in ACTIVATIONS:
        raise UserError(f"activation {activation!r} of the run's actor is not one rsl_rl defines; valid: {', '.join(ACTIVATIONS)}")
    index = sorted(int(m.group(1)) for k in weights if (m := re.fullmatch(re.escape(prefix) + r"(\d+)\.weight", k)))
    if not index:
        raise UserError(f"{path} has no actor layers ({prefix}<i>.weight); not an rsl_rl MLP actor")
    layers: list[nn.Module] = []
    for k, i in enumerate(index):
        w, b = weights[f"{prefix}{i}.weight"], weights.get(f"{prefix}{i}.bias")
        if w.ndim != 2 or i != 2 * k or (layers and w.shape[1] != layers[-2].out_features):
            raise UserError(f"{path}: actor layer {prefix}{i} ({tuple(w.shape)}) does not continue an MLP of Linear + "
                            "activation pairs; only rsl_rl MLP actors are imported")  # fmt: skip
        linear = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
        with torch.no_grad():
            linear.weight.copy_(w)
            if b is not None:
                linear.bias.copy_(b)
        layers += [linear, ACTIVATIONS[activation.lower()]()]
    return nn.Sequential(*layers[:-1])


def _normalizer(weights: dict, prefix: str, wanted: bool, dim: int, path: Path) -> nn.Module:
    mean, std = weights.get(f"{prefix}_mean"), weights.get(f"{prefix}_std")
    if mean is None or std is None:
        if wanted:
            raise UserError(f"{path} has no observation normalizer ({prefix}_mean/_std) but the run's agent.yaml says "
                            "the actor normalizes observations: the checkpoint does not belong to this config (choose "
                            "another checkpoint=, or the run directory it came from)")  # fmt: skip
        return IdentityNormalizer(dim)
    if mean.numel() != dim or std.numel() != dim:
        raise UserError(f"{path}: normalizer has {mean.numel()} values, the actor takes {dim} observations")
    return RslNormalizer(mean, std)


def _head(actor: nn.Sequential, distribution: str | None, path: Path) -> nn.Sequential:
    """The deterministic action: the MLP output, or its first half for a heteroscedastic Gaussian
    (rsl_rl unflattens the last layer to [2, A] and takes slice 0, the mean)."""
    if distribution not in (None, *GAUSSIANS):
        raise UserError(f"the run's actor has a {distribution}; robolearn import reads Gaussian policies ({', '.join(GAUSSIANS)})")
    if distribution == "HeteroscedasticGaussianDistribution":
        last = actor[-1]
        half = last.out_features // 2
        mean = nn.Linear(last.in_features, half, bias=last.bias is not None)
        with torch.no_grad():
            mean.weight.copy_(last.weight[:half])
            if last.bias is not None:
                mean.bias.copy_(last.bias[:half])
        actor[-1] = mean
    return actor


def load_actor(path: Path, agent: dict) -> Checkpoint:
    """The deterministic actor of checkpoint `path` under the run's agent.yaml."""
    data = _load(path)
    iteration = data.get("iter") if isinstance(data.get("iter"), int) else None
    if isinstance(data.get("actor_state_dict"), dict):
        cfg = agent.get("actor") if isinstance(agent.get("actor"), dict) else {}
        kind = cfg.get("class_name", "MLPModel")
        if kind != "MLPModel" or cfg.get("rnn_type") or cfg.get("cnn_cfg"):
            raise UserError(f"the run's actor is a {kind}{' with ' + str(cfg.get('rnn_type')) if cfg.get('rnn_type') else ''}; "
                            "robolearn import reads rsl_rl MLP actors (MLPModel) so far")  # fmt: skip
        weights = data["actor_state_dict"]
        actor = _mlp(weights, "mlp.", str(cfg.get("activation", "elu")), path)
        dist = (cfg.get("distribution_cfg") or {}).get("class_name", "GaussianDistribution")
        normalizer = _normalizer(weights, "obs_normalizer.", bool(cfg.get("obs_normalization")), actor[0].in_features, path)
        return Checkpoint(path, iteration, ImportedPolicy(normalizer, _head(actor, dist, path)), "rsl_rl>=4")
    if isinstance(data.get("model_state_dict"), dict):
        cfg = agent.get("policy") if isinstance(agent.get("policy"), dict) else {}
        kind = cfg.get("class_name", "ActorCritic")
        if kind != "ActorCritic":
            raise UserError(f"the run's policy is a {kind}; robolearn import reads rsl_rl MLP actors (ActorCritic) so far")
        weights = dict(data["model_state_dict"])
        weights.update({f"actor_obs_normalizer.{k.rpartition('.')[2]}": v for k, v in (data.get("obs_norm_state_dict") or {}).items()})
        actor = _mlp(weights, "actor.", str(cfg.get("activation", "elu")), path)
        wanted = bool(cfg.get("actor_obs_normalization", agent.get("empirical_normalization", False)))
        normalizer = _normalizer(weights, "actor_obs_normalizer.", wanted, actor[0].in_features, path)
        return Checkpoint(path, iteration, ImportedPolicy(normalizer, actor), "rsl_rl<4")
    raise UserError(f"{path} has neither actor_state_dict (rsl_rl >= 4) nor model_state_dict (rsl_rl 2-3): not an rsl_rl "
                    "checkpoint")  # fmt: skip
