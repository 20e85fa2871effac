"""A recurrent policy through export and the runtime: the state is part of the graph and of
robot.yaml, the runtime carries it, resets it on an episode start and on a watchdog trip, and
refuses to run it without its state."""

import shutil

import numpy as np
import onnx
import pytest
import torch

from robolearn.rl.models import InferencePolicy
from robolearn_deploy import ControlLoop, DeployError, Policy

from .conftest import make_bundle
from .test_bundle import refused, rewrite
from .test_control_loop import ScriptedRobot


@pytest.fixture(scope="module", params=["gru", "lstm"])
def _recurrent_template(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param) / "cartpole"
    _, ac = make_bundle(out, "cartpole", policy=request.param, rnn_hidden_size=16, rnn_num_layers=2, hidden=(32,))
    return out, ac, request.param


@pytest.fixture
def recurrent(_recurrent_template, tmp_path):
    """(a fresh copy of a recurrent cartpole bundle, its torch actor-critic, the kind)."""
    out, ac, kind = _recurrent_template
    return shutil.copytree(out, tmp_path / "bundle"), ac, kind


def test_the_graph_and_robot_yaml_carry_the_state(recurrent):
    bundle, _, kind = recurrent
    names = ("h",) if kind == "gru" else ("h", "c")
    graph = onnx.load(str(bundle / "policy.onnx")).graph
    assert [i.name for i in graph.input] == ["obs", *(f"{n}_in" for n in names)]
    assert [o.name for o in graph.output] == ["actions", *(f"{n}_out" for n in names)]
    policy = Policy(bundle)
    meta = policy.bundle.meta
    assert meta["bundle_format"] == 2
    assert meta["policy_state"] == [{"name": n, "input": f"{n}_in", "output": f"{n}_out", "shape": [2, 16],
                                     "dtype": "float32", "reset": 0.0} for n in names]  # fmt: skip
    assert policy.is_recurrent and [s.shape for s in policy.initial_state(3)] == [(3, 2, 16)] * len(names)


def test_runtime_matches_torch_over_a_200_step_episode_with_the_state_fed_back(recurrent):
    """The robot's path (Policy.act, batch 1, its own state) against torch stepping its own state,
    on a 200-step sequence of observations in the trained range: max abs diff < 1e-5."""
    bundle, ac, _ = recurrent
    policy, reference = Policy(bundle), InferencePolicy(ac).eval()
    gen = torch.Generator().manual_seed(0)
    norm = reference.normalizer
    obs = norm.mean + norm.std * 2.0 * torch.randn(200, 1, norm.mean.shape[0], generator=gen)
    state, worst = reference.initial_state(1), 0.0
    for x in obs:
        with torch.no_grad():
            expected, *state = reference(x, *state)
        worst = max(worst, float(np.abs(policy.act(x[0].numpy()) - expected[0].numpy()).max()))
    assert worst < 1e-5
    assert float(np.abs(state[0].numpy()).max()) > 0.05  # the state really carried something


def test_the_batched_call_takes_and_returns_the_state(recurrent):
    bundle, _, kind = recurrent
    policy = Policy(bundle)
    obs = np.random.default_rng(0).normal(size=(5, policy.bundle.obs_size)).astype(np.float32)
    actions, *state = policy(obs, *policy.initial_state(5))
    again, *_ = policy(obs, *state)
    assert actions.shape == (5, 1) and len(state) == (1 if kind == "gru" else 2)
    assert not np.allclose(actions, again)  # the same observation, another state: another action
    first = policy.act(obs[0])
    assert first[0] == pytest.approx(float(actions[0, 0]), abs=1e-6)  # act() starts from the reset state too
    kept = first.copy()
    second = policy.act(obs[0])  # another state: another action, in an array of its own
    assert not np.shares_memory(first, second) and np.array_equal(first, kept) and not np.allclose(first, second)


def test_reset_and_the_watchdog_reset_the_state(recurrent):
    bundle, _, _ = recurrent
    loop = ControlLoop(Policy(bundle), ScriptedRobot())
    loop.run(5)
    assert any(np.abs(s).max() > 0 for s in loop.policy._state)
    loop.reset()
    assert all(np.all(s == 0) for s in loop.policy._state)
    loop.run(3)
    loop.robot.q[:] = np.nan  # a broken reading trips the watchdog
    report = loop.run(1)
    assert report.tripped is not None and all(np.all(s == 0) for s in loop.policy._state)


def test_a_recurrent_policy_driven_without_its_state_is_one_line(recurrent):
    bundle, _, _ = recurrent
    policy = Policy(bundle)
    obs = np.zeros((2, policy.bundle.obs_size), np.float32)
    with pytest.raises(DeployError, match=r"recurrent: call it as policy\(obs, h.*initial_state\(batch\)") as info:
        policy(obs)
    assert "\n" not in str(info.value)
    wrong = [np.zeros((2, 1, 16), np.float32) for _ in policy.initial_state(2)]
    with pytest.raises(DeployError, match=r"policy state 'h' must be \[2, 2, 16\] real numbers for this batch, got "
                                          r"shape \[2, 1, 16\]"):  # fmt: skip
        policy(obs, *wrong)


def test_robot_yaml_without_the_state_or_with_a_wrong_shape_is_refused(recurrent):
    bundle, _, _ = recurrent
    rewrite(bundle, lambda meta: meta["policy_state"][0].update(shape=[2, 8]))
    refused(bundle, "state 'h_in' is shaped [2, 16] but robot.yaml says [2, 8]")
    rewrite(bundle, lambda meta: meta.pop("policy_state"))
    refused(bundle, "bundle format 2 and no policy_state")
    rewrite(bundle, lambda meta: meta.update(bundle_format=1))
    refused(bundle, "the ONNX graph takes input 'h_in', which robot.yaml does not describe")


def test_the_fp16_artifact_carries_the_state_too(tmp_path):
    """precision=fp16: the core and head in half precision, the state in and out as float32, checked
    over sequences against torch like the fp32 graph (export fails otherwise)."""
    make_bundle(tmp_path / "b", "cartpole", policy="lstm", rnn_hidden_size=8, hidden=(8,), precision="fp16")
    policy = Policy(tmp_path / "b", precision="fp16")
    assert policy.engine.precision == "fp16" and policy.is_recurrent
    report = next(a for a in policy.bundle.meta["artifacts"] if a["file"] == "policy.fp16.onnx")
    assert 0 < report["parity"]["recorded_max_abs_diff"] < report["parity"]["tolerance"]
    first = policy.act(np.zeros(policy.bundle.obs_size, np.float32)).copy()
    assert not np.allclose(first, policy.act(np.zeros(policy.bundle.obs_size, np.float32)))  # the state moved
