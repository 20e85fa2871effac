"""`robolearn play bundle=` as video: the bundle's robot plays episodes as sim2sim runs them (scored
by the task's terms, a new episode where one ends), and command= scripts the task's first command
while its others keep coming from the task. The renderer and the mp4 writer are stand-ins that
keep what each frame would show."""

import numpy as np
import pytest

import robolearn.play_bundle as play
from robolearn.command_script import CommandScript
from robolearn.play import PlayCfg
from robolearn.play_bundle import play_bundle

from .deploy.conftest import make_bundle


class Frames:
    """The stand-in renderer and writer: each frame's overlay lines, and the robot's qpos."""

    def __init__(self, monkeypatch):
        self.lines, self.qpos = [], []
        frames = self

        class Renderer:
            def __init__(self, *args, **kwargs):
                pass

            def render(self, data, arrows, lines, markers):
                frames.lines.append(list(lines))
                frames.qpos.append(data.qpos.copy())
                return None

            def close(self):
                pass

        class Writer:
            frames = 0

            def __init__(self, path, *args):
                path.write_bytes(b"")

            def write(self, frame):
                Writer.frames += 1

            def close(self):
                pass

        monkeypatch.setattr(play, "FrameRenderer", Renderer)
        monkeypatch.setattr(play, "Mp4Writer", Writer)


@pytest.fixture(scope="module")
def cartpole(tmp_path_factory):
    out = tmp_path_factory.mktemp("play") / "cartpole"
    make_bundle(out)  # an untrained policy: the pole falls within a second or two
    return out


def test_a_bundle_video_plays_scored_episodes_and_starts_a_new_one_where_one_ends(cartpole, tmp_path, monkeypatch):
    frames = Frames(monkeypatch)
    play_bundle(cartpole, PlayCfg(duration=6.0, fps=50, out=tmp_path / "v.mp4"))
    assert len(frames.lines) == 300  # every 20 ms control step of 6 s
    ended = [i for i, lines in enumerate(frames.lines) if any(line.startswith("episode ended (pole_fell)") for line in lines)]
    assert ended, frames.lines[-1]
    first = ended[0]
    returns = [float(lines[1].split("return")[1]) for lines in frames.lines]
    assert returns[first - 1] > 1.0 and returns[first + 1] < returns[first - 1]  # scored, then a new episode from 0
    # the new episode starts from a state the task draws: the pole near upright again, not fallen
    hinge = np.abs([q[1] for q in frames.qpos])
    assert hinge[first - 1] > 0.2 and hinge[first + 1] < 0.2, (hinge[first - 1], hinge[first + 1])
    assert all(lines[2].startswith("reward: alive") or "reward:" in lines[2] for lines in frames.lines)


def test_command_scripts_the_first_command_and_the_task_draws_the_others(tmp_path, monkeypatch):
    bundle = tmp_path / "arm_pose"
    make_bundle(bundle, task="arm_pose")
    frames = Frames(monkeypatch)
    play_bundle(bundle, PlayCfg(duration=0.5, fps=50, out=tmp_path / "v.mp4", command=CommandScript.parse("[0.3,0.1,0.5]")))
    shown = [line for lines in frames.lines for line in lines]
    assert any(line.startswith("ee_target [0.30, 0.10, 0.50]") for line in shown), frames.lines[0]
    assert any(line.startswith("ee_orientation [") for line in shown), frames.lines[0]  # still given: no watchdog trip
    assert not any("watchdog" in line for line in shown), frames.lines[-1]
