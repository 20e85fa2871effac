"""Optional TensorRT engines: build one from the bundle's ONNX (running it: tensorrt_runtime.py).

An engine only loads on the GPU model and TensorRT version that built it. The one `robolearn export
format=tensorrt` puts in a bundle serves robots with the training machine's GPU; any other robot
builds its own with `python -m robolearn_deploy.tensorrt build <bundle dir>` (a Jetson, say), which
writes policy.<precision>.local.engine and a sidecar with its hashes so the runtime can verify it.
tensorrt and cuda-python are imported inside functions: importing this module needs neither.
TensorRTEngine and unavailable_reason live in tensorrt_runtime.py and are importable from here.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from robolearn_deploy.bundle import PRECISIONS, sha256, state_tensors
from robolearn_deploy.engines import SEQUENCE_TOLERANCE, TOLERANCE
from robolearn_deploy.errors import DeployError
from robolearn_deploy.tensorrt_runtime import TensorRTEngine, _cuda, _cudart, _logger, compute_capability, unavailable_reason

__all__ = ["PRECISIONS", "TensorRTEngine", "build_engine", "compute_capability", "local_engine_name", "main",
           "unavailable_reason"]  # fmt: skip


def local_engine_name(precision: str) -> str:
    """An engine built on the robot itself (not listed in robot.yaml; verified through its sidecar)."""
    return f"policy.{precision}.local.engine"


def _write_atomically(path: Path, data) -> None:
    """Write beside the target, then rename: readers never see half a file and a failure keeps the old one."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise DeployError(f"cannot write {path}: {exc.strerror or exc}") from None


def build_engine(onnx_path: Path, engine_path: Path, precision: str, max_batch: int = 1024,
                 workspace_mib: int = 1024, strongly_typed: bool = False) -> dict:
    """Parse the ONNX policy (inputs [batch, ...]: the observations, and a recurrent policy's state;
    outputs: the actions, and its next state) and write an engine for batches 1..max_batch, tuned
    for batch 1, which is what a control loop runs. strongly_typed: keep exactly the ONNX's own types (the
    bundle's policy.fp16.onnx keeps its normalizer in fp32 and runs the MLP in fp16); otherwise fp16 means
    TensorRT's FP16 flag on an fp32 graph, where it may pick fp16 for any layer, normalizer included."""
    if reason := unavailable_reason():
        raise DeployError(reason)
    if precision not in PRECISIONS:
        raise DeployError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
    if max_batch < 1:
        raise DeployError(f"max batch must be at least 1, got {max_batch}")
    if not onnx_path.is_file():
        raise DeployError(f"{onnx_path} does not exist; pass the bundle's ONNX policy")
    import tensorrt as trt

    logger = _logger()
    builder = trt.Builder(logger)
    flags = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED) if strongly_typed else 0
    network = builder.create_network(flags)  # TensorRT 10 networks are always explicit-batch
    parser = trt.OnnxParser(network, logger)
    if not parser.parse(onnx_path.read_bytes(), str(onnx_path)):
        errors = "; ".join(" ".join(parser.get_error(i).desc().split()) for i in range(parser.num_errors))
        raise DeployError(f"TensorRT cannot parse {onnx_path.name}: {errors or logger.last_error or 'no reason given'}")
    inputs = [network.get_input(i) for i in range(network.num_inputs)]
    shapes = {t.name: tuple(t.shape) for t in inputs}
    if not inputs or network.num_outputs < 1 or any(
        len(s) < 2 or s[0] != -1 or any(d < 1 for d in s[1:]) for s in shapes.values()
    ):
        shown = ", ".join(f"{name} {list(s)}" for name, s in shapes.items()) or "none"
        raise DeployError(f"{onnx_path.name} has inputs {shown} and {network.num_outputs} output(s); a policy's inputs "
                          "are shaped [dynamic batch, fixed sizes...] and it has at least one output")  # fmt: skip

    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, workspace_mib << 20)
    if precision == "fp32" and hasattr(trt.BuilderFlag, "TF32"):
        config.clear_flag(trt.BuilderFlag.TF32)  # on by default: it rounds matmul inputs to 10-bit mantissas
    if precision == "fp16" and not strongly_typed:
        if not hasattr(trt.BuilderFlag, "FP16"):  # gone once TensorRT builds only strongly typed networks
            raise DeployError(f"TensorRT {trt.__version__} has no FP16 builder flag; build from the bundle's "
                              "policy.fp16.onnx (export with precision=fp16)")
        config.set_flag(trt.BuilderFlag.FP16)
    profile = builder.create_optimization_profile()
    for name, shape in shapes.items():  # every input shares the batch dimension
        profile.set_shape(name, (1, *shape[1:]), (1, *shape[1:]), (max_batch, *shape[1:]))
    config.add_optimization_profile(profile)
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise DeployError(f"TensorRT cannot build {onnx_path.name}: {logger.last_error or 'no reason given'}")
    _write_atomically(engine_path, serialized)

    cudart = _cudart()
    props = _cuda(cudart, "cudaGetDeviceProperties",
                  cudart.cudaGetDeviceProperties(_cuda(cudart, "cudaGetDevice", cudart.cudaGetDevice())))
    gpu = props.name.decode(errors="replace") if isinstance(props.name, bytes) else str(props.name)
    return {"tensorrt_version": trt.__version__, "precision": precision, "gpu": gpu.strip("\x00 "),
            "compute_capability": f"{props.major}.{props.minor}", "max_batch": max_batch}


def _bundle_policy(bundle: Path, precision: str) -> tuple[Path, str, str, tuple[tuple[str, str], ...]]:
    """The bundle's ONNX of this precision (else its fp32 one) and the tensor names robot.yaml binds:
    observations, actions, and each (input, output) of a recurrent policy's state."""
    import yaml

    meta_path = bundle / "robot.yaml"
    if not meta_path.is_file():
        raise DeployError(f"{meta_path} does not exist; pass a bundle directory (robot.yaml and the ONNX policy)")
    try:
        meta = yaml.safe_load(meta_path.read_text())
        onnx = [a for a in meta["artifacts"] if a["kind"] == "onnx"]
        chosen = next((a for a in onnx if a.get("precision") == precision), None)
        chosen = chosen or next((a for a in onnx if a.get("precision") == "fp32"), onnx[0])
        names = bundle / chosen["file"], meta["observation"]["input"], meta["action"]["output"]
    except (yaml.YAMLError, UnicodeDecodeError, KeyError, TypeError, IndexError) as exc:
        raise DeployError(f"{meta_path} names no ONNX artifact, observation.input or action.output "
                          f"({type(exc).__name__}: {' '.join(str(exc).split())}); re-export the bundle") from None
    try:
        return (*names, tuple((s.input, s.output) for s in state_tensors(meta)))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DeployError(f"{meta_path} has a malformed policy_state ({type(exc).__name__}: "
                          f"{' '.join(str(exc).split())}); re-export the bundle") from None


def _parity(engine: TensorRTEngine, onnx_path: Path, input_name: str, output_name: str, precision: str,
            max_batch: int, state: tuple[tuple[str, str], ...] = ()) -> float:
    """Max |engine - ONNX Runtime| on observations around 0 (inside the graph they are normalized); one
    line and no sidecar when it exceeds the export tolerance (1e-5 fp32, 1e-2 fp16, relative above 1).
    A recurrent policy runs 64 sequences of 50 steps twice: given ONNX Runtime's state at each step
    (that tolerance), and with each side fed its own state (the export's looser sequence tolerance,
    1e-3 fp32 / 5e-2 fp16: rounding carried from step to step; robolearn/export/onnx.py)."""
    from robolearn_deploy.engines import OnnxRuntimeEngine

    reference = OnnxRuntimeEngine(onnx_path, input_name, output_name, precision, state=state)
    rng = np.random.default_rng(0)
    per_step, fed_back = [], []
    if not state:
        obs = rng.uniform(-3, 3, (256, engine.input_dim)).astype(np.float32)
        expected = reference.run(obs)
        per_step.append((np.concatenate([engine.run(obs[i : i + max_batch]) for i in range(0, len(obs), max_batch)]),
                         expected))  # fmt: skip
    else:
        batch = min(64, max_batch)
        theirs = ours = [np.zeros((batch, *shape), np.float32) for shape in engine.state_shapes]
        for _ in range(50):
            obs = rng.uniform(-3, 3, (batch, engine.input_dim)).astype(np.float32)
            got, _ = engine.step(obs, theirs)
            expected, theirs = reference.step(obs, theirs)
            per_step.append((got, expected))
            got, ours = engine.step(obs, ours)
            fed_back.append((got, expected))
    scale = max(1.0, max(float(np.abs(b).max()) for _, b in per_step))
    for pairs, tolerance in ((per_step, TOLERANCE), (fed_back, SEQUENCE_TOLERANCE)):
        diff = max((float(np.abs(a - b).max()) for a, b in pairs), default=0.0)
        if not diff < tolerance[precision] * scale:
            kind = " over sequences with the state fed back" if pairs is fed_back else ""
            raise DeployError(f"the engine differs from ONNX Runtime{kind} by {diff:.3g} (tolerance "
                              f"{tolerance[precision] * scale:.3g}); not using it")  # fmt: skip
    return max(float(np.abs(a - b).max()) for a, b in per_step)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m robolearn_deploy.tensorrt", description=(
        "Build a bundle's TensorRT engine on this machine: engines are tied to its GPU and TensorRT version."))
    build = parser.add_subparsers(dest="command", required=True).add_parser(
        "build", help="write <bundle>/policy.<precision>.local.engine and its .yaml sidecar")
    build.add_argument("bundle", type=Path)
    build.add_argument("--precision", choices=PRECISIONS, default="fp32")
    build.add_argument("--max-batch", type=int, default=1024)
    args = parser.parse_args(argv)
    try:
        import yaml

        onnx_path, input_name, output_name, state = _bundle_policy(args.bundle, args.precision)
        engine_path = args.bundle / local_engine_name(args.precision)
        typed = args.precision == "fp16" and onnx_path.name.endswith(".fp16.onnx")
        info = build_engine(onnx_path, engine_path, args.precision, args.max_batch, strongly_typed=typed)
        engine = TensorRTEngine(engine_path, input_name, output_name, args.precision, state=state)
        try:  # robot.yaml's names bind, and the engine agrees with ONNX Runtime on this machine
            info["parity_max_abs_diff"] = _parity(engine, onnx_path, input_name, output_name, args.precision,
                                                  args.max_batch, state)
        finally:
            engine.close()
        info.update(sha256=sha256(engine_path), onnx_sha256=sha256(onnx_path))
        _write_atomically(engine_path.with_name(engine_path.name + ".yaml"),
                          yaml.safe_dump(info, sort_keys=False).encode())
    except DeployError as exc:
        print(f"robolearn-deploy: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {engine_path} and its .yaml sidecar (TensorRT {info['tensorrt_version']}, {info['precision']}, "
          f"{info['gpu']}, compute capability {info['compute_capability']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
