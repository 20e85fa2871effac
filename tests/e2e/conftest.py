import json
import subprocess
import sys
from pathlib import Path

import pytest


def robolearn(*args, cwd, timeout=600):
    """Run the CLI as a user would, in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "robolearn.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


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
