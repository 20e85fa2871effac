"""The term catalogue (`robolearn terms`) and docs/authoring.md: the catalogue covers exactly
robolearn.mdp.TERMS, the guide's env-surface table holds on a built env (and names everything the
generic terms and built-in tasks read of the env), and the guide's worked example builds and steps."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
from pathlib import Path

import mujoco
import pytest
import torch
import yaml
from omegaconf import OmegaConf

from robolearn import cli, mdp
from robolearn.config_task import TaskCfg
from robolearn.envs.batched_env import BatchedEnv
from robolearn.mdp import state
from robolearn.mdp.kinds import KINDS, term_kind
from robolearn.term_catalog import WIDTH, catalog, find, format_catalog, format_term

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "authoring.md"
EXAMPLE = ROOT / "docs" / "examples" / "bare_legged.py"


# --- the catalogue -------------------------------------------------------------------------------
def test_catalog_covers_exactly_the_generic_terms():
    entries = catalog()
    assert sorted(e.name for e in entries) == sorted(mdp.TERMS)
    for e in entries:
        assert e.kinds and set(e.kinds) <= set(KINDS), f"{e.name} ({e.module}): add TERM_KIND or @term_kind"
        assert e.summary.strip(), f"{e.name} has no docstring"
        assert e.signature.startswith(f"{e.name}(")
        term = mdp.TERMS[e.name]
        if not inspect.isclass(term) and "event" not in e.kinds:  # f(env, **params)
            assert list(inspect.signature(term).parameters)[1:] == [p.split(":")[0].split("=")[0] for p in e.params]


def test_entries_render_params_with_annotations_and_defaults():
    entries = catalog()
    assert find(entries, "joint_pos").params == ("joints: Joints | None = None", "relative: bool = False")
    assert find(entries, "reset_root_state").params[1] == "yaw_range: tuple[float, float] = [-3.14159, 3.14159]"
    air = find(entries, "feet_air_time")  # a class term: its __init__'s params after env
    assert air.stateful and air.params[0] == "sensors: Sensors" and air.required == ("sensors", "command")
    assert find(entries, "randomize_model_field").kinds == ("event",)  # mask is not a YAML param
    assert "mask" not in " ".join(find(entries, "randomize_model_field").params)


def test_term_kind_marks_and_refuses_unknown_kinds():
    @term_kind("reward", "metric")
    def distance(env):
        """A distance."""

    assert catalog({"distance": distance})[0].kinds == ("reward", "metric")
    with pytest.raises(ValueError, match="valid: observation, reward"):
        term_kind("rewrad")


def test_cli_lists_every_term_grouped_by_kind(capsys):
    assert cli.main(["terms"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= WIDTH
    for name in mdp.TERMS:
        assert re.search(rf"^  {name}\(", out, re.M), name
    headers = [line.split(" terms")[0] for line in out.splitlines() if re.match(r"^\w+ terms \(\d+\):", line)]
    assert headers == [k for k in KINDS if any(k in e.kinds for e in catalog())]


def test_cli_kind_filter_and_one_term(capsys):
    assert cli.main(["terms", "--kind", "reward"]) == 0
    out = capsys.readouterr().out
    listed = set(re.findall(r"^  (\w+)\(", out, re.M))
    assert listed == {e.name for e in catalog() if "reward" in e.kinds}
    assert out.startswith("reward terms (") and "observation terms" not in out
    assert cli.main(["terms", "--kind=events"]) == 0  # the YAML section's name works too
    assert "reset_root_state(" in capsys.readouterr().out

    assert cli.main(["terms", "randomize_model_field"]) == 0
    out = capsys.readouterr().out
    assert "per_element: draw each column separately" in out  # the whole docstring
    assert "events:\n    randomize_model_field:\n      func: randomize_model_field" in out


@pytest.mark.parametrize(("args", "message"), [
    (["terms", "--kind", "rewrad"],
     "unknown kind 'rewrad'; valid: observation, reward, termination, event, curriculum, metric"),
    (["terms", "--kind"], "--kind needs a value; valid: observation, reward"),
    (["terms", "joint_poss"], "unknown term 'joint_poss'; did you mean: joint_pos"),
    (["terms", "--kind", "event", "joint_pos"], "unknown term 'joint_pos'"),
    (["terms", "a", "b"], "unexpected argument 'b'"),
    (["terms", "--kind", "reward", "--kind=metric"], "--kind is given twice (reward and metric); valid: one --kind"),
])  # fmt: skip
def test_cli_bad_input_is_one_line_exit_2(capsys, args, message):
    assert cli.main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("robolearn terms: error: ") and message in captured.err


def test_every_summary_fits_the_listing():
    text = format_catalog(catalog()) + "".join(format_term(e) for e in catalog())
    assert max(len(line) for line in text.splitlines()) <= WIDTH + 20  # a long YAML snippet may run over a bit


# --- the env surface of docs/authoring.md ----------------------------------------------------------
def surface_rows() -> list[tuple[str, str]]:
    """(attribute, type/shape) of each row of the guide's env-surface table."""
    text = GUIDE.read_text()
    section = text.split("## The env surface terms may use", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 4 and cells[0].startswith("`env."):
            rows.append((cells[0].strip("`"), cells[1].strip("`").replace("\\|", "|")))
    return rows


def _samples(env) -> dict:
    return {"names": None, "field": "body_mass", "ids": [0, 1], "name": env.commands.names[0],
            "x": torch.zeros(env.num_envs, 5, device=env.device), "y": torch.zeros(env.num_envs, 5, device=env.device),
            "sensors": {"names": ["trunk_contact"]}}  # fmt: skip


def _lookup(env, path: str, samples: dict):
    """The value of `env.a.b(args)` or `env.a.b[key]`, calling with the sample args; (value, called)."""
    match = re.fullmatch(r"env((?:\.\w+)+)(?:\((.*)\)|\[(\w+)\])?", path)
    assert match, f"cannot read the guide's row {path}"
    value = env
    for part in match.group(1).strip(".").split("."):
        assert hasattr(value, part), f"the guide lists {path}, but {type(value).__name__} has no '{part}'"
        value = getattr(value, part)
    if match.group(2) is not None:
        names = [a.strip() for a in match.group(2).split(",") if a.strip()]
        params = [p for p in inspect.signature(value).parameters]
        assert params[: len(names)] == names, f"{path}: the method's params are {params}"
        args = {**samples, **samples.get(value.__name__, {})}
        if set(names) <= set(args):
            return value(*(args[n] for n in names)), True
        return None, False  # a write (set_model_field, set_velocity): its signature is what we check
    if match.group(3) is not None:
        value = value[samples[match.group(3)]]
    return value, True


def _dim(symbol: str, env) -> int:
    m = env.model
    sizes = {"N": env.num_envs, "A": env.num_actions, "nq": m.nq, "nv": m.nv, "nu": m.nu, "na": m.na,
             "nsensordata": m.nsensordata, "k": len(env.commands.components[env.commands.names[0]])}  # fmt: skip
    return int(symbol) if symbol.isdigit() else sizes[symbol]


def _check(path: str, spec: str, value, env) -> None:
    shape = re.fullmatch(r"\[(.*)\]\s*(\w+)?(?:\s*\|\s*None)?", spec)
    if shape:
        dims, dtype = [d.strip() for d in shape.group(1).split(",")], shape.group(2)
        if value is None and spec.endswith("None"):
            return
        if dtype == "index":
            assert isinstance(value, (slice, torch.Tensor)), path
            value = torch.arange(1000)[value] if isinstance(value, slice) else value
        assert isinstance(value, torch.Tensor), f"{path}: a {type(value).__name__}, the guide says a tensor {spec}"
        if dims != ["..."]:
            want = [_dim(d, env) for d in dims if d != "..."]
            got = list(value.shape[: len(want)]) if "..." in dims else list(value.shape)
            assert got == want, f"{path}: shape {tuple(value.shape)}, the guide says {spec}"
        expected = {"bool": torch.bool, "int64": torch.int64, "index": torch.int64, None: torch.float32,
                    "param_dtype": env.physics.param_dtype}[dtype]  # fmt: skip
        assert value.dtype == expected, f"{path}: dtype {value.dtype}, the guide says {spec}"
        assert value.device == env.device, path
        return
    allowed = [t.strip() for t in spec.split("|")]
    if value is None:
        assert "None" in allowed, f"{path} is None, the guide says {spec}"
        return
    if isinstance(value, list) and "list[str]" in allowed:
        assert all(isinstance(v, str) for v in value), path
        return
    names = {c.__name__ for c in type(value).__mro__} | {f"torch.{c.__name__}" for c in type(value).__mro__}
    assert names & set(allowed), f"{path}: a {type(value).__name__}, the guide says {spec}"


def test_the_guides_env_surface_holds_on_a_built_env(make_env):
    small = ["task.terrain.num_levels=2", "task.terrain.num_cols=2", "task.terrain.tile_size=4.0",
             "task.terrain.border=1.0", "task.terrain.max_init_level=0"]  # fmt: skip
    env = make_env("quadruped_rough", small, num_envs=3)  # a floating base, a command and a terrain
    env.reset()
    env.step(torch.zeros(3, env.num_actions))
    rows = surface_rows()
    assert len(rows) > 40
    samples = _samples(env)
    for path, spec in rows:
        value, called = _lookup(env, path, samples)
        if called:
            _check(path, spec, value, env)


def _env_reads(source: str) -> set[tuple[str, ...]]:
    """Attribute chains read from a variable named `env` (env.physics.qpos -> ('physics', 'qpos'))."""
    chains = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            parts, inner = [], node
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "env":
                chains.add(tuple(reversed(parts)))
    return chains


def test_the_guide_names_everything_generic_terms_and_tasks_read_of_the_env():
    documented = {tuple(re.match(r"env\.([\w.]+)", path).group(1).split(".")) for path, _ in surface_rows()}
    files = sorted((ROOT / "robolearn" / "mdp").glob("*.py")) + sorted((ROOT / "tasks").rglob("*.py")) + [EXAMPLE]
    missing = set()
    for path in files:
        for chain in _env_reads(path.read_text()):
            covered = any(chain[: len(d)] == d or d[: len(chain)] == chain for d in documented)
            if not covered:
                missing.add(f"env.{'.'.join(chain)} ({path.relative_to(ROOT)})")
    assert not missing, f"docs/authoring.md's env surface lacks: {sorted(missing)}"


# --- the worked example --------------------------------------------------------------------------
def _load_example():
    spec = importlib.util.spec_from_file_location("bare_legged_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _task_cfg(plugin):
    node = yaml.safe_load(plugin.config.read_text())
    for section in ("algo", "runner", "env"):  # the recipe: not part of TaskCfg
        node.pop(section, None)
    return OmegaConf.merge(OmegaConf.structured(TaskCfg), node)


def test_worked_example_adds_what_the_bare_mjcf_lacks_and_stands():
    example = _load_example()
    bare = mujoco.MjModel.from_xml_path(str(EXAMPLE.with_suffix(".xml")))
    assert (bare.nu, bare.nsensor, bare.nkey, bare.njnt) == (0, 0, 0, 8)  # hinge joints only

    env = BatchedEnv(_task_cfg(example.TASK), example.TASK, 4, physics="mujoco", device="cpu", seed=0,
                     physics_settings={"num_threads": 1})  # fmt: skip
    try:
        m = env.model
        assert m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE and m.nu == 8 and m.nkey == 1
        assert env.actions.joint_names == list(example.JOINTS)
        assert all(m.jnt_limited[1:]) and all(m.actuator_forcelimited)
        feet = [f"{leg}_foot_contact" for leg in example.LEGS]
        for name in ("imu_gyro", "imu_acc", "imu_quat", "torso_contact", *feet):
            assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SENSOR, name) >= 0, name
        env.reset()
        with torch.inference_mode():
            for _ in range(100):  # 2 s of zero actions: servo targets = the home pose
                _, reward, terminated, _ = env.step(torch.zeros(4, 8))
                assert not terminated.any() and torch.isfinite(reward).all()
        assert (env.physics.qpos[:, 2] > 0.2).all() and (state.gravity_b(env)[:, 2] < -0.95).all()
        forces = env.physics.sensordata[:, env.scene.sensors(feet).columns].sum(dim=1)
        assert forces.numpy() == pytest.approx([m.body_mass.sum() * 9.81] * 4, rel=0.2)  # it stands on its feet
    finally:
        env.close()


def _code_lines(text: str) -> list[str]:
    lines = (re.sub(r"\s+#.*$", "", line).strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_the_guides_example_code_is_the_tested_file():
    worked = GUIDE.read_text().split("### Worked example")[1]
    snippet = re.search(r"```python\n(def edit_spec.*?)```", worked, re.S).group(1)
    source = _code_lines(EXAMPLE.read_text())
    position = 0
    for line in _code_lines(snippet):
        assert line in source[position:], f"docs/authoring.md's example line is not in {EXAMPLE.name}: {line}"
        position = source.index(line, position) + 1
