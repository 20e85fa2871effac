"""Every training setting of a task with wrong values: what each command line ends in.

    python scripts/settings_sweep.py cartpole
    python scripts/settings_sweep.py quadruped_rough --keys 'params\\.|commands\\.' --values 'abc|[1,2]|-1' \\
        --extra runner.export_onnx=false

Composes the task's config, takes each leaf setting the `--keys` pattern matches, and runs a short
`robolearn train` with that setting set to each of `--values` (default: text, null, nan, a negative
number, a list; for numbers also 0, inf and 1e12). The command lines run in processes forked from
one warm interpreter (tests/e2e/warm_cli.py), two at a time, with a 10 GiB address-space limit and
a time limit each. Writes one JSON line per command line (setting, value, exit code, stderr's end)
and prints the ones that did not end as they should: exit 0, or exit 2 with one line and no
traceback. Read what exited 0 too: a wrong value a task accepts silently is a finding as well.
This is how the bad-input corpus (tests/e2e/bad_inputs.py) found its setting cases of 2026-11-25.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.e2e.warm_cli import WarmCli  # noqa: E402

SHORT = ["runner.max_iterations=1", "env.num_envs=8", "runner.num_steps_per_env=8", "algo.num_mini_batches=1"]
SKIP = ("hydra", "runner.max_iterations", "env.num_envs", "runner.num_steps_per_env")


def leaves(node, prefix: str = ""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, f"{prefix}{key}.")
    else:
        yield prefix[:-1], node


def default_values(value) -> list[str]:
    values = ["abc", "null", "nan", "-1", "[1,2]"]
    if isinstance(value, bool):
        return [*values, "2"]
    if isinstance(value, (int, float)):
        return [*values, "0", "inf", "1e12"]
    if isinstance(value, list):
        return [*values, "[]", "[abc]", "[-1,-1,-1]"]
    return [*values, "''"]


def verdict(code: int, stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    if "Traceback" in stderr or any(line.startswith('  File "') for line in lines):
        return "traceback"
    if code == 0:
        return "accepted"
    if code == 2 and lines and lines[-1].startswith("robolearn train: error: "):
        return "error"
    return f"exit {code}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--keys", default=".", help="regular expression the settings must match")
    parser.add_argument("--values", default=None, help="values to try, separated by |")
    parser.add_argument("--extra", nargs="*", default=[], help="overrides every command line gets")
    parser.add_argument("--out", type=Path, default=Path("settings_sweep.jsonl"))
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    composed = subprocess.run([sys.executable, "-m", "robolearn", "train", "--cfg", "job", f"task={args.task}", *args.extra],
                              capture_output=True, text=True, cwd=ROOT, check=True).stdout  # fmt: skip
    pattern = re.compile(args.keys)
    cases = [(key, value) for key, default in leaves(yaml.safe_load(composed))
             if not key.startswith(SKIP) and pattern.search(key)
             for value in (args.values.split("|") if args.values else default_values(default))]  # fmt: skip
    print(f"{len(cases)} command lines", file=sys.stderr)
    resource.setrlimit(resource.RLIMIT_AS, (10 << 30, 10 << 30))  # the forked children inherit it
    local, servers, lock = threading.local(), [], threading.Lock()

    def run(case: tuple[str, str]) -> dict:
        key, value = case
        if not hasattr(local, "cli"):
            local.cli = WarmCli().__enter__()
            with lock:
                servers.append(local.cli)
        with tempfile.TemporaryDirectory() as ws:
            line = ["train", *SHORT, f"task={args.task}", *args.extra, f"hydra.run.dir={ws}/run", f"{key}={value}"]
            result = local.cli.run(line, cwd=Path(ws), drop_env=["DISPLAY", "WAYLAND_DISPLAY"], timeout=args.timeout)
        return {"setting": key, "value": value, "exit": result.returncode, "verdict": verdict(result.returncode, result.stderr),
                "stderr": result.stderr[-1000:]}  # fmt: skip

    counts: dict[str, int] = {}
    try:
        with args.out.open("w") as out, ThreadPoolExecutor(2) as pool:
            for row in pool.map(run, cases):
                out.write(json.dumps(row) + "\n")
                counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
                if row["verdict"] not in ("error", "accepted"):
                    last = [line for line in row["stderr"].splitlines() if line.strip()][-1:] or [""]
                    print(f"{row['verdict']}: {row['setting']}={row['value']}: {last[0][:200]}", flush=True)
    finally:
        for server in servers:
            server.__exit__()
    print(", ".join(f"{n} {v}" for v, n in sorted(counts.items())), f"(all rows: {args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
