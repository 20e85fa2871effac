"""`robolearn play`: the mp4 decodes, has the frames asked for, shows the robot, and the robot moves."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from .conftest import robolearn

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "quadruped_flat_cpu" / "bundle"


def frames(path: Path) -> tuple[list[np.ndarray], dict]:
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    width, height = meta["size"]
    return [np.frombuffer(f, np.uint8).reshape(height, width, 3) for f in reader], meta


def assert_shows_a_moving_robot(images: list[np.ndarray]) -> None:
    centre = [img[img.shape[0] // 4 : 3 * img.shape[0] // 4, img.shape[1] // 4 : 3 * img.shape[1] // 4].astype(float)
              for img in images]  # fmt: skip
    assert all(c.std() > 10 for c in centre)  # not blank: the robot and the grid differ from the background
    moved = [np.abs(a - b).mean() for a, b in zip(centre, centre[5:])]
    assert max(moved) > 0.5  # it moves (the camera follows it over the grid: the picture changes)


def test_a_run_plays_as_an_mp4_with_the_frames_asked_for(trained_cartpole, tmp_path):
    run_dir, _ = trained_cartpole
    out = tmp_path / "cartpole.mp4"
    result = robolearn("play", f"run={run_dir}", "duration=2", "fps=25", f"out={out}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    images, meta = frames(out)
    assert meta["codec"] == "h264" and meta["size"] == (640, 480)
    assert len(images) == 50  # 2 s of 20 ms control steps, every 2nd rendered (25 fps)
    assert_shows_a_moving_robot(images)
    assert not (run_dir / "videos").exists()  # out= was given: nothing else written


def test_several_environments_are_tiled_and_the_default_path_is_in_the_run(trained_cartpole, tmp_path):
    run_dir, _ = trained_cartpole
    result = robolearn("play", f"run={run_dir}", "duration=0.4", "num_envs=4", "camera=fixed", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (out,) = (run_dir / "videos").glob("play_iter_*.mp4")
    images, meta = frames(out)
    assert meta["size"] == (640, 480) and len(images) == 10
    quarter = images[-1][:240, :320]
    assert quarter.std() > 10 and not np.array_equal(quarter, images[-1][240:, 320:])  # four different robots
    again = robolearn("play", f"run={run_dir}", "duration=0.1", cwd=tmp_path)
    assert again.returncode == 0 and len(list((run_dir / "videos").glob("play_iter_*.mp4"))) == 2  # never replaced
    for video in (run_dir / "videos").iterdir():
        video.unlink()
    (run_dir / "videos").rmdir()


def test_a_bundle_plays_through_the_deploy_runtime_with_a_scripted_command(tmp_path):
    out = tmp_path / "quadruped.mp4"  # stand for 0.5 s, then walk at 0.8 m/s
    result = robolearn("play", f"bundle={REFERENCE}", "duration=2", "fps=25", "command=[[0,0,0,0],[0.5,0.8,0,0]]",
                       f"out={out}", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    images, meta = frames(out)
    assert len(images) == 50 and meta["size"] == (640, 480)
    assert_shows_a_moving_robot(images)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_recording_leaves_no_half_written_video(trained_cartpole, tmp_path, sig):
    """Ctrl+C, or SIGTERM (a job's time limit), while a clip is written: one line, exit 130 (143),
    and no truncated mp4 (SIGTERM ended the process where it was, leaving one that does not play)."""
    run_dir, _ = trained_cartpole
    out = tmp_path / "long.mp4"
    proc = subprocess.Popen([sys.executable, "-m", "robolearn.cli", "play", f"run={run_dir}", "duration=600",
                             f"out={out}"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (out.exists() and out.stat().st_size > 0) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert out.exists() and proc.poll() is None, proc.communicate()
        time.sleep(1.0)  # frames are being written
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    name = "Ctrl+C" if sig == signal.SIGINT else "SIGTERM"
    assert proc.returncode == 128 + sig and stderr.strip().splitlines()[-1] == f"robolearn play: stopped ({name})", stderr
    assert not out.exists()
