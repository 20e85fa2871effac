"""The bad-input corpus (tests/e2e/test_bad_inputs.py): a workspace of the files a user has, and
every mistake as a command line run against its own copy of that workspace.

`{ws}` in an argument is that copy. Each case names its class (cli, config, plugin, file) and the
words its one-line error must contain: what is wrong and, where there is a choice, what is valid.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..plugin_dist import install_distribution
from .test_errors import FAST

NEW = "hydra.run.dir={ws}/new"


@dataclass(frozen=True)
class Case:
    id: str
    cls: str
    args: tuple[str, ...]
    expect: tuple[str, ...]
    site: bool = False
    """Run with the workspace's fake plugin distributions on PYTHONPATH."""
    exit_code: int = 2
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables the command line runs with (read after the warm server's imports)."""


def train(id: str, *args: str, expect: tuple[str, ...], cls: str = "config", **kw) -> Case:
    """A `robolearn train` that must fail before anything trains (FAST keeps it short if not)."""
    return Case(id, cls, ("train", *FAST, NEW, *args), expect, **kw)


def cli(id: str, *args: str, expect: tuple[str, ...], cls: str = "cli", **kw) -> Case:
    return Case(id, cls, tuple(args), expect, **kw)


# --- the workspace -------------------------------------------------------------------------------
PLUGIN_MODULE = '''
from pathlib import Path

import torch

from robolearn.registry import TaskPlugin

HERE = Path(__file__).parent


def short_reward(env):
    return torch.zeros(3)


def raising_reward(env):
    raise KeyError("base_link")


def nan_obs_width(env):
    return torch.zeros(env.num_envs)


def is_alive(env):
    return torch.ones(env.num_envs)


def nan_reward(env):
    return torch.full((env.num_envs,), float("nan"))


SHAPE = TaskPlugin(name="oops_shape", config=HERE / "shape.yaml", terms={"short_reward": short_reward})
RAISE = TaskPlugin(name="oops_raise", config=HERE / "raise.yaml", terms={"raising_reward": raising_reward})
OBS = TaskPlugin(name="oops_obs", config=HERE / "obs.yaml", terms={"nan_obs_width": nan_obs_width})
CLASH = TaskPlugin(name="oops_clash", config=HERE / "clash.yaml", terms={"is_alive": is_alive})
BADYAML = TaskPlugin(name="oops_yaml", config=HERE / "bad.yaml")
NOYAML = TaskPlugin(name="oops_noyaml", config=HERE / "missing.yaml")
MISMATCH = TaskPlugin(name="something_else", config=HERE / "shape.yaml")
DUPLICATE = TaskPlugin(name="cartpole", config=HERE / "shape.yaml")
PATTERN = TaskPlugin(config=HERE / "pattern.yaml")
EXTENDS = TaskPlugin(config=HERE / "extends.yaml")
NOACT = TaskPlugin(config=HERE / "noact.yaml")
NAN = TaskPlugin(name="oops_nan", config=HERE / "nan.yaml", terms={"nan_reward": nan_reward})
'''
ENTRY_POINTS = """
oops_shape = oops_tasks:SHAPE
oops_raise = oops_tasks:RAISE
oops_obs = oops_tasks:OBS
oops_clash = oops_tasks:CLASH
oops_yaml = oops_tasks:BADYAML
oops_noyaml = oops_tasks:NOYAML
oops_import = oops_tasks.missing:TASK
oops_notplugin = json:dumps
oops_mismatch = oops_tasks:MISMATCH
cartpole = oops_tasks:DUPLICATE
oops_pattern = oops_tasks:PATTERN
oops_extends = oops_tasks:EXTENDS
oops_noact = oops_tasks:NOACT
oops_nan = oops_tasks:NAN
oops_exits = oops_tasks.exits:TASK
oops_notcallable = oops_tasks.notcallable:TASK
"""


def _task_yaml(cartpole_yaml: str, name: str, extra_reward: str = "", extra_obs: str = "") -> str:
    text = f"name: {name}\n{cartpole_yaml}"
    if extra_reward:
        text = text.replace("rewards:\n", f"rewards:\n  {extra_reward}\n", 1)
    if extra_obs:
        text = text.replace("    terms:\n", f"    terms:\n      {extra_obs}\n", 1)
    return text


def write_plugins(site: Path, cartpole_yaml: str) -> None:
    """One installed distribution, `oops-tasks`, whose every task is broken in its own way."""
    install_distribution(site, "oops-tasks", ENTRY_POINTS)
    package = site / "oops_tasks"
    package.mkdir()
    (package / "__init__.py").write_text(PLUGIN_MODULE)
    (package / "exits.py").write_text("import sys\n\nsys.exit(3)  # argparse at import time does this\n")
    (package / "notcallable.py").write_text("from oops_tasks import HERE, TaskPlugin\n\n"
                                            "TASK = TaskPlugin(config=HERE / 'shape.yaml', terms={'short_reward': 3})\n")  # fmt: skip
    (package / "shape.yaml").write_text(_task_yaml(cartpole_yaml, "oops_shape", "short: {func: short_reward, weight: 1.0}"))
    (package / "raise.yaml").write_text(_task_yaml(cartpole_yaml, "oops_raise", "raising: {func: raising_reward}"))
    (package / "obs.yaml").write_text(_task_yaml(cartpole_yaml, "oops_obs", extra_obs="flat: {func: nan_obs_width}"))
    (package / "clash.yaml").write_text(_task_yaml(cartpole_yaml, "oops_clash"))
    (package / "nan.yaml").write_text(_task_yaml(cartpole_yaml, "oops_nan", "bad: {func: nan_reward, weight: 1.0}"))
    (package / "bad.yaml").write_text("name: oops_yaml\nrewards: [unclosed\n")
    (package / "pattern.yaml").write_text('extends: pendulum\naction: {scale: {".*_knee": 0.3}}\n')
    (package / "extends.yaml").write_text("extends: cartpole_v2\n")
    (package / "bare.xml").write_text('<mujoco><worldbody><body><joint name="hinge" type="hinge"/>'
                                      '<geom size="0.1" mass="1"/></body></worldbody></mujoco>')  # fmt: skip
    (package / "noact.yaml").write_text("extends: pendulum\nasset: bare.xml\naction: {actuators: []}\n"
                                        "observations: {policy: {terms: {q: {func: joint_pos}}}, critic: {terms: {}}}\n"
                                        "rewards: {alive: {func: is_alive}}\nterminations: {}\nevents: {}\n")  # fmt: skip


def _resign(robot_yaml: Path, **changes) -> None:
    """Edit robot.yaml and sign it again, as a user who knows the digest would (it then loads)."""
    import yaml
    from robolearn_deploy.bundle import metadata_digest

    meta = {**yaml.safe_load(robot_yaml.read_text()), **changes}
    meta["metadata_sha256"] = metadata_digest(meta)
    robot_yaml.write_text(yaml.safe_dump(meta, sort_keys=False))


def build_workspace(root: Path, run: Path, cartpole_yaml: str) -> None:
    """The files a user has: a finished run and its bundle, damaged copies of both, a notes file,
    a plain folder, two files that are not MJCF, and a broken plugin distribution."""
    (root / "notes.txt").write_text("my notes\n")
    (root / "plain_dir").mkdir()
    (root / "plain_dir" / "readme.txt").write_text("not a run, not a bundle\n")
    shutil.copytree(run, root / "run")
    shutil.copytree(run / "export", root / "bundle")
    checkpoints = sorted((root / "run" / "checkpoints").glob("*.pt"))

    def damaged(name: str, base: str = "run") -> Path:
        return shutil.copytree(root / base, root / name)

    no_ckpt = damaged("nockpt_run")
    shutil.rmtree(no_ckpt / "checkpoints")
    (no_ckpt / "checkpoints").mkdir()
    (damaged("badckpt_run") / "checkpoints" / checkpoints[-1].name).write_bytes(b"\x00garbage")
    (damaged("emptyckpt_run") / "checkpoints" / checkpoints[-1].name).write_bytes(b"")
    (damaged("badcfg_run") / "config.yaml").write_text("task: [unclosed\n")
    (damaged("emptycfg_run") / "config.yaml").write_text("")
    (damaged("badmanifest_run") / "manifest.json").write_text("{bad")
    (damaged("badresumes_run") / "manifest.json").write_text('{"seed": 0, "resumes": 3}')
    shutil.copyfile(checkpoints[-1], damaged("other_run") / "checkpoints" / "theirs.pt")  # another run's checkpoint
    (damaged("evaldir_run") / "eval.json").mkdir()  # a folder where eval writes its file
    (root / "robot_description" / "meshes").mkdir(parents=True)  # a robot's own folder with a robot.yaml of its own
    (root / "robot_description" / "robot.yaml").write_text("name: my_robot\njoints: [hip, knee]\n")
    (root / "robot_description" / "my_robot.urdf").write_text("<robot name='my_robot'/>\n")
    metrics = damaged("badmetrics_run") / "metrics.jsonl"
    metrics.write_text("garbage line\n" + metrics.read_text())
    (damaged("nobundle_onnx", "bundle") / "policy.onnx").unlink()
    (damaged("badyaml_bundle", "bundle") / "robot.yaml").write_text("actuators: [unclosed\n")
    other = damaged("pendulum_bundle", "bundle") / "robot.yaml"  # a bundle of another task
    other.write_text(other.read_text().replace("task: cartpole", "task: pendulum", 1))
    resigned = damaged("resigned_task_bundle", "bundle") / "robot.yaml"  # robot.yaml of another task, re-signed by hand
    _resign(resigned, task="pendulum")
    onnx = damaged("tampered_bundle", "bundle") / "policy.onnx"
    onnx.write_bytes(onnx.read_bytes()[:-8] + b"\x00" * 8)
    (damaged("binary_bundle", "bundle") / "robot.yaml").write_bytes(bytes(range(128, 256)))  # not even text
    (damaged("binmetrics_run") / "metrics.jsonl").write_bytes(bytes(range(128, 256)))
    import torch

    torch.save([1, 2], damaged("listckpt_run") / "checkpoints" / checkpoints[-1].name)  # a torch file, not a checkpoint
    cartpole = (ROOT / "assets" / "cartpole.xml").read_text()
    (root / "nan_home.xml").write_text(cartpole.replace("</mujoco>", '<keyframe><key name="home" qpos="0 nan"/></keyframe></mujoco>'))
    (root / "not_mjcf.xml").write_text("hello, I am not a robot\n")
    (root / "broken.xml").write_text(
        "<mujoco><worldbody><geom type='sphere' size='0.1'/></worldbody>"
        "<actuator><motor joint='x'/></actuator></mujoco>"
    )
    write_plugins(root / "site", cartpole_yaml)
    build_interop_runs(root)


INTEROP = Path(__file__).parent.parent / "fixtures" / "interop"
ROOT = Path(__file__).resolve().parents[2]


def build_interop_runs(root: Path) -> None:
    """An Isaac Lab run, damaged copies of it, and robot models for `robolearn import`."""
    import torch
    import yaml

    il = shutil.copytree(INTEROP / "isaaclab_quadruped_run", root / "il_run")
    shutil.copyfile(ROOT / "docs" / "reference" / "quadruped_flat_cpu" / "bundle" / "quadruped.xml", root / "quadruped.xml")
    shutil.copyfile(ROOT / "assets" / "cartpole.xml", root / "cartpole.xml")
    nonorm = shutil.copytree(il, root / "il_nonorm_run")
    ckpt = torch.load(nonorm / "model_4.pt", weights_only=True)
    ckpt["actor_state_dict"] = {k: v for k, v in ckpt["actor_state_dict"].items() if "normalizer" not in k}
    torch.save(ckpt, nonorm / "model_4.pt")
    physx = shutil.copytree(il, root / "il_physx_run")
    env = physx / "params" / "env.yaml"
    env.write_text(env.read_text().replace("isaaclab_newton.physics.mjwarp_manager:NewtonMJWarpManager", "isaaclab_physx.physics:PhysxManager"))
    (shutil.copytree(il, root / "il_binary_run") / "params" / "env.yaml").write_bytes(bytes(range(128, 256)))
    shutil.copyfile(root / "quadruped.xml", root / "quadruped.model")  # an MJCF without .xml
    import numpy as np

    np.save(root / "obs_words.npy", np.array(["a", "b"]))
    decimation = shutil.copytree(il, root / "il_decimation_run") / "params" / "env.yaml"
    decimation.write_text(re.sub(r"(?m)^decimation: .*$", "decimation: -4", decimation.read_text()))
    for name, edit in (("il_nan_dt_run", lambda t: re.sub(r"(?m)^  dt: .*$", "  dt: .nan", t, count=1)),
                       ("il_negative_gain_run", lambda t: t.replace(".*_hip_joint: 25.0", ".*_hip_joint: -25.0", 1))):
        damaged = root / name  # only the config is damaged: the run's own checkpoint, linked
        (damaged / "params" / "env.yaml").parent.mkdir(parents=True)
        (damaged / "params" / "agent.yaml").write_bytes((il / "params" / "agent.yaml").read_bytes())
        (damaged / "params" / "env.yaml").write_text(edit((il / "params" / "env.yaml").read_text()))
        (damaged / "model_4.pt").symlink_to(Path("..") / "il_run" / "model_4.pt")
    odd = shutil.copytree(il, root / "odd_run")
    (odd / "params" / "env.yaml").write_text(yaml.safe_dump({"scene": {"robot": {}}, "rewards": {}}))


# --- the corpus ----------------------------------------------------------------------------------
CASES: list[Case] = [
    # the command line: verbs, their arguments, the run directory
    cli("unknown_verb", "trian", expect=("unknown command 'trian'", "valid: train, export, import, eval, sim2sim, play, list")),
    cli("export_no_run", "export", expect=("export needs run=",)),
    cli("export_empty_run", "export", "run=", expect=("run=",)),
    cli("export_run_is_a_file", "export", "run={ws}/notes.txt", expect=("notes.txt", "not a robolearn run directory")),
    cli("export_run_is_a_plain_dir", "export", "run={ws}/plain_dir", expect=("plain_dir", "not a robolearn run directory")),
    cli("export_run_missing", "export", "run={ws}/missing", expect=("missing does not exist", "valid: a folder train wrote")),
    cli("resume_empty", "train", "resume=", expect=("resume= names no run",)),
    cli("export_unknown_argument", "export", "run={ws}/run", "fmt=onnx", expect=("unexpected argument 'fmt=onnx'",)),
    cli("export_argument_without_value", "export", "run", expect=("run",)),
    cli("export_unknown_format", "export", "run={ws}/run", "format=tflite", expect=("unknown export format 'tflite'", "onnx, tensorrt")),
    cli("export_unknown_precision", "export", "run={ws}/run", "precision=int8", expect=("unknown precision 'int8'", "fp32, fp16")),
    cli("eval_no_run", "eval", expect=("eval needs run=",)),
    cli("eval_run_is_a_plain_dir", "eval", "run={ws}/plain_dir", expect=("plain_dir", "not a robolearn run directory")),
    cli("eval_zero_episodes", "eval", "run={ws}/run", "episodes=0", expect=("episodes=0 is out of range", "1..65536")),
    cli("eval_too_many_episodes", "eval", "run={ws}/run", "episodes=100000000000", expect=("episodes=100000000000 is out of range",)),
    cli("eval_episodes_not_a_number", "eval", "run={ws}/run", "episodes=many", expect=("episodes=many is not an integer",)),
    cli("eval_unknown_argument", "eval", "run={ws}/run", "bogus=1", expect=("unexpected argument 'bogus=1'",)),
    cli("eval_conditions_unknown", "eval", "run={ws}/run", "conditions=hard",
        expect=("conditions=hard is not valid; valid: trained, initial",)),
    cli("sim2sim_no_bundle", "sim2sim", expect=("sim2sim needs bundle=",)),
    cli("sim2sim_plain_dir", "sim2sim", "bundle={ws}/plain_dir", expect=("has no robot.yaml",)),
    cli("sim2sim_a_run_not_its_bundle", "sim2sim", "bundle={ws}/run", expect=("has no robot.yaml", "a run's bundle is its export/ folder"), cls="file"),
    cli("sim2sim_episodes_not_a_number", "sim2sim", "bundle={ws}/bundle", "episodes=many", expect=("episodes=many is not an integer",)),
    cli("sim2sim_report_over_a_users_file", "sim2sim", "bundle={ws}/bundle", "report={ws}/notes.txt",
        expect=("notes.txt exists and is not a sim2sim report", "choose a new file"), cls="file"),
    cli("sim2sim_report_is_a_folder", "sim2sim", "bundle={ws}/bundle", "report={ws}/plain_dir",
        expect=("plain_dir is a folder", "a file path"), cls="file"),
    cli("sim2sim_log_is_a_folder", "sim2sim", "bundle={ws}/bundle", "log={ws}/plain_dir", expect=("plain_dir is a folder",), cls="file"),
    cli("sim2sim_report_inside_the_bundle", "sim2sim", "bundle={ws}/bundle", "report={ws}/bundle/r.json",
        expect=("report=", "is inside the bundle", "a file outside it"), cls="file"),  # fmt: skip
    cli("export_out_inside_a_bundle", "export", "run={ws}/run", "out={ws}/bundle/sub", expect=("is inside the bundle",), cls="file"),
    cli("play_out_inside_a_bundle", "play", "run={ws}/run", "duration=0.1", "out={ws}/bundle/clip.mp4",
        expect=("out=", "is inside the bundle"), cls="file"),  # fmt: skip
    cli("play_checkpoint_of_another_run", "play", "run={ws}/run", "duration=0.1", "checkpoint={ws}/other_run/checkpoints/theirs.pt",
        expect=("belongs to another run", "give out="), cls="file"),  # fmt: skip
    cli("play_out_name_too_long", "play", "run={ws}/run", "duration=0.1", "out={ws}/" + "a" * 300 + ".mp4",
        expect=("a file name is too long", "at most"), cls="file"),  # fmt: skip
    cli("play_command_not_finite", "play", "bundle={ws}/bundle", "duration=0.1", "command=[.nan]", expect=("finite numbers",)),
    cli("eval_where_eval_json_is_a_folder", "eval", "run={ws}/evaldir_run", "episodes=1",
        expect=("eval.json is a folder, where eval writes a file",), cls="file"),  # fmt: skip
    cli("sim2sim_realtime_not_a_flag", "sim2sim", "bundle={ws}/bundle", "realtime=yes", expect=("realtime=yes", "true and false")),
    cli("list_unknown_argument", "list", "bogus", expect=("bogus",)),
    cli("train_sweep_without_multirun", "train", *FAST, NEW, "seed=1,2", expect=("seed",)),
    cli("train_overwrite_not_a_flag", "train", *FAST, NEW, "overwrite=maybe", expect=("overwrite=maybe is not valid", "overwrite=true or overwrite=false")),
    cli("train_into_an_existing_run", "train", *FAST, "hydra.run.dir={ws}/run", expect=("already holds a run", "resume=", "overwrite=true")),
    cli("resume_missing_dir", "train", "resume={ws}/missing", expect=("missing",)),
    cli("resume_a_file", "train", "resume={ws}/notes.txt", expect=("notes.txt is a file, not a run directory",)),
    cli("resume_a_plain_dir", "train", "resume={ws}/plain_dir", expect=("plain_dir",)),
    cli("resume_with_other_network", "train", "resume={ws}/run", "algo.actor_hidden_dims=[8]", expect=("does not fit",)),
    cli("resume_with_other_num_envs", "train", "resume={ws}/run", "env.num_envs=4", expect=("env.num_envs",)),
    cli("resume_mistyped_key", "train", "resume={ws}/run", "runner.max_iteratons=2",
        expect=("runner.max_iteratons is not a setting of runner", "valid: num_steps_per_env")),  # fmt: skip
    cli("resume_out_of_range", "train", "resume={ws}/run", "algo.gamma=3", expect=("algo.gamma=3", "0 <= gamma <= 1")),
    cli("resume_with_run_name", "train", "resume={ws}/run", "run_name=foo", expect=("run_name names a new run's folder", "leave run_name out")),
    cli("resume_other_task", "train", "resume={ws}/run", "task=pendulum", expect=("keeps the task and randomization it was started with",)),
    cli("train_task_twice", "train", *FAST, NEW, "task=cartpole", "task=pendulum",
        expect=("task= is given twice (task=cartpole, task=pendulum)", "--multirun task=cartpole,pendulum")),  # fmt: skip
    cli("train_control_period_too_short", "train", *FAST, NEW, "task.sim.timestep=1e-7",
        expect=("the control period is 2e-07 s", "timestep x decimation >= 0.0001 s")),  # fmt: skip
    cli("eval_latest_without_runs", "eval", "run=latest", expect=("run=latest: no run in runs/<task>/<time>",)),
    cli("export_task_latest_without_runs", "export", "run=pendulum/latest", expect=("run=pendulum/latest: no run in runs/pendulum",)),
    cli("run_name_with_a_slash", "train", *FAST, "run_name=a/b", expect=("run_name=a/b is out of range", "letters, digits")),
    cli("play_without_a_source", "play", expect=("play needs run=<run dir> or bundle=<bundle dir>",)),
    cli("play_with_two_sources", "play", "run={ws}/run", "bundle={ws}/bundle", expect=("(one of them)",)),
    cli("play_unknown_mode", "play", "run={ws}/run", "mode=hologram", expect=("mode=hologram is not a play mode", "video, viewer, web")),
    cli("play_viewer_without_display", "play", "run={ws}/run", "mode=viewer", expect=("mode=viewer needs a display", "mode=video")),
    cli("play_web_port_out_of_range", "play", "run={ws}/run", "mode=web", "port=70000", expect=("port=70000 is out of range", "1..65535")),
    cli("play_web_port_not_a_number", "play", "run={ws}/run", "mode=web", "port=http", expect=("port",)),
    cli("play_web_of_a_bundle", "play", "bundle={ws}/bundle", "mode=web", expect=("mode=web plays a run's policy", "mode=video")),
    cli("runs_unknown_argument", "runs", "tsak=cartpole", expect=("tsak=cartpole",)),
    cli("train_shell_completion", "train", "-sc", "install=bash", expect=("shell completion is not offered", "--help")),
    cli("play_zero_fps", "play", "run={ws}/run", "fps=0", expect=("fps=0.0 is out of range",)),
    cli("play_endless_duration", "play", "run={ws}/run", "duration=inf", expect=("duration=inf is out of range", "<= 3600")),
    cli("play_negative_distance", "play", "run={ws}/run", "distance=-1", expect=("distance=-1.0 is out of range", "or auto")),
    cli("play_camera_beyond_a_km", "play", "run={ws}/run", "distance=5000", expect=("distance=5000.0 is out of range", "<= 1000")),
    cli("play_fewer_than_two_frames", "play", "run={ws}/run", "fps=1", "duration=0.5", expect=("makes fewer than 2 frames", "duration >= 2 s")),
    cli("play_elevation_past_vertical", "play", "run={ws}/run", "elevation=100", expect=("elevation=100.0 is out of range", "-90..90")),
    cli("play_too_many_envs", "play", "run={ws}/run", "num_envs=100", expect=("num_envs=100 is out of range", "1..16")),
    cli("play_unknown_camera", "play", "run={ws}/run", "camera=drone", expect=("camera=drone is not a camera", "track, fixed, free")),
    cli("play_video_option_in_web_mode", "play", "run={ws}/run", "mode=web", "out={ws}/w.mp4", expect=("out= is not used in mode=web", "port=")),
    cli("play_port_in_video_mode", "play", "run={ws}/run", "port=8081", expect=("port= is not used in mode=video",)),
    cli("play_command_not_numbers", "play", "run={ws}/run", "command=fast", expect=("command=fast is not a list of finite numbers",)),
    cli("play_command_on_a_task_without", "play", "run={ws}/run", "command=[1,0]", expect=("has no command",)),
    cli("play_command_schedule_backwards", "play", "run={ws}/run", "command=[[1,0],[0,1]]", expect=("times must be >= 0 and rise strictly",)),
    cli("play_command_in_web_mode", "play", "run={ws}/run", "mode=web", "command=[1,0]", expect=("command= scripts videos", "sliders")),
    cli("play_out_exists", "play", "run={ws}/run", "out={ws}/notes.txt", expect=("notes.txt already exists",), cls="file"),
    cli("play_out_not_mp4", "play", "run={ws}/run", "out={ws}/clip.avi", expect=("must end in .mp4",), cls="file"),
    cli("play_run_without_checkpoint", "play", "run={ws}/nockpt_run", expect=("no checkpoint in",), cls="file"),
    cli("play_tampered_bundle", "play", "bundle={ws}/tampered_bundle", expect=("policy.onnx does not match its sha256",), cls="file"),
    # configuration values: every schema field with a range, types, unknown keys and choices
    train("seed_negative", "seed=-1", expect=("seed=-1 is out of range", "an integer 0..4294967295")),
    train("seed_too_large", "seed=99999999999999999999", expect=("seed=99999999999999999999 is out of range", "0..4294967295")),
    train("decimation_huge", "task.decimation=100000000", expect=("task.decimation=100000000 is out of range", "1..1000")),
    train("seed_not_an_integer", "seed=1.5", expect=("seed", "1.5")),
    train("seed_text", "seed=abc", expect=("seed", "abc")),
    train("num_envs_zero", "env.num_envs=0", expect=("env.num_envs=0 is out of range", "an integer >= 1")),
    train("num_envs_negative", "env.num_envs=-5", expect=("env.num_envs=-5 is out of range",)),
    train("num_envs_text", "env.num_envs=lots", expect=("num_envs", "lots")),
    train("num_envs_list", "env.num_envs=[1,2]", expect=("num_envs",)),
    train("num_envs_too_many_for_memory", "env.num_envs=1000000000", expect=("env.num_envs=1000000000 needs ~", "GiB free", "lower env.num_envs")),
    train("state_limit_zero", "env.state_limit=0", expect=("env.state_limit=0.0 is out of range", "> 0")),
    train("cuda_graph_not_a_flag", "env.cuda_graph=maybe", expect=("cuda_graph", "maybe")),
    train("num_threads_negative", "physics.num_threads=-1", expect=("physics.num_threads=-1 is out of range",)),
    train("nconmax_negative", "physics.nconmax=-1", expect=("physics.nconmax=-1 is out of range",)),
    train("njmax_negative", "physics.njmax=-2", expect=("physics.njmax=-2 is out of range",)),
    train("reset_sensors_unknown", "physics.reset_sensors=lazy",
          expect=("physics.reset_sensors=lazy is out of range", "exact or kinematic")),
    train("backend_unknown_group", "physics=bullet", expect=("unknown physics backend 'bullet'", "mujoco")),
    train("backend_unknown_value", "physics.backend=bullet", expect=("unknown physics backend 'bullet'", "mujoco")),
    train("device_unknown", "device=tpu", expect=("tpu",)),
    train("task_unknown", "task=nope", expect=("unknown task 'nope'", "cartpole, pendulum")),
    train("randomization_unknown", "randomization=extreme", expect=("extreme", "valid")),
    train("learning_rate_zero", "algo.learning_rate=0", expect=("algo.learning_rate=0.0 is out of range", "0 < learning_rate <= 1")),
    train("learning_rate_huge", "algo.learning_rate=1e12", expect=("algo.learning_rate=1000000000000.0 is out of range", "<= 1")),
    train("learning_rate_negative", "algo.learning_rate=-0.001", expect=("algo.learning_rate=-0.001 is out of range",)),
    train("learning_rate_nan", "algo.learning_rate=nan", expect=("algo.learning_rate=nan is out of range", "a finite number")),
    train("learning_rate_inf", "algo.learning_rate=inf", expect=("algo.learning_rate=inf is out of range", "a finite number")),
    train("schedule_unknown", "algo.schedule=cosine", expect=("algo.schedule=cosine is out of range", "adaptive or fixed")),
    train("normalizer_schedule_unknown", "algo.normalizer_schedule=epoch",
          expect=("algo.normalizer_schedule=epoch is out of range", "rollout or step")),
    train("desired_kl_zero", "algo.desired_kl=0", expect=("algo.desired_kl=0.0 is out of range",)),
    train("clip_param_negative", "algo.clip_param=-0.2", expect=("algo.clip_param=-0.2 is out of range",)),
    train("value_clip_zero", "algo.value_clip=0", expect=("algo.value_clip=0.0 is out of range",)),
    train("value_loss_coef_negative", "algo.value_loss_coef=-1", expect=("algo.value_loss_coef=-1.0 is out of range",)),
    train("entropy_coef_negative", "algo.entropy_coef=-0.01", expect=("algo.entropy_coef=-0.01 is out of range",)),
    train("gamma_above_one", "algo.gamma=1.5", expect=("algo.gamma=1.5 is out of range", "0 <= gamma <= 1")),
    train("gamma_negative", "algo.gamma=-0.1", expect=("algo.gamma=-0.1 is out of range",)),
    train("lam_above_one", "algo.lam=2", expect=("algo.lam=2.0 is out of range", "0 <= lam <= 1")),
    train("epochs_zero", "algo.num_learning_epochs=0", expect=("algo.num_learning_epochs=0 is out of range",)),
    train("minibatches_zero", "algo.num_mini_batches=0", expect=("algo.num_mini_batches=0 is out of range",)),
    train("minibatches_not_a_divisor", "algo.num_mini_batches=7", expect=("algo.num_mini_batches=7 does not divide", "a divisor of 64")),
    train("max_grad_norm_zero", "algo.max_grad_norm=0", expect=("algo.max_grad_norm=0.0 is out of range",)),
    train("init_noise_std_zero", "algo.init_noise_std=0", expect=("algo.init_noise_std=0.0 is out of range",)),
    train("min_noise_std_negative", "algo.min_noise_std=-1", expect=("algo.min_noise_std=-1.0 is out of range",)),
    train("min_noise_std_above_init", "algo.min_noise_std=2", expect=("algo.min_noise_std=2.0 must be below algo.init_noise_std",)),
    train("hidden_dims_zero_layer", "algo.actor_hidden_dims=[0]", expect=("algo.actor_hidden_dims=[0] is out of range", "layer sizes >= 1")),
    train("hidden_dims_negative_layer", "algo.critic_hidden_dims=[64,-1]", expect=("algo.critic_hidden_dims=[64,-1] is out of range",)),
    train("hidden_dims_not_a_list", "algo.actor_hidden_dims=64", expect=("actor_hidden_dims",)),
    train("activation_unknown", "algo.activation=sigmoid", expect=("algo.activation=sigmoid is out of range", "elu, relu, tanh")),
    train("normalizer_min_std_zero", "algo.normalizer_min_std=0", expect=("algo.normalizer_min_std=0.0 is out of range",)),
    train("normalizer_clip_zero", "algo.normalizer_clip=0", expect=("algo.normalizer_clip=0.0 is out of range", "null for no clip")),
    train("compile_not_a_flag", "algo.compile=perhaps", expect=("compile", "perhaps")),
    train("amp_fp16", "algo.amp=fp16", expect=("algo.amp=fp16 is out of range", "bf16, or null for float32")),
    train("env_compile_not_a_flag", "env.compile=maybe", expect=("env.compile=maybe is not true or false", "valid: true or false")),
    train("decimation_fraction", "task.decimation=1.5", expect=("task.decimation=1.5 is not an integer", "a whole number")),
    train("learning_rate_a_word", "algo.learning_rate=fast", expect=("algo.learning_rate=fast is not a number", "valid: a number")),
    train("hidden_dims_a_word", "algo.actor_hidden_dims=wide", expect=("algo.actor_hidden_dims=wide is not a list", "[64,64]")),
    train("hidden_dims_a_word_inside", "algo.actor_hidden_dims=[64,abc]",
          expect=("algo.actor_hidden_dims[1] (in algo.actor_hidden_dims=[64,abc]) is not an integer",)),
    train("added_term_weight_a_word", "+task.rewards.extra={weight:high}",
          expect=("task.rewards.extra.weight (in task.rewards.extra={weight:high}) is not a number",)),
    train("export_onnx_a_number", "runner.export_onnx=2", expect=("runner.export_onnx=2 is out of range; valid: true or false",)),
    train("stagger_timeouts_negative", "env.stagger_timeouts=-1",
          expect=("env.stagger_timeouts=-1 is out of range; valid: true or false",)),
    train("steps_per_env_zero", "runner.num_steps_per_env=0", expect=("runner.num_steps_per_env=0 is out of range",)),
    train("max_iterations_zero", "runner.max_iterations=0", expect=("runner.max_iterations=0 is out of range",)),
    train("save_interval_zero", "runner.save_interval=0", expect=("runner.save_interval=0 is out of range",)),
    train("keep_checkpoints_zero", "runner.keep_checkpoints=0", expect=("runner.keep_checkpoints=0 is out of range",)),
    train("episode_window_zero", "runner.episode_window=0", expect=("runner.episode_window=0 is out of range",)),
    train("video_interval_negative", "runner.video_interval=-1", expect=("runner.video_interval=-1 is out of range", "0: no clips")),
    train("video_length_zero", "runner.video_length_s=0", expect=("runner.video_length_s=0.0 is out of range", "seconds")),
    train("logger_unknown", "logger=foo", expect=("logger=foo is out of range", "tensorboard, wandb, both, none")),
    train("wandb_mode_unknown", "wandb.mode=sometimes", expect=("wandb.mode=sometimes is out of range", "online, offline, disabled")),
    train("rollout_too_big_for_memory", "env.num_envs=2000000", "runner.num_steps_per_env=5000", expect=("runner.num_steps_per_env=5000", "needs ~", "GiB free")),
    train("decimation_zero", "task.decimation=0", expect=("task.decimation=0 is out of range",)),
    train("episode_length_negative", "task.episode_length_s=-2", expect=("task.episode_length_s=-2.0 is out of range", "seconds")),
    train("sim_dt_zero", "task.sim_dt=0", expect=("task.sim_dt=0.0 is out of range",)),
    train("policy_network_unknown", "algo.policy=transformer", expect=("algo.policy=transformer is out of range", "mlp, gru, lstm")),
    train("critic_network_unknown", "algo.critic_network=cnn", expect=("algo.critic_network=cnn is out of range", "or null")),
    train("rnn_hidden_size_zero", "algo.policy=gru", "algo.rnn_hidden_size=0", expect=("algo.rnn_hidden_size=0 is out of range", ">= 1")),
    train("bptt_length_not_dividing_rollout", "algo.policy=gru", "algo.bptt_length=5",
          expect=("algo.bptt_length=5 does not divide runner.num_steps_per_env", "a divisor of")),  # fmt: skip
    train("recurrent_minibatches_not_dividing_sequences", "algo.policy=lstm", "env.num_envs=3", "runner.num_steps_per_env=4",
          "algo.num_mini_batches=4", expect=("algo.num_mini_batches=4 does not divide the 3 sequences", "a divisor of 3")),  # fmt: skip
    train("obs_history_zero", "task.observations.policy.terms.cart_pos.history=0", expect=("history=0 is out of range", ">= 1")),
    train("obs_history_too_long", "task.observations.policy.terms.cart_pos.history=251", expect=("longer than the episode", "1..250")),
    train("unknown_integrator", "task.sim.integrator=rk5", expect=("task.sim.integrator=rk5", "euler, rk4, implicit")),
    train("warp_unsupported_solver", "physics=warp", "task.sim.solver=pgs",
          expect=("physics=warp cannot run this model", "mjSOL_PGS", "physics=mujoco runs every model")),
    train("action_scale_not_a_number", "task.action.scale=fast", expect=("task.action.scale=fast", "a mapping")),
    train("action_scale_zero", "task.action.scale=0", expect=("task.action.scale=0 is out of range", "other than 0")),
    train("action_offset_null", "task.action.offset=null", expect=("task.action.offset=null is out of range", "a number")),
    train("term_param_wrong_kind", "task.terminations.pole_fell.params.bounds=[low,high]",
          expect=("termination term 'pole_fell' (joint_pos_out_of_bounds): bounds=['low', 'high'] is not valid", "a list of 2 numbers")),
    train("term_param_out_of_range", "task=quadruped_flat", "task.rewards.joint_limits.params.soft_ratio=-1",
          expect=("joint_pos_limits: soft_ratio=-1 is out of range", "0 < soft_ratio <= 1")),
    train("term_param_null", "task.events.reset_state.params.position_range=null",
          expect=("event term 'reset_state' (reset_joints_uniform): position_range=null is not valid", "a list of 2 numbers")),
    train("event_range_reversed_outside_its_preset", "task=quadruped_flat", "task.events.push.params.velocity_range=[1,-1]",
          expect=("event term 'push' (push_by_setting_velocity): velocity_range=[1, -1] is not valid",
                  "[low, high] with low <= high")),  # fmt: skip
    train("event_steps_reversed_outside_its_preset", "task=quadruped_flat", "task.events.action_delay.params.steps=[-1,2]",
          expect=("event 'action_delay' (runs from randomization=sim2real)", "steps must be 0 <= low <= high")),  # fmt: skip
    train("term_range_not_two", "task.events.pole_mass.params.range=[]",
          expect=("event term 'pole_mass' (randomize_model_field): range=[] is not valid", "a list of 2 numbers")),
    train("joints_empty", "task.observations.policy.terms.cart_pos.params.joints=[]",
          expect=("observation term 'policy/cart_pos' (joint_pos): joints: [] names none", "a list of one or more names")),
    train("joints_not_names", "task.observations.policy.terms.cart_pos.params.joints=[1,2]",
          expect=("observation term 'policy/cart_pos' (joint_pos): joints: expected a list of names", "[1, 2]")),
    train("field_rows_not_names", "task.events.pole_mass.params.names=-1",
          expect=("event term 'pole_mass'", "names: expected a list of names", "-1")),
    train("action_unknown_actuator", "task.action.actuators=[nope]", expect=("nope",)),
    train("obs_noise_negative", "task.observations.policy.terms.cart_pos.noise.scale=-1", expect=("noise.scale=-1.0 is out of range", ">= 0")),
    train("obs_noise_type_unknown", "task.observations.policy.terms.cart_pos.noise.type=pink", expect=("pink",)),
    train("obs_clip_zero", "task.observations.policy.terms.cart_pos.clip=0", expect=("clip=0.0 is out of range",)),
    train("obs_scale_zero", "task.observations.policy.terms.cart_pos.scale=0", expect=("scale=0.0 is out of range",)),
    train("obs_unknown_term_function", "task.observations.policy.terms.cart_pos.func=nope", expect=("unknown function 'nope'", "valid:")),
    train("obs_unknown_joint", "task.observations.policy.terms.cart_pos.params.joints=[nope]", expect=("cart_pos", "nope", "valid:")),
    train("obs_mistyped_term", "task.observations.policy.terms.cartpos.scale=2", expect=("'cartpos' is not in task.observations.policy.terms", "valid: cart_pos")),
    train("obs_group_missing_policy", "~task.observations.policy", expect=("'policy' observation group",)),
    train("reward_unknown_function", "task.rewards.upright.func=nope", expect=("unknown function 'nope'",)),
    train("reward_unknown_param", "task.rewards.upright.params.bogus=1", expect=("upright", "bogus")),
    train("reward_weight_text", "task.rewards.upright.weight=heavy", expect=("weight", "heavy")),
    train("reward_mistyped_key", "task.rewards.upright.wieght=1", expect=("task.rewards.upright.wieght is not a setting", "valid: func, weight, params")),
    train("reward_mistyped_term", "task.rewards.uprigt.weight=2", expect=("'uprigt' is not in task.rewards", "valid:", "upright")),
    train("termination_unknown_function", "task.terminations.pole_fell.func=nope", expect=("unknown function 'nope'",)),
    train("event_unknown_model_field", "task.events.pole_mass.params.field=body_colour", expect=("body_colour", "valid:")),
    train("event_unknown_body", "task.events.pole_mass.params.names=[nope]", expect=("nope",)),
    train("event_bad_interval", "task.events.pole_mass.mode=interval", "task.events.pole_mass.interval_s=[0,1]", expect=("task.events.pole_mass.interval_s=[0.0,1.0] is out of range", "0 < low <= high")),
    train("event_unknown_mode", "task.events.pole_mass.mode=sometimes", expect=("sometimes",)),
    train("plus_key_in_env", "+env.typo=3", expect=("env.typo is not a setting of env (a + override cannot add one)", "valid: num_envs")),
    train("plus_key_in_task", "+task.anything=1", expect=("task.anything is not a setting of task", "valid: name, description, asset")),
    train("plus_key_at_top", "+zzz=1", expect=("zzz is not a setting of the training config", "valid: task, physics, algo")),
    train("mistyped_algo_key", "algo.learning_rat=1", expect=("algo.learning_rat is not a setting of algo", "valid: learning_rate")),
    train("rewards_not_a_mapping", "task.rewards=[1,2]", expect=("rewards",)),
    train("commands_standing_probability", "task=quadruped_flat", "task.commands.base_velocity.standing_probability=1.5",
          expect=("standing_probability=1.5 is out of range", "0 <= p <= 1")),  # fmt: skip
    train("commands_bad_range", "task=quadruped_flat", "task.commands.base_velocity.ranges.lin_vel_x=[1,-1]",
          expect=("lin_vel_x", "[low, high]")),  # fmt: skip
    train("commands_resampling_time_empty", "task=arm_reach", "task.commands.ee_target.resampling_time_s=[]",
          expect=("command 'ee_target': resampling_time_s must be 0 < low <= high [s], got []",)),  # fmt: skip
    train("terrain_zero_levels", "task=quadruped_rough", "task.terrain.num_levels=0", expect=("terrain.num_levels=0 is invalid",)),
    train("terrain_unknown_type", "task=quadruped_rough", "task.terrain.types={lava: 1.0}", expect=("lava", "valid:")),
    train("terrain_init_level_beyond", "task=quadruped_rough", "task.terrain.max_init_level=99", expect=("terrain.max_init_level=99 is invalid", "valid: 0..")),
    # files: MJCF, run directories and bundles that are missing, damaged or in the way
    train("asset_missing", "task.asset=missing.xml", expect=("MJCF file not found", "missing.xml"), cls="file"),
    train("asset_not_mjcf", "task.asset={ws}/not_mjcf.xml", expect=("not_mjcf.xml", "cannot load MJCF"), cls="file"),
    train("asset_broken_mjcf", "task.asset={ws}/broken.xml", expect=("broken.xml", "cannot load MJCF"), cls="file"),
    train("asset_is_a_directory", "task.asset={ws}/plain_dir", expect=("plain_dir (that is a directory)",), cls="file"),
    train("asset_with_a_nan", "task.asset={ws}/nan_home.xml", expect=("nan_home.xml", '<key name="home"> qpos="0 nan" holds nan', "valid: finite numbers"), cls="file"),
    cli("new_task_robot_with_a_nan", "new-task", "nan_arm", "--template", "reach", "--robot", "{ws}/nan_home.xml", "--out", "{ws}/nan_arm",
        expect=("nan_home.xml", "holds nan", "valid: finite numbers"), cls="file"),
    cli("sim2sim_binary_robot_yaml", "sim2sim", "bundle={ws}/binary_bundle", expect=("robot.yaml is not valid YAML",), cls="file"),
    cli("play_out_below_a_file", "play", "run={ws}/run", "out={ws}/notes.txt/clip.mp4", expect=("notes.txt is a file, not a directory",), cls="file"),
    cli("run_dir_is_a_file", "train", *FAST, "hydra.run.dir={ws}/notes.txt", expect=("hydra.run.dir=", "notes.txt is a file"), cls="file"),
    cli("run_dir_under_a_file", "train", *FAST, "hydra.run.dir={ws}/notes.txt/sub", expect=("notes.txt is a file, not a directory",), cls="file"),
    cli("export_out_is_a_file", "export", "run={ws}/run", "out={ws}/notes.txt", expect=("notes.txt is an existing file",), cls="file"),
    cli("export_out_in_checkpoints", "export", "run={ws}/run", "out={ws}/run/checkpoints/iter_000250.pt",
        expect=("is inside the checkpoints/ folder of the run", "choose a path outside it"), cls="file"),  # fmt: skip
    cli("export_out_is_a_plain_dir", "export", "run={ws}/run", "out={ws}/plain_dir", expect=("plain_dir is a directory that is not a robolearn bundle",), cls="file"),
    cli("export_out_under_a_file", "export", "run={ws}/run", "out={ws}/notes.txt/b", expect=("notes.txt is a file, not a directory",), cls="file"),
    cli("export_run_without_checkpoint", "export", "run={ws}/nockpt_run", expect=("no checkpoint in",), cls="file"),
    cli("export_corrupt_checkpoint", "export", "run={ws}/badckpt_run", expect=("unreadable", "move it away"), cls="file"),
    cli("export_empty_checkpoint", "export", "run={ws}/emptyckpt_run", expect=("unreadable", "move it away"), cls="file"),
    cli("export_corrupt_config", "export", "run={ws}/badcfg_run", expect=("config.yaml",), cls="file"),
    cli("eval_run_without_checkpoint", "eval", "run={ws}/nockpt_run", expect=("no checkpoint in",), cls="file"),
    cli("eval_corrupt_checkpoint", "eval", "run={ws}/badckpt_run", expect=("unreadable", "move it away"), cls="file"),
    cli("resume_without_checkpoint", "train", "resume={ws}/nockpt_run", expect=("no checkpoint in",), cls="file"),
    cli("resume_corrupt_checkpoint", "train", "resume={ws}/badckpt_run", expect=("unreadable", "move it away"), cls="file"),
    cli("resume_empty_checkpoint", "train", "resume={ws}/emptyckpt_run", expect=("unreadable", "move it away"), cls="file"),
    cli("resume_corrupt_config", "train", "resume={ws}/badcfg_run", expect=("config.yaml",), cls="file"),
    cli("resume_corrupt_metrics", "train", "resume={ws}/badmetrics_run", "runner.max_iterations=2", expect=("metrics.jsonl line 1 is not a metrics row",), cls="file"),
    cli("resume_binary_metrics", "train", "resume={ws}/binmetrics_run", "runner.max_iterations=2", expect=("metrics.jsonl is not text", "move it away"), cls="file"),
    cli("resume_a_torch_file_not_a_checkpoint", "train", "resume={ws}/listckpt_run", "runner.max_iterations=2",
        expect=("is a torch file robolearn did not write", "move it away"), cls="file"),
    cli("eval_checkpoint_of_rsl_rl", "eval", "run={ws}/run", "checkpoint={ws}/il_run/model_4.pt",
        expect=("is an rsl_rl checkpoint", "robolearn import run="), cls="file"),
    train("rnn_too_large", "algo.policy=gru", "algo.rnn_hidden_size=100000000", expect=("algo.rnn_hidden_size=100000000 (the recurrent cores) needs ~", "free")),
    cli("export_out_is_a_robot_description", "export", "run={ws}/run", "out={ws}/robot_description", cls="file",
        expect=("robot_description is a directory that is not a robolearn bundle", "its robot.yaml is not a robolearn bundle's")),  # fmt: skip
    cli("export_checkpoint_of_another_run", "export", "run={ws}/run", "checkpoint={ws}/other_run/checkpoints/theirs.pt",
        expect=("belongs to another run", "other_run", "out="), cls="file"),  # fmt: skip
    cli("eval_checkpoint_of_another_run", "eval", "run={ws}/run", "checkpoint={ws}/other_run/checkpoints/theirs.pt",
        expect=("belongs to another run", "eval run="), cls="file"),  # fmt: skip
    cli("export_checkpoint_missing", "export", "run={ws}/run", "checkpoint={ws}/nope.pt", expect=("nope.pt does not exist",), cls="file"),
    cli("export_checkpoint_is_a_folder", "export", "run={ws}/run", "checkpoint={ws}/plain_dir", expect=("plain_dir is a directory",), cls="file"),
    cli("resume_empty_config", "train", "resume={ws}/emptycfg_run", expect=("config.yaml", "holds no task"), cls="file"),
    cli("resume_corrupt_manifest", "train", "resume={ws}/badmanifest_run", expect=("manifest.json is not a readable run manifest",), cls="file"),
    cli("resume_manifest_resumes_not_list", "train", "resume={ws}/badresumes_run", expect=("'resumes' is not a list",), cls="file"),
    cli("resume_another_task", "train", "resume={ws}/run", "task=pendulum", expect=("task=pendulum", "keeps the task", "start a new run")),
    cli("resume_physics_group", "train", "resume={ws}/run", "physics=warp", expect=("physics.backend=warp",)),
    cli("run_dir_is_a_users_folder", "train", *FAST, "hydra.run.dir={ws}/plain_dir", cls="file",
        expect=("plain_dir holds files that are not a run's (readme.txt)", "new or empty directory")),  # fmt: skip
    cli("sweep_dir_is_a_file", "train", "--multirun", *FAST, "seed=1,2", "hydra.sweep.dir={ws}/notes.txt", cls="file",
        expect=("hydra.sweep.dir=", "notes.txt is a file")),  # fmt: skip
    cli("sweep_dir_not_empty", "train", "--multirun", *FAST, "seed=1,2", "hydra.sweep.dir={ws}/plain_dir", cls="file",
        expect=("plain_dir is not empty",)),  # fmt: skip
    cli("unquoted_accented_path", "train", *FAST, "hydra.run.dir={ws}/ünï", expect=("must be quoted", "hydra.run.dir=\"")),
    cli("runs_unknown_task", "runs", "task=cartpol", expect=("no runs of task 'cartpol'", "no such task is installed", "cartpole")),
    cli("sim2sim_bundle_is_a_file", "sim2sim", "bundle={ws}/notes.txt", expect=("notes.txt is a file",), cls="file"),
    cli("sim2sim_timestep_nan", "sim2sim", "bundle={ws}/bundle", "timestep=nan", expect=("timestep=nan is not valid", "positive")),
    cli("sim2sim_timestep_tiny", "sim2sim", "bundle={ws}/bundle", "timestep=1e-9", expect=("physics steps per control tick", "valid:")),
    cli("sim2sim_timestep_over_the_control_period", "sim2sim", "bundle={ws}/bundle", "timestep=1", expect=("longer than the policy's control period",)),
    cli("play_command_on_a_task_without_one", "play", "bundle={ws}/bundle", "command=[1,0]", expect=("the bundle's task has no command",)),
    cli("sim2sim_corrupt_robot_yaml", "sim2sim", "bundle={ws}/badyaml_bundle", expect=("robot.yaml",), cls="file"),
    cli("sim2sim_bundle_without_onnx", "sim2sim", "bundle={ws}/nobundle_onnx", expect=("policy.onnx",), cls="file"),
    cli("sim2sim_tampered_onnx", "sim2sim", "bundle={ws}/tampered_bundle", expect=("policy.onnx",), cls="file"),
    cli("sim2sim_task_yaml_of_another_task", "sim2sim", "bundle={ws}/resigned_task_bundle", cls="file",
        expect=("task.yaml is task 'cartpole' but robot.yaml's policy was trained on 'pendulum'", "re-export the bundle")),
    # found by a sweep of ~330 mistakes (2026-11-28)
    train("task_null", "task=null", expect=("task=null: task= takes one name", "valid: ", "cartpole")),
    train("task_list", "task=[cartpole,pendulum]", expect=("task= takes one name", "--multirun task=a,b")),
    train("algo_null", "algo=null", expect=("algo=null: algo= takes one name", "valid: ppo")),
    train("run_name_too_long", "run_name=" + "b" * 250, expect=("run_name=bbbbbbbbbbbbbbbbbbbb... (250 characters) is out of range", "at most 100 characters")),
    train("episode_shorter_than_a_control_step", "task.episode_length_s=0.001", expect=("task.episode_length_s=0.001 is shorter than one control step", "valid: >= 0.02")),
    train("episode_length_huge", "task.episode_length_s=1e12", expect=("task.episode_length_s=1000000000000.0 is out of range", "3600")),
    train("epochs_huge", "algo.num_learning_epochs=100000000", expect=("algo.num_learning_epochs=100000000 is out of range", "1..1000")),
    train("network_too_wide_for_memory", "algo.actor_hidden_dims=[100000000]", expect=("algo.actor_hidden_dims=[100000000]", "of memory", "use smaller layers")),
    cli("resume_trains_nothing", "train", "resume={ws}/run", "runner.max_iterations=1", expect=("runner.max_iterations=1:", "iterations already", "valid: more than")),
    cli("resume_with_another_seed", "train", "resume={ws}/run", "seed=7", expect=("seed=7: a resumed run continues its own random streams",)),
    cli("resume_the_export_folder", "train", "resume={ws}/run/export", expect=("export is not a robolearn run directory", "its run is")),
    cli("resume_the_checkpoints_folder", "train", "resume={ws}/run/checkpoints", expect=("checkpoints is not a robolearn run directory", "its run is")),
    cli("eval_run_is_a_file", "eval", "run={ws}/notes.txt", expect=("notes.txt is not a robolearn run directory",), cls="file"),
    cli("eval_run_given_twice", "eval", "run={ws}/run", "run={ws}/run", expect=("run= is given twice", "give it once")),
    cli("eval_empty_checkpoint_argument", "eval", "run={ws}/run", "checkpoint=", expect=("checkpoint= is empty",)),
    cli("export_empty_out", "export", "run={ws}/run", "out=", expect=("out= is empty",)),
    cli("play_bundle_with_checkpoint", "play", "bundle={ws}/bundle", "checkpoint={ws}/x.pt", expect=("checkpoint= chooses a run's checkpoint and goes with run=",)),
    cli("runs_task_given_twice", "runs", "task=cartpole", "task=pendulum", expect=("task= is given twice",)),
    cli("runs_root_missing", "runs", "root={ws}/ouputs", expect=("ouputs does not exist", "valid: a folder of runs")),
    cli("eval_checkpoint_is_a_text_file", "eval", "run={ws}/run", "checkpoint={ws}/notes.txt", cls="file",
        expect=("notes.txt is unreadable", "name a checkpoint of the run's checkpoints/ folder")),  # fmt: skip
    cli("export_checkpoint_is_an_onnx", "export", "run={ws}/run", "checkpoint={ws}/bundle/policy.onnx", cls="file",
        expect=("policy.onnx is unreadable", "name a checkpoint")),  # fmt: skip
    cli("export_out_is_another_runs_bundle", "export", "run={ws}/run", "out={ws}/nockpt_run/export", cls="file",
        expect=("is the bundle of another run", "choose a new path")),  # fmt: skip
    cli("export_out_is_another_tasks_bundle", "export", "run={ws}/run", "out={ws}/pendulum_bundle", cls="file",
        expect=("holds a bundle of task 'pendulum', not of cartpole",)),  # fmt: skip
    cli("multirun_bad_value_in_a_later_job", "train", "--multirun", *FAST, "seed=1,-1", "hydra.sweep.dir={ws}/sweep",
        expect=("job 1 (seed=-1): seed=-1 is out of range", "no job has run")),  # fmt: skip
    train("plugin_reward_always_nan", "task=oops_nan", site=True, cls="plugin",
          expect=("iteration 1: every one of its", "reward term 'bad' (nan_reward) returns values that are not finite")),  # fmt: skip
    train("physics_is_its_schema", "physics=physics_schema", cls="cli",
          expect=("physics=physics_schema: physics_schema is the schema physics's options are checked against",
                  "valid: auto, mjx, mujoco, warp")),  # fmt: skip
    train("cfg_job_of_a_value_out_of_range", "algo.gamma=1.5", "--cfg", "job", cls="cli",
          expect=("algo.gamma=1.5 is out of range", "valid: 0 <= gamma <= 1")),  # fmt: skip
    train("train_unknown_flag", "--foo", cls="cli", expect=("unexpected argument '--foo'", "--multirun, --cfg")),
    train("train_cfg_without_its_value", "--cfg", cls="cli", expect=("--cfg needs a value: job, hydra or all",)),
    train("override_without_a_key", "=3", cls="cli", expect=("override '=3' has no key", "valid: key=value")),
    train("rerun_of_a_text_file", "--experimental-rerun", "{ws}/notes.txt", cls="cli",
          expect=("notes.txt: not a pickle file", "valid: the config.pickle")),  # fmt: skip
    train("rerun_of_a_missing_file", "--experimental-rerun={ws}/missing.pickle", cls="cli",
          expect=("missing.pickle: No such file or directory", "valid: the config.pickle")),  # fmt: skip
    train("train_cfg_with_multirun", "--multirun", "seed=1,2", "--cfg", "job", cls="cli",
          expect=("--cfg and --multirun cannot go together",)),  # fmt: skip
    train("push_on_a_robot_without_a_free_joint",
          "+task.events.push={func:push_by_setting_velocity,mode:interval,interval_s:[1,2],params:{velocity_range:[-1,1]}}",
          expect=("event 'push' (push_by_setting_velocity) moves the floating base", "has no free joint")),  # fmt: skip
    train("adaptive_range_without_limits", "task.events.hinge_damping.adaptive.step=0.001",
          expect=("event 'hinge_damping': adaptive.limits is not set", "[low, high] around params.range")),  # fmt: skip
    train("reward_weight_past_the_value_loss", "task.rewards.alive.weight=1e38",
          expect=("the loss of every one of its", "reward term 'alive' reaches 1.0e+38 per step", "lower its weight")),  # fmt: skip
    train("observation_scaled_past_float32", "task=cartpole", "task.observations.policy.terms.pole_vel.scale=1e37",
          expect=("iteration 1: every one of its", "observation term 'pole_vel' of group 'policy' reaches",
                  "lower its scale or give it a clip")),  # fmt: skip
    # plugins: an installed task package that is broken in one of the ways a plugin can be
    train("plugin_term_wrong_shape", "task=oops_shape", site=True, cls="plugin",
          expect=("reward term 'short' (short_reward) must return [num_envs]", "got (3,)")),  # fmt: skip
    train("plugin_term_raises_at_build", "task=oops_raise", site=True, cls="plugin",
          expect=("task 'oops_raise': reward term 'raising' (raising_reward) failed: KeyError", "base_link")),  # fmt: skip
    train("plugin_observation_wrong_shape", "task=oops_obs", site=True, cls="plugin",
          expect=("observation term 'policy/flat' (nan_obs_width) must return [num_envs, k]",)),  # fmt: skip
    train("plugin_redefines_generic_term", "task=oops_clash", site=True, cls="plugin",
          expect=("task 'oops_clash' redefines generic terms ['is_alive']",)),  # fmt: skip
    train("plugin_broken_yaml", "task=oops_yaml", site=True, cls="plugin", expect=("oops_yaml",)),
    train("plugin_missing_yaml", "task=oops_noyaml", site=True, cls="plugin", expect=("oops_noyaml", "missing.yaml")),
    train("plugin_fails_to_import", "task=oops_import", site=True, cls="plugin",
          expect=("task 'oops_import' is installed but cannot be used", "failed to import")),  # fmt: skip
    train("plugin_exits_on_import", "task=oops_exits", site=True, cls="plugin",
          expect=("task 'oops_exits' is installed but cannot be used", "exited while it was imported (SystemExit: 3)")),  # fmt: skip
    train("plugin_term_not_callable", "task=oops_notcallable", site=True, cls="plugin",
          expect=("task 'oops_notcallable' is installed but cannot be used", "terms['short_reward'] is a int")),  # fmt: skip
    train("plugin_not_a_task_plugin", "task=oops_notplugin", site=True, cls="plugin",
          expect=("task 'oops_notplugin' is installed but cannot be used", "is not a robolearn TaskPlugin")),  # fmt: skip
    train("plugin_name_mismatch", "task=oops_mismatch", site=True, cls="plugin",
          expect=("task 'oops_mismatch' is installed but cannot be used", "the two names must match")),  # fmt: skip
    train("plugin_registered_twice", "task=cartpole", site=True, cls="plugin",
          expect=("task 'cartpole' is installed but cannot be used", "registered twice", "oops-tasks")),  # fmt: skip
    train("plugin_action_pattern_matches_nothing", "task=oops_pattern", site=True, cls="plugin",
          expect=("task.action.scale: '.*_knee' matches no policy actuator", "torque (hinge)")),  # fmt: skip
    train("plugin_extends_unknown_task", "task=oops_extends", site=True, cls="plugin",
          expect=("extends: cartpole_v2 is neither an installed task", "installed tasks:")),  # fmt: skip
    train("plugin_model_without_actuators", "task=oops_noact", site=True, cls="plugin",
          expect=("model has no actuators", "edit_spec")),  # fmt: skip
    # robolearn import: Isaac Lab / mjlab run directories
    cli("import_no_run", "import", expect=("import needs run=",)),
    cli("import_run_missing", "import", "run={ws}/missing", expect=("run=", "is not a directory")),
    cli("import_not_a_run", "import", "run={ws}/plain_dir", expect=("params/env.yaml", "missing")),
    cli("import_unknown_layout", "import", "run={ws}/odd_run", cls="file",
        expect=("no observations/actions sections", "Isaac Lab or mjlab")),  # fmt: skip
    cli("import_checkpoint_without_normalizer", "import", "run={ws}/il_nonorm_run", "robot={ws}/quadruped.xml", cls="file",
        expect=("no observation normalizer", "agent.yaml says")),  # fmt: skip
    cli("import_joint_order_ambiguous", "import", "run={ws}/il_run", expect=("joint order", "robot=", "joint_order=")),
    cli("import_physx_needs_joint_order", "import", "run={ws}/il_physx_run", "robot={ws}/quadruped.xml",
        expect=("physx", "joint_order=")),  # fmt: skip
    cli("import_joint_order_wrong_names", "import", "run={ws}/il_run", "joint_order=a,b,c",
        expect=("the run's action drives 3 joints (a, b, c)", "12 outputs", "joint_order=")),  # fmt: skip
    cli("import_joint_order_twice", "import", "run={ws}/il_run", "joint_order=a,a", expect=("names a joint twice",)),
    cli("import_robot_of_another_robot", "import", "run={ws}/il_run", "robot={ws}/cartpole.xml",
        expect=("drives 2 joints (slider, hinge)", "12 outputs", "robot=")),  # fmt: skip
    cli("import_robot_not_mjcf", "import", "run={ws}/il_run", "robot={ws}/not_mjcf.xml", expect=("does not load in MuJoCo",)),
    cli("import_robot_without_xml_suffix", "import", "run={ws}/il_run", "robot={ws}/quadruped.model", expect=("quadruped.model is not an MJCF file (.xml)",)),
    cli("import_env_yaml_not_text", "import", "run={ws}/il_binary_run", "robot={ws}/quadruped.xml", expect=("env.yaml is not valid YAML",), cls="file"),
    cli("import_obs_of_words", "import", "run={ws}/il_run", "robot={ws}/quadruped.xml", "obs={ws}/obs_words.npy", expect=("obs_words.npy holds", "not numbers"), cls="file"),
    cli("import_out_another_runs_bundle", "import", "run={ws}/il_run", "robot={ws}/quadruped.xml", "out={ws}/run/export",
        expect=("holds a bundle of task 'cartpole' that was not imported from", "choose a new path"), cls="file"),
    cli("import_checkpoint_missing", "import", "run={ws}/il_run", "checkpoint=model_99.pt", expect=("model_99.pt", "does not exist")),
    cli("import_out_is_a_file", "import", "run={ws}/il_run", "robot={ws}/quadruped.xml", "out={ws}/notes.txt",
        expect=("notes.txt", "existing file")),  # fmt: skip
    cli("import_obs_not_an_array", "import", "run={ws}/il_run", "robot={ws}/quadruped.xml", "obs={ws}/notes.txt",
        expect=("obs=", ".npy")),  # fmt: skip
    cli("import_bad_precision", "import", "run={ws}/il_run", "precision=fp8", expect=("precision", "fp32, fp16")),
    cli("import_checkpoint_is_a_folder", "import", "run={ws}/il_run", "checkpoint={ws}/plain_dir", expect=("plain_dir is a folder", "model_<N>.pt", "model_4.pt")),
    cli("import_checkpoint_of_another_run", "import", "run={ws}/il_run", "checkpoint={ws}/il_nonorm_run/model_4.pt",
        expect=("belongs to another run", "il_nonorm_run"), cls="file"),  # fmt: skip
    cli("import_joint_order_of_commas", "import", "run={ws}/il_run", "joint_order=,,,,", expect=("names no joint", "comma-separated")),
    cli("import_negative_decimation", "import", "run={ws}/il_decimation_run", "robot={ws}/quadruped.xml",
        expect=("decimation -4", "whole number >= 1"), cls="file"),  # fmt: skip
    cli("import_task_of_another_robot", "import", "run={ws}/il_run", "robot={ws}/quadruped.xml", "task=cartpole",
        expect=("task=cartpole drives joints", "same robot")),  # fmt: skip
    cli("import_nan_physics_step", "import", "run={ws}/il_nan_dt_run", "robot={ws}/quadruped.xml", cls="file",
        expect=("sim.dt: nan", "valid: a positive finite number of seconds")),  # fmt: skip
    # found by an audit of files, permissions and the environment (2026-11-29)
    train("reward_weight_past_float32", "task.rewards.upright.weight=1e40",
          expect=("task.rewards.upright.weight=1e+40 is out of range", "a finite float32 number")),  # fmt: skip
    train("obs_noise_past_float32", "task.observations.policy.terms.cart_pos.noise.scale=1e39",
          expect=("noise.scale=1e+39 is out of range", "a finite float32 number")),  # fmt: skip
    train("delete_a_top_level_setting", "~seed", expect=("~seed: seed cannot be removed from the training config", "valid: override it")),
    train("delete_a_top_level_group", "~runner", expect=("~runner: runner cannot be removed",)),
    train("remove_the_algo_group", "~algo", expect=("~algo: the algo group cannot be removed", "algo=ppo")),
    train("remove_the_randomization_group", "~randomization=default",
          expect=("the randomization group cannot be removed", "randomization=none")),
    train("warp_cache_path_is_a_file", "physics=warp", env=(("WARP_CACHE_PATH", "{ws}/notes.txt"),), cls="file",
          expect=("physics=warp cannot make its kernel cache", "notes.txt", "valid: WARP_CACHE_PATH unset or a folder")),  # fmt: skip
    train("interpolation_to_a_missing_key", "task.rewards.alive.weight=${oops}",
          expect=("task.rewards.alive.weight=${oops}: interpolation key 'oops' is not in the config", "valid: ${<key path>}, e.g. ${algo.gamma}")),  # fmt: skip
    train("interpolation_to_an_unset_env_var", "algo.gamma=${oc.env:ROBOLEARN_UNSET_VARIABLE}",
          expect=("environment variable ROBOLEARN_UNSET_VARIABLE is not set", "valid: set it, or give a default")),  # fmt: skip
    train("interpolation_of_the_wrong_type", "env.num_envs=${algo.gamma}",
          expect=("env.num_envs=${algo.gamma}: what it resolves to is not an integer", "valid: a whole number")),  # fmt: skip
    train("rewards_emptied", "task.rewards={}", expect=("task.rewards={} keeps every term", "valid: ~task.rewards.<name> removes one term")),
    train("policy_terms_emptied", "task.observations.policy.terms={}",
          expect=("keeps every term", "valid: ~task.observations.policy.terms.<name> removes one term")),  # fmt: skip
    cli("sweep_of_an_empty_range", "train", "--multirun", *FAST, "seed=range(3,0)", "hydra.sweep.dir={ws}/sweep",
        expect=("seed=range(3,0) sweeps no value", "valid: range(start, stop[, step]) with start < stop")),  # fmt: skip
    cli("sweep_of_an_empty_choice", "train", "--multirun", *FAST, "seed=choice()", "hydra.sweep.dir={ws}/sweep",
        expect=("seed=choice() sweeps no value", "valid: one value or more")),  # fmt: skip
    cli("sweep_range_step_zero", "train", "--multirun", *FAST, "seed=range(0,3,0)", "hydra.sweep.dir={ws}/sweep",
        expect=("a range() step of 0 sweeps nothing", "valid: range(start, stop[, step])")),  # fmt: skip
    train("train_cfg_of_an_unknown_part", "--cfg", "everything", cls="cli", expect=("--cfg everything", "valid: job, hydra or all")),
    train("train_info_of_an_unknown_kind", "--info", "bogus", cls="cli", expect=("--info bogus", "valid: all, config, defaults")),
    train("world_size_not_a_number", env=(("WORLD_SIZE", "abc"),), cls="cli",
          expect=("WORLD_SIZE=abc in the environment is not valid", "valid: an integer >= 1")),  # fmt: skip
    train("local_rank_not_a_number", env=(("WORLD_SIZE", "2"), ("RANK", "0"), ("LOCAL_RANK", "x")), cls="cli",
          expect=("LOCAL_RANK=x in the environment is not valid", "valid: an integer >= 0")),  # fmt: skip
    train("a_term_group_removed_as_a_whole", "~task.rewards",
          expect=("~task.rewards: the task's rewards cannot be removed as a whole", "valid: ~task.rewards.<name> removes one term")),  # fmt: skip
    train("negative_mass_from_a_scale_range", "task.events.pole_mass.params.range=[-1,-1]",
          expect=("event 'pole_mass' (randomize_model_field): body_mass scale range [-1, -1] makes body_mass -0.1",
                  "valid: a range that keeps it >= 0")),  # fmt: skip
    train("zero_mass_from_a_scale_range", "task.events.pole_mass.params.range=[0,0]",
          expect=("body_mass scale range [0, 0] makes a body's mass 0", "valid: a range that keeps it > 0")),  # fmt: skip
    train("an_observation_group_nothing_reads", "+task.observations.extra={terms: {a: {func: joint_pos}}}",
          expect=("task.observations.extra is read by nothing", "valid: policy, critic")),  # fmt: skip
    train("negative_damping_from_an_abs_range", "task.events.hinge_damping.params.range=[-100,-100]",
          expect=("dof_damping abs range [-100, -100]", "valid: a range that keeps it >= 0")),  # fmt: skip
    train("mjx_on_a_jax_platform_this_machine_lacks", "physics=mjx", env=(("JAX_PLATFORMS", "cuda"),), cls="cli",
          expect=("physics=mjx cannot start JAX on the CPU with JAX_PLATFORMS=cuda", "valid: unset JAX_PLATFORMS")),  # fmt: skip
    cli("import_negative_stiffness", "import", "run={ws}/il_negative_gain_run", "robot={ws}/quadruped.xml", cls="file",
        expect=("stiffness of joint", "is -25.0", "valid: a finite number >= 0")),  # fmt: skip
    # found by an audit of hand-written third-party robot plugins (2026-11-29)
    train("terrain_for_a_robot_without_a_free_joint", "task.terrain={num_levels: 2, num_cols: 2}",
          expect=("task.terrain:", "the model has none (a free joint)", "valid: a robot with a free joint, or no terrain")),
    train("metric_per_meter_without_a_free_joint", "+task.metrics.effort={func: action_l2, per: meter}",
          expect=("metric 'effort': per: meter", "valid: per: step or final")),  # fmt: skip
    train("adaptive_range_setting_misspelt", "task.events.pole_mass.adaptive.stepp=0.1",
          expect=("task.events.pole_mass.adaptive.stepp is not a setting of task.events.pole_mass.adaptive", "limits")),
    # left open by the 2026-11-29 audit, fixed in session 39
    train("one_term_emptied", "task.rewards.alive={}",
          expect=("task.rewards.alive={} keeps term 'alive' as it is", "valid: ~task.rewards.alive removes it")),
    train("one_term_set_to_null", "task.terminations.pole_fell=null",
          expect=("null removes a term only in a task YAML that extends another", "valid: ~task.terminations.pole_fell removes it")),  # fmt: skip
    train("a_setting_set_to_null", "seed=null", expect=("seed=null: seed cannot be null", "valid: a value of its type, e.g. seed=0")),
    train("a_list_setting_set_to_null", "algo.actor_hidden_dims=null",
          expect=("algo.actor_hidden_dims cannot be null", "e.g. algo.actor_hidden_dims=[")),
    train("a_term_group_set_to_null", "task.rewards=null",
          expect=("task.rewards=null: the task's rewards cannot be removed as a whole", "valid: ~task.rewards.<name> removes one term")),  # fmt: skip
    train("a_new_term_without_its_func", "+task.rewards.new={weight: 2}",
          expect=("task.rewards.new has no func", "valid: {func: <a term function>, ...} (robolearn terms lists them)")),
    train("package_without_cfg", "--package", "algo", cls="cli",
          expect=("--package chooses the part of the config --cfg prints", "valid: with --cfg")),
    cli("terms_kind_given_twice", "terms", "--kind", "reward", "--kind", "metric",
        expect=("--kind is given twice (reward and metric)", "valid: one --kind")),
    train("an_interpolation_left_open", "algo.gamma=${oops", cls="cli",
          expect=("cannot read the override algo.gamma=${oops: mismatched input", "valid: key=value with every [, {, ( and ${ closed")),
    train("a_list_left_open", "task.action.scale=[1,2", cls="cli",
          expect=("cannot read the override task.action.scale=[1,2", "valid: key=value with every [, {, ( and ${ closed")),
    cli("play_command_past_any_trained", "play", "bundle={ws}/bundle", "duration=0.1", "command=[1e30]",
        expect=("1e+30 is far past any command a policy was trained on", "valid: values of magnitude at most 1e+06")),
]
