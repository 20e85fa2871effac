"""sim2sim's user mistakes end in one line, before anything runs, and leave every file as it was:
log= appends only to a new file or an earlier sim2sim log, never into a bundle; seed= and
episodes= have the ranges train and eval give them."""

import json
import subprocess
import sys

import pytest

from robolearn.errors import UserError

from .test_bundle import files_of

NOTES = "my notes\n"
CHECKPOINT = b"PK\x03\x04\x00\x00\x08\x08\x00\x00\x00\x00\xff\xfe torch zip"
METRICS = '{"iteration": 1, "return": 3.5}\n'
"""A run's metrics.jsonl: JSON lines, but not a sim2sim log's."""


def cli(cwd, *args):
    """`robolearn sim2sim args` in cwd: (exit code, stderr lines)."""
    result = subprocess.run([sys.executable, "-m", "robolearn.cli", "sim2sim", *args], capture_output=True, text=True,
                            cwd=cwd, timeout=300)  # fmt: skip
    return result.returncode, result.stderr.strip().splitlines()


def step_log(path, rows=2):
    """A log as the control loop writes it."""
    row = {"step": 0, "tick": 0.0, "compute_ms": 0.1, "joint_pos": [0.0], "joint_vel": [0.0], "obs": [0.0],
           "action": [0.0], "command": {"effort": [0.0]}, "tripped": None, "safe": False}  # fmt: skip
    path.write_text("".join(json.dumps({**row, "step": k}) + "\n" for k in range(rows)))
    return path


@pytest.mark.parametrize("name,content", [
    ("notes.txt", NOTES), ("model_100.pt", CHECKPOINT), ("metrics.jsonl", METRICS), ("train.log", ""),
    ("cut.jsonl", None),  # an earlier log and then a line that is not one of its rows
])  # fmt: skip
def test_log_refuses_an_existing_file_that_is_not_a_sim2sim_log(tmp_path, name, content):
    from robolearn.sim2sim_files import prepare_outputs

    path = tmp_path / name
    if content is None:
        step_log(path).open("a").write("a note\n")
    else:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = files_of(tmp_path)
    with pytest.raises(UserError) as info:
        prepare_outputs(None, path)
    assert str(info.value) == (f"log={path} exists and is not a sim2sim log; choose a new file (sim2sim appends only to "
                               "its own logs: one JSON object per line)")  # fmt: skip
    assert files_of(tmp_path) == before


def test_log_appends_to_a_new_file_or_an_earlier_log(tmp_path):
    from robolearn.sim2sim_files import prepare_outputs

    prepare_outputs(None, tmp_path / "runs" / "new.jsonl")  # checked only: its folder is made when sim2sim opens it
    assert not (tmp_path / "runs").exists()
    earlier = step_log(tmp_path / "earlier.jsonl")
    prepare_outputs(None, earlier)


def test_the_control_loop_appends_only_to_its_own_log(cartpole_bundle, tmp_path):
    """The deploy runtime's own guard (sim2sim's API and play reach the loop without the CLI's check):
    a user's file is refused and kept, an earlier log grows."""
    from robolearn_deploy import ControlLoop, DeployError, Policy
    from robolearn_deploy.sim import MujocoRobot

    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES)
    policy = Policy(cartpole_bundle)
    robot = MujocoRobot(cartpole_bundle / "cartpole.xml")
    with pytest.raises(DeployError, match=f"^the log {notes} exists and is not a step log .*valid: a new file, or an "
                                          "earlier log to append to$"):  # fmt: skip
        ControlLoop(policy, robot, log=notes)
    assert notes.read_text() == NOTES
    for runs in (1, 2):
        loop = ControlLoop(policy, robot, log=tmp_path / "steps.jsonl")
        loop.run(3)
        loop.close()
        assert len((tmp_path / "steps.jsonl").read_text().splitlines()) == 3 * runs


@pytest.mark.parametrize("where", ["policy.onnx", "new.jsonl", "sub/new.jsonl", "link"])
def test_log_inside_the_bundle_is_refused(cartpole_bundle, tmp_path, where):
    """Appending to a bundle file breaks its sha256; a new file makes the folder more than export wrote."""
    from robolearn.sim2sim import sim2sim
    from robolearn.sim2sim_files import prepare_outputs

    log = cartpole_bundle / where
    if where == "link":  # a link outside the bundle to a file in it
        log = tmp_path / "link.jsonl"
        log.symlink_to(cartpole_bundle / "policy.onnx")
    before = files_of(tmp_path)
    for attempt in (lambda: prepare_outputs(None, log), lambda: sim2sim(cartpole_bundle, episodes=1, log=log)):
        with pytest.raises(UserError) as info:
            attempt()
        assert str(info.value) == f"log={log} is inside the bundle {cartpole_bundle}; valid: a file outside it (e.g. log=sim2sim.jsonl)"
    assert files_of(tmp_path) == before and not (cartpole_bundle / "sub").exists()


def test_a_robot_yaml_that_no_export_wrote_is_not_a_bundle(tmp_path):
    """A robot project's own robot.yaml does not make its folder a bundle."""
    from robolearn.sim2sim_files import prepare_outputs

    (tmp_path / "robot.yaml").write_text("name: my_robot\n")
    prepare_outputs(None, tmp_path / "logs" / "sim2sim.jsonl")


def test_report_and_log_naming_the_same_file_are_refused(tmp_path):
    from robolearn.sim2sim_files import prepare_outputs

    with pytest.raises(UserError) as info:
        prepare_outputs(tmp_path / "out.json", tmp_path / "sub" / ".." / "out.json")
    assert str(info.value).startswith(f"report={tmp_path / 'out.json'} and log={tmp_path / 'sub' / '..' / 'out.json'} "
                                      "name the same file; valid: two different files")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("seed", [-1, 2**32, 99999999999999999999])
def test_seed_has_trains_range(cartpole_bundle, seed):
    from robolearn.sim2sim import sim2sim

    with pytest.raises(UserError) as info:
        sim2sim(cartpole_bundle, episodes=1, seed=seed)
    assert str(info.value) == f"seed={seed} is out of range; valid: an integer 0..4294967295"


def test_the_largest_seed_runs(cartpole_bundle):
    from robolearn.sim2sim import sim2sim

    assert sim2sim(cartpole_bundle, episodes=1, seed=2**32 - 1)["episodes"] == 1


@pytest.mark.parametrize("episodes", [0, 65537, 100000000000])
def test_episodes_has_evals_cap(cartpole_bundle, episodes, monkeypatch):
    """Refused before the bundle is even opened (too many used to run for hours in silence)."""
    from robolearn import sim2sim as module
    from robolearn.evaluate import MAX_EVAL_EPISODES
    from robolearn.sim2sim import sim2sim

    monkeypatch.setattr(module, "open_sim", lambda *args, **kwargs: pytest.fail("the episodes were started"))

    assert MAX_EVAL_EPISODES == 65536
    with pytest.raises(UserError) as info:
        sim2sim(cartpole_bundle, episodes=episodes)
    assert str(info.value) == f"episodes={episodes} is out of range; valid: 1..65536"


def test_the_cli_says_each_mistake_in_one_line_and_changes_no_file(cartpole_bundle, tmp_path):
    """The cases above end as one line and exit 2 on the command line, with the bundle, a user's
    file and the working folder as they were."""
    (tmp_path / "notes.txt").write_text(NOTES)
    bundle = f"bundle={cartpole_bundle}"
    cases = [
        ([bundle, "episodes=1", "log=notes.txt"], "log=notes.txt exists and is not a sim2sim log"),
        ([bundle, "episodes=1", f"log={cartpole_bundle / 'policy.onnx'}"], "is inside the bundle"),
        ([bundle, "episodes=1", "log=out.json", "report=out.json"], "report=out.json and log=out.json name the same file"),
        ([bundle, "seed=99999999999999999999"], "seed=99999999999999999999 is out of range; valid: an integer 0..4294967295"),
        ([bundle, "seed=-1"], "seed=-1 is out of range; valid: an integer 0..4294967295"),
        ([bundle, "episodes=100000000000"], "episodes=100000000000 is out of range; valid: 1..65536"),
    ]
    before = files_of(tmp_path)
    for args, expected in cases:
        code, lines = cli(tmp_path, *args)
        assert code == 2 and len(lines) == 1 and expected in lines[0], (args, lines)
        assert files_of(tmp_path) == before, args
