import atexit
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .warm_cli import WarmCli

_BASE_ENV = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
"""The environment the warm server starts with (the session's, before any test changes it)."""
READ_AT_IMPORT = ("PYTHON", "LD_", "MALLOC", "MUJOCO_", "TORCH_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "CUDA_", "ORT_")
"""Prefixes of variables the interpreter or the modules the warm server imports (torch, MuJoCo,
ONNX Runtime, Hydra, robolearn) may read while starting: a change to one of them needs a cold
start. Others (what pytest, gymnasium or torch's compiler set in this process) go to the command."""


def robolearn(*args, cwd, timeout=600, path=()):
    """Run the CLI as a user would, in its own process, with the folders `path` in front of
    PYTHONPATH: forked from a warm interpreter that has imported robolearn's stack (warm_cli.py), so
    the ~2 s of imports are paid once per session, and given this process's environment. Where a
    test has changed a variable that may be read at start-up (READ_AT_IMPORT; folders in front of
    PYTHONPATH excepted), the command starts cold with `python -m robolearn.cli`."""
    env = dict(os.environ)
    added = _added_path(env)
    if added is None:
        if python_path := os.pathsep.join(filter(None, [*map(str, path), env.get("PYTHONPATH")])):
            env["PYTHONPATH"] = python_path
        return subprocess.run([sys.executable, "-m", "robolearn.cli", *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)  # fmt: skip
    env.pop("PYTHONPATH", None)  # the session's, with the added folders in front (WarmCli.run's `path`)
    if "PYTHONPATH" in _BASE_ENV:
        env["PYTHONPATH"] = _BASE_ENV["PYTHONPATH"]
    folders = [*map(Path, path), *map(Path, added)]
    return _warm_server().run(list(args), cwd=Path(cwd), path=folders, timeout=timeout, env=env)


@functools.cache
def _warm_server() -> WarmCli:
    server = WarmCli(env=_BASE_ENV).__enter__()
    atexit.register(server.__exit__, None, None, None)
    return server


def _added_path(env: dict[str, str]) -> list[str] | None:
    """The folders `env`'s PYTHONPATH has in front of the session's, if nothing changed that the
    warm server may have read; None otherwise."""
    differ = {k for k in env.keys() | _BASE_ENV.keys() if env.get(k) != _BASE_ENV.get(k) and k != "PYTHONPATH"}
    if any(k.startswith(READ_AT_IMPORT) for k in differ):
        return None
    path, base = env.get("PYTHONPATH", ""), _BASE_ENV.get("PYTHONPATH", "")
    if path == base:
        return []
    if base and not path.endswith(os.pathsep + base):
        return None
    return [p for p in (path[: -len(base) - 1] if base else path).split(os.pathsep) if p]


def metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="session")
def trained_cartpole(tmp_path_factory):
    """The default `robolearn train` with a fixed seed: a run directory shared by several tests."""
    work = tmp_path_factory.mktemp("learn")
    run_dir = work / "run"
    result = robolearn("train", "seed=1", f"hydra.run.dir={run_dir}", cwd=work)
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir, result
