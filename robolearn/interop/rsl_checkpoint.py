"""The actor of an rsl_rl checkpoint (model_<N>.pt), rebuilt as a plain torch module.

Two layouts are read, chosen by the checkpoint's keys:
- rsl_rl >= 4 (Isaac Lab 3, mjlab): `actor_state_dict` with `mlp.<i>.weight/bias`,
  `obs_normalizer._mean/_std` and the distribution's parameters; agent.yaml `actor:` gives the
  activation, `obs_normalization` and the distribution class.
- rsl_rl 2.x/3.x (Isaac Lab 2): `model_state_dict` with `actor.<i>.weight/bias` and
  `actor_obs_normalizer._mean/_std` (or `obs_norm_state_dict`); agent.yaml `policy:`.
rsl_rl's normalizer is (x - mean) / (std + eps), eps 1e-2; the deterministic action is the
Gaussian's mean (a heteroscedastic Gaussian's first output slice; rsl_rl 3's `state_dependent_std`
is the same [2, A] head). Recurrent actors (rsl_rl >= 4 `RNNModel`: `rnn.rnn.*`; rsl_rl 2-3
`ActorCriticRecurrent`: `memory_a.rnn.*`, GRU or LSTM, any number of layers) run
normalizer -> core -> MLP, as rsl_rl does; their state starts at zero and is reset
to zero when an episode ends, as rsl_rl's `reset(dones)` does. Convolutional and Beta-distribution
actors are refused in one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from robolearn.errors import UserError
from robolearn.rl.models import PolicyGraph
from robolearn.rl.recurrent import KINDS, RecurrentCore

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


class ImportedPolicy(PolicyGraph):
    """normalizer -> [GRU/LSTM core] -> MLP: the graph robolearn exports for its own policies
    (robolearn.rl.models.PolicyGraph), so export and parity treat an imported actor alike. The
    core is robolearn's RecurrentCore, whose parameters are torch's nn.GRU/nn.LSTM ones (rsl_rl's
    RNN wraps those): the state is batch-first [B, layers, hidden] where rsl_rl keeps
    [layers, B, hidden]."""

    @property
    def obs_dim(self) -> int:
        return int(self.normalizer.mean.numel())

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


def _tensor(weights: dict, key: str, ndim: int, path: Path) -> torch.Tensor:
    """weights[key], refused in one line unless it is a tensor of `ndim` dimensions (a damaged or
    hand-edited checkpoint would otherwise fail deep inside torch)."""
    value = weights[key]
    if not isinstance(value, torch.Tensor):
        raise UserError(f"{path}: {key} is {type(value).__name__} {value!r:.40}, not a tensor; valid: a {ndim}-D tensor "
                        "(the checkpoint is damaged or not an rsl_rl actor)")  # fmt: skip
    if value.ndim != ndim:
        raise UserError(f"{path}: {key} has shape {list(value.shape)}; valid: a {ndim}-D tensor (the checkpoint is "
                        "damaged or not an rsl_rl actor)")  # fmt: skip
    return value


def _linear(weights: dict, key: str, path: Path) -> nn.Linear:
    """nn.Linear from <key>.weight [out, in] and <key>.bias [out] (absent: no bias)."""
    w = _tensor(weights, f"{key}.weight", 2, path)
    b = _tensor(weights, f"{key}.bias", 1, path) if f"{key}.bias" in weights else None
    if b is not None and b.shape[0] != w.shape[0]:
        raise UserError(f"{path}: {key}.bias has {b.shape[0]} values but {key}.weight {list(w.shape)} gives "
                        f"{w.shape[0]} outputs; valid: one bias per output (the checkpoint is damaged)")  # fmt: skip
    linear = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
    with torch.no_grad():
        linear.weight.copy_(w)
        if b is not None:
            linear.bias.copy_(b)
    return linear


def _mlp(weights: dict[str, torch.Tensor], prefix: str, activation: str, path: Path) -> nn.Sequential:
    """Linear layers <prefix><i>.weight/bias at even positions, the activation between them."""
    if activation.lower() not in ACTIVATIONS:
        raise UserError(f"activation {activation!r} of the run's actor is not one rsl_rl defines; valid: {', '.join(ACTIVATIONS)}")
    index = sorted(int(m.group(1)) for k in weights if (m := re.fullmatch(re.escape(prefix) + r"(\d+)\.weight", k)))
    if not index:
        raise UserError(f"{path} has no actor layers ({prefix}<i>.weight); not an rsl_rl MLP actor")
    layers: list[nn.Module] = []
    for k, i in enumerate(index):
        w = _tensor(weights, f"{prefix}{i}.weight", 2, path)
        if i != 2 * k or (layers and w.shape[1] != layers[-2].out_features):
            raise UserError(f"{path}: actor layer {prefix}{i} ({list(w.shape)}) does not continue an MLP of Linear + "
                            "activation pairs; only rsl_rl MLP actors are imported")  # fmt: skip
        layers += [_linear(weights, f"{prefix}{i}", path), ACTIVATIONS[activation.lower()]()]
    return nn.Sequential(*layers[:-1])


def _normalizer(weights: dict, prefix: str, wanted: bool, dim: int, path: Path) -> nn.Module:
    mean, std = weights.get(f"{prefix}_mean"), weights.get(f"{prefix}_std")
    if mean is None or std is None:
        if wanted:
            raise UserError(f"{path} has no observation normalizer ({prefix}_mean/_std) but the run's agent.yaml says "
                            "the actor normalizes observations: the checkpoint does not belong to this config (choose "
                            "another checkpoint=, or the run directory it came from)")  # fmt: skip
        return IdentityNormalizer(dim)
    for key, value in ((f"{prefix}_mean", mean), (f"{prefix}_std", std)):
        if not isinstance(value, torch.Tensor):
            raise UserError(f"{path}: {key} is {type(value).__name__} {value!r:.40}, not a tensor; valid: the normalizer's "
                            f"statistics, {dim} values")  # fmt: skip
    if mean.numel() != dim or std.numel() != dim:
        raise UserError(f"{path}: normalizer has {mean.numel()} values, the actor takes {dim} observations")
    if not (torch.isfinite(mean).all() and torch.isfinite(std).all() and (std >= 0).all()):
        raise UserError(f"{path}: the observation normalizer's statistics ({prefix}_mean, _std) hold nan, inf or a negative "
                        "std; valid: finite means and stds >= 0 (the checkpoint is damaged)")  # fmt: skip
    return RslNormalizer(mean, std)


def _head(actor: nn.Sequential, distribution: str | None, path: Path) -> nn.Sequential:
    """The deterministic action: the MLP output, or its first half for a heteroscedastic Gaussian
    (rsl_rl unflattens the last layer to [2, A] and takes slice 0, the mean)."""
    if distribution not in (None, *GAUSSIANS):
        raise UserError(f"the run's actor has a {distribution}; robolearn import reads Gaussian policies ({', '.join(GAUSSIANS)})")
    if distribution == "HeteroscedasticGaussianDistribution":
        last = actor[-1]
        if last.out_features % 2:
            raise UserError(f"{path}: the actor's last layer has {last.out_features} outputs, but a {distribution} gives "
                            "2 x actions (a mean and a std per action): the checkpoint does not belong to this config")  # fmt: skip
        half = last.out_features // 2
        mean = nn.Linear(last.in_features, half, bias=last.bias is not None)
        with torch.no_grad():
            mean.weight.copy_(last.weight[:half])
            if last.bias is not None:
                mean.bias.copy_(last.bias[:half])
        actor[-1] = mean
    return actor


def _core(weights: dict[str, torch.Tensor], prefix: str, cfg: dict, path: Path) -> RecurrentCore:
    """The recurrent core whose torch nn.GRU/nn.LSTM parameters are <prefix>weight_ih_l<k>, ...; its
    kind follows from the gate rows (3 x hidden: GRU, 4 x hidden: LSTM) and must agree with the
    config's rnn_type (rsl_rl builds a GRU for 'gru' and an LSTM for anything else), its layers and
    units with the config's rnn_num_layers and rnn_hidden_dim where it gives them."""
    layers = _core_layers(weights, prefix, path)
    if not layers or f"{prefix}weight_hh_l0" not in weights:
        raise UserError(f"{path} has no recurrent layers ({prefix}weight_ih_l0, weight_hh_l0) although the run's config "
                        "describes a recurrent actor: the checkpoint does not belong to this config")  # fmt: skip
    w_ih, w_hh = _tensor(weights, f"{prefix}weight_ih_l0", 2, path), _tensor(weights, f"{prefix}weight_hh_l0", 2, path)
    hidden = int(w_hh.shape[1])
    gates = int(w_ih.shape[0]) // max(hidden, 1)
    kind = {3: "gru", 4: "lstm"}.get(gates)
    rnn_type = cfg.get("rnn_type")
    named = ("gru" if str(rnn_type).lower() == "gru" else "lstm") if rnn_type else kind  # what rsl_rl builds for it
    if kind is None or named != kind:
        raise UserError(f"{path}: the recurrent layer has {w_ih.shape[0]} gate rows for {hidden} "
                        f"units, which is {'no GRU or LSTM' if kind is None else 'a ' + kind.upper()}, but the run's config "
                        f"says rnn_type={cfg.get('rnn_type')}; robolearn import reads {' and '.join(k.upper() for k in KINDS)} actors")  # fmt: skip
    _check_core_size(cfg, layers, hidden, path)
    core = RecurrentCore(kind, int(w_ih.shape[1]), hidden, layers)
    names = [f"{n}_l{k}" for k in range(layers) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    missing = [n for n in names if f"{prefix}{n}" not in weights]
    if missing:
        raise UserError(f"{path} lacks {prefix}{missing[0]}: only recurrent layers with biases (torch's default) are imported")
    state = {n: _tensor(weights, f"{prefix}{n}", 2 if n.startswith("weight") else 1, path) for n in names}
    try:
        core.load_state_dict(state)
    except RuntimeError as exc:
        raise UserError(f"{path}: the recurrent layers do not fit one {kind.upper()} of {layers} x {hidden} units "
                        f"({' '.join(str(exc).split())[:160]})") from None  # fmt: skip
    return core


def _core_layers(weights: dict, prefix: str, path: Path) -> int:
    """How many layers the core's <prefix><param>_l<k> keys describe. A gap (l0 and l2 but no l1)
    or a key of another kind of RNN (_reverse: bidirectional, weight_hr: projected) is refused:
    read up to the gap, the core would quietly lose its later layers."""
    found = {}
    for key in weights:
        if key.startswith(prefix):
            m = re.fullmatch(r"(weight|bias)_(ih|hh)_l(\d+)", key[len(prefix):])
            if m is None:
                raise UserError(f"{path} holds {key}, which rsl_rl's GRU/LSTM core has no place for (a bidirectional or "
                                "projected RNN?); robolearn import reads single-direction GRU and LSTM actors")  # fmt: skip
            found.setdefault(int(m.group(3)), key)
    gaps = [k for k in range(max(found, default=-1) + 1) if k not in found]
    if gaps:
        raise UserError(f"{path} has recurrent layer {max(found)} ({found[max(found)]}) but no layer {gaps[0]} "
                        f"({prefix}weight_ih_l{gaps[0]}): the checkpoint is damaged or not an rsl_rl actor")  # fmt: skip
    return len(found)


def _check_core_size(cfg: dict, layers: int, hidden: int, path: Path) -> None:
    """agent.yaml's rnn_num_layers and rnn_hidden_dim, where given, must be the weights' own."""
    for key, have in (("rnn_num_layers", layers), ("rnn_hidden_dim", hidden)):
        want = cfg.get(key)
        if want is not None and want != have:
            raise UserError(f"the run's agent.yaml says {key}: {want!r} but {path.name} holds a core of {layers} x {hidden} "
                            f"units: the checkpoint does not belong to this config (choose another checkpoint=, or the run "
                            "directory it came from)")  # fmt: skip


def _policy(weights: dict, cfg: dict, prefixes: tuple[str, str, str], recurrent: bool, wanted: bool, path: Path,
            distribution: str | None = None) -> ImportedPolicy:  # fmt: skip
    """normalizer -> [core] -> MLP from `weights`, whose (normalizer, core, MLP) keys start with `prefixes`."""
    norm_prefix, core_prefix, mlp_prefix = prefixes
    stray = next((k for k in weights if k.startswith(core_prefix)), None)
    if not recurrent and stray is not None:
        raise UserError(f"{path} holds a recurrent core ({stray}, ...) but the run's agent.yaml says class_name: "
                        f"{cfg.get('class_name', 'MLPModel')}, a feed-forward actor: the checkpoint does not belong to "
                        "this config (choose another checkpoint=, or the run directory it came from)")  # fmt: skip
    core = _core(weights, core_prefix, cfg, path) if recurrent else None
    actor = _head(_mlp(weights, mlp_prefix, str(cfg.get("activation", "elu")), path), distribution, path)
    if core is not None and actor[0].in_features != core.hidden:
        raise UserError(f"{path}: the actor's MLP takes {actor[0].in_features} inputs but its recurrent core gives {core.hidden}")
    obs_dim = actor[0].in_features if core is None else int(core.weight_ih_l0.shape[1])
    return ImportedPolicy(_normalizer(weights, norm_prefix, wanted, obs_dim, path), core, actor)


def load_actor(path: Path, agent: dict) -> Checkpoint:
    """The deterministic actor of checkpoint `path` under the run's agent.yaml."""
    data = _load(path)
    iteration = data.get("iter") if isinstance(data.get("iter"), int) else None
    if isinstance(data.get("actor_state_dict"), dict):
        cfg = agent.get("actor") if isinstance(agent.get("actor"), dict) else {}
        kind = cfg.get("class_name", "MLPModel")
        if kind not in ("MLPModel", "RNNModel") or cfg.get("cnn_cfg") or (kind == "MLPModel" and cfg.get("rnn_type")):
            extra = " with cnn_cfg" if cfg.get("cnn_cfg") and kind != "CNNModel" else ""
            extra += f" with rnn_type {cfg.get('rnn_type')}" if kind == "MLPModel" and cfg.get("rnn_type") else ""
            raise UserError(f"the run's actor is a {kind}{extra}; robolearn import reads rsl_rl MLP and recurrent actors "
                            "(MLPModel, RNNModel)")  # fmt: skip
        dist = (cfg.get("distribution_cfg") or {}).get("class_name", "GaussianDistribution")
        policy = _policy(data["actor_state_dict"], cfg, ("obs_normalizer.", "rnn.rnn.", "mlp."), kind == "RNNModel",
                         bool(cfg.get("obs_normalization")), path, dist)  # fmt: skip
        return Checkpoint(path, iteration, policy, "rsl_rl>=4")
    if isinstance(data.get("model_state_dict"), dict):
        cfg = agent.get("policy") if isinstance(agent.get("policy"), dict) else {}
        kind = cfg.get("class_name", "ActorCritic")
        if kind not in ("ActorCritic", "ActorCriticRecurrent"):
            raise UserError(f"the run's policy is a {kind}; robolearn import reads rsl_rl MLP and recurrent actors "
                            "(ActorCritic, ActorCriticRecurrent)")  # fmt: skip
        weights = dict(data["model_state_dict"])
        weights.update({f"actor_obs_normalizer.{k.rpartition('.')[2]}": v for k, v in (data.get("obs_norm_state_dict") or {}).items()})
        wanted = bool(cfg.get("actor_obs_normalization", agent.get("empirical_normalization", False)))
        # rsl_rl 3's state_dependent_std: the actor's last layer gives [2, A] (mean, std), like rsl_rl 4's heteroscedastic head
        dist = "HeteroscedasticGaussianDistribution" if cfg.get("state_dependent_std") else None
        policy = _policy(weights, cfg, ("actor_obs_normalizer.", "memory_a.rnn.", "actor."), kind == "ActorCriticRecurrent",
                         wanted, path, dist)  # fmt: skip
        return Checkpoint(path, iteration, policy, "rsl_rl<4")
    raise UserError(f"{path} has neither actor_state_dict (rsl_rl >= 4) nor model_state_dict (rsl_rl 2-3): not an rsl_rl "
                    "checkpoint")  # fmt: skip
