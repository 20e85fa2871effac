"""Write a run's deploy bundle and check every artifact in it against the torch policy.

    policy.onnx              fp32, normalizer inside, input `obs` [batch, D] -> `actions` [batch, A]
                             (recurrent: + h_in/c_in -> h_out/c_out, listed in robot.yaml policy_state)
    policy.fp16.onnx         precision=fp16 (normalizer in fp32, MLP in fp16)
    policy.<prec>.engine     format=tensorrt (built here through TensorRT's Python API)
    <robot>.xml (+ meshes)   the robot's MJCF and the files it loads, for sim-to-sim (a URDF, or a
                             model the task edits, as its compiled model: robot.urdf -> robot.xml)
    task.yaml                the task config, naming that MJCF
    robot.yaml               the contract with the robot (metadata.py), checksums of all of the above

Each artifact runs through the deploy runtime's own engine (robolearn_deploy) for the parity and
batch-1 latency report, so what is checked is what the robot runs. The bundle is built in a
sibling folder and moved into place only when every artifact passes: a failed export never
replaces a good bundle.
"""

from __future__ import annotations

import copy
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import yaml
from omegaconf import OmegaConf

from robolearn.envs.batched_env import BatchedEnv
from robolearn.envs.env_state import CONDITIONS_FILE, conditions_summary
from robolearn.errors import UserError
from robolearn.evaluate import evaluate
from robolearn.export.metadata import policy_state, robot_metadata, runtime_gap, versions, write_robot_yaml
from robolearn.export.onnx import (INPUT_NAME, OUTPUT_NAME, SEQUENCES, ParityReport, check_parity, export_onnx,
                                   state_input, state_output)  # fmt: skip
from robolearn.interrupts import Terminated, signals_deferred
from robolearn.model_files import model_files, outside_files, write_compiled
from robolearn.rl.models import ActorCritic, Controller, InferencePolicy, PolicyGraph
from robolearn.run_dir import check_export_target
from robolearn_deploy.engines import OnnxRuntimeEngine
from robolearn_deploy.timing import latency_ms

FORMATS = ("onnx", "tensorrt")
PRECISIONS = ("fp32", "fp16")


@dataclass(frozen=True)
class TrainedTo:
    """Which policy a bundle holds: its training iteration and checkpoint file (None: not saved),
    recorded in robot.yaml as `trained_to` (`robolearn runs` notes a bundle older than the run's
    newest checkpoint)."""

    iteration: int
    checkpoint: Path | None = None

    def as_dict(self) -> dict:
        return {"iteration": int(self.iteration), "checkpoint": self.checkpoint.name if self.checkpoint else None}


@dataclass
class ArtifactReport:
    file: str
    kind: str
    precision: str
    parity: ParityReport
    latency_ms: dict[str, float]
    info: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"file": self.file, "kind": self.kind, "precision": self.precision, "parity": self.parity.as_dict(),
                "latency_ms_batch1": self.latency_ms, **self.info}  # fmt: skip

    def line(self) -> str:
        p = self.parity
        sequences = ("" if p.sequence_max_abs_diff is None else
                     f", state fed back {p.sequence_max_abs_diff:.2e} (tolerance {p.sequence_tolerance:.1e})")  # fmt: skip
        return (f"{self.file:<22} parity max abs diff random {p.random_max_abs_diff:.2e} recorded "
                f"{p.recorded_max_abs_diff:.2e} (tolerance {p.tolerance:.1e}, {p.samples} obs){sequences} | batch-1 "
                f"latency median {self.latency_ms['median'] * 1e3:.1f} us, p99 {self.latency_ms['p99'] * 1e3:.1f} us")  # fmt: skip


@dataclass
class ExportResult:
    path: Path
    artifacts: list[ArtifactReport]
    evaluation: dict[str, float]

    def print(self, source: str = "") -> None:
        """The export's summary: the training evaluation and each artifact's parity and latency."""
        e = self.evaluation
        print(f"exported {self.path}{source}; training evaluation over {e['episodes']} episodes: return "
              f"{e['return_mean']:.2f} +- {e['return_std']:.2f}, episode length {e['episode_length_mean']:.1f} steps")
        for artifact in self.artifacts:
            print(f"  {artifact.line()}")


def copy_model(asset: Path, staging: Path, name: str, edit=None) -> None:
    """Put the robot model into the bundle as `name` (metadata.model_file_name): an MJCF no task
    edits is copied as it is, with the files it includes and loads; a URDF, a model a task edits
    (robot constants, generated terrain) or one that loads files from outside its folder is written
    as its compiled model's MJCF (robot.urdf -> robot.xml) with those files. Either way sim-to-sim
    rebuilds the robot from the bundle alone."""
    if name != asset.name or edit is not None or outside_files(asset):
        write_compiled(asset, staging, name, edit, reserved=("robot.yaml", "task.yaml", CONDITIONS_FILE))
        return
    for rel in model_files(asset, "a bundle"):
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(asset.parent / rel, staging / rel)


def check_options(fmt: str, precision: str) -> None:
    """Wrong format/precision, or TensorRT asked for where it cannot run: one line, before any work."""
    if fmt not in FORMATS:
        raise UserError(f"unknown export format '{fmt}'; valid: {', '.join(FORMATS)}")
    if precision not in PRECISIONS:
        raise UserError(f"unknown precision '{precision}'; valid: {', '.join(PRECISIONS)}")
    if fmt == "tensorrt":
        from robolearn_deploy import tensorrt

        reason = tensorrt.unavailable_reason()
        if reason is not None:
            raise UserError(f"format=tensorrt: {reason}; format=onnx works without it")


def _check(policy: PolicyGraph, engine, file: str, kind: str, recorded: torch.Tensor, info: dict | None = None) -> ArtifactReport:
    parity = check_parity(policy, engine, recorded, engine.precision)
    one = np.ascontiguousarray(recorded[0, :1].numpy(), dtype=np.float32)
    if policy.state_names:
        state = [s.numpy() for s in policy.initial_state(1)]
        latency = latency_ms(lambda: engine.step(one, state))
    else:
        latency = latency_ms(lambda: engine.run(one))
    return ArtifactReport(file, kind, engine.precision, parity, latency, info or {})


def _state_names(policy: PolicyGraph) -> tuple[tuple[str, str], ...]:
    """The graph's (input, output) name of each recurrent state tensor (none feed-forward)."""
    return tuple((state_input(n), state_output(n)) for n in policy.state_names)


def _onnx_engine(policy: PolicyGraph, path: Path, precision: str = "fp32") -> OnnxRuntimeEngine:
    return OnnxRuntimeEngine(path, INPUT_NAME, OUTPUT_NAME, precision, state=_state_names(policy))


def write_artifacts(policy: PolicyGraph, obs_dim: int, staging: Path, fmt: str, precision: str, recorded: torch.Tensor,
               progress: bool = True) -> list[ArtifactReport]:  # fmt: skip
    """policy.onnx always; policy.fp16.onnx for fp16; for TensorRT an engine built from the ONNX of
    the asked precision (fp16: strongly typed, so the normalizer keeps fp32 as in the fp16 ONNX).
    The ONNX checks take seconds; a TensorRT build minutes, which `progress` announces on stderr."""
    onnx_path = export_onnx(policy, obs_dim, staging / "policy.onnx")
    reports = [_check(policy, _onnx_engine(policy, onnx_path), onnx_path.name, "onnx", recorded)]
    if precision == "fp16":
        onnx_path = export_onnx(policy, obs_dim, staging / "policy.fp16.onnx", precision="fp16")
        reports.append(_check(policy, _onnx_engine(policy, onnx_path, "fp16"), onnx_path.name, "onnx", recorded))
    if fmt == "tensorrt":
        from robolearn_deploy import tensorrt

        engine_path = staging / f"policy.{precision}.engine"
        if progress:
            print(f"building the TensorRT {precision} engine (this can take minutes) ...", file=sys.stderr, flush=True)
        info = tensorrt.build_engine(onnx_path, engine_path, precision, strongly_typed=precision == "fp16")
        engine = tensorrt.TensorRTEngine(engine_path, INPUT_NAME, OUTPUT_NAME, precision, state=_state_names(policy))
        try:
            reports.append(_check(policy, engine, engine_path.name, "tensorrt", recorded, info))
        finally:
            engine.close()
    return reports


def require_parity(reports: list[ArtifactReport], out_dir: Path) -> None:
    """One line for the first artifact whose parity check failed (the bundle is not written)."""
    failed = [r for r in reports if not r.parity.ok]
    if failed:
        p = failed[0].parity
        raise UserError(
            f"{failed[0].file} parity check failed: {p.failure} (actions up to {p.max_abs_output:.3g}); "
            f"{out_dir} left as it was"
        )


def export_bundle(
    actor_critic: ActorCritic, env: BatchedEnv, out_dir: Path, fmt: str = "onnx", precision: str = "fp32",
    progress: bool = True, trained_to: TrainedTo | None = None,
) -> ExportResult:
    """Evaluate the deterministic policy in `env` (the bundle's training evaluation, and the
    recorded observations for parity), then write and check the bundle at `out_dir`. `progress`:
    show the evaluation's progress (and a TensorRT build) on stderr. `trained_to`: the policy's
    training iteration and checkpoint, recorded in robot.yaml (none for a policy not trained here)."""
    check_options(fmt, precision)
    given, out_dir = out_dir, out_dir.resolve()  # `..` and links as the OS reads them: swapped where it really is
    check_export_target(out_dir, env.cfg.name)
    # a recurrent policy is compared over whole sequences: 200 steps of the first episodes of the
    # environments the parity check runs (onnx.probe_observations)
    recurrent = actor_critic.actor_memory is not None
    # the conditions the policy is exported under, before the evaluation's episodes move a curriculum
    conditions = {} if hasattr(env, "bundle_metadata") else conditions_summary(env)
    evaluation, recorded = evaluate(env, Controller(actor_critic, env.num_envs, env.device),
                                    record_steps=200 if recurrent else 32, progress=progress,
                                    record_envs=SEQUENCES if recurrent else None)  # fmt: skip
    policy = InferencePolicy(copy.deepcopy(actor_critic).cpu())
    recorded = recorded.cpu()
    staging = staging_dir(out_dir)
    try:
        reports = write_artifacts(policy, env.observation_dims()["policy"], staging, fmt, precision, recorded, progress)
        require_parity(reports, out_dir)
        if hasattr(env, "bundle_metadata"):  # an Isaac Lab task: its managers give the layout (robolearn/isaaclab)
            meta = env.bundle_metadata(staging)
        else:
            meta = robot_metadata(env, env.cfg.name)
            copy_model(env.asset_path, staging, meta["model_file"], env.edit_spec)
            task = OmegaConf.to_container(env.cfg, resolve=True)
            task["asset"] = meta["model_file"]  # the bundle's own copy
            for name, ranges in meta["commands"].items():  # as robot.yaml: where a command curriculum had taken them
                task["commands"][name]["ranges"] = ranges["ranges"]
            (staging / "task.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(task)))
            if conditions:  # sim2sim's referee starts its episodes under them
                (staging / CONDITIONS_FILE).write_text(yaml.safe_dump(conditions, default_flow_style=None))
        meta.update(policy_state(policy))
        if trained_to is not None:
            meta["trained_to"] = trained_to.as_dict()
        seal(meta, staging, reports, evaluation)
        gap = runtime_gap([(t["name"], t["source"]) for t in meta["observation"]["terms"]])
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    install(staging, out_dir)
    if gap:
        print(f"note: {gap}", file=sys.stderr, flush=True)
    return ExportResult(given, reports, evaluation)


def seal(meta: dict, staging: Path, reports: list[ArtifactReport], evaluation: dict | None) -> None:
    """Finish robot.yaml in the staged bundle: versions, each artifact's parity and latency, the
    training evaluation (None for an imported policy), and every checksum."""
    meta["versions"] = versions(staging / "policy.onnx")
    meta["artifacts"] = [r.as_dict() for r in reports]
    meta["evaluation"] = evaluation
    write_robot_yaml(meta, staging)


def staging_dir(out_dir: Path) -> Path:
    """A fresh sibling of `out_dir` to build a bundle in (install() moves it into place)."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.staging-", dir=out_dir.parent))
    staging.chmod(0o755)  # mkdtemp's 0700 would keep the bundle from the robot's other users
    return staging


def install(staging: Path, out_dir: Path) -> None:
    """Put a finished bundle in place: an existing one at `out_dir` (an empty directory or a
    bundle, check_export_target) is swapped out as a whole and removed only afterwards; Ctrl-C or
    SIGTERM during the swap acts once it is done (the new bundle in place, the earlier one removed)."""
    previous, swapped = None, False
    try:
        with signals_deferred():  # a signal between the two moves left the earlier bundle aside, none at out_dir
            if out_dir.exists():
                previous = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.previous-", dir=out_dir.parent))
                previous.rmdir()
                out_dir.rename(previous)
            try:
                staging.rename(out_dir)
                swapped = True
            except BaseException:  # the earlier bundle goes back where it was
                if previous is not None:
                    previous.rename(out_dir)
                shutil.rmtree(staging, ignore_errors=True)
                raise
    except (KeyboardInterrupt, Terminated) as stop:
        if swapped:  # the signal waited for the swap: the verb's "stopped" line says the bundle is whole
            stop.bundle_written = out_dir
        raise
    finally:
        if swapped and previous is not None:  # a signal that came during the swap acts after this
            shutil.rmtree(previous, ignore_errors=True)
