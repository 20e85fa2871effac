"""`robolearn import`: an Isaac Lab or mjlab rsl_rl run directory -> a robolearn deploy bundle.

    <run>/params/env.yaml, params/agent.yaml, model_<N>.pt   (+ mjlab's exported <run>.onnx)
      -> policy.onnx (the run's normalizer inside), robot.yaml (layout.py), [robot model, task.yaml]

With robot= the bundle's model is the robot as the run simulated it, and without task= its task.yaml
is a referee written from the run's config (referee.py), so sim2sim runs it as it is.

The joint order is the one thing such a run does not store for certain: mjlab's exported ONNX
carries it; otherwise `joint_order=` gives it, or `robot=` (the MJCF's order, which is the order
mjlab and Isaac Lab's Newton backend use; PhysX orders joints its own way and needs joint_order=).
Parity: the ONNX against the checkpoint's actor rebuilt in torch, on observations recorded from
the run (`obs=`) or spread over the normalizer's statistics, and against mjlab's own export where
the run has one. The bundle is built aside and moved into place only when every check passes.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import torch

from robolearn.errors import UserError
from robolearn.export.bundle import (ArtifactReport, copy_model, install, require_parity, seal, staging_dir,
                                     write_artifacts)  # fmt: skip
from robolearn.export.metadata import CTRL, model_file_name, policy_state
from robolearn.export.onnx import INPUT_NAME, OUTPUT_NAME
from robolearn.interop.dialects import Dialect, dialect
from robolearn.interop.layout import RunLayout, actuators, armature, observation_terms
from robolearn.interop.names import match_names, per_name
from robolearn.interop.referee import write_referee
from robolearn.interop.robot_model import RobotModel
from robolearn.interop.rsl_checkpoint import Checkpoint, ImportedPolicy, checkpoints, load_actor
from robolearn.interop.run_yaml import load_run_yaml
from robolearn.run_dir import bundle_meta, check_export_target
from robolearn_deploy.bundle import BUNDLE_FORMAT

SAMPLES = 1024
"""Observations drawn from the normalizer's statistics when the run's own are not given."""


@dataclass
class ImportResult:
    path: Path
    framework: str
    checkpoint: Path
    joint_order_from: str
    artifacts: list[ArtifactReport]
    run_onnx_max_abs_diff: float | None
    sim2sim: str = ""
    """What `robolearn sim2sim` of the bundle scores with (or why it cannot run it)."""
    memory: str = ""
    """A recurrent actor's core ('GRU, 1 x 64 units'), '' for a feed-forward one."""


def _checkpoint(run_dir: Path, name: str | None) -> Path:
    found = checkpoints(run_dir)
    have = f"the run's: {', '.join(p.name for p in found[-3:])}" if found else "the run has none"
    if name:
        path = Path(name) if Path(name).is_absolute() or Path(name).exists() else run_dir / name
        if path.is_dir():
            raise UserError(f"checkpoint={name} is a folder; valid: a model_<N>.pt file ({have})")
        if not path.is_file():
            raise UserError(f"checkpoint={name} does not exist (in {run_dir} or as a path); valid: a model_<N>.pt file ({have})")
        owner = path.resolve().parent
        if owner != run_dir.resolve() and (owner / "params" / "env.yaml").is_file():
            raise UserError(f"checkpoint={name} belongs to another run ({owner}), whose params/ describe it, not "
                            f"{run_dir}'s; import run={owner} checkpoint={path.name}")  # fmt: skip
        return path
    if not found:
        raise UserError(f"{run_dir} has no model_<N>.pt checkpoint")
    return found[-1]


def _run_onnx(run_dir: Path) -> tuple[Path, dict] | None:
    """mjlab's own export of the newest checkpoint (<run>.onnx with joint_names metadata)."""
    for path in sorted(run_dir.glob("*.onnx")):
        try:
            meta = {p.key: p.value for p in onnx.load(str(path), load_external_data=False).metadata_props}
        except Exception as exc:  # protobuf's DecodeError for a damaged file
            raise UserError(f"{path} is not a readable ONNX model ({type(exc).__name__}); move it away or re-export it from "
                            "the run") from None  # fmt: skip
        if "joint_names" in meta:
            return path, meta
    return None


def _joint_order(d: Dialect, joint_order: str | None, robot: RobotModel | None, run_onnx) -> tuple[list[str], str]:
    if joint_order:
        joints = [j.strip() for j in joint_order.split(",") if j.strip()]
        if not joints:
            raise UserError(f"joint_order={joint_order} names no joint; valid: the robot's joint names, comma-separated, in "
                            "the simulator's order")  # fmt: skip
        if len(set(joints)) != len(joints):
            raise UserError("joint_order= names a joint twice; give each joint of the robot once, in the simulator's order")
        return joints, "joint_order="
    if run_onnx is not None:
        return run_onnx[1]["joint_names"].split(","), f"{run_onnx[0].name} metadata"
    if robot is not None:
        backend = d.physics_backend()
        if d.framework == "isaaclab" and backend != "newton":
            raise UserError(f"the run used Isaac Lab's {backend or 'unrecorded'} physics backend, whose joint order is not the "
                            "MJCF's; pass joint_order=<joint,joint,...> (Isaac Lab prints it: robot.joint_names)")  # fmt: skip
        return list(robot.joints), f"robot= ({robot.path.name}, {'mjlab' if d.framework == 'mjlab' else 'Newton'} order)"
    raise UserError(f"the run's config does not record the robot's joint order ({d.framework} resolves joint patterns against "
                    "the simulator's order); pass robot=<model.xml> (its joint order) or joint_order=<joint,joint,...>")  # fmt: skip


def resolve(d: Dialect, policy: ImportedPolicy, joints: list[str], robot: RobotModel | None, run_onnx) -> RunLayout:
    action, robot_name = d.action()
    robot_cfg = d.robot(robot_name)
    action_joints = match_names(action.patterns, joints, action.preserve_order)
    if len(action_joints) != policy.num_actions:
        raise UserError(f"the run's action drives {len(action_joints)} joints ({', '.join(action_joints)}) but the checkpoint's "
                        f"actor has {policy.num_actions} outputs; check robot= / joint_order=")  # fmt: skip
    default_pose = per_name(d.default_joint_pos(robot_cfg), joints, "default joint position", default=0.0)
    if run_onnx is not None and "default_joint_pos" in run_onnx[1]:  # mjlab's export rounds to 3 decimals
        exported = dict(zip(joints, map(float, run_onnx[1]["default_joint_pos"].split(","))))
        wrong = [j for j in joints if abs(exported.get(j, default_pose[j]) - default_pose[j]) > 1e-3]
        if wrong:
            raise UserError(f"default position of {wrong[0]!r} is {default_pose[wrong[0]]} in params/env.yaml but "
                            f"{exported[wrong[0]]} in {run_onnx[0].name}: the two do not describe the same robot")  # fmt: skip
    default_vel = per_name(d.default_joint_vel(robot_cfg), joints, "default joint velocity", default=0.0)
    acts = actuators(d, action, robot_cfg, action_joints, default_pose, robot.position_gains() if robot else None)
    terms, commands = observation_terms(d, joints, len(action_joints), policy.obs_dim, default_vel)
    decimation = d.env.get("decimation")
    if decimation is None:
        raise UserError("the run's env.yaml has no decimation (physics steps per policy step)")
    if isinstance(decimation, bool) or not isinstance(decimation, int) or decimation < 1:
        raise UserError(f"decimation {decimation!r} in the run's env.yaml is not valid; valid: a whole number >= 1 (physics "
                        "steps per policy step)")  # fmt: skip
    dt, substeps = d.physics_dt(), d.substeps()
    return RunLayout(joints, action_joints, default_pose, acts, terms, dt * decimation, dt / substeps, decimation * substeps,
                     commands, armature(d, robot_cfg, action_joints), {"timestep": dt / substeps, **d.solver_options()})  # fmt: skip


def layout_yaml(layout: RunLayout, task: str, model_file: str | None, joint_limits: dict) -> dict:
    """robot.yaml's contract (without versions, artifacts and checksums: export.bundle.seal) from a
    resolved Isaac Lab / mjlab layout."""
    at, terms = 0, []
    for t in layout.terms:
        stop = at + t.width * t.history
        terms.append({"name": t.name, "start": at, "stop": stop, "scale": t.scale, "clip": t.clip, "units": t.units,
                      "source": t.source, "params": t.params, "history": t.history})  # fmt: skip
        at = stop
    return {
        "bundle_format": BUNDLE_FORMAT,
        "task": task,
        "model_file": model_file,
        "control_period_s": layout.control_period_s,
        "physics_dt_s": layout.physics_dt_s,
        "decimation": layout.decimation,
        "actuators": layout.actuators,
        "default_pose": layout.default_pose,
        "joint_limits": joint_limits,
        "observation": {"input": INPUT_NAME, "size": at, "terms": terms},
        "action": {"output": OUTPUT_NAME, "size": len(layout.actuators), "ctrl": CTRL},
        "commands": layout.commands,
    }  # fmt: skip


def robot_yaml(layout: RunLayout, d: Dialect, ckpt: Checkpoint, run_dir: Path, model_file: str | None,
               joint_limits: dict, task: str | None, joint_order_from: str) -> dict:  # fmt: skip
    meta = layout_yaml(layout, task or f"{d.framework}:{run_dir.name}", model_file, joint_limits)
    meta["imported_from"] = {"framework": d.framework, "run": str(run_dir.resolve()), "checkpoint": ckpt.path.name,
                             "iteration": ckpt.iteration, "checkpoint_layout": ckpt.layout,
                             "joint_order": joint_order_from, "physics_backend": d.physics_backend()}  # fmt: skip
    return meta


def _observations(path: Path | None, policy: ImportedPolicy) -> torch.Tensor:
    """[T, N, D] observations for the parity check: the run's own recording (.npy, or .npz with
    'obs': [N, D] rows, or for a recurrent actor [T, N, D] sequences of N environments or one [T, D]
    sequence), or SAMPLES drawn around the normalizer's mean with its standard deviation (a
    recurrent actor's as 16 sequences)."""
    recurrent = bool(policy.state_names)
    if path is None:
        gen = torch.Generator().manual_seed(1)
        n = policy.normalizer
        shape = (SAMPLES // 16, 16) if recurrent else (1, SAMPLES)
        return n.mean + n.std * torch.randn(*shape, policy.obs_dim, generator=gen)
    try:
        data = np.load(path)
        obs = data["obs"] if isinstance(data, np.lib.npyio.NpzFile) else data
    except Exception as exc:
        raise UserError(f"obs={path} is not a .npy array or an .npz with 'obs' ({type(exc).__name__})") from None
    shapes = f"[T, N, {policy.obs_dim}] or [T, {policy.obs_dim}] (sequences)" if recurrent else f"[N, {policy.obs_dim}]"
    try:
        obs = np.asarray(obs, dtype=np.float32)
    except (TypeError, ValueError):
        raise UserError(f"obs={path} holds {np.asarray(obs).dtype} values, not numbers; valid: finite observations shaped {shapes}") from None
    if obs.ndim not in ((2, 3) if recurrent else (2,)) or obs.shape[-1] != policy.obs_dim or obs.size == 0:
        raise UserError(f"obs={path} must hold finite observations shaped {shapes}, got {list(obs.shape)}")
    if not np.isfinite(obs).all():
        raise UserError(f"obs={path} holds nan or inf; valid: finite observations shaped {shapes}")
    if not recurrent:
        return torch.from_numpy(obs).unsqueeze(0)
    return torch.from_numpy(obs if obs.ndim == 3 else obs[:, None])


def _run_session_diff(session, policy: ImportedPolicy, recorded: torch.Tensor) -> float:
    """Max |the run's own ONNX - our actor| on recorded observations. mjlab exports a batch-1 graph,
    fed one row at a time; a recurrent one takes and returns rsl_rl's state ([layers, 1, hidden]
    each), which both sides feed back along each recorded sequence (at most 4 of them)."""
    names = [i.name for i in session.get_inputs()]
    if not policy.state_names:
        x = recorded.reshape(-1, policy.obs_dim)[:256]
        theirs = np.concatenate([session.run(None, {names[0]: row[None].numpy()})[0] for row in x])
        with torch.no_grad():
            return float(np.abs(theirs - policy(x).numpy()).max())
    worst = 0.0
    for seq in recorded[:, :4].unbind(1):  # [T, D] each
        ours = policy.initial_state(1)
        theirs = [s.transpose(0, 1).numpy() for s in ours]  # rsl_rl: [layers, batch, hidden]
        for row in seq:
            got, *theirs = session.run(None, {names[0]: row[None].numpy(), **dict(zip(names[1:], theirs))})
            with torch.no_grad():
                expected, *ours = policy(row[None], *ours)
            worst = max(worst, float(np.abs(got - expected.numpy()).max()))
    return worst


def _compare_run_onnx(run_onnx, ckpt: Checkpoint, newest: Path, recorded: torch.Tensor) -> float | None:
    """Max |mjlab's own ONNX - our actor| (None where the run has none, or it is of another checkpoint)."""
    if run_onnx is None or ckpt.path.resolve() != newest.resolve():
        return None
    import onnxruntime

    session = onnxruntime.InferenceSession(str(run_onnx[0]), providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    if inputs[0].shape[-1] != ckpt.policy.obs_dim or len(inputs) != 1 + len(ckpt.policy.state_names):
        return None
    return _run_session_diff(session, ckpt.policy, recorded)


def _check_loads(staging: Path) -> None:
    """Load the staged bundle as the deploy runtime will (robolearn_deploy's own checks of
    robot.yaml: timing, gains, limits, layout), so an import never installs a bundle the runtime
    refuses; its refusal becomes the import's one line."""
    from robolearn_deploy.bundle import Bundle
    from robolearn_deploy.errors import DeployError

    try:
        Bundle.load(staging)
    except DeployError as exc:
        message = str(exc).replace(" (re-export the bundle)", "").replace("; re-export the bundle", "")
        raise UserError(f"the bundle made from the run is one the deploy runtime refuses: {message}; nothing was written") from None


def import_run(run_dir: Path, out: Path | None = None, robot: Path | None = None, task: str | None = None,
               joint_order: str | None = None, checkpoint: str | None = None, obs: Path | None = None,
               precision: str = "fp32", progress: bool = True) -> ImportResult:  # fmt: skip
    if not run_dir.is_dir():
        raise UserError(f"run={run_dir} is not a directory; give an rsl_rl run directory (params/, model_<N>.pt)")
    env, agent = load_run_yaml(run_dir / "params" / "env.yaml"), load_run_yaml(run_dir / "params" / "agent.yaml")
    d = dialect(env, agent)
    path = _checkpoint(run_dir, checkpoint)
    ckpt = load_actor(path, agent)
    out = (out or run_dir / "robolearn_bundle").resolve()  # `..` and links as the OS reads them (export_bundle)
    check_export_target(out)
    held = bundle_meta(out)
    if held is not None and (held.get("imported_from") or {}).get("run") != str(run_dir.resolve()):
        raise UserError(f"out={out} holds a bundle of task '{held.get('task')}' that was not imported from {run_dir}; "
                        "choose a new path (import replaces only a bundle it made from the same run)")  # fmt: skip
    model = RobotModel(robot) if robot else None
    run_onnx = _run_onnx(run_dir) if d.framework == "mjlab" else None
    joints, order_from = _joint_order(d, joint_order, model, run_onnx)
    if model is not None and set(model.joints) != set(joints):
        extra = sorted(set(joints) ^ set(model.joints))
        raise UserError(f"robot={robot} and the run disagree on the joints (e.g. {extra[0]!r} is in only one of them); "
                        "give the model of the robot the run trained")  # fmt: skip
    layout = resolve(d, ckpt.policy, joints, model, run_onnx)
    recorded = _observations(obs, ckpt.policy)
    run_onnx_diff = _compare_run_onnx(run_onnx, ckpt, (checkpoints(run_dir) or [path])[-1], recorded)
    if run_onnx_diff is not None and run_onnx_diff > 1e-4:
        raise UserError(f"the run's own {run_onnx[0].name} and {path.name}'s actor differ by {run_onnx_diff:.3g}: the "
                        "checkpoint was not read as the run's framework reads it; nothing was written")  # fmt: skip
    staging = staging_dir(out)
    try:
        reports = write_artifacts(ckpt.policy, ckpt.policy.obs_dim, staging, "onnx", precision, recorded, progress)
        require_parity(reports, out)
        model_file = None
        scored_by = "not possible without a robot model: pass robot=<model.xml> (the run's robot) or task=<robolearn task>"
        if model is not None:
            model_file = model_file_name(model.path, edited=True)
            if task:
                copy_model(model.path, staging, model_file, model.edit(layout.actuators, layout.armature, layout.physics))
            else:  # robot= alone: the bundle carries its own referee (interop/referee.py)
                scored_by = write_referee(d, layout, model, staging, model_file)
        if task:  # without robot=, the task's own robot model goes into the bundle
            from robolearn.interop.sim2sim_task import write_task_yaml

            model_file = write_task_yaml(task, staging, model_file, layout)
            scored_by = f"scored by task {task} (its rewards, terminations and metrics)"
        limits = RobotModel(staging / model_file).joint_limits() if model_file else {}
        meta = robot_yaml(layout, d, ckpt, run_dir, model_file, limits, task, order_from)
        meta.update(policy_state(ckpt.policy))
        seal(meta, staging, reports, None)
        _check_loads(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    install(staging, out)
    core = ckpt.policy.memory
    memory = f"{core.kind.upper()}, {core.layers} x {core.hidden} units" if core is not None else ""
    return ImportResult(out, d.framework, path, order_from, reports, run_onnx_diff, scored_by, memory)
