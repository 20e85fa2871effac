"""A verified bundle plus an inference engine: what the robot runs.

    policy = Policy("export/")                     # checks every file, version and the layout
    action = policy.act(obs)                       # obs [D] float32 -> action [A] float32
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from robolearn_deploy.bundle import Artifact, Bundle, sha256
from robolearn_deploy.engines import Engine, OnnxRuntimeEngine
from robolearn_deploy.errors import DeployError
from robolearn_deploy.tensorrt import PRECISIONS

ENGINES = ("auto", "onnxruntime", "tensorrt")


class Policy:
    """engine: 'onnxruntime', 'tensorrt', or 'auto' (a TensorRT engine when the bundle has one and
    TensorRT can run here, else ONNX Runtime). precision picks among the bundle's artifacts."""

    def __init__(self, bundle: str | Path | Bundle, engine: str = "auto", precision: str = "fp32", threads: int = 1):
        self.bundle = bundle if isinstance(bundle, Bundle) else Bundle.load(bundle)
        if engine not in ENGINES:
            raise DeployError(f"unknown engine '{engine}'; valid: {', '.join(ENGINES)}")
        if precision not in PRECISIONS:
            raise DeployError(f"unknown precision '{precision}'; valid: {', '.join(PRECISIONS)}")
        if not isinstance(threads, int) or threads < 1:
            raise DeployError(f"threads={threads!r} is not valid; valid: an integer >= 1")
        self.engine = self._open(engine, precision, threads)
        self._obs = np.zeros((1, self.bundle.obs_size), np.float32)
        self._out = np.zeros((1, self.bundle.num_actions), np.float32)
        if isinstance(self.engine, OnnxRuntimeEngine):
            self.engine.bind(self._obs, self._out)

    @property
    def input_buffer(self) -> np.ndarray:
        """[D] buffer read by `act()` when it is called without an argument: an observation
        builder that writes here saves the copy."""
        return self._obs[0]

    def act(self, obs: np.ndarray | None = None) -> np.ndarray:
        """One observation [D] -> action [A] (a buffer overwritten by the next call). Anything but
        D real numbers is refused: numpy would broadcast a scalar or a [1] array silently."""
        if obs is not None:
            obs = np.asarray(obs)
            if obs.shape != (self.bundle.obs_size,) or obs.dtype.kind not in "fiu":
                raise DeployError(f"Policy.act takes one observation of {self.bundle.obs_size} real numbers, "
                                  f"got shape {obs.shape} dtype {obs.dtype}")  # fmt: skip
            self._obs[0] = obs
        if isinstance(self.engine, OnnxRuntimeEngine):
            self.engine.run_bound()
        else:
            self._out[:] = self.engine.run(self._obs)
        return self._out[0]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """A batch [B, D] -> [B, A] (new array)."""
        obs = np.asarray(obs)
        if obs.ndim != 2 or obs.shape[1] != self.bundle.obs_size or obs.dtype.kind not in "fiu":
            raise DeployError(f"a Policy call takes a batch [B, {self.bundle.obs_size}] of real numbers, "
                              f"got shape {obs.shape} dtype {obs.dtype}")  # fmt: skip
        return self.engine.run(np.ascontiguousarray(obs, dtype=np.float32))

    # --- engine choice --------------------------------------------------------------------------
    def _open(self, engine: str, precision: str, threads: int) -> Engine:
        b = self.bundle
        if engine in ("auto", "tensorrt"):
            from robolearn_deploy import tensorrt

            reason = tensorrt.unavailable_reason()
            artifact = self._engine_artifact(precision) if reason is None else None
            if artifact is not None:
                try:
                    return self._checked(tensorrt.TensorRTEngine(
                        b.file(artifact.file), b.input_name, b.output_name, artifact.precision,
                        expected_version=artifact.info.get("tensorrt_version"),
                    ))  # fmt: skip
                except DeployError:
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
        return self._checked(OnnxRuntimeEngine(b.file(onnx.file), b.input_name, b.output_name, onnx.precision, threads))

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

        info = yaml.safe_load(sidecar.read_text()) or {}
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
        return engine
