"""Each mistake a user can make ends in one line on stderr, a non-zero exit, and no lost files."""

import hashlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import robolearn

FAST = ["runner.max_iterations=1", "env.num_envs=8", "runner.num_steps_per_env=8", "algo.num_mini_batches=1"]


def one_line_error(result, *expected):
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(("args", "expected"), [
    (["task=nope"], ["unknown task 'nope'", "cartpole, pendulum, pendulum_partial, quadruped_flat"]),
    (["physics=bullet"], ["unknown physics backend 'bullet'", "auto, mjx, mujoco, warp"]),
    (["physics.backend=bullet"], ["unknown physics backend 'bullet'", "auto, warp, mjx, mujoco"]),
    (["algo.learning_rat=1"], ["algo.learning_rat is not a setting of algo; valid: learning_rate, schedule"]),
    (["+env.typo=3"], ["env.typo is not a setting of env (a + override cannot add one); valid: num_envs"]),
    (["+task.anything=1"], ["task.anything is not a setting of task", "valid: name, description, asset"]),
    (["+zzz=1"], ["zzz is not a setting of the training config", "valid: task, physics, algo"]),
    (["+task.rewards.upright.wieght=1"], ["task.rewards.upright.wieght is not a setting", "valid: func, weight, params"]),
    (["task.rewards.upright.wieght=1"], ["task.rewards.upright.wieght is not a setting", "valid: func, weight, params"]),
    (["env.num_envs=lots"], ["num_envs", "lots"]),
    (["seed=1,2"], ["seed"]),  # a sweep without --multirun
    (["task.asset=missing.xml"], ["MJCF file not found: missing.xml, neither in the task's folder (", "tasks/cartpole)",
                                  "nor in robolearn's assets (", "valid: a path relative to either"]),
    (["algo.gamma=1.5"], ["algo.gamma=1.5 is out of range; valid: 0 <= gamma <= 1"]),
    (["seed=-1"], ["seed=-1 is out of range; valid: an integer 0..4294967295"]),
    (["algo.num_mini_batches=0"], ["algo.num_mini_batches=0 is out of range"]),
    (["runner.save_interval=0"], ["runner.save_interval=0 is out of range"]),
    # Hydra's completion scripts assume `python script.py`: refused rather than installed broken
    (["--shell-completion", "install=bash"], ["--shell-completion: shell completion is not offered", "robolearn train --help"]),
    (["-sc", "query=bash"], ["-sc: shell completion is not offered", "robolearn train --help"]),
])
def test_bad_train_invocations(tmp_path, args, expected):
    one_line_error(robolearn("train", *FAST, *args, cwd=tmp_path), *expected)


def test_broken_mjcf_names_file_and_mujoco_message(tmp_path):
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><geom type='sphere' size='0.1'/></worldbody><actuator><motor joint='x'/></actuator></mujoco>")
    line = one_line_error(robolearn("train", *FAST, f"task.asset={broken}", cwd=tmp_path), "broken.xml")
    assert "cannot load MJCF" in line


def test_unknown_command_and_export_mistakes(tmp_path):
    one_line_error(robolearn("trian", cwd=tmp_path), "unknown command 'trian'", "train, export, import, eval, sim2sim, play, list")
    one_line_error(robolearn("export", cwd=tmp_path), "export needs run=")
    one_line_error(robolearn("export", "run=x", "fmt=onnx", cwd=tmp_path), "unexpected argument 'fmt=onnx'")
    one_line_error(robolearn("export", f"run={tmp_path}", cwd=tmp_path), "not a robolearn run directory")
    one_line_error(robolearn("export", "run=x", "format=tflite", cwd=tmp_path), "unknown export format 'tflite'", "onnx, tensorrt")
    one_line_error(robolearn("export", "run=x", "precision=int8", cwd=tmp_path), "unknown precision 'int8'", "fp32, fp16")
    from robolearn_deploy.tensorrt import unavailable_reason

    if unavailable_reason() is not None:
        one_line_error(robolearn("export", "run=x", "format=tensorrt", cwd=tmp_path), unavailable_reason(), "format=onnx works")
    one_line_error(robolearn("eval", cwd=tmp_path), "eval needs run=")
    one_line_error(robolearn("sim2sim", cwd=tmp_path), "sim2sim needs bundle=")
    one_line_error(robolearn("sim2sim", f"bundle={tmp_path}", cwd=tmp_path), "has no robot.yaml")
    one_line_error(robolearn("sim2sim", "bundle=x", "episodes=many", cwd=tmp_path), "episodes=many is not an integer")
    one_line_error(robolearn("sim2sim", "bundle=x", "realtime=yes", cwd=tmp_path), "realtime=yes", "true and false")


def snapshot(folder):
    return {p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


def test_resume_without_checkpoint_leaves_run_dir_untouched(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "metrics.jsonl").write_text('{"iteration": 1}\n')
    before = snapshot(run)
    one_line_error(robolearn("train", f"resume={run}", cwd=tmp_path), "no checkpoint in")
    assert snapshot(run) == before


def test_bad_resume_and_corrupt_checkpoint_are_reported_and_nothing_is_lost(tmp_path):
    run = tmp_path / "run"
    ok = robolearn("train", *FAST, "runner.export_onnx=false", f"hydra.run.dir={run}", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    before = snapshot(run)
    one_line_error(robolearn("train", f"resume={run}", "algo.actor_hidden_dims=[8]", cwd=tmp_path), "does not fit")
    one_line_error(robolearn("train", f"resume={run}", "runner.max_iteratons=2", cwd=tmp_path), "max_iteratons")
    # a checkpoint stripped of what a resume needs beyond the policy (by hand, to save space)
    import torch

    saved = run / "checkpoints" / "iter_000001.pt"
    whole = saved.read_bytes()
    for strip, expected in (("algorithm", "has no optimizer and learner state ('algorithm')"),
                            ("env_steps", "has no count of env steps ('env_steps')"),
                            ("rng", "has no random number streams ('rng')"),
                            ("rng.torch", "holds random number streams this robolearn cannot restore"),
                            ("iteration<0", "holds iteration -5: a damaged or hand-edited checkpoint")):  # fmt: skip
        payload = torch.load(saved, weights_only=False)
        if strip == "rng.torch":
            payload["rng"]["torch"] = torch.zeros(3)
        elif strip == "iteration<0":
            payload["iteration"] = -5
        else:
            del payload[strip]
        torch.save(payload, saved)
        before = snapshot(run)
        line = one_line_error(robolearn("train", f"resume={run}", "runner.max_iterations=2", cwd=tmp_path), expected)
        assert "move it away to " in line and "the one before it" in line, line
        assert snapshot(run) == before
        saved.write_bytes(whole)
    (run / "checkpoints" / "iter_000001.pt").write_bytes(b"\x00garbage")
    before = snapshot(run)
    one_line_error(robolearn("train", f"resume={run}", "runner.max_iterations=2", cwd=tmp_path), "unreadable")
    one_line_error(robolearn("export", f"run={run}", cwd=tmp_path), "unreadable")
    assert snapshot(run) == before


def test_eval_with_more_episodes_than_memory_names_episodes(trained_cartpole, monkeypatch):
    """eval runs one environment per episode: where they do not fit, the line names episodes=, the
    setting the user gave (the env's own check names env.num_envs), and no eval.json is written."""
    from robolearn.errors import UserError
    from robolearn.run_policy import eval_run

    run_dir, _ = trained_cartpole
    before = (run_dir / "eval.json").read_bytes() if (run_dir / "eval.json").exists() else None
    monkeypatch.setattr("robolearn.memory.available_bytes", lambda: 2**20)  # 1 MiB free
    with pytest.raises(UserError, match=r"^episodes=4096 \(one environment each\) needs ~\d+ MiB of memory, 1 MiB free: "
                                        r"lower episodes=$"):  # fmt: skip
        eval_run(run_dir, episodes=4096)
    assert ((run_dir / "eval.json").read_bytes() if (run_dir / "eval.json").exists() else None) == before


def test_a_policy_with_nan_weights_is_refused_by_eval_and_export(trained_cartpole, tmp_path):
    """Non-finite actions reset the env after one step (health masking): without a check, eval
    would write a plausible eval.json (return 0, episodes of one step)."""
    import shutil

    import torch

    from robolearn.errors import UserError
    from robolearn.run_policy import eval_run, export_run

    run = tmp_path / "run"
    shutil.copytree(trained_cartpole[0], run, ignore=shutil.ignore_patterns("eval.json"))
    saved = sorted((run / "checkpoints").glob("*.pt"))[-1]
    payload = torch.load(saved, weights_only=False)
    payload["model"]["actor.0.weight"][:] = float("nan")
    torch.save(payload, saved)
    before = snapshot(run)
    from robolearn.play import PlayCfg, play_run

    for verb in (lambda: eval_run(run, episodes=4), lambda: export_run(run, out=tmp_path / "bundle"),
                 lambda: play_run(run, None, PlayCfg(duration=1.0, out=tmp_path / "clip.mp4"))):  # fmt: skip
        with pytest.raises(UserError, match=rf"^the policy of {re.escape(str(saved))} acts NaN or inf \(its weights or "
                                            r"normalizer are not finite.*valid: an earlier checkpoint \(checkpoint=<name>\)$"):  # fmt: skip
            verb()
    assert snapshot(run) == before and not (tmp_path / "bundle").exists() and not (tmp_path / "clip.mp4").exists()


@pytest.mark.parametrize("size", ["24k", "300k"])
def test_a_full_disk_is_one_line_and_leaves_whole_files(tmp_path, size):
    """Training onto a small file system (a tmpfs in a mount namespace of its own) that fills up:
    at 24 kB in TensorBoard's writer thread or a metrics row, at 300 kB while writing the second
    checkpoint. One line, exit 2, no traceback (the writer thread's neither), no `.tmp` file left,
    and where the line names a last checkpoint, that checkpoint loads."""
    import torch

    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("needs `unshare -m` (root, or CAP_SYS_ADMIN) to mount a small tmpfs")
    disk, copy = tmp_path / "disk", tmp_path / "copy"
    disk.mkdir()
    train = [sys.executable, "-m", "robolearn.cli", "train", "env.num_envs=16", "runner.max_iterations=30",
             "runner.save_interval=5", "runner.video_interval=0", "runner.progress=false", f"hydra.run.dir={disk / 'run'}"]  # fmt: skip
    script = (f"mount -t tmpfs -o size={size} tmpfs {disk} && cd {disk} && {shlex.join(train)}; code=$?; "
              f"cp -r {disk / 'run'} {copy}; exit $code")  # fmt: skip
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    one_line_error(result, "no space left on the device")
    assert result.returncode == 2
    assert not [p for p in copy.rglob("*") if p.name.endswith(".tmp")]
    named = re.search(r"the last intact one is (\S+\.pt)", result.stderr)
    if size == "300k":
        assert named, result.stderr
        kept = copy / "checkpoints" / Path(named.group(1)).name
        assert torch.load(kept, weights_only=False)["iteration"] > 0


def test_a_path_this_user_may_not_read_is_one_line(tmp_path, monkeypatch, capsys):
    """A run folder under chmod 000: the first look inside it fails (root reads anyway: the look is
    made to fail as it would)."""
    from robolearn import cli, run_policy

    def denied(run_dir):
        raise PermissionError(13, "Permission denied", str(run_dir / "config.yaml"))

    monkeypatch.setattr(run_policy, "load_run_config", denied)
    assert cli.main(["eval", f"run={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "config.yaml: permission denied; valid: a path this user may read" in err, err


def test_hydra_flags_between_overrides_are_taken_where_they_stand(tmp_path):
    """argparse (Python 3.11) takes no override after a flag once it has read overrides before it:
    train moves Hydra's flags, with their values, in front of the overrides."""
    result = robolearn("train", "seed=1", "--cfg", "job", "algo.gamma=0.9", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "\nseed: 1\n" in result.stdout and "  gamma: 0.9\n" in result.stdout
    result = robolearn("train", "seed=1", "--info", "config", "algo.gamma=0.9", cwd=tmp_path)
    assert result.returncode == 0 and "gamma: 0.9" in result.stdout, result.stderr
    one_line_error(robolearn("train", "seed=1", "--cfg", "everything", cwd=tmp_path), "--cfg everything",
                   "valid: job, hydra or all")  # fmt: skip
    one_line_error(robolearn("train", "--info", "bogus", "seed=1", cwd=tmp_path), "--info bogus",
                   "valid: all, config, defaults")  # fmt: skip
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("args", "expected"), [
    (["task.rewards.alive.weight=${oops}"],
     ["task.rewards.alive.weight=${oops}: interpolation key 'oops' is not in the config; valid: ${<key path>}, e.g. ${algo.gamma}"]),
    (["task.rewards={}"], ["task.rewards={} keeps every term", "valid: ~task.rewards.<name> removes one term"]),
    (["task.observations.policy.terms={}"], ["task.observations.policy.terms={} keeps every term",
                                             "valid: ~task.observations.policy.terms.<name> removes one term"]),
])  # fmt: skip
def test_a_config_mistake_the_job_would_meet_is_one_line_before_any_run_folder(tmp_path, args, expected):
    """An interpolation to a missing key (resolved only when the job read it, after Hydra had made the
    folder) and an empty mapping that would merge as nothing."""
    result = robolearn("train", *FAST, *args, cwd=tmp_path)
    one_line_error(result, *expected)
    assert result.returncode == 2
    result = robolearn("train", *FAST, f"hydra.run.dir={tmp_path / 'run'}", *args, cwd=tmp_path)
    one_line_error(result, *expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "a run folder was left"


def test_a_run_config_edited_with_a_key_no_schema_has_names_the_valid_ones(trained_cartpole, tmp_path):
    from robolearn.errors import UserError
    from robolearn.run_policy import load_run_config

    run = tmp_path / "run"
    run.mkdir()
    text = (trained_cartpole[0] / "config.yaml").read_text()
    (run / "config.yaml").write_text(text.replace("  gamma:", "  gamam:", 1))
    with pytest.raises(UserError, match=r"config.yaml: algo.gamam is not a setting of algo; valid: .*gamma.*\(edited since"):
        load_run_config(run)


def test_a_run_config_without_a_section_its_policy_is_rebuilt_from_is_refused(trained_cartpole, tmp_path):
    """A config.yaml whose algo: section was deleted would rebuild the policy from the schema's
    defaults (other layer sizes, another network) and say nothing."""
    import yaml

    from robolearn.errors import UserError
    from robolearn.run_policy import load_run_config

    run = tmp_path / "run"
    run.mkdir()
    saved = yaml.safe_load((trained_cartpole[0] / "config.yaml").read_text())
    del saved["algo"]
    (run / "config.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    with pytest.raises(UserError, match=r"config\.yaml: it holds no algo: mapping \(robolearn train writes task, algo, env, "
                                        r"runner\)$"):  # fmt: skip
        load_run_config(run)


@pytest.mark.parametrize("edit, expected", [
    (("  episode_length_s: 5.0", "  episode_length_s: .nan"), r"task\.episode_length_s=nan is out of range; valid: a finite number"),
    (("  decimation: 2", "  decimation: 0"), r"task\.decimation=0 is out of range; valid: "),
    (("  decimation: 2", "  decimation: two"), r"task\.decimation = 'two' is not an integer; valid: a whole number"),
    (("randomization:\n  level: default", "randomization:\n  level: extreme"),
     r"randomization\.level = 'extreme' is not one of its choices; valid: none, default, sim2real"),
    (("  name: cartpole", "  name: ???"), r"task\.name is missing; valid: a value for it"),
])  # fmt: skip
def test_a_run_config_edited_to_a_value_train_refuses_is_refused_by_eval_and_export(trained_cartpole, tmp_path, edit, expected):
    """eval, export, play and resume read config.yaml: a value train would refuse (a NaN episode
    length ended in a ValueError traceback inside the env) is the line train gives, naming the file."""
    from robolearn.errors import UserError
    from robolearn.run_policy import load_run_config

    run = tmp_path / "run"
    run.mkdir()
    text = (trained_cartpole[0] / "config.yaml").read_text()
    assert edit[0] in text
    (run / "config.yaml").write_text(text.replace(*edit, 1))
    with pytest.raises(UserError, match=rf"config\.yaml \(edited since the run wrote it\?\): {expected}"):
        load_run_config(run)
