"""What a training run logs, end to end: TensorBoard (config text, hparams, scalars, clips, the
end-of-training evaluation), W&B offline (its run files, history, summary, clips; a resumed run
continues the same W&B run), the clips in <run>/videos, and the plain progress lines."""

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from robolearn.run_dir import holds_run

from .conftest import metrics

TINY = ["physics=mujoco", "env.num_envs=16", "runner.num_steps_per_env=8", "algo.num_mini_batches=1"]
# cartpole's 0.02 s steps: 0.3 s = 8 frames = 16 steps = 2 iterations, so clips at 2 and 4
CLIPS = ["runner.video_interval=2", "runner.video_length_s=0.3"]
BLOCK = 32768


def offline(tmp_path: Path) -> dict:
    """The environment of a run with W&B offline, its settings kept out of the user's home."""
    return {**os.environ, "WANDB_MODE": "offline", "WANDB_CONFIG_DIR": str(tmp_path / "wandb-config"),
            "WANDB_CACHE_DIR": str(tmp_path / "wandb-cache")}  # fmt: skip


def train(*args, cwd, env=None):
    """`robolearn train` in its own process, as a user runs it (with an environment of our own)."""
    return subprocess.run([sys.executable, "-m", "robolearn.cli", "train", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def wandb_records(path: Path) -> list:
    """The records of a W&B run file (.wandb): a 7-byte header (':W&B', magic, version), then
    chunks in 32 KiB blocks as in LevelDB's log format: crc32 (4 bytes), length (2, little-endian),
    type (1 whole record, 2 first part, 3 middle, 4 last), data; a block's last < 7 bytes are padding."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pending, pos = [], b"", 7
    while pos + 7 <= len(data):
        if BLOCK - pos % BLOCK < 7:
            pos += BLOCK - pos % BLOCK
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def wandb_run(run_dir: Path, run_id: str) -> dict:
    """The offline W&B run folder of `run_id` under <run>/wandb/, with its history, summary and config."""
    (folder,) = (run_dir / "wandb").glob(f"offline-run-*-{run_id}")
    (log,) = folder.glob("*.wandb")
    records = wandb_records(log)
    key = lambda item: item.key or "/".join(item.nested_key)  # noqa: E731
    history = [{key(i): json.loads(i.value_json) for i in r.history.item} for r in records if r.HasField("history")]
    summary = {key(i): json.loads(i.value_json) for r in records if r.HasField("summary") for i in r.summary.update}
    (run,) = [r.run for r in records if r.HasField("run")]
    config = {key(i): json.loads(i.value_json) for i in run.config.update}
    return {"folder": folder, "history": history, "summary": summary, "run": run, "config": config}


def read_mp4(path: Path):
    import imageio_ffmpeg

    frames = imageio_ffmpeg.read_frames(str(path))
    meta = next(frames)
    width, height = meta["size"]
    return meta, [np.frombuffer(f, np.uint8).reshape(height, width, 3) for f in frames]


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory):
    """One short cartpole run into TensorBoard and W&B (offline), with clips and the export."""
    work = tmp_path_factory.mktemp("logged")
    run = work / "run"
    result = train(*TINY, *CLIPS, "runner.max_iterations=4", "logger=both", f"hydra.run.dir={run}", cwd=work,
                   env=offline(work))  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return run, result


def test_piped_progress_lines_show_elapsed_time_eta_and_the_run_directory(logged_run):
    _, result = logged_run
    lines = [line for line in result.stderr.splitlines() if line.startswith("iteration ")]
    assert len(lines) == 4, result.stderr[-2000:]
    pattern = r"iteration (\d)/4 \| [\d,]+ steps/s \| (no episode finished yet|return [\d.-]+ \| length [\d.]+) \| " \
              r"\d+:\d\d:\d\d elapsed, ETA \d+:\d\d:\d\d \| run"  # fmt: skip
    for k, line in enumerate(lines, 1):
        found = re.fullmatch(pattern, line)
        assert found and found.group(1) == str(k), line
    assert lines[-1].endswith("ETA 0:00:00 | run")


def test_tensorboard_holds_config_text_hparams_evaluation_and_clips(logged_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    run, _ = logged_run
    events = EventAccumulator(str(run / "tensorboard"), size_guidance={"tensors": 0, "images": 0, "scalars": 0})
    events.Reload()
    text = events.Tensors("config/text_summary")[0].tensor_proto.string_val[0].decode()
    assert text.startswith("```yaml\ntask:\n  name: cartpole") and "logger: both" in text
    hparams = events.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(hparams["_hparams_/session_start_info"]).session_start_info
    assert start.hparams["task"].string_value == "cartpole" and start.hparams["physics"].string_value == "mujoco"
    assert start.hparams["env.num_envs"].number_value == 16 and start.hparams["runner.num_steps_per_env"].number_value == 8
    assert [s.step for s in events.Scalars("train/mean_episode_return")][-1] == 4
    evaluation = yaml.safe_load((run / "export" / "robot.yaml").read_text())["evaluation"]  # the export's
    assert [(s.step, s.value) for s in events.Scalars("eval/return_mean")] == [(4, pytest.approx(evaluation["return_mean"]))]
    images = events.Images("video/train")
    assert [i.step for i in images] == [2, 4]
    gif = Image.open(io.BytesIO(images[0].encoded_image_string))
    assert gif.format == "GIF" and gif.n_frames == 4 and (images[0].width, images[0].height) == (160, 120)


def test_clips_are_written_at_the_interval_with_their_frames(logged_run):
    run, _ = logged_run
    assert sorted(p.name for p in (run / "videos").iterdir()) == ["train_it000002.mp4", "train_it000004.mp4"]
    meta, frames = read_mp4(run / "videos" / "train_it000004.mp4")
    assert meta["size"] == (320, 240) and meta["fps"] == 25.0 and len(frames) == 8
    assert all(frame.std() > 10 for frame in frames)  # not blank


def test_wandb_offline_run_holds_history_summary_config_and_clips(logged_run):
    run, _ = logged_run
    run_id = (run / "wandb_run_id").read_text().strip()
    logged = wandb_run(run, run_id)
    assert logged["run"].display_name == "run" and logged["run"].project == "robolearn"
    config = logged["config"]  # the resolved composed config
    assert config["task"]["name"] == "cartpole" and config["env"]["num_envs"] == 16 and config["logger"] == "both"
    steps = [row["_step"] for row in logged["history"]]
    assert steps == [1, 2, 3, 4]
    assert all("train/mean_episode_return" in row or row["_step"] == 1 for row in logged["history"])
    assert logged["summary"]["eval/return_mean"] > 0 and logged["summary"]["eval/episodes"] == 16
    rows = metrics(run)
    assert logged["summary"]["train/env_steps"] == rows[-1]["env_steps"]
    assert len(list((logged["folder"] / "files" / "media" / "videos").rglob("*.mp4"))) == 2


def test_a_resumed_run_continues_the_same_wandb_run(logged_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(logged_run[0], run)  # the other tests keep the run as trained
    run_id = (run / "wandb_run_id").read_text().strip()
    result = train(f"resume={run}", "runner.max_iterations=5", "runner.export_onnx=false", cwd=tmp_path,
                   env=offline(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert (run / "wandb_run_id").read_text().strip() == run_id
    folders = sorted((run / "wandb").glob("offline-run-*"))
    assert len(folders) == 2 and all(f.name.endswith(f"-{run_id}") for f in folders)
    resumed = wandb_records(next(folders[1].glob("*.wandb")))
    assert [r.history.step.num for r in resumed if r.HasField("history")] == [5]


def test_wandb_chosen_but_missing_exits_before_any_run_file(tmp_path):
    """As on a machine without the wandb package (a None entry in sys.modules hides it)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['wandb'] = None\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    run = tmp_path / "run"
    result = train(*TINY, "logger=wandb", f"hydra.run.dir={run}", cwd=tmp_path, env=env)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and lines == [
        "robolearn train: error: logger=wandb needs the wandb package: pip install 'robolearn[wandb]'"
    ], result.stderr[-2000:]
    assert holds_run(run) == [] and not (run / "wandb").exists()

