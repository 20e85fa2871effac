"""The browser viewer's simulation loop, driven by scripted page requests (no browser: the page
itself is checked in tests/e2e/test_web.py)."""

import shutil
import socket

import numpy as np
import pytest
import torch

from robolearn.errors import UserError
from robolearn.web_panel import Request, reward_bars
from robolearn.web_viewer import LivePolicy, _loop, check_port

@pytest.fixture
def tiny_run(tiny_quadruped_run):
    return tiny_quadruped_run


class ScriptedPanel:
    """Posts `script[k]` on the k-th drain; records what the loop shows."""

    def __init__(self, script: dict[int, list[Request]]):
        self.script, self.drains, self.shown, self.choices = script, 0, [], []
        self.following = True

    def drain(self):
        self.drains += 1
        return self.script.get(self.drains, [])

    def show(self, status, names, values):
        self.shown.append((status, list(names), np.array(values)))

    def set_checkpoints(self, names, current):
        self.choices.append((names, current))


class RecordingScene:
    env_idx = 0

    def __init__(self):
        self.frames = []

    def update_from_arrays(self, xpos, xmat, qpos=None, qvel=None):
        self.frames.append(xpos.copy())


def run_loop(live, script, duration=1.0):
    import mujoco

    panel, scene = ScriptedPanel(script), RecordingScene()
    _loop(live, scene, panel, mujoco.MjData(live.env.model), duration)
    return panel, scene


def test_pause_step_reset_and_real_time(tiny_run):
    live = LivePolicy(tiny_run, None, 2)
    try:
        panel, scene = run_loop(live, {}, duration=1.0)
        t = live.env.physics.time.numpy()
        assert 0.5 < t.max() <= 1.0 + 2 * live.env.dt  # real time: about 1 s simulated in 1 s
        assert len(scene.frames) >= 10 and scene.frames[0].shape == (2, live.env.model.nbody, 3)
        assert not np.allclose(scene.frames[0], scene.frames[-1])  # the robot moved between frames

        live.reset()
        panel, _ = run_loop(live, {1: [Request("pause")], 5: [Request("step"), Request("step")]}, duration=0.5)
        assert np.allclose(live.env.physics.time.numpy(), 2 * live.env.dt)  # paused: only the two steps ran
        assert "paused" in panel.shown[-1][0]

        panel, _ = run_loop(live, {1: [Request("reset"), Request("pause")]}, duration=0.2)
        assert np.allclose(live.env.physics.time.numpy(), 0.0) and not live.returns.any()
        status, names, values = panel.shown[-1]
        assert names == live.env.rewards.names and values.shape == (len(names),)
        assert "quadruped_flat" in status and "iter_000002.pt" in status
    finally:
        live.env.close()


def test_driving_a_command_holds_it_in_every_env_and_releasing_samples_again(tiny_run):
    live = LivePolicy(tiny_run, None, 4)
    try:
        (name,) = live.env.commands.names
        run_loop(live, {1: [Request("drive", [0.7, 0.0, -0.2], name)]}, duration=0.3)
        held = live.env.commands.get(name)
        assert torch.allclose(held, torch.tensor([0.7, 0.0, -0.2]).expand_as(held))
        live.reset()  # a reset draws again: still the held value
        assert torch.allclose(live.env.commands.get(name), held)
        run_loop(live, {1: [Request("drive", None, name)], 2: [Request("reset")]}, duration=0.1)
        assert torch.equal(live.env.commands.ranges[name], live.task_ranges[name])  # the task's range is back
    finally:
        live.env.close()


def test_follows_the_newest_checkpoint_and_switches_on_request(tiny_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    live = LivePolicy(run, run / "checkpoints" / "iter_000001.pt", 1)
    try:
        assert live.iteration == 1
        run_loop(live, {}, duration=0.1)  # the newest at start is not "new": the chosen one stays
        assert live.source.name == "iter_000001.pt"
        shutil.copy(run / "checkpoints" / "iter_000002.pt", run / "checkpoints" / "iter_000003.pt")
        panel, _ = run_loop(live, {}, duration=0.1)  # the run "wrote" a checkpoint: loaded
        assert live.source.name == "iter_000003.pt"
        assert panel.choices[-1] == (["iter_000001.pt", "iter_000002.pt", "iter_000003.pt"], "iter_000003.pt")
        run_loop(live, {1: [Request("checkpoint", "iter_000001.pt")]}, duration=0.1)
        assert live.source.name == "iter_000001.pt" and live.iteration == 1
        (run / "checkpoints" / "iter_000004.pt").write_bytes(b"not a checkpoint")
        run_loop(live, {}, duration=0.1)  # an unreadable one leaves the policy as it was
        assert live.source.name == "iter_000001.pt"
    finally:
        live.env.close()


def test_a_checkpoint_that_acts_nan_or_met_another_robot_is_said_and_nan_leaves_the_policy(tiny_run, tmp_path, capsys):
    """The picker and "follow newest" go through LivePolicy.load: a checkpoint whose weights are NaN
    (a run that diverged) would make every episode end after one step; the one playing stays. A
    checkpoint of another robot model plays, with a note, as `play` does."""
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    live = LivePolicy(run, run / "checkpoints" / "iter_000001.pt", 1)
    try:
        weights = {k: v.clone() for k, v in live.actor_critic.state_dict().items()}
        payload = torch.load(run / "checkpoints" / "iter_000002.pt", weights_only=False)
        payload["model"]["actor.0.weight"][:] = float("nan")
        torch.save(payload, run / "checkpoints" / "iter_000003.pt")
        with pytest.raises(UserError, match=r"iter_000003.pt acts NaN or inf .* valid: an earlier checkpoint \(another in the list\)$"):
            live.load(run / "checkpoints" / "iter_000003.pt")
        assert live.source.name == "iter_000001.pt"
        assert all(torch.equal(v, weights[k]) for k, v in live.actor_critic.state_dict().items())
        panel, _ = run_loop(live, {}, duration=0.1)  # followed as the newest: refused, the loop plays on
        assert live.source.name == "iter_000001.pt" and "warning: the policy of" in capsys.readouterr().out

        payload["model"]["actor.0.weight"] = torch.load(run / "checkpoints" / "iter_000002.pt", weights_only=False)["model"]["actor.0.weight"]
        payload["robot_model"] = "0" * 16
        torch.save(payload, run / "checkpoints" / "iter_000004.pt")
        live.load(run / "checkpoints" / "iter_000004.pt")
        assert live.source.name == "iter_000004.pt" and live.iteration == payload["iteration"]
        out = capsys.readouterr().out
        assert "note: checkpoint" in out and "was trained on another robot model" in out and f"now {live.env.robot_model}" in out
    finally:
        live.env.close()


class RacingScene(RecordingScene):
    """The scene whose every other update meets viser's wake-up race (or another error)."""

    def __init__(self, message):
        super().__init__()
        self.message, self.calls = message, 0

    def update_from_arrays(self, xpos, xmat, qpos=None, qvel=None):
        self.calls += 1
        if self.calls % 2:
            raise RuntimeError(self.message)
        super().update_from_arrays(xpos, xmat, qpos, qvel)


def test_visers_wakeup_race_skips_a_frame_not_the_viewer_and_other_errors_are_raised(tiny_run):
    import mujoco

    live = LivePolicy(tiny_run, None, 1)
    try:
        panel, scene = ScriptedPanel({}), RacingScene("deque mutated during iteration")
        _loop(live, scene, panel, mujoco.MjData(live.env.model), 0.5)
        assert scene.calls >= 4 and len(scene.frames) == scene.calls // 2  # each other frame drawn
        assert panel.shown  # the panel too, after the first frame failed
        with pytest.raises(RuntimeError, match="something else"):
            _loop(live, RacingScene("something else"), panel, mujoco.MjData(live.env.model), 0.5)
    finally:
        live.env.close()


def test_reward_bars_grow_from_the_middle_by_sign():
    page = reward_bars(["alive", "torque<cost>"], np.array([0.5, -0.25]))
    assert "left:50.0%;width:50.0%" in page and "#2e9e4f" in page  # the largest fills its half
    assert "left:25.0%;width:25.0%" in page and "#d9453b" in page  # half as large, to the left
    assert "torque&lt;cost&gt;" in page and "+0.500" in page and "-0.250" in page


def test_a_port_in_use_is_one_line():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(UserError, match=f"port {port} on 127.0.0.1 is in use.*port=<n>"):
            check_port("127.0.0.1", port)
    with pytest.raises(UserError, match="valid: 1..65535"):
        check_port("127.0.0.1", 70000)


def test_a_port_whose_last_connection_is_closing_is_free():
    """A viewer stopped while a browser was connected leaves the port's connection in TIME_WAIT
    (the side that closes first keeps it a minute): a restart on that port is not refused."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the viewer's server (asyncio) binds
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = server.accept()
        conn.close()  # the server's side closes first: its end goes to TIME_WAIT
        client.close()
    check_port("127.0.0.1", port)


def test_target_marks_follow_the_shown_env_in_the_scenes_frame(make_env):
    """The page's reach-target spheres sit where the videos put them, shifted as mjviser's tracking
    camera shifts the scene."""
    from types import SimpleNamespace

    import mujoco
    import numpy as np

    from robolearn.play_markers import position_targets, sensed_in_world, target_in_world
    from robolearn.web_viewer import TargetMarks

    added = []
    server = SimpleNamespace(scene=SimpleNamespace(add_icosphere=lambda name, **kw: added.append(SimpleNamespace(name=name, **kw)) or added[-1],
                                                   add_arrows=None))  # arm_reach has no orientation target
    env = make_env("arm_reach", num_envs=2)
    marks = TargetMarks(server, env)
    assert [h.name for h in added] == ["/robolearn/target_0", "/robolearn/reaching_0"]
    qpos = np.array([[0.0] * 6, [0.3, -0.4, 0.9, 0.2, -0.5, 0.1]])
    offset = np.array([0.1, -0.2, -0.3])
    data = mujoco.MjData(env.model)
    marks.update(data, qpos, 1, offset)
    [target] = position_targets(env)
    data.qpos[:] = qpos[1]
    mujoco.mj_kinematics(env.model, data)
    goal = target_in_world(env.model, data, target, env.commands.get("ee_target")[1].numpy())
    np.testing.assert_allclose(added[0].position, goal + offset)
    np.testing.assert_allclose(added[1].position, sensed_in_world(env.model, data, target) + offset)


def test_orientation_arrows_on_the_page_point_as_the_videos_draw_them(make_env):
    """arm_pose: two arrows per orientation target, made once along +z and turned by their handle's
    wxyz each frame; the turned axis is the videos' arrow direction (play_markers.orientation_arrows),
    from the end effector, shifted with the scene."""
    from types import SimpleNamespace

    import mujoco

    from robolearn.play_markers import orientation_arrows, orientation_targets
    from robolearn.web_viewer import TargetMarks

    added = {}

    def add(kind):
        return lambda name, *args, **kw: added.setdefault(name, SimpleNamespace(kind=kind, args=args, **kw))

    server = SimpleNamespace(scene=SimpleNamespace(add_icosphere=add("sphere"), add_arrows=add("arrows")))
    env = make_env("arm_pose", num_envs=2)
    marks = TargetMarks(server, env)
    arrows = [h for h in added.values() if h.kind == "arrows"]
    assert [h for h in added if "orientation" in h] == ["/robolearn/orientation_target_0", "/robolearn/orientation_0"]
    length = float(arrows[0].args[0][0, 1, 2])
    qpos = np.array([[0.0] * 6, [0.3, -0.4, 0.9, 0.2, -0.5, 0.1]])
    offset = np.array([0.1, -0.2, -0.3])
    data = mujoco.MjData(env.model)
    marks.update(data, qpos, 1, offset)
    data.qpos[:] = qpos[1]
    mujoco.mj_kinematics(env.model, data)
    [target] = orientation_targets(env)
    expected = orientation_arrows(env.model, data, [target], {"ee_orientation": env.commands.get("ee_orientation")[1].numpy()}, length)
    for handle, arrow in zip(arrows, expected):
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, np.array(handle.wxyz))
        np.testing.assert_allclose(np.array(handle.position), arrow.start + offset, atol=1e-9)
        np.testing.assert_allclose(length * rot.reshape(3, 3)[:, 2], arrow.end - arrow.start, atol=1e-9)
    assert not np.allclose(expected[0].end, expected[1].end)  # a command the arm does not hold: two directions





def test_velocity_arrows_on_the_page_are_the_videos(make_env):
    """quadruped_flat: the commanded planar velocity (green) and the base's own (blue) above the base
    of the env on show, where play_markers.velocity_arrows puts them for a video, shifted with the
    scene; a base standing still has no blue arrow (too short to draw), as in the videos."""
    from types import SimpleNamespace

    import mujoco

    from robolearn.play_markers import velocity_arrows
    from robolearn.render import BLUE, GREEN
    from robolearn.scene.floating_base import floating_base_addresses
    from robolearn.web_viewer import TargetMarks

    added = {}
    server = SimpleNamespace(scene=SimpleNamespace(
        add_icosphere=None, add_arrows=lambda name, *args, **kw: added.setdefault(name, SimpleNamespace(args=args, **kw))))
    env = make_env("quadruped_flat", num_envs=2)
    marks = TargetMarks(server, env)
    assert sorted(added) == ["/robolearn/velocity", "/robolearn/velocity_command"]
    assert not any(h.visible for h in added.values())  # until the first frame
    base = floating_base_addresses(env.model)
    qpos = env.physics.qpos.double().numpy().copy()
    qvel = np.zeros((2, env.model.nv))
    qvel[1, base[1]:base[1] + 2] = (0.4, -0.1)
    qpos[1, base[0] + 3:base[0] + 7] = (np.cos(0.3), 0.0, 0.0, np.sin(0.3))  # yawed 0.6 rad: the command turns with it
    env.commands.values[marks.velocity][1, :2] = torch.tensor([0.8, 0.2])  # forward and to the left
    offset = np.array([0.1, -0.2, -0.3])
    marks.update(mujoco.MjData(env.model), qpos, 1, offset, qvel)
    command = env.commands.get(marks.velocity)[1].numpy()
    expected = {a.rgba: a for a in velocity_arrows(qpos[1], qvel[1], command, base)}
    assert set(expected) == {BLUE, GREEN}
    for rgba, name in ((BLUE, "/robolearn/velocity"), (GREEN, "/robolearn/velocity_command")):
        assert added[name].visible
        np.testing.assert_allclose(added[name].points[0], [expected[rgba].start + offset, expected[rgba].end + offset], atol=1e-6)
    env.commands.values[marks.velocity][0, :2] = torch.tensor([0.5, 0.0])
    marks.update(mujoco.MjData(env.model), qpos, 0, offset, qvel)  # env 0 stands still, asked to walk
    assert not added["/robolearn/velocity"].visible and added["/robolearn/velocity_command"].visible
@pytest.mark.parametrize("group", [0, 3])
def test_the_page_shows_a_robot_of_collision_geoms_alone(group):
    """A robot whose only geoms are in group 3 (collision geoms, the visual meshes left out): the page
    shows that group, as the videos do (mjviser shows groups 0-2), and its Geoms checkboxes say so."""
    import mujoco
    import viser
    from mjviser import ViserMujocoScene

    from robolearn.web_viewer import _free_port, show_geom_groups

    model = mujoco.MjModel.from_xml_string(f"""<mujoco><worldbody>
      <body name="robot" pos="0 0 0.5"><freejoint/><geom type="box" size="0.3 0.3 0.3" group="{group}"/>
      <body name="arm" pos="0.4 0 0"><joint type="hinge"/><geom type="capsule" size="0.05 0.2" group="{group}"/></body>
      </body></worldbody></mujoco>""")
    server = viser.ViserServer(host="127.0.0.1", port=_free_port("127.0.0.1"), verbose=False)
    try:
        scene = ViserMujocoScene(server, model, num_envs=1)
        show_geom_groups(scene, model)
        assert scene.geom_groups_visible == [True, True, True, group == 3, False, False]
        robot = [g.handle for g in scene._mesh_groups if g.group_id == group]  # mjviser's handles of the moving bodies
        assert robot and all(h.visible for h in robot)
    finally:
        server.stop()

