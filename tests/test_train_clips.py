"""Training clips (train_clips.py): which iterations record, and what the worker writes."""

import io
import time

import numpy as np
import pytest
import torch
from PIL import Image

from robolearn.config import RunnerCfg
from robolearn.train_clips import ClipRecorder

from .conftest import random_actions

# cartpole: 0.02 s a control step -> a frame every 2 steps (25 fps); 0.3 s = 8 frames = 16 steps,
# 2 iterations of 8 steps
CFG = RunnerCfg(num_steps_per_env=8, video_interval=5, video_length_s=0.3, video_width=96, video_height=64)


def read_mp4(path):
    import imageio_ffmpeg

    frames = imageio_ffmpeg.read_frames(str(path))
    meta = next(frames)
    width, height = meta["size"]
    return meta, [np.frombuffer(f, np.uint8).reshape(height, width, 3) for f in frames]


def train_like_the_runner(env, recorder, iterations, first=1):
    """What OnPolicyRunner.learn does with a recorder, with random actions; the iterations that recorded."""
    gen = torch.Generator().manual_seed(0)
    recorded = []
    env.reset()
    for it in range(first, iterations + 1):
        recording = recorder.recording(it)
        with torch.inference_mode():
            for _ in range(CFG.num_steps_per_env):
                env.step(random_actions(env, gen))
                if recording:
                    recorder.record()
        if recording:
            recorded.append(it)
    return recorded


def test_a_clip_is_recorded_over_the_iterations_leading_to_every_interval_and_drawn_beside_training(make_env, tmp_path):
    env = make_env("cartpole", num_envs=4)
    recorder = ClipRecorder(env, CFG, tmp_path / "videos", "cartpole")
    assert (recorder.every, recorder.fps, recorder.frames, recorder.span) == (2, 25.0, 8, 2)
    assert train_like_the_runner(env, recorder, 12) == [4, 5, 9, 10]  # the clip at 10 ends at 10; none at 0
    clips = recorder.finished() + recorder.close()
    assert recorder.error is None
    assert [(c.iteration, c.path.name, c.frames) for c in clips] == [(5, "train_it000005.mp4", 8),
                                                                      (10, "train_it000010.mp4", 8)]
    assert sorted(p.name for p in (tmp_path / "videos").iterdir()) == ["train_it000005.mp4", "train_it000010.mp4"]
    meta, frames = read_mp4(clips[0].path)
    assert meta["size"] == (96, 64) and meta["fps"] == 25.0 and len(frames) == 8
    assert all(f.std() > 10 for f in frames)  # not blank
    assert np.abs(frames[0].astype(int) - frames[-1]).mean() > 0.5  # the cart moved under random actions
    gif = Image.open(io.BytesIO(clips[0].gif))
    assert gif.n_frames == 4 and gif.size == clips[0].gif_size == (160, 107)  # 10 fps of 25


def test_a_clip_cut_short_by_the_end_of_training_is_dropped(make_env, tmp_path):
    env = make_env("cartpole", num_envs=2)
    recorder = ClipRecorder(env, CFG, tmp_path / "videos", "cartpole")
    assert train_like_the_runner(env, recorder, 4) == [4]  # the clip at 5 has begun
    assert recorder.close() == [] and recorder.error is None
    assert not (tmp_path / "videos").exists()


def test_without_offscreen_rendering_the_recorder_reports_one_error_and_stops_recording(make_env, tmp_path, monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "disabled")  # the worker process finds no GL, as on a machine without EGL
    env = make_env("cartpole", num_envs=2)
    recorder = ClipRecorder(env, CFG, tmp_path / "videos", "cartpole")
    assert train_like_the_runner(env, recorder, 5) == [4, 5]  # the worker starts with this clip, and fails
    deadline = time.monotonic() + 30
    while recorder.error is None and time.monotonic() < deadline:
        assert recorder.finished() == []
        time.sleep(0.05)
    assert recorder.error is not None and "cannot render offscreen" in recorder.error
    assert train_like_the_runner(env, recorder, 12, first=6) == []  # no more clips
    assert recorder.close() == [] and not (tmp_path / "videos").exists()


def test_a_resumed_run_records_the_clips_still_ahead(make_env, tmp_path):
    """Resumed after iteration 4, inside the window of the clip at 5: that one is skipped."""
    env = make_env("cartpole", num_envs=2)
    recorder = ClipRecorder(env, CFG, tmp_path / "videos", "cartpole")
    assert train_like_the_runner(env, recorder, 12, first=5) == [9, 10]
    assert [c.iteration for c in recorder.close()] == [10]


def test_recording_keeps_states_on_the_device_until_the_clip_is_full(make_env, tmp_path):
    """Each kept frame is a copy on the env's device; the one host read is the step that fills the clip."""
    from tests.sync_guard import HostSyncError, no_host_sync

    env = make_env("cartpole", num_envs=2)
    recorder = ClipRecorder(env, CFG, tmp_path / "videos", "cartpole")
    assert recorder.recording(4)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    steps = recorder.frames * recorder.every
    with torch.inference_mode():
        for _ in range(steps - 2):  # the last frame is kept 2 steps before the clip's last step
            env.step(random_actions(env, gen))
            with no_host_sync():
                recorder.record()
        env.step(random_actions(env, gen))
        with pytest.raises(HostSyncError), no_host_sync():
            recorder.record()  # the last frame: the clip goes to the host, once
    recorder.close()


def test_an_interval_shorter_than_a_clip_is_said_at_the_start():
    """A 3 s clip at 25 fps of a 50 Hz task with 24 steps per iteration takes 7 iterations to record:
    with video_interval=2 the first clip can end at iteration 8 (the first multiple of 2 past 7)."""
    from robolearn.train_clips import ClipRecorder

    recorder = ClipRecorder.__new__(ClipRecorder)
    recorder.span, recorder.interval, recorder.length_s = 7, 2, 3.0
    assert recorder.schedule_note(6) == (
        "a 3 s training clip takes 7 iterations to record, so with runner.video_interval=2 clips end at iteration 8 at "
        "the earliest, and only at multiples of the interval the previous clip has left free; this run of 6 iterations "
        "records none (shorten runner.video_length_s or widen the interval)")
    assert recorder.schedule_note(100).endswith("left free (shorten runner.video_length_s or widen the interval)")
    recorder.interval = 7
    assert recorder.schedule_note(6) is None  # a clip that fits its interval: nothing to say
