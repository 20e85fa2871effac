"""`robolearn` command lines, each in its own process, without paying the interpreter's start-up
(torch, Hydra, MuJoCo: ~2 s) every time: for the bad-input corpus's ~200 command lines and the
e2e tests' `robolearn(...)` (conftest.py).

A server process (this file, run as a script) imports robolearn's stack once and nothing else
(no plugin is discovered, no tensor op runs, no thread starts), then forks one child per command
line: the child changes to the case's folder, adjusts its environment and path, runs
`robolearn.cli.main(args)` with stdout and stderr going to files, and exits with its exit code.
Each command line thus runs in a fresh process whose only head start is the imported modules, as
`python -m robolearn.cli` would have them.

    with WarmCli() as cli:
        result = cli.run(["train", "algo.gamma=2"], cwd=ws, drop_env=["DISPLAY"], path=[site])
        result.returncode, result.stdout, result.stderr
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str


class WarmCli:
    """One server process, started with environment `env` (default: this process's); `run` is not
    thread-safe (use one WarmCli per thread)."""

    def __init__(self, env: dict[str, str] | None = None):
        self._env = env

    def __enter__(self) -> WarmCli:
        self._proc = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, bufsize=1, env=self._env)  # fmt: skip
        ready = self._proc.stdout.readline()
        if ready.strip() != "ready":
            raise RuntimeError(f"the warm robolearn server did not start: {ready!r}")
        return self

    def run(self, args: list[str], cwd: Path, drop_env: list[str] = (), path: list[Path] = (), timeout: float = 600,
            env: dict[str, str] | None = None) -> Result:  # fmt: skip
        """`args` in folder `cwd`, in the server's environment or `env`, less `drop_env`, with the
        folders `path` in front of PYTHONPATH and sys.path."""
        with tempfile.TemporaryDirectory() as tmp:
            request = {"args": list(args), "cwd": str(cwd), "drop_env": list(drop_env), "path": [str(p) for p in path],
                       "out": str(Path(tmp) / "out"), "err": str(Path(tmp) / "err"), "timeout": timeout, "env": env}  # fmt: skip
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
            reply = self._proc.stdout.readline()
            if not reply:
                raise RuntimeError("the warm robolearn server died")
            code = json.loads(reply)["returncode"]
            read = lambda name: Path(request[name]).read_text(errors="replace")  # noqa: E731
            return Result(list(args), code, read("out"), read("err"))

    def __exit__(self, *exc) -> None:
        self._proc.stdin.close()
        self._proc.wait(timeout=30)


def _child(request: dict) -> None:
    """In the forked child: become the command line's process, run it, exit with its code."""
    code = 1
    try:
        stdin = os.open(os.devnull, os.O_RDONLY)  # the server's stdin carries the requests: not the child's to read
        os.dup2(stdin, 0)
        os.close(stdin)
        sys.stdin = open(0, closefd=False)
        for fd, name in ((1, "out"), (2, "err")):
            target = os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(target, fd)
            os.close(target)
        os.chdir(request["cwd"])
        if request["env"] is not None:
            os.environ.clear()
            os.environ.update(request["env"])
        for key in request["drop_env"]:
            os.environ.pop(key, None)
        if request["path"]:
            os.environ["PYTHONPATH"] = os.pathsep.join([*request["path"], *filter(None, [os.environ.get("PYTHONPATH")])])
            sys.path[:0] = request["path"]
        sys.argv = ["robolearn", *request["args"]]
        from robolearn import cli

        code = cli.main(request["args"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


def _serve() -> None:
    # what the verbs import anyway; having imported it is all the head start a child gets (the last
    # two lines: what a run imports late, to export its policy (torch.onnx.export: ~3-4 s on the
    # 2-core VM) and to log it; importing them starts no thread)
    for module in ("torch", "hydra", "mujoco", "onnxruntime", "robolearn.cli", "robolearn.app", "robolearn.run_policy",
                   "robolearn.compose", "robolearn.export.bundle", "robolearn.sim2sim",
                   "torch.onnx._internal.exporter._core", "torch.export._trace", "onnxscript.function_libs.torch_lib.ops",
                   "torch.utils.tensorboard"):  # fmt: skip
        importlib.import_module(module)

    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        deadline = time.monotonic() + request["timeout"]
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.01)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        del sys.path[0]  # this folder's modules (conftest, browser, ...) are not the child's to import
    _serve()
