"""A robot model's numbers must be finite (robolearn/model_numbers.py): nan or inf where a number goes
is one line naming the place, before MuJoCo reads the file (it would warn on stderr and load it), and
in the compiled model where a task's edit_spec wrote one."""

from pathlib import Path

import mujoco
import pytest

from robolearn.errors import UserError
from robolearn.model_numbers import refuse_non_finite_text
from robolearn.physics import load_model

ARM = """<mujoco>{include}<worldbody><body name="{body}" pos="{pos}"><joint name="j" range="-1 1"/>
  <geom type="capsule" size="0.02" fromto="0 0 0 0 0 0.3"/><site name="tip" pos="0 0 0.3"/></body></worldbody>
  <actuator><position name="a" joint="j" kp="{kp}"/></actuator>{key}</mujoco>"""


def arm(folder: Path, body="link", pos="0 0 0.1", kp="10", key="", include="") -> Path:
    path = folder / "arm.xml"
    path.write_text(ARM.format(body=body, pos=pos, kp=kp, key=key, include=include))
    return path


@pytest.mark.parametrize("spoil, where", [
    (dict(key='<keyframe><key name="home" qpos="nan"/></keyframe>'), '<key name="home"> qpos="nan" holds nan'),
    (dict(pos="0 0 inf"), '<body name="link"> pos="0 0 inf" holds inf'),
    (dict(kp="-Infinity"), '<position name="a"> kp="-Infinity" holds -Infinity'),
])  # fmt: skip
def test_a_nan_or_inf_in_the_file_is_one_line_naming_the_place(tmp_path, capfd, spoil, where):
    path = arm(tmp_path, **spoil)
    with pytest.raises(UserError) as caught:
        load_model(path)
    assert str(caught.value).startswith(f"{path}: {where}; valid: finite numbers"), caught.value
    assert "nan" not in capfd.readouterr().err.lower()  # refused before MuJoCo read (and warned about) it


def test_an_included_file_is_read_and_names_are_not_numbers(tmp_path):
    (tmp_path / "parts.xml").write_text('<mujoco><default><geom size="0.1 nan"/></default></mujoco>')
    with pytest.raises(UserError, match=r'parts\.xml: <geom> size="0\.1 nan" holds nan'):
        refuse_non_finite_text(arm(tmp_path, include='<include file="parts.xml"/>'))
    refuse_non_finite_text(arm(tmp_path, body="inf"))  # a body named inf, a custom text saying nan, a 1e-06: fine
    refuse_non_finite_text(arm(tmp_path, include='<custom><text name="note" data="nan"/></custom>'))
    assert mujoco.MjModel.from_xml_path(str(arm(tmp_path, body="nan", pos="0 0 1e-06"))).nbody == 2


def test_a_nan_an_edit_spec_writes_is_found_in_the_compiled_model(tmp_path):
    def edit(spec):  # robot.py's DEFAULT_POSE with a NaN in it
        spec.add_key(name="home", qpos=[float("nan")])

    with pytest.raises(UserError, match=r"arm\.xml: the compiled model's keyframe 'home' key_qpos\[0, 0\] is nan; valid: finite"):
        load_model(arm(tmp_path), edit)


def test_a_folder_no_file_can_be_made_in_is_refused_before_the_work(tmp_path):
    """os.access says yes to root for /sys, where creating a file fails: the check makes one."""
    from robolearn.run_dir import can_create_in, check_writable

    assert can_create_in(tmp_path) and not list(tmp_path.iterdir())  # tried, and cleaned up
    if not Path("/sys").is_dir() or can_create_in(Path("/sys")):
        pytest.skip("no /sys that refuses new files on this machine")
    with pytest.raises(UserError, match=r"out=/sys/clip\.mp4: no file can be created in /sys"):
        check_writable(Path("/sys/clip.mp4"), "out")
