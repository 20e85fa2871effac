"""The viewers: `play mode=web`'s page, loaded in headless Chromium, draws the robot and its panel;
`play mode=viewer` opens MuJoCo's viewer on a (virtual, Xvfb) display and draws the robot; the
mistakes around them (a port in use, a bundle on the web, no display) end in one line."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from .browser import Page
from .conftest import robolearn
from .test_errors import FAST, one_line_error
from .test_play import REFERENCE


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def web_viewer(run_dir, cwd, *args):
    """`robolearn play mode=web` on a free port: yields its URL once it serves; Ctrl+C at the end."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "robolearn.cli", "play", f"run={run_dir}", "mode=web", f"port={port}", *args],
                              cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        line = server.stdout.readline()  # printed once the server is up
        assert line.startswith("serving") and f"http://localhost:{port}/" in line, line + server.stderr.read()
        yield f"http://127.0.0.1:{port}/", server
    finally:
        server.send_signal(signal.SIGINT)
        try:
            _, err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()  # never leave a server running behind a failed test
            server.communicate()
            raise
    assert server.returncode in (0, 130), err[-2000:]
    assert "Traceback" not in err, err[-2000:]


def wait_for_clients(display: str, seconds: float = 20.0) -> None:
    """Wait until the X server takes a client (a screen grab works). Once, on a loaded CI machine, the
    viewer could not open a display that Xvfb had just reported, right after the previous case's
    server went."""
    from PIL import ImageGrab

    deadline = time.monotonic() + seconds
    while True:
        try:
            ImageGrab.grab(xdisplay=display)
            return
        except OSError as refused:
            if time.monotonic() > deadline:
                raise AssertionError(f"the display {display} takes no client: {refused}") from refused
            time.sleep(0.2)


def robot_pixels(image: np.ndarray) -> int:
    """Pixels of the cartpole's tan cart and pole (red > green > blue, clearly): not the grey or
    white floor, grid and sky, nor the viewers' blue, teal or red widgets."""
    r, g, b = image[..., 0], image[..., 1], image[..., 2]
    return int(((r - g > 15) & (g - b > 20) & (r > 100)).sum())


def test_the_page_draws_the_robot_and_the_panel(trained_cartpole, tmp_path):
    run_dir, _ = trained_cartpole
    page = Page(tmp_path / "profile")
    try:
        with web_viewer(run_dir, tmp_path) as (url, _):
            page.open(url)
            page.wait_for(r"env 0 of 1 \| t \d")  # connected: the panel shows the rollout
            for _ in range(60):  # the scene's meshes arrive after the panel
                image = page.screenshot()
                height, width, _ = image.shape
                scene = image[height // 4 : 3 * height // 4, width // 5 : 3 * width // 5]  # left of the panel
                if robot_pixels(scene) > 300:
                    break
                time.sleep(0.5)
    finally:
        page.close()
    from PIL import Image

    Image.fromarray(image.astype(np.uint8)).save(tmp_path / "page.png")  # to look at when it fails
    assert robot_pixels(scene) > 300, f"no robot drawn in the middle of the page ({robot_pixels(scene)} pixels)"
    panel = image[20:700, int(width * 0.74) :]  # the control panel, top right
    assert panel.std() > 20  # text and widgets, not an empty page


def test_the_page_controls_the_rollout(tmp_path):
    """Clicked and typed in Chromium: pause, step, reset, resume, driving the command with a
    slider's input, the reward bars, and following a checkpoint the run writes."""
    run = tmp_path / "run"
    trained = robolearn("train", "task=quadruped_flat", *FAST, "runner.export_onnx=false", f"hydra.run.dir={run}",
                        cwd=tmp_path)  # fmt: skip
    assert trained.returncode == 0, trained.stderr[-2000:]
    page = Page(tmp_path / "profile")
    try:
        with web_viewer(run, tmp_path, "num_envs=2") as (url, _):
            page.open(url)
            page.wait_for(r"quadruped_flat \| iter_000001\.pt \(iteration 1\)")
            page.wait_for(r"env 0 of 2 \| t [1-9]")  # running
            assert "track_lin_vel_xy" in page.text() and "feet_air_time" in page.text()  # the reward bars' terms
            page.click("Pause")
            paused = float(page.wait_for(r"t (\d+\.\d+) s \| paused").group(1))
            page.click("Step")
            page.wait_for(rf"t {paused + 0.02:.2f} s \| paused")  # one control step of 20 ms
            page.click("Reset")
            page.wait_for(r"t 0\.00 s \| paused")
            page.toggle("Drive with sliders")
            page.wait_for(r"base_velocity: \[0\.00, 0\.00, 0\.00\]")  # the sliders' values, in every env
            page.type_after("Drive with sliders", 0, "0.6")  # lin_vel_x
            page.wait_for(r"base_velocity: \[0\.60, 0\.00, 0\.00\]")
            page.click("Resume")
            page.wait_for(r"t [1-9]\.\d+ s\n")  # running again (no "paused")
            shutil.copy(run / "checkpoints" / "iter_000001.pt", run / "checkpoints" / "iter_000002.pt")
            page.wait_for(r"iter_000002\.pt")  # the run "wrote" a checkpoint: followed
    finally:
        page.close()


def test_mistakes_around_the_viewers_are_one_line(trained_cartpole, tmp_path):
    run_dir, _ = trained_cartpole
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        one_line_error(robolearn("play", f"run={run_dir}", "mode=web", f"port={port}", cwd=tmp_path),
                       f"port {port} on 127.0.0.1 is in use", "port=<n>")  # fmt: skip
    one_line_error(robolearn("play", f"bundle={REFERENCE}", "mode=web", cwd=tmp_path), "mode=web plays a run")
    one_line_error(robolearn("play", f"run={run_dir}", "mode=web", "port=http", cwd=tmp_path), "port")
    no_display = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    result = subprocess.run([sys.executable, "-m", "robolearn.cli", "play", f"run={run_dir}", "mode=viewer"],
                            cwd=tmp_path, capture_output=True, text=True, env=no_display, timeout=120)  # fmt: skip
    one_line_error(result, "mode=viewer needs a display", "mode=video")
    number = next(n for n in range(300, 400) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    result = subprocess.run([sys.executable, "-m", "robolearn.cli", "play", f"run={run_dir}", "mode=viewer"], cwd=tmp_path,
                            capture_output=True, text=True, env={**no_display, "DISPLAY": f":{number}"}, timeout=120)  # fmt: skip
    one_line_error(result, f"mode=viewer cannot open the display DISPLAY=:{number}", "mode=video")  # no GLFW lines, no log file
    for backend, expected in (("disabled", "cannot render offscreen with MUJOCO_GL=disabled"),  # no GL at all
                              ("nonsense", "cannot load MuJoCo with MUJOCO_GL=nonsense"),
                              ("glfw", "DISPLAY environment variable is missing")):  # GLFW's warnings in the one line
        result = subprocess.run([sys.executable, "-m", "robolearn.cli", "play", f"run={run_dir}", "out=clip.mp4"], cwd=tmp_path,
                                capture_output=True, text=True, env={**no_display, "MUJOCO_GL": backend}, timeout=120)  # fmt: skip
        one_line_error(result, expected, "egl")
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl_c", "sigterm"])
def test_the_native_viewer_draws_the_robot_on_a_display(trained_cartpole, tmp_path, stop):
    """Ctrl+C closes the viewer and ends in one line (exit 130; leaving, the viewer waits for its
    window's thread: one still drawing at exit crashed the process after every close); SIGTERM ends it
    at once (it writes nothing)."""
    from PIL import ImageGrab

    if shutil.which("Xvfb") is None:
        pytest.fail("the native viewer test needs a virtual display: apt-get install xvfb (.ci/run does)")
    run_dir, _ = trained_cartpole
    # Xvfb picks a free display itself and writes its number once it accepts clients: two tests (xdist
    # workers) choosing a number by looking for lock files could both pick the same one, and the first to
    # finish took the display from under the other.
    ready, told = os.pipe()
    display = subprocess.Popen(["Xvfb", "-displayfd", str(told), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(told,))  # fmt: skip
    os.close(told)
    viewer = None
    try:
        with os.fdopen(ready) as reply:
            number = reply.readline().strip()  # blocks until the display is up ("" if Xvfb failed)
        assert number.isdigit(), f"Xvfb did not start (exit {display.poll()})"
        wait_for_clients(f":{number}")
        env = {**{k: v for k, v in os.environ.items() if k != "MUJOCO_GL"}, "DISPLAY": f":{number}"}
        viewer = subprocess.Popen([sys.executable, "-m", "robolearn.cli", "play", f"run={run_dir}", "mode=viewer"],
                                  cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        seen = 0
        for _ in range(40):  # the window appears once the policy and MuJoCo's viewer have started
            time.sleep(0.5)
            assert viewer.poll() is None, viewer.communicate()[1][-2000:]
            seen = robot_pixels(np.asarray(ImageGrab.grab(xdisplay=f":{number}").convert("RGB")).astype(int))
            if seen > 150:
                break
        assert seen > 150, f"the viewer did not draw the robot ({seen} pixels)"
        viewer.send_signal(stop)
        _, stderr = viewer.communicate(timeout=30)
        if stop == signal.SIGINT:
            assert viewer.returncode == 130, stderr[-2000:]
            assert [line for line in stderr.splitlines() if line.strip()] == ["robolearn play: stopped (Ctrl+C)"], stderr[-2000:]
        else:
            assert viewer.returncode == -signal.SIGTERM, stderr[-2000:]
        viewer = None
        assert not list(tmp_path.iterdir())  # nothing written
    finally:
        if viewer is not None:
            viewer.kill()
            viewer.communicate(timeout=30)
        display.terminate()
        display.wait(timeout=30)
