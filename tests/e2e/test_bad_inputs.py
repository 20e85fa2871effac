"""The bad-input corpus: every mistake in bad_inputs.CASES (the command line, config values,
plugins, files) and the deploy API's below end in one line that says what is wrong, a non-zero
exit, no traceback, and no file of the user's changed.

The command lines run each in its own process against its own copy of the workspace, a few at a
time (one shared run trains once for all of them); the processes are forked from a warm
interpreter that has imported robolearn's stack (warm_cli.py), which saves ~2 s of start-up
per command line."""

import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from robolearn.registry import discover_tasks

from .bad_inputs import CASES, build_workspace
from .conftest import robolearn
from .test_errors import FAST, snapshot
from .warm_cli import WarmCli

WORKERS = 3


_local = threading.local()


def run_case(case, template: Path, root: Path, servers: list):
    ws = root / case.id
    shutil.copytree(template, ws, symlinks=True)
    before = snapshot(ws)
    if not hasattr(_local, "cli"):  # one warm server per worker thread
        _local.cli = WarmCli().__enter__()
        servers.append(_local.cli)
    args = [a.replace("{ws}", str(ws)) for a in case.args]
    env = {**os.environ, **{k: v.replace("{ws}", str(ws)) for k, v in case.env}} if case.env else None
    result = _local.cli.run(args, cwd=ws, drop_env=["DISPLAY", "WAYLAND_DISPLAY"],  # headless, as CI
                            path=[ws / "site"] if case.site else [], env=env)  # fmt: skip
    after = snapshot(ws)
    changed = sorted(str(k) for k in before if after.get(k) != before[k])
    return result, changed


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """The template every case copies: a short finished run, its bundle, damaged copies, plugins."""
    root = tmp_path_factory.mktemp("bad_inputs")
    run = root / "trained"
    made = robolearn("train", *FAST, f"hydra.run.dir={run}", cwd=root)
    assert made.returncode == 0, made.stderr
    template = root / "template"
    template.mkdir()
    build_workspace(template, run, discover_tasks()["cartpole"].config.read_text())
    return template


@pytest.fixture(scope="module")
def results(workspace):
    servers = []
    try:
        with ThreadPoolExecutor(WORKERS) as pool:
            futures = {case.id: pool.submit(run_case, case, workspace, workspace.parent / "cases", servers) for case in CASES}
            return {name: future.result() for name, future in futures.items()}
    finally:
        for server in servers:
            server.__exit__(None, None, None)


def test_the_corpus_has_every_class_and_unique_names():
    assert len({c.id for c in CASES}) == len(CASES)
    classes = {c.cls for c in CASES}
    assert classes == {"cli", "config", "plugin", "file"}
    assert len(CASES) + len(DEPLOY_CASES) >= 100


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_bad_input_ends_in_one_line_and_changes_nothing(results, case):
    result, changed = results[case.id]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == case.exit_code, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert len(lines) == 1, result.stderr[-2000:]
    for text in case.expect:
        assert text in lines[0], lines[0]
    assert not changed, f"changed: {changed}"


# --- the deploy API: in-process, against a copy of the run's bundle -----------------------------
REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "quadruped_flat_cpu" / "bundle"


class Robot:
    """A cart-pole driver (joints in its own order) whose readings a case may spoil."""

    joint_names = ["hinge", "slider"]
    signals = ()

    def __init__(self, spoil=None, delay_at=None):
        self.t, self.reads, self.commands = 0.0, 0, []
        self.spoil, self.delay_at = spoil, delay_at

    def now(self):
        return self.t

    def sleep_until(self, t):
        self.t = max(self.t, t)

    def read_state(self):
        import numpy as np

        from robolearn_deploy import RobotState

        self.reads += 1
        if self.reads == self.delay_at:
            self.t += 1.0  # the step finishes long after its tick
        state = RobotState(np.array([0.05, 0.2]), np.zeros(2))
        return self.spoil(state) if self.spoil and self.reads >= 2 else state

    def write_command(self, command):
        self.commands.append(command.copy())


def _raises(bundle, do):
    from robolearn_deploy import DeployError

    with pytest.raises(DeployError) as info:
        do(bundle)
    return str(info.value)


def _trips(bundle, robot, policy_act=None):
    """The loop runs on: every tick gets a command, the bad one and those after it the safe one."""
    import numpy as np

    from robolearn_deploy import ControlLoop, Policy

    loop = ControlLoop(Policy(bundle), robot)
    if policy_act is not None:
        loop.policy.act = policy_act
    report = loop.run(4)
    assert len(robot.commands) == 4
    assert all(np.all(c.kp == 0) and np.all(c.effort == 0) for c in robot.commands[report.trip_step:])
    return report.tripped


def _policy(bundle):
    from robolearn_deploy import Policy

    return Policy(bundle)


def _out_of_memory(policy):
    """A policy whose engine fails as ONNX Runtime does on a batch larger than memory (1e8 rows of a
    256-unit layer, measured: it asks for 25.6 GB)."""

    def run(obs):
        raise RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running FusedGemm node. "
                           "Status Message: bfc_arena.cc:360 Failed to allocate memory for requested buffer of size 25600000000")

    policy.engine.run = run
    return policy


def _with_missing_joint(state):
    from robolearn_deploy import RobotState

    return RobotState(state.joint_pos[:1], state.joint_vel[:1])


def _with(field, index, value):
    def spoil(state):
        getattr(state, field)[index] = value
        return state

    return spoil


def _failing_act(obs=None):
    raise RuntimeError("CUDA error: an illegal memory access")


def _deploy_case(name, bundle, reference, recurrent):
    import numpy as np

    from robolearn_deploy import Bundle, ControlLoop, ObservationBuilder, Policy, Safety

    size = 4  # the cart-pole's observation
    return {
        "bundle_missing_dir": lambda: _raises(bundle.parent / "missing", Bundle.load),
        "bundle_plain_dir": lambda: _raises(bundle.parent / "plain", Bundle.load),
        "bundle_corrupt_yaml": lambda: _raises(bundle, lambda b: ((b / "robot.yaml").write_text("a: [x\n"), Bundle.load(b))),
        "bundle_missing_onnx": lambda: _raises(bundle, lambda b: ((b / "policy.onnx").unlink(), Policy(b))),
        "bundle_tampered_onnx": lambda: _raises(bundle, lambda b: ((b / "policy.onnx").write_bytes(b"\x00" * 64), Policy(b))),
        "policy_unknown_engine": lambda: _raises(bundle, lambda b: Policy(b, engine="tflite")),
        "policy_unknown_precision": lambda: _raises(bundle, lambda b: Policy(b, precision="int4")),
        "act_wrong_length": lambda: _raises(bundle, lambda b: _policy(b).act(np.zeros(size + 1, np.float32))),
        "act_batch_given_to_act": lambda: _raises(bundle, lambda b: _policy(b).act(np.zeros((2, size), np.float32))),
        "act_scalar": lambda: _raises(bundle, lambda b: _policy(b).act(np.float32(1.0))),
        "act_text": lambda: _raises(bundle, lambda b: _policy(b).act(np.array(["x"] * size))),
        "policy_zero_threads": lambda: _raises(bundle, lambda b: Policy(b, threads=0)),
        "safety_unknown_mode": lambda: _raises(bundle, lambda b: Safety(safe_mode="explode")),
        "call_without_batch": lambda: _raises(bundle, lambda b: _policy(b)(np.zeros(size, np.float32))),
        "builder_missing_joint": lambda: _raises(bundle, lambda b: ObservationBuilder(Bundle.load(b), ["hinge"])),
        "loop_missing_joint_at_build": lambda: _raises(bundle, lambda b: ControlLoop(Policy(b), type("R", (Robot,), {"joint_names": ["slider"]})())),
        "loop_missing_signal_at_build": lambda: _raises(reference, lambda b: ControlLoop(Policy(b), type("Q", (Robot,), {
            "joint_names": [a.joint for a in Bundle.load(b).actuators]})())),  # declares no IMU signal
        "reading_lacks_a_joint": lambda: _trips(bundle, Robot(_with_missing_joint)),
        "reading_not_finite": lambda: _trips(bundle, Robot(_with("joint_vel", 0, float("nan")))),
        "reading_out_of_range": lambda: _trips(bundle, Robot(_with("joint_pos", 1, 9.0))),
        "reading_late": lambda: _trips(bundle, Robot(delay_at=2)),
        "policy_step_fails": lambda: _trips(bundle, Robot(), _failing_act),
        "recurrent_call_without_state": lambda: _raises(recurrent, lambda b: _policy(b)(np.zeros((2, size), np.float32))),
        "recurrent_state_wrong_shape": lambda: _raises(recurrent, lambda b: _policy(b)(
            np.zeros((2, size), np.float32), np.zeros((1, 1, 8), np.float32))),
        "tensorrt_without_an_engine": lambda: _raises(recurrent, lambda b: Policy(b, engine="tensorrt")),
        "feed_forward_given_a_state": lambda: _raises(bundle, lambda b: _policy(b)(
            np.zeros((2, size), np.float32), np.zeros((2, 1, 8), np.float32))),
        "act_not_finite": lambda: _raises(bundle, lambda b: _policy(b).act(np.array([0.0, np.nan, 0.0, 0.0], np.float32))),
        "act_past_float32": lambda: _raises(bundle, lambda b: _policy(b).act(np.full(size, 1e300))),
        "call_not_finite": lambda: _raises(bundle, lambda b: _policy(b)(np.array([[0.0] * size, [0.0, 0.0, np.inf, 0.0]]))),
        "act_masked": lambda: _raises(bundle, lambda b: _policy(b).act(np.ma.masked_array(np.zeros(size), mask=[0, 0, 1, 0]))),
        "call_masked": lambda: _raises(bundle, lambda b: _policy(b)(np.ma.masked_array(np.zeros((2, size)), mask=np.eye(2, size)[::-1]))),
        "call_engine_out_of_memory": lambda: _raises(bundle, lambda b: _out_of_memory(_policy(b))(np.zeros((3, size), np.float32))),
        "policy_threads_a_flag": lambda: _raises(bundle, lambda b: Policy(b, threads=True)),
        "policy_threads_huge": lambda: _raises(bundle, lambda b: Policy(b, threads=10**12)),
        "bundle_none": lambda: _raises(None, Bundle.load),
    }[name]  # fmt: skip


DEPLOY_EXPECT = {
    "bundle_missing_dir": "missing", "bundle_plain_dir": "robot.yaml", "bundle_corrupt_yaml": "robot.yaml",
    "bundle_missing_onnx": "policy.onnx", "bundle_tampered_onnx": "policy.onnx", "policy_unknown_engine": "tflite",
    "policy_unknown_precision": "int4", "act_wrong_length": "got shape (5,)", "act_batch_given_to_act": "got shape (2, 4)",
    "act_scalar": "got shape ()", "act_text": "real numbers", "policy_zero_threads": "threads=0",
    "safety_unknown_mode": "unknown safe_mode 'explode'; valid: damping, hold",
    "call_without_batch": "a Policy call takes a batch [B, 4]", "builder_missing_joint": "slider",
    "loop_missing_joint_at_build": "hinge", "loop_missing_signal_at_build": "signal",
    "reading_lacks_a_joint": "joint_pos has shape (1,)", "reading_not_finite": "not finite",
    "reading_out_of_range": "outside its limits", "reading_late": "after its tick",
    "policy_step_fails": "RuntimeError: CUDA error: an illegal memory access",
    "recurrent_call_without_state": "policy is recurrent: call it as policy(obs, h)",
    "recurrent_state_wrong_shape": "policy state 'h' must be [2, 1, 8]", "tensorrt_without_an_engine": "TensorRT",
    "feed_forward_given_a_state": "feed-forward: call it with the observations only",
    "act_not_finite": "observation 1 is nan, not a finite float32", "act_past_float32": "observation 0 is 1e+300",
    "call_not_finite": "observation [1, 2] is inf", "policy_threads_a_flag": "threads=True is not valid; valid: an integer 1..",
    "policy_threads_huge": "threads=1000000000000 is not valid", "act_masked": "observation 2 is masked (a missing reading)",
    "call_masked": "observation [0, 1] is masked", "call_engine_out_of_memory": "batch of 3 observations failed in the engine: it could not allocate 23.8 GiB; valid: a smaller batch", "bundle_none": "a bundle is the path of the directory export wrote",
}  # fmt: skip
DEPLOY_CASES = list(DEPLOY_EXPECT)


@pytest.fixture(scope="module")
def exported_bundle(workspace):
    return workspace / "bundle"


@pytest.fixture(scope="module")
def recurrent_bundle(tmp_path_factory):
    """An (untrained) GRU cart-pole policy's bundle: state h [1, 8]."""
    from tests.deploy.conftest import make_bundle

    out = tmp_path_factory.mktemp("recurrent") / "bundle"
    make_bundle(out, "cartpole", policy="gru", rnn_hidden_size=8, hidden=(8,))
    return out


@pytest.mark.parametrize("name", DEPLOY_CASES)
def test_a_bad_deploy_input_is_one_line_or_a_safe_command(name, exported_bundle, recurrent_bundle, tmp_path):
    bundle = shutil.copytree(exported_bundle, tmp_path / "bundle")
    (tmp_path / "plain").mkdir()
    reference = shutil.copytree(REFERENCE, tmp_path / "reference")
    before = snapshot(exported_bundle)
    message = _deploy_case(name, bundle, reference, recurrent_bundle)()
    assert message is not None and "\n" not in message and "Traceback" not in message
    assert DEPLOY_EXPECT[name] in message, message
    assert snapshot(exported_bundle) == before
