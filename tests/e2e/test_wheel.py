"""A wheel install (not editable) works from any directory: its configs, robot assets and built-in
tasks are inside the wheel, and `robolearn train` and `play` run from a folder far from the source."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args, **kwargs):
    result = subprocess.run(list(args), capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, (args, result.stdout[-2000:], result.stderr[-3000:])
    return result


def test_a_wheel_install_trains_and_plays_from_any_directory(tmp_path):
    source = tmp_path / "source"  # a copy of the tracked files: building never writes into the checkout
    files = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).stdout.split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file() and not name.startswith("docs/"):
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            (source / name).write_bytes((ROOT / name).read_bytes())
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(source))
    (wheel,) = (tmp_path / "dist").glob("robolearn-*.whl")

    # A new environment that sees this one's dependencies (torch, mujoco, ...) through a .pth file,
    # but not its editable robolearn: that finder is a .pth of this site-packages, which a path
    # entry does not run.
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", str(venv))
    site = Path(run(str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    run(str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel))

    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    robolearn = str(venv / "bin" / "robolearn")
    where = run(str(venv / "bin" / "python"), "-c", "import robolearn, robolearn_tasks; print(robolearn.__file__)", cwd=work, env=env)
    assert where.stdout.strip().startswith(str(site)), where.stdout  # the wheel's copy, not the checkout
    # pyproject lists packages one by one: every package of the source tree must be in the wheel
    packages = sorted(p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "robolearn").rglob("__init__.py"))
    assert [p for p in packages if not (site / p / "__init__.py").is_file()] == []
    listed = run(robolearn, "list", cwd=work, env=env).stdout
    assert "quadruped_flat" in listed and "cartpole" in listed
    run(robolearn, "train", "runner.max_iterations=1", "env.num_envs=8", "runner.num_steps_per_env=8",
        "runner.export_onnx=false", cwd=work, env=env)  # fmt: skip
    run(robolearn, "play", "run=latest", "duration=0.2", "out=clip.mp4", cwd=work, env=env)
    assert (work / "clip.mp4").stat().st_size > 0
    assert run(robolearn, "play", "--help", cwd=work, env=env).stdout.startswith("usage: robolearn play")
    hydra_help = run(robolearn, "train", "--hydra-help", cwd=work, env=env).stdout  # configs/hydra/ ships too
    assert "--hydra-help : this help" in hydra_help and "-sc" not in hydra_help
