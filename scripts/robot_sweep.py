"""Bring many third-party robot models through the documented authoring path, as a new user would.

    python scripts/robot_sweep.py MODEL[:TEMPLATE] ... [--work DIR] [--iterations N] [--train KEY=VALUE ...]

For each model: `robolearn new-task sweep_<i> --robot MODEL --template TEMPLATE` (default
template: locomotion for a model with a free joint or a planar base, reach otherwise), a regular pip install of
the generated package, `robolearn train` for a few iterations (with the --train overrides, e.g. physics=warp), `robolearn export`, and
`robolearn sim2sim` of the bundle. Prints one row per model: the stage it reached, the time each
stage took, the first error line where a stage failed, and "cannot learn" where training's
episodes all end within a few steps on one termination. Nothing is shipped with it: point it
at models you have (dm_control's suite, gymnasium's MuJoCo assets, MuJoCo Menagerie, robosuite,
a robot's own URDF package). Results are recorded in docs/authoring.md ("Third-party models").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mujoco

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from robolearn.scaffold.urdf_package import copy_urdf  # noqa: E402
from robolearn.scaffold.inspect_model import inspect_model  # noqa: E402

FAST = ["env.num_envs=8", "runner.num_steps_per_env=8", "algo.num_mini_batches=1", "runner.video_interval=0",
        "runner.progress=false", "logger=none", "task.episode_length_s=1.0"]  # fmt: skip


def default_template(model: Path) -> str:
    """locomotion for a model with a floating or planar base, reach otherwise; a URDF is read as
    new-task copies it (its package:// meshes found, its root fixed to the world as MuJoCo reads
    a URDF: a legged URDF is told apart by its feet)."""
    mujoco.set_mju_user_warning(lambda message: None)  # the stages print the model's warnings, not this guess
    try:
        with tempfile.TemporaryDirectory() as folder:
            m = mujoco.MjModel.from_xml_path(str(copy_urdf(model, Path(folder), legged=False)[0])) \
                if model.suffix.lower() == ".urdf" else mujoco.MjModel.from_xml_path(str(model))  # fmt: skip
            info = inspect_model(model, m, urdf=model.suffix.lower() == ".urdf")
    except Exception:  # new-task reports the load error itself
        return "minimal"
    if info.base or info.planar:  # a free body that carries no joint (a loose object) is not a floating base
        return "locomotion"
    return "locomotion" if model.suffix.lower() == ".urdf" and len(info.feet) >= 2 else "reach"


def first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if "error" in line.lower() or line.startswith(("Traceback", "ValueError", "RuntimeError")):
            return line[:240]
    return (lines[-1] if lines else "")[:240]


def stage(args: list[str], cwd: Path, site: Path, timeout: int) -> tuple[bool, float, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    try:
        r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, time.perf_counter() - start, f"timed out after {timeout} s"
    seconds = time.perf_counter() - start
    return r.returncode == 0, seconds, "" if r.returncode == 0 else first_error(r.stderr + "\n" + r.stdout)


def sweep_one(index: int, model: Path, template: str, work: Path, iterations: int, timeout: int,
              overrides: list[str]) -> dict:  # fmt: skip
    name = f"sweep_{index}"
    folder, site, run_dir = work / name, work / f"site_{index}", work / f"run_{index}"
    py = sys.executable
    steps = [
        ("new-task", [py, "-m", "robolearn.cli", "new-task", name, "--template", template, "--robot", str(model),
                      "--out", str(folder)]),
        ("install", [py, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site),
                     str(folder)]),
        ("train", [py, "-m", "robolearn.cli", "train", f"task={name}", f"runner.max_iterations={iterations}", *FAST,
                   *overrides, f"hydra.run.dir={run_dir}"]),
        ("export", [py, "-m", "robolearn.cli", "export", f"run={run_dir}"]),
        ("sim2sim", [py, "-m", "robolearn.cli", "sim2sim", f"bundle={run_dir / 'export'}", "episodes=1"]),
    ]  # fmt: skip
    row = {"model": str(model), "template": template, "reached": "", "seconds": {}, "error": ""}
    for label, args in steps:
        passed, seconds, error = stage(args, work, site, timeout)
        row["seconds"][label] = seconds
        if not passed:
            row["error"] = f"{label}: {error}"
            return row
        row["reached"] = label
        if label == "train":
            row["doubt"] = untrainable(run_dir)
    return row


def untrainable(run_dir: Path) -> str:
    """What makes a task that went through every stage unlearnable, read from its last training
    iteration: every episode ending within a few steps on one termination (a base that starts
    below its height termination, a pose that falls at once); "" where nothing does."""
    try:
        last = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    except (OSError, IndexError, ValueError):
        return ""
    ended = {k.split("/", 1)[1]: v for k, v in last.items() if k.startswith("termination/") and isinstance(v, (int, float))}
    length = last.get("mean_episode_length")
    if not ended or length is None or length > SHORT:
        return ""
    cause, share = max(ended.items(), key=lambda item: item[1])
    return f"episodes last {length:.1f} steps, {share:.0%} end on {cause}" if share >= 0.9 else ""


SHORT = 5
"""A mean episode length (control steps) at or under which a task cannot learn to move."""


def refused(row: dict) -> bool:
    """Trained, and export refused in its one line because an actuator a bundle hands over by its
    ctrl has no name: what robolearn promises for such robots, not a failure."""
    return row["reached"] == "train" and row["error"].startswith("export:") and "has no name; the robot driver" in row["error"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="MODEL[:TEMPLATE]")
    parser.add_argument("--work", type=Path, default=Path("robot_sweep"), help="a new folder for packages and runs")
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per stage")
    parser.add_argument("--train", action="append", default=[], metavar="KEY=VALUE", help="a training override")
    args = parser.parse_args(argv)
    args.work = args.work.resolve()  # the stages run in it: a relative path would be read from there
    if args.work.exists():
        parser.error(f"{args.work} already exists; the sweep writes into a new folder only")
    args.work.mkdir(parents=True)
    rows = []
    for index, spec in enumerate(args.models):
        path, _, template = spec.partition(":")
        model = Path(path).resolve()
        row = sweep_one(index, model, template or default_template(model), args.work, args.iterations, args.timeout,
                        args.train)  # fmt: skip
        rows.append(row)
        timing = " ".join(f"{k} {v:.0f}s" for k, v in row["seconds"].items())
        status = ("ok" if row["reached"] == "sim2sim" else f"trained; no bundle ({row['error']})"
                  if refused(row) else f"FAILED at {row['error']}")  # fmt: skip
        if row.get("doubt"):
            status += f", but cannot learn: {row['doubt']}"
        names = [Path(m.partition(":")[0]).name for m in args.models]
        shown = model.name if names.count(model.name) == 1 else f"{model.parent.name}/{model.name}"  # robosuite: */robot.xml
        print(f"{shown:<28} {row['template']:<10} {status}  ({timing})", flush=True)
    failed = [r for r in rows if r["reached"] != "sim2sim" and not refused(r)]
    print(f"{sum(r['reached'] == 'sim2sim' for r in rows)}/{len(rows)} models went through new-task, install, train, "
          f"export and sim2sim ({sum(bool(r.get('doubt')) for r in rows)} of them cannot learn); "
          f"{sum(map(refused, rows))} trained but have actuators a deploy bundle cannot carry; {len(failed)} failed")  # fmt: skip
    return 1 if failed or any(r.get("doubt") for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
