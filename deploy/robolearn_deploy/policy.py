"""A verified bundle plus an inference engine: what the robot runs.

    policy = Policy("export/")                     # checks every file, version and the layout
    action = policy.act(obs)                       # obs [D] float32 -> action [A] float32
    policy.reset()                                 # a new episode: a recurrent policy forgets

A recurrent policy keeps its state between `act()` calls and starts from the bundle's reset
value at construction and at every `reset()` (ControlLoop calls it at an episode start and when
its watchdog trips). Batched calls pass the state explicitly: policy(obs, *state) -> (actions,
*next state), with `initial_state(batch)` to start from.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from robolearn_deploy.bundle import PRECISIONS, Artifact, Bundle, sha256
from robolearn_deploy.engines import Engine, OnnxRuntimeEngine
from robolearn_deploy.errors import DeployError

ENGINES = ("auto", "onnxruntime", "tensorrt")
MAX_THREADS = 1024
"""ONNX Runtime's threads for one policy: more is a mistake (ONNX Runtime refuses past 2**31)."""


class Policy:
    """engine: 'onnxruntime', 'tensorrt', or 'auto' (a TensorRT engine when the bundle has one and
    TensorRT can run here, else ONNX Runtime). precision picks among the bundle's artifacts."""

    def __init__(self, bundle: str | Path | Bundle, engine: str = "auto", precision: str = "fp32", threads: int = 1):
        self.bundle = bundle if isinstance(bundle, Bundle) else Bundle.load(bundle)
        if engine not in ENGINES:
            raise DeployError(f"unknown engine '{engine}'; valid: {', '.join(ENGINES)}")
        if precision not in PRECISIONS:
            raise DeployError(f"unknown precision '{precision}'; valid: {', '.join(PRECISIONS)}")
        if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= MAX_THREADS:
            raise DeployError(f"threads={threads!r} is not valid; valid: an integer 1..{MAX_THREADS}")
        self.engine = self._open(engine, precision, threads)
        self._obs = np.zeros((1, self.bundle.obs_size), np.float32)
        self._out = np.zeros((1, self.bundle.num_actions), np.float32)
        self._state = self.initial_state(1)
        self._next_state = self.initial_state(1)
        if isinstance(self.engine, OnnxRuntimeEngine):
            self.engine.bind(self._obs, self._out, self._state, self._next_state)
        self._refuse_nonfinite()

    def _refuse_nonfinite(self) -> None:
        """One inference at a zero observation, the state at its reset: weights or a normalizer that
        are not finite act NaN for every input, so such a bundle is refused at load, not at the
        robot's first tick (the watchdog would trip on every episode)."""
        zeros = np.zeros((1, self.bundle.obs_size), np.float32)
        out = self(zeros, *self.initial_state(1)) if self.is_recurrent else (self(zeros),)
        if not all(np.isfinite(a).all() for a in out):
            raise DeployError(f"{self.bundle.path}: the policy acts NaN or inf at a zero observation (its weights or "
                              "normalizer are not finite: a training that diverged, or a damaged export); valid: "
                              "a bundle exported from a sound checkpoint")  # fmt: skip

    @property
    def is_recurrent(self) -> bool:
        return bool(self.bundle.state)

    def initial_state(self, batch: int) -> list[np.ndarray]:
        """The state of `batch` episodes at their start ([] for a feed-forward policy)."""
        return [np.full((batch, *s.shape), s.reset, np.float32) for s in self.bundle.state]

    def reset(self) -> None:
        """Start a new episode: the recurrent state back to its reset value (no-op feed-forward)."""
        for buffer, spec in zip(self._state, self.bundle.state):
            buffer.fill(spec.reset)

    @property
    def input_buffer(self) -> np.ndarray:
        """[D] buffer read by `act()` when it is called without an argument: an observation
        builder that writes here saves the copy."""
        return self._obs[0]

    def act(self, obs: np.ndarray | None = None) -> np.ndarray:
        """One observation [D] -> action [A], an array of its own (a driver may keep the previous
        action for a rate limit or a log). Anything but D real numbers is refused: numpy would
        broadcast a scalar or a [1] array silently."""
        if obs is not None:
            obs = _unmasked(obs, "Policy.act")
            if obs.shape != (self.bundle.obs_size,) or obs.dtype.kind not in "fiu":
                raise DeployError(f"Policy.act takes one observation of {self.bundle.obs_size} real numbers, "
                                  f"got shape {obs.shape} dtype {obs.dtype}")  # fmt: skip
            with np.errstate(over="ignore"):  # a float64 beyond float32 becomes inf: refused below
                self._obs[0] = obs
            if not np.isfinite(self._obs[0]).all():  # a NaN action would go to the robot
                bad = int(np.flatnonzero(~np.isfinite(self._obs[0]))[0])
                raise DeployError(f"Policy.act: observation {bad} is {obs[bad]}, not a finite float32; valid: finite "
                                  "numbers (a sensor that failed: stop the robot, or use ControlLoop, which trips on it)")  # fmt: skip
        if isinstance(self.engine, OnnxRuntimeEngine):
            self.engine.run_bound()
        elif self._state:
            self._out[:], next_state = self.engine.step(self._obs, self._state)
            for buffer, value in zip(self._next_state, next_state):
                buffer[:] = value
        else:
            self._out[:] = self.engine.run(self._obs)
        for state, value in zip(self._state, self._next_state):  # the next tick starts from the new state
            state[:] = value
        return self._out[0].copy()

    def __call__(self, obs: np.ndarray, *state: np.ndarray):
        """A batch [B, D] -> [B, A] (new array). A recurrent policy takes its state too and returns
        (actions, *next state): policy(obs, *policy.initial_state(B)) starts B episodes."""
        obs = _unmasked(obs, "a Policy call")
        if obs.ndim != 2 or obs.shape[1] != self.bundle.obs_size or obs.dtype.kind not in "fiu":
            raise DeployError(f"a Policy call takes a batch [B, {self.bundle.obs_size}] of real numbers, "
                              f"got shape {obs.shape} dtype {obs.dtype}")  # fmt: skip
        with np.errstate(over="ignore"):
            obs = np.ascontiguousarray(obs, dtype=np.float32)
        if not np.isfinite(obs).all():
            row, col = (int(i[0]) for i in np.nonzero(~np.isfinite(obs)))
            raise DeployError(f"a Policy call: observation [{row}, {col}] is {obs[row, col]}, not a finite float32; "
                              "valid: finite numbers")  # fmt: skip
        specs = self.bundle.state
        if not specs:
            if state:
                raise DeployError(f"this bundle's policy is feed-forward: call it with the observations only, got "
                                  f"{len(state)} state array(s) too")  # fmt: skip
            return _batch_run(self.engine.run, obs)
        expected = [(obs.shape[0], *s.shape) for s in specs]
        shown = ", ".join(f"{s.name} {list(e)}" for s, e in zip(specs, expected))
        if len(state) != len(specs):
            raise DeployError(f"this bundle's policy is recurrent: call it as policy(obs, {', '.join(s.name for s in specs)}) "
                              f"with its state ({shown}; policy.initial_state(batch) at an episode start), got "
                              f"{len(state)} state array(s); act() keeps the state itself")  # fmt: skip
        arrays = []
        for spec, shape, value in zip(specs, expected, state):
            value = np.asarray(value)
            if value.shape != shape or value.dtype.kind not in "fiu":
                raise DeployError(f"policy state {spec.name!r} must be {list(shape)} real numbers for this batch, got "
                                  f"shape {list(value.shape)} dtype {value.dtype}")  # fmt: skip
            arrays.append(np.ascontiguousarray(value, dtype=np.float32))
        actions, next_state = _batch_run(self.engine.step, obs, arrays)
        return (actions, *next_state)

    # --- engine choice --------------------------------------------------------------------------
    def _open(self, engine: str, precision: str, threads: int) -> Engine:
        b = self.bundle
        state = tuple((s.input, s.output) for s in b.state)
        if engine in ("auto", "tensorrt"):
            from robolearn_deploy import tensorrt

            reason = tensorrt.unavailable_reason()
            artifact = self._engine_artifact(precision) if reason is None else None
            if artifact is not None:
                opened = None
                try:
                    opened = tensorrt.TensorRTEngine(
                        b.file(artifact.file), b.input_name, b.output_name, artifact.precision,
                        expected_version=artifact.info.get("tensorrt_version"), state=state,
                    )  # fmt: skip
                    return self._checked(opened)
                except DeployError:
                    if opened is not None:
                        opened.close()  # its GPU buffers and stream, now rather than at garbage collection
                    if engine == "tensorrt":
                        raise  # auto: an engine that cannot load here leaves ONNX Runtime
            elif engine == "tensorrt":
                raise DeployError(reason or (
                    f"{b.path} has no {precision} TensorRT engine for this GPU; export with format=tensorrt "
                    f"precision={precision} on a machine with it, or build one here: "
                    f"python -m robolearn_deploy.tensorrt build {b.path} --precision {precision}"
                ))  # fmt: skip
        onnx = b.artifact("onnx", precision) or (b.artifact("onnx", "fp32") if engine == "auto" else None)
        if onnx is None:
            have = ", ".join(f"{a.file} ({a.kind} {a.precision})" for a in b.artifacts)
            raise DeployError(f"{b.path} has no {precision} ONNX policy; it has: {have}")
        return self._checked(OnnxRuntimeEngine(b.file(onnx.file), b.input_name, b.output_name, onnx.precision, threads,
                                               state))  # fmt: skip

    def _engine_artifact(self, precision: str) -> Artifact | None:
        """An engine built on this computer (policy.<precision>.local.engine + .yaml sidecar,
        checked against the bundle's ONNX), else one exported with the bundle for this GPU."""
        from robolearn_deploy import tensorrt

        engine = self.bundle.path / tensorrt.local_engine_name(precision)
        sidecar = engine.with_name(engine.name + ".yaml")
        if not (engine.is_file() and sidecar.is_file()):
            listed = self.bundle.artifact("tensorrt", precision)
            if listed is not None and listed.info.get("compute_capability") != tensorrt.compute_capability():
                return None  # built for another GPU: it would not load here
            return listed
        import yaml

        try:
            info = yaml.safe_load(sidecar.read_text()) or {}
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise DeployError(f"{sidecar} is not valid YAML ({type(exc).__name__}); rebuild the engine") from None
        if not isinstance(info, dict):
            raise DeployError(f"{sidecar} is not an engine description; rebuild the engine")
        onnx = self.bundle.artifact("onnx", precision) or self.bundle.artifact("onnx", "fp32")
        if onnx is None or info.get("onnx_sha256") != self.bundle.meta["files"][onnx.file]["sha256"]:
            raise DeployError(f"{engine.name} was built from another policy than this bundle's; rebuild it")
        if info.get("sha256") != sha256(engine):
            raise DeployError(f"{engine.name} does not match the sha256 in {sidecar.name}; rebuild it")
        return Artifact(engine.name, "tensorrt", precision, info)

    def _checked(self, engine) -> Engine:
        b = self.bundle
        if engine.input_dim != b.obs_size or engine.output_dim != b.num_actions:
            raise DeployError(
                f"the policy takes {engine.input_dim} observations and gives {engine.output_dim} actions, but "
                f"robot.yaml describes {b.obs_size} and {b.num_actions}: layout mismatch; re-export the bundle"
            )
        for spec, shape in zip(b.state, getattr(engine, "state_shapes", [])):
            if tuple(shape) != spec.shape:
                raise DeployError(f"the policy's state {spec.input!r} is shaped {list(shape)} but robot.yaml says "
                                  f"{list(spec.shape)}; re-export the bundle")  # fmt: skip
        return engine


def _unmasked(obs, where: str) -> np.ndarray:
    """The observation as an array; a masked array's masked entries (readings that are missing)
    are refused: np.asarray would pass whatever lies under the mask to the policy."""
    if np.ma.isMaskedArray(obs) and np.ma.getmaskarray(obs).any():
        bad = tuple(int(i[0]) for i in np.nonzero(np.ma.getmaskarray(obs)))
        raise DeployError(f"{where}: observation {list(bad) if len(bad) > 1 else bad[0]} is masked (a missing reading); "
                          "valid: an array of finite numbers, every entry read")  # fmt: skip
    return np.asarray(obs.data if np.ma.isMaskedArray(obs) else obs)


def _batch_run(run, obs: np.ndarray, *state):
    """An engine's run of a batch; its own failure (a batch too large for its memory, ...) as a
    DeployError that names the batch."""
    try:
        return run(obs, *state)
    except DeployError:
        raise
    except Exception as e:  # noqa: BLE001 (ONNX Runtime's and TensorRT's exceptions share no base class)
        message = " ".join(str(e).split()) or type(e).__name__
        size = re.search(r"allocate memory for requested buffer of size (\d+)", message)
        reason = f"it could not allocate {int(size[1]) / 2**30:.1f} GiB" if size else message[:300]
        raise DeployError(f"a Policy call on a batch of {obs.shape[0]} observations failed in the engine: {reason}; "
                          "valid: a smaller batch (split it)") from e
