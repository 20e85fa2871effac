"""An installed task plugin that cannot be loaded is named with its reason; every other task works."""

import subprocess
import sys

from ..plugin_dist import install_distribution
from .test_errors import FAST, one_line_error


def robolearn_with_broken_plugin(tmp_path, *args):
    env = install_distribution(tmp_path / "site", "broken-robot-tasks", "broken = broken_robot_tasks.missing:TASK")
    return subprocess.run([sys.executable, "-m", "robolearn.cli", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def test_a_plugin_that_fails_to_import_is_listed_as_broken_and_the_rest_works(tmp_path):
    listed = robolearn_with_broken_plugin(tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.strip().startswith("broken "))
    assert "[broken: broken_robot_tasks.missing:TASK (broken-robot-tasks) failed to import: ModuleNotFoundError" in line
    assert "cartpole" in listed.stdout

    one_line_error(robolearn_with_broken_plugin(tmp_path, "train", "task=broken", *FAST),
                   "task 'broken' is installed but cannot be used", "failed to import")  # fmt: skip
    ok = robolearn_with_broken_plugin(tmp_path, "train", *FAST, "runner.export_onnx=false", f"hydra.run.dir={tmp_path / 'run'}")
    assert ok.returncode == 0, ok.stderr
