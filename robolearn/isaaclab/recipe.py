"""An Isaac Lab task's rsl_rl runner config as robolearn's training recipe for that task.

The settings both learners share carry over (PPO coefficients, network sizes and activation,
normalization and its schedule, rollout length, iterations); robolearn's command-line overrides still win. Settings
robolearn has no counterpart for are listed, so that nobody assumes they apply.
"""

from __future__ import annotations

ALGO = {
    "learning_rate": "learning_rate", "schedule": "schedule", "desired_kl": "desired_kl", "clip_param": "clip_param",
    "use_clipped_value_loss": "use_clipped_value_loss", "value_loss_coef": "value_loss_coef",
    "entropy_coef": "entropy_coef", "gamma": "gamma", "lam": "lam", "num_learning_epochs": "num_learning_epochs",
    "num_mini_batches": "num_mini_batches", "max_grad_norm": "max_grad_norm",
}  # fmt: skip
"""rsl_rl algorithm key -> robolearn algo key."""
RUNNER = {"num_steps_per_env": "num_steps_per_env", "max_iterations": "max_iterations", "save_interval": "save_interval"}
ACTIVATIONS = ("elu", "relu", "tanh", "selu", "lrelu", "gelu", "silu", "sigmoid")
NETWORKS = ("MLPModel", "RNNModel")
"""rsl_rl model classes robolearn has a counterpart for (an MLP; a GRU/LSTM core before one)."""


def _network(role: str, model: dict, algo: dict, skipped: list[str]) -> None:
    """algo.policy (actor) / algo.critic_network (critic): 'mlp', or the kind of an RNNModel's core,
    which sets robolearn's one core size (rnn_hidden_size, rnn_num_layers) unless the actor's did."""
    key = "policy" if role == "actor" else "critic_network"
    if model.get("class_name", "MLPModel") != "RNNModel":
        algo[key] = "mlp"
        return
    algo[key] = "gru" if str(model.get("rnn_type") or "lstm").lower() == "gru" else "lstm"  # rsl_rl: LSTM unless 'gru'
    for theirs, ours in (("rnn_hidden_dim", "rnn_hidden_size"), ("rnn_num_layers", "rnn_num_layers")):
        if model.get(theirs) is None:
            continue
        if ours in algo and algo[ours] != model[theirs]:  # the actor's core set it
            skipped.append(f"{role}.{theirs}={model[theirs]} (robolearn's actor and critic cores share the actor's size)")
        else:
            algo[ours] = int(model[theirs])


def recipe(agent: dict | None) -> tuple[dict, list[str]]:
    """({"algo": {...}, "runner": {...}}, the rsl_rl settings left out) from an rsl_rl runner
    config as a dict (configclass.to_dict()); ({}, []) without one."""
    if not agent:
        return {}, []
    algo = {ours: agent["algorithm"][theirs] for theirs, ours in ALGO.items() if agent.get("algorithm", {}).get(theirs) is not None}
    runner = {ours: agent[theirs] for theirs, ours in RUNNER.items() if agent.get(theirs) is not None}
    skipped = []
    for role, key in (("actor", "actor_hidden_dims"), ("critic", "critic_hidden_dims")):
        model = agent.get(role) or {}
        if model.get("class_name", "MLPModel") not in NETWORKS:
            skipped.append(f"{role}.class_name={model['class_name']}")
            continue
        _network(role, model, algo, skipped)
        if model.get("hidden_dims"):
            algo[key] = list(model["hidden_dims"])
        if role == "actor":
            activation = model.get("activation")
            if activation in ACTIVATIONS:
                algo["activation"] = activation
            elif activation:
                skipped.append(f"actor.activation={activation}")
            if model.get("obs_normalization") is not None:
                algo["normalize_observations"] = bool(model["obs_normalization"])
                if model["obs_normalization"]:  # rsl_rl merges every step's observations before acting
                    algo["normalizer_schedule"] = "step"
            std = (model.get("distribution_cfg") or {}).get("init_std")
            if std is not None:
                algo["init_noise_std"] = float(std)
    for key in ("rnd_cfg", "symmetry_cfg"):
        if (agent.get("algorithm") or {}).get(key):
            skipped.append(f"algorithm.{key}")
    return {k: v for k, v in (("algo", algo), ("runner", runner)) if v}, skipped
