"""robolearn import of recurrent rsl_rl actors (GRU/LSTM): a real mjlab Go1 run with a GRU actor
(tests/fixtures/interop/mjlab_go1_gru_run, made by scripts/interop) becomes a recurrent bundle
whose runtime acts as rsl_rl did over whole episodes; hand-built checkpoints of both rsl_rl
layouts are checked against torch's own nn.GRU / nn.LSTM, which is what rsl_rl's RNN wraps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from robolearn.errors import UserError
from robolearn.interop.importer import import_run
from robolearn.interop.rsl_checkpoint import load_actor
from robolearn_deploy import Policy
from robolearn_deploy.bundle import Bundle

FIXTURES = Path(__file__).parent.parent / "fixtures" / "interop"
GRU_RUN, GRU_REF = FIXTURES / "mjlab_go1_gru_run", FIXTURES / "mjlab_go1_gru_reference.npz"
ISAAC_RUN, ISAAC_REF = FIXTURES / "isaaclab_quadruped_run", FIXTURES / "isaaclab_quadruped_reference.npz"
QUADRUPED = Path(__file__).resolve().parents[2] / "docs" / "reference" / "quadruped_flat_cpu" / "bundle" / "quadruped.xml"


def test_an_mjlab_gru_run_becomes_a_recurrent_bundle_that_acts_as_rsl_rl_over_episodes(tmp_path):
    ref = np.load(GRU_REF)  # obs [T, 4, D], actions [T, 4, A], dones [T, 4]: rsl_rl's policy in mjlab's env
    assert ref["dones"].any(), "the recording should cross an episode boundary"
    out = import_run(GRU_RUN, out=tmp_path / "b", obs=GRU_REF, progress=False)
    # mjlab's own recurrent ONNX (state [layers, 1, hidden]) against ours, states fed back on both sides
    assert out.run_onnx_max_abs_diff is not None and out.run_onnx_max_abs_diff < 1e-5
    b = Bundle.load(out.path)
    assert b.meta["bundle_format"] == 2
    assert b.meta["policy_state"] == [{"name": "h", "input": "h_in", "output": "h_out", "shape": [1, 64],
                                       "dtype": "float32", "reset": 0.0}]  # fmt: skip
    assert b.meta["artifacts"][0]["parity"]["sequence_max_abs_diff"] < 1e-4
    # the deploy runtime, one environment at a time as on a robot: state kept inside the Policy and
    # reset where rsl_rl's runner reset it (after a step that ended the episode)
    for env in range(ref["obs"].shape[1]):
        policy = Policy(out.path)
        for t in range(ref["obs"].shape[0]):
            action = policy.act(ref["obs"][t, env].astype(np.float32))
            np.testing.assert_allclose(action, ref["actions"][t, env], atol=2e-5, err_msg=f"env {env} step {t}")
            if ref["dones"][t, env]:
                policy.reset()


def test_the_state_matters_to_the_recorded_actions():
    """The check above would pass with a policy that ignores its state only if the recording could
    not tell: without the resets, or from a stale state, the actions differ."""
    ref = np.load(GRU_REF)
    ck = load_actor(GRU_RUN / "model_5.pt", _agent(GRU_RUN))
    obs = torch.from_numpy(ref["obs"]).float()
    with torch.no_grad():
        state = ck.policy.initial_state(obs.shape[1])
        stale = []
        for x in obs:  # never reset
            action, *state = ck.policy(x, *state)
            stale.append(action)
    after_reset = ref["dones"].cumsum(0) > 0
    diff = (torch.stack(stale) - torch.from_numpy(ref["actions"])).abs().amax(-1).numpy()
    assert diff[~after_reset].max() < 2e-5 and diff[after_reset].max() > 1e-3


def _agent(run: Path) -> dict:
    from robolearn.interop.run_yaml import load_run_yaml

    return load_run_yaml(run / "params" / "agent.yaml")


def _rsl_rl_steps(rnn: torch.nn.RNNBase, head: torch.nn.Module, mean, std, obs: torch.Tensor, dones: torch.Tensor):
    """What rsl_rl's recurrent actor does, written with torch's modules: normalize, one RNN step with
    the state [layers, B, hidden], the MLP head; zero the state where an episode ended."""
    batch, lstm = obs.shape[1], isinstance(rnn, torch.nn.LSTM)
    zeros = torch.zeros(rnn.num_layers, batch, rnn.hidden_size)
    state = (zeros, zeros.clone()) if lstm else zeros
    out = []
    with torch.no_grad():
        for x, done in zip(obs, dones):
            y, state = rnn(((x - mean) / (std + 1e-2)).unsqueeze(0), state)
            out.append(head(y.squeeze(0)))
            keep = (~done).float().view(1, -1, 1)
            state = tuple(s * keep for s in state) if lstm else state * keep
    return torch.stack(out)


def _ours(policy, obs: torch.Tensor, dones: torch.Tensor) -> torch.Tensor:
    state, out = policy.initial_state(obs.shape[1]), []
    with torch.no_grad():
        for x, done in zip(obs, dones):
            action, *state = policy(x, *state)
            out.append(action)
            state = [s * (~done).float().view(-1, 1, 1) for s in state]
    return torch.stack(out)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_both_rsl_rl_layouts_of_a_two_layer_core_act_as_torch_s_own_rnn(tmp_path, kind):
    torch.manual_seed(0)
    rnn = (torch.nn.LSTM if kind == "lstm" else torch.nn.GRU)(input_size=5, hidden_size=8, num_layers=2)
    head = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ELU(), torch.nn.Linear(16, 3))
    mean, std = torch.randn(5), torch.rand(5) + 0.5
    obs, dones = torch.randn(30, 4, 5), torch.rand(30, 4) < 0.1
    expected = _rsl_rl_steps(rnn, head, mean, std, obs, dones)

    # rsl_rl >= 4 (Isaac Lab 3, mjlab): RNNModel
    weights = {**{f"rnn.rnn.{k}": v for k, v in rnn.state_dict().items()}, **{f"mlp.{k}": v for k, v in head.state_dict().items()},
               "obs_normalizer._mean": mean[None], "obs_normalizer._std": std[None], "distribution.std_param": torch.ones(3)}  # fmt: skip
    torch.save({"actor_state_dict": weights, "iter": 3}, tmp_path / "model_3.pt")
    agent = {"actor": {"class_name": "RNNModel", "rnn_type": kind, "rnn_hidden_dim": 8, "rnn_num_layers": 2,
                       "activation": "elu", "obs_normalization": True}}  # fmt: skip
    ck = load_actor(tmp_path / "model_3.pt", agent)
    assert ck.policy.state_names == (("h", "c") if kind == "lstm" else ("h",)) and ck.policy.obs_dim == 5
    torch.testing.assert_close(_ours(ck.policy, obs, dones), expected)

    # rsl_rl 2-3 (Isaac Lab 2): ActorCriticRecurrent, the normalizer stored beside the model
    weights = {**{f"memory_a.rnn.{k}": v for k, v in rnn.state_dict().items()}, **{f"actor.{k}": v for k, v in head.state_dict().items()},
               "std": torch.ones(3)}  # fmt: skip
    torch.save({"model_state_dict": weights, "obs_norm_state_dict": {"_mean": mean[None], "_std": std[None]}}, tmp_path / "model_1.pt")
    policy_cfg = {"class_name": "ActorCriticRecurrent", "rnn_type": kind, "activation": "elu"}
    ck = load_actor(tmp_path / "model_1.pt", {"policy": policy_cfg, "empirical_normalization": True})
    torch.testing.assert_close(_ours(ck.policy, obs, dones), expected)

    # rsl_rl 3's state_dependent_std: the head gives [2, A] (mean, std); the action is the mean slice
    wide = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ELU(), torch.nn.Linear(16, 6))
    with torch.no_grad():
        wide[0].load_state_dict(head[0].state_dict())
        wide[2].weight[:3], wide[2].bias[:3] = head[2].weight, head[2].bias
    weights.update({f"actor.{k}": v for k, v in wide.state_dict().items()})
    torch.save({"model_state_dict": weights, "obs_norm_state_dict": {"_mean": mean[None], "_std": std[None]}}, tmp_path / "model_2.pt")
    ck = load_actor(tmp_path / "model_2.pt", {"policy": {**policy_cfg, "state_dependent_std": True}, "empirical_normalization": True})
    assert ck.policy.num_actions == 3
    torch.testing.assert_close(_ours(ck.policy, obs, dones), expected)


def test_an_lstm_import_carries_both_states_and_sim2sim_runs_it(tmp_path):
    """The Isaac Lab fixture's config with an LSTM actor swapped in (small random weights, so the
    robot holds about its default pose): the bundle's graph takes h_in and c_in, robot.yaml lists
    both, the runtime's state moves on and resets, and sim2sim runs the bundle on the robot."""
    import shutil

    import yaml

    from robolearn.interop.run_yaml import load_run_yaml
    from robolearn.sim2sim import sim2sim

    run = tmp_path / "run"
    shutil.copytree(ISAAC_RUN / "params", run / "params")
    agent = load_run_yaml(run / "params" / "agent.yaml")
    agent["actor"] = {"class_name": "RNNModel", "rnn_type": "lstm", "rnn_hidden_dim": 32, "rnn_num_layers": 1,
                      "hidden_dims": [16], "activation": "elu", "obs_normalization": True}  # fmt: skip
    (run / "params" / "agent.yaml").write_text(yaml.safe_dump(agent))
    torch.manual_seed(1)
    obs_dim = int(np.load(ISAAC_REF)["obs"].shape[-1])
    lstm, head = torch.nn.LSTM(obs_dim, 32), torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ELU(), torch.nn.Linear(16, 12))
    with torch.no_grad():
        head[2].weight.mul_(0.05)
    weights = {**{f"rnn.rnn.{k}": v for k, v in lstm.state_dict().items()}, **{f"mlp.{k}": v for k, v in head.state_dict().items()},
               "obs_normalizer._mean": torch.zeros(1, obs_dim), "obs_normalizer._std": torch.ones(1, obs_dim)}  # fmt: skip
    torch.save({"actor_state_dict": weights, "iter": 0}, run / "model_0.pt")
    out = import_run(run, out=tmp_path / "b", robot=QUADRUPED, progress=False)
    assert out.memory == "LSTM, 1 x 32 units"
    b = Bundle.load(out.path)
    assert [(s["name"], s["input"], s["shape"]) for s in b.meta["policy_state"]] == [("h", "h_in", [1, 32]), ("c", "c_in", [1, 32])]
    policy = Policy(out.path)
    first = policy.act(np.ones(obs_dim, np.float32)).copy()  # act() returns its output buffer
    assert not np.allclose(policy.act(np.ones(obs_dim, np.float32)), first, atol=1e-6)  # the state moved on
    policy.reset()
    np.testing.assert_allclose(policy.act(np.ones(obs_dim, np.float32)), first, atol=1e-6)
    result = sim2sim(out.path, episodes=1)
    assert result["episodes"] == 1 and result["ended_by_watchdog"] == 0 and result["episode_length_mean"] > 50


def test_recurrent_checkpoints_that_do_not_fit_their_config_are_one_line(tmp_path):
    torch.manual_seed(0)
    gru, head = torch.nn.GRU(5, 8), torch.nn.Linear(8, 3)
    weights = {**{f"rnn.rnn.{k}": v for k, v in gru.state_dict().items()}, **{f"mlp.0.{k}": v for k, v in head.state_dict().items()}}
    torch.save({"actor_state_dict": weights}, tmp_path / "model_1.pt")
    actor = {"class_name": "RNNModel", "rnn_type": "lstm", "activation": "elu", "obs_normalization": False}
    with pytest.raises(UserError, match=r"24 gate rows for 8 units, which is a GRU, but the run's config says rnn_type=lstm"):
        load_actor(tmp_path / "model_1.pt", {"actor": actor})
    assert load_actor(tmp_path / "model_1.pt", {"actor": {**actor, "rnn_type": "GRU"}}).policy.state_names == ("h",)
    with pytest.raises(UserError, match="has no observation normalizer"):
        load_actor(tmp_path / "model_1.pt", {"actor": {**actor, "rnn_type": "gru", "obs_normalization": True}})
    with pytest.raises(UserError, match=r"the run's actor is a CNNModel; robolearn import reads rsl_rl MLP and recurrent actors"):
        load_actor(tmp_path / "model_1.pt", {"actor": {**actor, "class_name": "CNNModel", "cnn_cfg": {"output_channels": [8]}}})
    del weights["rnn.rnn.bias_hh_l0"]
    torch.save({"actor_state_dict": weights}, tmp_path / "model_2.pt")
    with pytest.raises(UserError, match=r"lacks rnn.rnn.bias_hh_l0: only recurrent layers with biases"):
        load_actor(tmp_path / "model_2.pt", {"actor": {**actor, "rnn_type": "gru"}})
    mlp_only = {f"mlp.0.{k}": v for k, v in torch.nn.Linear(5, 3).state_dict().items()}
    torch.save({"actor_state_dict": mlp_only}, tmp_path / "model_3.pt")
    with pytest.raises(UserError, match=r"has no recurrent layers .* although the run's config describes a recurrent actor"):
        load_actor(tmp_path / "model_3.pt", {"actor": actor})
    torch.save({"actor_state_dict": {**weights, "rnn.rnn.bias_hh_l0": torch.zeros(24),
                                     "mlp.0.weight": torch.zeros(3, 6)}}, tmp_path / "model_4.pt")  # fmt: skip
    with pytest.raises(UserError, match=r"the actor's MLP takes 6 inputs but its recurrent core gives 8"):
        load_actor(tmp_path / "model_4.pt", {"actor": {**actor, "rnn_type": "gru"}})


def test_recorded_observations_for_a_recurrent_actor_are_sequences(tmp_path):
    ref = np.load(GRU_REF)
    flat = tmp_path / "flat.npy"
    np.save(flat, ref["obs"][:, 0])  # one environment's sequence [T, D]: accepted as one sequence
    out = import_run(GRU_RUN, out=tmp_path / "b", obs=flat, progress=False)
    assert Bundle.load(out.path).meta["artifacts"][0]["parity"]["sequence_max_abs_diff"] < 1e-4
    bad = tmp_path / "bad.npy"
    np.save(bad, ref["obs"][None])
    with pytest.raises(UserError, match=r"must hold finite observations shaped \[T, N, 48\] or \[T, 48\] \(sequences\), got \[1, "):
        import_run(GRU_RUN, out=tmp_path / "c", obs=bad, progress=False)
    assert not (tmp_path / "c").exists()


def _gru_checkpoint(path: Path, edit=None) -> Path:
    """A 3 x 8 GRU core and a Linear head, in rsl_rl >= 4's layout, edited by `edit`."""
    torch.manual_seed(0)
    weights = {**{f"rnn.rnn.{k}": v for k, v in torch.nn.GRU(5, 8, 3).state_dict().items()},
               **{f"mlp.0.{k}": v for k, v in torch.nn.Linear(8, 3).state_dict().items()}}  # fmt: skip
    if edit is not None:
        edit(weights)
    torch.save({"actor_state_dict": weights}, path)
    return path


def _drop_layer(k: int):
    return lambda w: [w.pop(f"rnn.rnn.{n}_l{k}") for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]


GRU_ACTOR = {"class_name": "RNNModel", "rnn_type": "gru", "rnn_hidden_dim": 8, "rnn_num_layers": 3, "activation": "elu",
             "obs_normalization": False}  # fmt: skip


@pytest.mark.parametrize("edit,cfg,expected", [
    (lambda w: w.update({"rnn.rnn.weight_hh_l0": torch.randn(24)}), {}, "rnn.rnn.weight_hh_l0 has shape [24]; valid: a 2-D tensor"),
    (lambda w: w.update({"rnn.rnn.weight_ih_l0": torch.randn(24)}), {}, "rnn.rnn.weight_ih_l0 has shape [24]; valid: a 2-D tensor"),
    (lambda w: w.update({"rnn.rnn.bias_ih_l2": 0.5}), {}, "rnn.rnn.bias_ih_l2 is float 0.5, not a tensor; valid: a 1-D tensor"),
    (lambda w: w.update({"rnn.rnn.weight_hh_l1": torch.randn(24, 8, 1)}), {}, "rnn.rnn.weight_hh_l1 has shape [24, 8, 1]"),
    # a gap: read up to it, the core would quietly be one layer deep
    (_drop_layer(1), {}, "has recurrent layer 2 (rnn.rnn.weight_ih_l2) but no layer 1 (rnn.rnn.weight_ih_l1)"),
    (lambda w: w.update({"rnn.rnn.weight_ih_l0_reverse": torch.randn(24, 5)}), {}, "holds rnn.rnn.weight_ih_l0_reverse"),
    (None, {"rnn_num_layers": 2}, "agent.yaml says rnn_num_layers: 2 but model_1.pt holds a core of 3 x 8 units"),
    (None, {"rnn_hidden_dim": 64}, "agent.yaml says rnn_hidden_dim: 64 but model_1.pt holds a core of 3 x 8 units"),
])  # fmt: skip
def test_malformed_recurrent_checkpoints_are_one_line(tmp_path, edit, cfg, expected):
    path = _gru_checkpoint(tmp_path / "model_1.pt", edit)
    with pytest.raises(UserError) as refused:
        load_actor(path, {"actor": {**GRU_ACTOR, **cfg}})
    assert expected in str(refused.value) and "\n" not in str(refused.value), str(refused.value)
    core = load_actor(_gru_checkpoint(tmp_path / "model_2.pt"), {"actor": GRU_ACTOR}).policy.memory
    assert (core.layers, core.hidden) == (3, 8)
