import os
import subprocess
import sys
from pathlib import Path

# One OpenMP thread per process, set before torch loads its OpenMP runtime, for this process and
# every command a test starts: the suite runs one pytest worker per core (pytest -n auto), and
# torch's idle OpenMP threads spin after each parallel op, so two workers with two threads each
# ran some tests 2-12x slower (tests/rl/test_recurrent.py 10 s -> 130 s, 2-core VM, 2026-11-27).
# One thread also keeps every test's numbers the same whether the suite runs in parallel or not.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

# Ctrl+C reaches the commands tests start even when the suite itself was started where SIGINT is
# ignored (`nohup pytest &` from a shell without job control): an ignored SIGINT is inherited by
# every child, and Python installs its KeyboardInterrupt handler only where SIGINT was not ignored,
# so each Ctrl+C test would time out. A handled signal is reset to the default in a child.
import signal  # noqa: E402

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import pytest  # noqa: E402
import torch  # noqa: E402

from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.registry import get_task

from robolearn.paths import assets_dir

os.environ.setdefault("MUJOCO_GL", "egl")


SLOWEST_FILES = (
    "e2e/test_memory_task.py", "e2e/test_bad_inputs.py", "e2e/test_tune.py", "envs/test_every_task.py",
    "distributed/test_torchrun.py", "envs/test_determinism_probe.py", "e2e/test_train_cli.py", "tasks/test_arm_pose.py",
    "e2e/test_new_task.py", "e2e/test_viewers.py", "e2e/test_new_task_learns.py", "e2e/test_play.py", "test_export.py",
    "physics/test_engine_backends.py", "envs/test_env_compile.py",
)  # fmt: skip
"""The test files that take longest, longest first (each file's setup, call and teardown times in a
fresh-clone run's --durations=0, 2-core VM, 2026-11-29: 513 s down to 64 s). pytest -n auto --dist loadfile hands each worker one file at a time, in collection
order (pytest_configure turns off xdist's own order, most tests first, which left the memory task's
single 6-minute test to run alone at the end); starting with these, the workers end together."""


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist's --no-loadscope-reorder
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).resolve().parent
    rank = {name: k for k, name in enumerate(SLOWEST_FILES)}

    def file_rank(item) -> int:
        path = Path(item.path).resolve()
        return rank.get(path.relative_to(here).as_posix(), len(rank)) if path.is_relative_to(here) else len(rank)

    items.sort(key=file_rank)  # stable: every other file keeps its place


FAKES = Path(__file__).resolve().parent / "fakes"
"""Stand-ins for tensorrt and cuda-python (tests/fakes/README.md)."""


def _fake_modules() -> list[str]:
    return [m for m in sys.modules if m == "tensorrt" or m.startswith("tensorrt.") or m.split(".")[0] == "cuda"]


@pytest.fixture
def fake_tensorrt(monkeypatch):
    """NVIDIA's tensorrt and cuda-python replaced, for this test and the subprocesses it starts, by
    the stand-ins in tests/fakes (TensorRT's API over ONNX Runtime, bounds-checked fake device
    memory): the TensorRT path runs where neither TensorRT nor a GPU exists. Yields the fake
    CUDA runtime module."""
    import robolearn_deploy.tensorrt_runtime as deploy_trt

    for name in _fake_modules():  # a real tensorrt already imported steps aside for the test
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(FAKES))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FAKES), os.environ.get("PYTHONPATH")])))
    monkeypatch.setattr(deploy_trt, "_LOGGER", None)  # its class derives from the fake's ILogger
    from cuda.bindings import runtime

    assert runtime.__file__.startswith(str(FAKES))
    yield runtime
    for name in _fake_modules():
        del sys.modules[name]


@pytest.fixture
def cartpole_xml():
    return assets_dir() / "cartpole.xml"


@pytest.fixture
def make_env():
    """make_env(task, overrides=[...], num_envs=..., physics=...) -> BatchedEnv, closed afterwards
    (overrides may choose a randomization preset: "randomization=sim2real")."""
    built = []

    def make(task="cartpole", overrides=(), num_envs=16, physics="mujoco", seed=0):
        cfg = compose_train([f"task={task}", *overrides])
        env = BatchedEnv(cfg.task, get_task(task), num_envs, physics=physics, device="cpu", seed=seed,
                         physics_settings={"num_threads": 2}, randomization=cfg.randomization)
        built.append(env)
        return env

    yield make
    for env in built:
        env.close()


@pytest.fixture
def installed_tasks(monkeypatch):
    """The installed tasks as a dict a test may add TaskPlugins to (composition and get_task see
    them); afterwards the added tasks leave Hydra's ConfigStore (a global) again."""
    from hydra.core.config_store import ConfigStore

    from robolearn import compose, registry

    tasks = registry.discover_tasks()
    installed = set(tasks)
    monkeypatch.setattr(compose, "discover_tasks", lambda: dict(tasks))
    monkeypatch.setattr(registry, "discover_tasks", lambda: dict(tasks))
    yield tasks
    stored = ConfigStore.instance().repo.get("task", {})
    for name in set(tasks) - installed:
        stored.pop(f"{name}.yaml", None)
        registry.BROKEN.pop(name, None)


def random_actions(env, gen):
    return torch.rand(env.num_envs, env.num_actions, generator=gen) * 4 - 2


@pytest.fixture(scope="session")
def tiny_quadruped_run(tmp_path_factory):
    """A quadruped_flat run of two 8-env iterations, a checkpoint after each: for what needs a run
    of a task with a command (play, the browser viewer), not a trained policy."""
    work = tmp_path_factory.mktemp("tiny_quadruped")
    run = work / "run"
    result = subprocess.run([sys.executable, "-m", "robolearn.cli", "train", "task=quadruped_flat", "runner.max_iterations=2",
                             "runner.save_interval=1", "env.num_envs=8", "runner.num_steps_per_env=8", "algo.num_mini_batches=1",
                             "runner.export_onnx=false", "runner.video_interval=0", f"hydra.run.dir={run}"],
                            cwd=work, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return run
