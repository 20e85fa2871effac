"""sim2sim starts its episodes on the terrain tiles training's envs stood on when the bundle was
exported (level and column), as the bundle's conditions.yaml records them. A rough task's one
referee env used to start every episode on column 0 (one terrain type) at an initial level.
`conditions=initial` draws the task's own initial levels, over every column."""

from __future__ import annotations

import pytest
import torch
import yaml

from robolearn.compose import compose_train
from robolearn.config import AlgoCfg
from robolearn.envs.batched_env import BatchedEnv
from robolearn.errors import UserError
from robolearn.export.bundle import export_bundle
from robolearn.registry import get_task
from robolearn.rl.models import ActorCritic
from robolearn.sim2sim import Referee

LEVEL = 7


@pytest.fixture(scope="module")
def rough_bundle(tmp_path_factory):
    """An untrained quadruped_rough policy exported from 8 envs that all stand on level 7 (columns
    0-7, as envs are dealt to columns)."""
    out = tmp_path_factory.mktemp("rough") / "bundle"
    cfg = compose_train(["task=quadruped_rough", "task.episode_length_s=0.5"])
    env = BatchedEnv(cfg.task, get_task("quadruped_rough"), 8, physics="mujoco", seed=0, physics_settings={"num_threads": 1})
    try:
        env.terrain.set_levels(torch.full((8,), LEVEL))
        torch.manual_seed(0)
        ac = ActorCritic.from_config(AlgoCfg(actor_hidden_dims=[16], critic_hidden_dims=[16]), env.observation_dims(), env.num_actions)
        export_bundle(ac, env, out, progress=False)
    finally:
        env.close()
    return out


def test_the_bundle_records_the_tiles_it_was_exported_under(rough_bundle):
    """Counted before the export's evaluation, whose episode ends move the terrain curriculum."""
    saved = yaml.safe_load((rough_bundle / "conditions.yaml").read_text())
    cells = saved["terrain_cells"]
    assert len(cells) == 10 and all(len(row) == 20 for row in cells)
    assert cells[LEVEL] == [1] * 8 + [0] * 12 and sum(map(sum, cells)) == 8
    assert set(saved) == {"terrain_cells"}
    robot_yaml = yaml.safe_load((rough_bundle / "robot.yaml").read_text())
    assert "conditions.yaml" in robot_yaml["files"]  # checksummed like every bundle file


def test_each_episode_starts_on_a_trained_tile(rough_bundle):
    referee = Referee(rough_bundle, "quadruped.xml", seed=3)
    try:
        terrain = referee.env.terrain
        columns = set()
        for _ in range(16):
            qpos, _ = referee.initial_state()
            level, column = int(terrain.levels[0]), int(terrain.cols[0])
            assert level == LEVEL and column < 8
            origin = terrain.origins[level, column].numpy()
            assert abs(qpos[0] - origin[0]) < 1.0 and abs(qpos[1] - origin[1]) < 1.0  # placed on that tile
            columns.add(column)
        assert len(columns) >= 5
        assert referee.conditions.described == "the tiles training stood on: terrain level 7 on average, over 8 of 20 columns"
    finally:
        referee.close()


def test_initial_conditions_draw_the_task_s_initial_tiles_over_every_column(rough_bundle):
    referee = Referee(rough_bundle, "quadruped.xml", seed=3, conditions="initial")
    try:
        terrain = referee.env.terrain
        drawn = []
        for _ in range(16):
            referee.initial_state()
            drawn.append((int(terrain.levels[0]), int(terrain.cols[0])))
        assert all(level <= 4 for level, _ in drawn)  # quadruped_rough's max_init_level
        assert any(column >= 8 for _, column in drawn) and len({c for _, c in drawn}) >= 8
        assert referee.conditions.described == "the task's initial tiles: terrain level 2 on average, over 20 of 20 columns"
    finally:
        referee.close()


def test_a_task_without_terrain_has_no_conditions(cartpole_bundle):
    assert not (cartpole_bundle / "conditions.yaml").exists()
    referee = Referee(cartpole_bundle, "cartpole.xml", seed=0)
    try:
        assert referee.conditions.described == ""
        referee.initial_state()
    finally:
        referee.close()
    with pytest.raises(UserError, match="^conditions=newest is not valid; valid: trained, initial$"):
        Referee(cartpole_bundle, "cartpole.xml", seed=0, conditions="newest")


def test_counts_that_do_not_fit_the_terrain_fall_back_to_the_initial_tiles_and_say_so(rough_bundle, tmp_path):
    """A bundle whose conditions.yaml does not fit the task's terrain as built here (another grid):
    the task's initial tiles, named as such, not an index error."""
    import shutil

    bundle = shutil.copytree(rough_bundle, tmp_path / "bundle")
    (bundle / "conditions.yaml").write_text("terrain_cells: [[1, 0], [0, 3]]\n")
    referee = Referee(bundle, "quadruped.xml", seed=0)
    try:
        assert referee.conditions.described.startswith("the task's initial tiles (the bundle records none that fit this terrain)")
        referee.initial_state()
        assert int(referee.env.terrain.levels[0]) <= 4
    finally:
        referee.close()

