"""Data-parallel training under torchrun, on CPU processes with gloo (robolearn/distributed.py):
identical learners on every rank, a 2-rank run that learns, kill and exact resume, and a rank that
dies or hangs ending the job with one line instead of a hang."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.e2e.conftest import metrics

FAST = ["env.num_envs=32", "runner.num_steps_per_env=16", "algo.num_mini_batches=2", "runner.export_onnx=false",
        "runner.progress=false", "runner.video_interval=0", "logger=none"]  # fmt: skip


def torchrun(*args, cwd, ranks=2, wait=True, timeout=600, standalone=True):
    # torchrun's own logs under the test's folder (by default each launch leaves a /tmp/torchelastic_* behind)
    command = [sys.executable, "-m", "torch.distributed.run", *(["--standalone"] if standalone else []),
               f"--nproc_per_node={ranks}", f"--log-dir={Path(cwd) / 'torchrun-logs'}", *args]  # fmt: skip
    if not wait:
        return subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def train(*overrides, cwd, **kwargs):
    return torchrun("-m", "robolearn", "train", *overrides, cwd=cwd, **kwargs)


def our_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("robolearn train:")]


@pytest.mark.parametrize("policy,schedule", [("mlp", "rollout"), ("gru", "rollout"), ("mlp", "step")])
def test_learners_stay_identical_on_every_rank_after_every_update(tmp_path, policy, schedule):
    """schedule: algo.normalizer_schedule (step: the normalizers merge every rank's observations at each step)."""
    out = tmp_path / "probe.json"
    probe = Path(__file__).with_name("ddp_probe.py")
    result = torchrun(str(probe), str(out), "task=pendulum", "runner.max_iterations=4", f"algo.policy={policy}",
                      f"algo.normalizer_schedule={schedule}", *FAST, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["max_param_gap"] == [0.0] * 4  # parameters, Adam, learning rate, normalizers: bit-identical
    assert min(report["param_change"]) > 0  # and they did change at every update
    assert min(report["obs_gap"]) > 0  # from rollouts that differ (each rank its own seed stream)
    # env_steps count both ranks' 16 environments
    assert [r["env_steps"] for r in report["rows"]] == [32 * 16 * k for k in range(1, 5)]


@pytest.fixture(scope="module")
def two_rank_cartpole(tmp_path_factory):
    work = tmp_path_factory.mktemp("ddp")
    run = work / "run"
    result = train("seed=1", "runner.max_iterations=60", "runner.export_onnx=false", "logger=none",
                   "runner.video_interval=0", f"hydra.run.dir={run}", cwd=work)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return run, result


def test_a_two_rank_run_learns_cartpole(two_rank_cartpole):
    run, result = two_rank_cartpole
    rows = metrics(run)
    assert [r["iteration"] for r in rows] == list(range(1, 61))
    assert rows[-1]["env_steps"] == 60 * 128 * 24  # the recipe's 128 environments, 64 per rank
    max_length = 5.0 / 0.02
    assert rows[0]["mean_episode_length"] < 0.5 * max_length
    assert rows[-1]["mean_episode_length"] >= 0.9 * max_length, [r["mean_episode_length"] for r in rows[-5:]]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["ranks"] == 2
    payload = torch.load(run / "checkpoints" / "iter_000060.pt", weights_only=True)
    assert payload["world_size"] == 2 and len(payload["other_ranks"]) == 1
    assert set(payload["other_ranks"][0]) == {"env", "algorithm", "rng"}
    assert result.stdout.count("training cartpole into") == 1  # rank 0 alone speaks and writes


def test_two_nodes_of_one_rank_each(tmp_path):
    """--nnodes: two torchrun launches meeting at a rendezvous (here both on localhost)."""
    run = tmp_path / "run"
    port = 29400 + os.getpid() % 500
    nodes = [torchrun("--nnodes=2", "--rdzv_backend=c10d", f"--rdzv_endpoint=localhost:{port}", "--rdzv_id=nodes",
                      "-m", "robolearn", "train", "task=pendulum", "runner.max_iterations=3", *FAST,
                      f"hydra.run.dir={run}", cwd=tmp_path, ranks=1, wait=False, standalone=False)
             for _ in range(2)]  # fmt: skip
    outputs = [node.communicate(timeout=300) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], [err[-2000:] for _, err in outputs]
    assert sum(out.count("training pendulum into") for out, _ in outputs) == 1
    assert json.loads((run / "manifest.json").read_text())["ranks"] == 2
    assert [r["env_steps"] for r in metrics(run)] == [32 * 16 * k for k in (1, 2, 3)]


def _stop_after(process: subprocess.Popen, run: Path, rows: int, sig=signal.SIGTERM, timeout=300) -> None:
    deadline = time.monotonic() + timeout
    while not (run / "metrics.jsonl").is_file() or len(metrics(run)) < rows:
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(sig)


def test_a_killed_two_rank_run_resumes_exactly(tmp_path):
    common = ["task=pendulum", "runner.max_iterations=8", "runner.save_interval=100", *FAST]
    full, part = tmp_path / "full", tmp_path / "part"
    assert train(*common, f"hydra.run.dir={full}", cwd=tmp_path).returncode == 0
    process = train(*common, f"hydra.run.dir={part}", cwd=tmp_path, wait=False)
    _stop_after(process, part, 2)  # torchrun passes the signal to both ranks
    _, stderr = process.communicate(timeout=120)
    assert process.returncode != 0
    stopped = [p.name for p in (part / "checkpoints").iterdir()]
    assert len(stopped) == 1 and stopped[0] != "iter_000008.pt", (stopped, stderr[-2000:])
    lines = our_lines(stderr)
    assert len(lines) == 1 and "stopped by SIGTERM" in lines[0] and "torchrun" in lines[0], stderr[-2000:]
    result = train(f"resume={part}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    timing = {"wall_time_s", "steps_per_s", "collection_s", "learning_s"}
    strip = lambda rows: [{k: v for k, v in r.items() if k not in timing} for r in rows]  # noqa: E731
    assert strip(metrics(part)) == strip(metrics(full))
    a = torch.load(part / "checkpoints" / "iter_000008.pt", weights_only=True)
    b = torch.load(full / "checkpoints" / "iter_000008.pt", weights_only=True)
    for key, value in b["model"].items():
        assert torch.equal(a["model"][key], value), key
    assert torch.equal(a["other_ranks"][0]["env"]["stats"]["rows"], b["other_ranks"][0]["env"]["stats"]["rows"])


def test_resuming_with_another_rank_count_is_one_line(tmp_path):
    run = tmp_path / "run"
    assert train("task=pendulum", "runner.max_iterations=1", *FAST, f"hydra.run.dir={run}", cwd=tmp_path).returncode == 0
    result = subprocess.run([sys.executable, "-m", "robolearn", "train", f"resume={run}", "runner.max_iterations=2"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "trained with 2 ranks" in lines[0] and "same number of ranks" in lines[0], lines


def _rank_pid(torchrun_pid: int, rank: int) -> int:
    """The worker process of `rank` (torchrun's child with RANK=<rank> in its environment)."""
    for child in Path(f"/proc/{torchrun_pid}/task/{torchrun_pid}/children").read_text().split():
        environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
        if f"RANK={rank}".encode() in environ:
            return int(child)
    raise AssertionError(f"no rank {rank} among torchrun's children")


@pytest.mark.parametrize("fault", ["dies", "hangs"])
def test_a_rank_that_dies_or_hangs_ends_the_job_with_one_line(tmp_path, fault):
    run = tmp_path / "run"
    process = train("task=pendulum", "runner.max_iterations=100000", "distributed.timeout_s=10", *FAST,
                    f"hydra.run.dir={run}", cwd=tmp_path, wait=False)  # fmt: skip
    deadline = time.monotonic() + 300
    while not (run / "metrics.jsonl").is_file() or len(metrics(run)) < 2:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1][-3000:]
        time.sleep(0.05)
    victim, survivor = _rank_pid(process.pid, 1), _rank_pid(process.pid, 0)
    started = time.monotonic()
    os.kill(victim, signal.SIGKILL if fault == "dies" else signal.SIGSTOP)
    waited = None
    try:
        if fault == "hangs":  # rank 0 gives up after the timeout; then let the stopped rank see the end too
            while _alive(survivor) and time.monotonic() - started < 120:
                time.sleep(0.1)
            waited = time.monotonic() - started
            os.kill(victim, signal.SIGCONT)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0
    lines = our_lines(stderr)
    rank0 = [line for line in lines if not line.startswith("robolearn train: error: rank ")]
    # rank 0 says it in one line; the stopped rank, let go afterwards, finds rank 0 gone and says so too,
    # unless torchrun's teardown of the failed group (SIGTERM, then SIGKILL) ends it first: a race
    assert [line.startswith("robolearn train: error: lost the other ranks while ") for line in rank0] == [True], \
        stderr[:3000] + "\n...\n" + stderr[-1500:]  # fmt: skip
    if fault == "hangs":
        assert "distributed.timeout_s=10" in rank0[0] and 9 < waited < 60, waited
        assert len(lines) in (1, 2), stderr[-3000:]  # never more than one line per rank
    assert all(line.startswith("robolearn train: error: rank 1: lost the other ranks") for line in lines if line not in rank0)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


@pytest.mark.parametrize(
    "args, expected",
    [
        (["env.num_envs=33"], "env.num_envs=33 cannot be shared by 2 ranks (the total over all ranks); valid: a multiple of 2"),
        (["--multirun", "seed=1,2"], "--multirun cannot run under torchrun"),
        (["env.num_envs=32", "runner.num_steps_per_env=3", "algo.num_mini_batches=32"],
         "algo.num_mini_batches=32 does not divide env.num_envs * runner.num_steps_per_env = 48 (per rank: env.num_envs / 2 ranks)"),
    ],
)
def test_bad_input_under_torchrun_is_one_line_from_rank_0_before_anything_starts(tmp_path, args, expected):
    result = train("task=pendulum", "runner.max_iterations=1", "logger=none", *args, cwd=tmp_path)
    assert result.returncode != 0
    lines = our_lines(result.stderr)
    assert len(lines) == 1 and lines[0].startswith(f"robolearn train: error: {expected}"), result.stderr[-3000:]
    # nothing but Hydra's own record of the composition (as for one process)
    assert not [p for p in tmp_path.glob("runs/**/*") if p.is_file() and ".hydra" not in p.parts and p.name != "train.log"]


def test_more_ranks_than_gpus_and_one_gpu_for_all_are_refused(monkeypatch):
    from robolearn import app, distributed
    from robolearn.compose import compose_train
    from robolearn.errors import UserError

    cfg = compose_train(["task=pendulum", "device=cuda", "env.num_envs=64"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    four = distributed.Ranks(rank=0, world_size=4, local_rank=0, local_world_size=4)
    with pytest.raises(UserError, match="torchrun started 4 ranks per node but this node has 2 GPUs; valid: "
                                        "--nproc_per_node at most 2, or device=cpu"):  # fmt: skip
        app.preflight(cfg, Path('/nonexistent/run'), four)
    with pytest.raises(UserError, match="device=cuda:1 puts every rank on one GPU"):
        four.device(torch.device("cuda:1"))
    third = distributed.Ranks(rank=3, world_size=4, local_rank=3, local_world_size=4)
    with pytest.raises(UserError, match="this node has 2 GPUs"):
        third.device(torch.device("cuda"))
    single = distributed.Ranks()
    assert single.device(torch.device("cuda:1")) == torch.device("cuda:1")  # one process: as configured


def test_every_ranks_episodes_count_in_the_logged_row():
    from robolearn.rl.runner import merge_episode_stats

    rank0 = {"episodes": 3.0, "episode_window": 4.0, "mean_episode_return": 10.0, "health/nonfinite_resets": 1.0,
             "curriculum/terrain_level_max": 2.0, "curriculum/terrain_level_mean": 1.0}  # fmt: skip
    rank1 = {"episodes": 5.0, "episode_window": 12.0, "mean_episode_return": 30.0, "health/nonfinite_resets": 0.0,
             "curriculum/terrain_level_max": 4.0, "curriculum/terrain_level_mean": 3.0}  # fmt: skip
    early = {"episodes": 0.0, "health/nonfinite_resets": 0.0, "curriculum/terrain_level_max": 0.0,
             "curriculum/terrain_level_mean": 0.0}  # a rank none of whose episodes ended yet  # fmt: skip
    merged = merge_episode_stats([rank0, rank1, early])
    assert merged["episodes"] == 8 and merged["episode_window"] == 16 and merged["health/nonfinite_resets"] == 1
    assert merged["mean_episode_return"] == (4 * 10 + 12 * 30) / 16  # weighted by the episodes each window holds
    assert merged["curriculum/terrain_level_max"] == 4.0
    assert merged["curriculum/terrain_level_mean"] == pytest.approx((4 * 1 + 12 * 3 + 1 * 0) / 17)
