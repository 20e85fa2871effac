"""Terrain generator and its MuJoCo hfield: hand-computed heights, and MuJoCo's rays as ground truth.

Small grid: 3 levels x 6 columns of 2 m tiles at 0.1 m, 0.5 m border -> 20 samples per tile,
5 border samples. Difficulty of levels 0, 1, 2 is 0, 0.5, 1.
"""

import mujoco
import numpy as np
import pytest

from robolearn.errors import UserError
from robolearn.terrain import TerrainCfg, generate
from robolearn.terrain.generator import column_types
from robolearn.scene.ground import level_ground_geoms
from robolearn.terrain.mjcf import BLOCK_SIZE, add_terrain, terrain_blocks

N, NB = 20, 5  # samples per tile, border samples


def small_cfg(**overrides) -> TerrainCfg:
    # step_width 0.2 over the 0.5 m run from edge to the 1 m platform -> 2 steps.
    kwargs = dict(num_levels=3, num_cols=6, tile_size=2.0, resolution=0.1, border=0.5, step_width=0.2)
    kwargs.update(overrides)
    return TerrainCfg(**kwargs)


@pytest.fixture(scope="module")
def terrain():
    return generate(small_cfg(), seed=3)


def tile(terrain, level, col):
    return terrain.heights[NB + col * N:NB + (col + 1) * N + 1, NB + level * N:NB + (level + 1) * N + 1]


def test_grid_shape_extent_and_columns(terrain):
    assert terrain.heights.shape == (6 * N + 2 * NB + 1, 3 * N + 2 * NB + 1)
    assert terrain.heights.dtype == np.float32
    assert terrain.size_x == pytest.approx(7.0) and terrain.size_y == pytest.approx(13.0)
    assert terrain.origins.shape == (3, 6, 3)
    assert terrain.col_types == ("flat", "rough", "slope_up", "slope_down", "stairs_up", "stairs_down")


def test_column_types_are_proportional():
    assert column_types(TerrainCfg().types, 10) == (
        "flat", "rough", "rough", "rough", "slope_up", "slope_up", "slope_down", "slope_down",
        "stairs_up", "stairs_down")
    assert column_types({"flat": 1.0, "rough": 3.0, "stairs_up": 0.0}, 8) == ("flat",) * 2 + ("rough",) * 6
    assert column_types({"flat": 0.01, "rough": 0.99}, 2) == ("flat", "rough")  # every type gets >= 1


def test_unknown_type_and_bad_fields_raise_user_error():
    with pytest.raises(UserError, match="bogus.*valid:.*stairs_up"):
        generate(small_cfg(types={"flat": 1.0, "bogus": 1.0}), seed=0)
    with pytest.raises(UserError, match="tile_size"):
        generate(small_cfg(tile_size=2.05), seed=0)
    with pytest.raises(UserError, match="slope"):
        generate(small_cfg(slope=[0.4, 0.1]), seed=0)
    with pytest.raises(UserError, match="resolution"):
        generate(small_cfg(resolution=0.0), seed=0)


def test_pyramids_match_hand_computed_heights(terrain):
    for level, (slope, step) in enumerate([(0.0, 0.03), (0.2, 0.105), (0.4, 0.18)]):
        # Slope: edge (0) -> 0.5 m run -> platform at slope * 0.5.
        assert tile(terrain, level, 2).max() == pytest.approx(slope * 0.5, abs=1e-6)
        assert tile(terrain, level, 3).min() == pytest.approx(-slope * 0.5, abs=1e-6)
        # Stairs: rings of 0.2 m at 0, h, 2h; the platform is 2 steps up (or down).
        up = tile(terrain, level, 4)
        assert up.max() == pytest.approx(2 * step, abs=1e-6)
        assert np.allclose(sorted(set(np.round(up.ravel(), 6))), [0.0, step, 2 * step], atol=1e-6)
        assert tile(terrain, level, 5).min() == pytest.approx(-2 * step, abs=1e-6)
    # One sample in from the edge, the slope is one resolution of run: 0.1 * 0.4.
    assert tile(terrain, 2, 2)[N // 2, 1] == pytest.approx(0.04, abs=1e-6)


def test_flat_and_rough_stay_within_level_amplitude(terrain):
    assert not tile(terrain, 2, 0).any()
    for level, amplitude in enumerate([0.01, 0.045, 0.08]):
        rough = tile(terrain, level, 1)
        assert np.abs(rough).max() <= amplitude + 1e-6
        assert np.abs(rough).max() > amplitude / 4  # it is actually rough
    assert abs(float(tile(terrain, 2, 1).mean())) < 0.02


def test_tile_edges_and_border_are_zero(terrain):
    edges = np.arange(NB, NB + 6 * N + 1, N), np.arange(NB, NB + 3 * N + 1, N)
    assert not terrain.heights[edges[0], :].any() and not terrain.heights[:, edges[1]].any()
    assert not terrain.heights[:NB].any() and not terrain.heights[:, -NB:].any()


def test_origins_are_tile_centres_at_ground_height(terrain):
    assert np.allclose(terrain.origins[:, 0, 0], [-2.0, 0.0, 2.0])
    assert np.allclose(terrain.origins[0, :, 1], [-5.0, -3.0, -1.0, 1.0, 3.0, 5.0])
    centre = terrain.heights[NB + N // 2::N, NB + N // 2::N][:6, :3].T  # [level, col]
    assert np.allclose(terrain.origins[..., 2], centre)
    assert terrain.origins[2, 4, 2] == pytest.approx(0.36, abs=1e-6)


def test_same_seed_same_terrain_other_seed_only_rough_differs(terrain):
    again, other = generate(small_cfg(), seed=3), generate(small_cfg(), seed=4)
    assert np.array_equal(again.heights, terrain.heights)
    assert np.array_equal(again.origins, terrain.origins)
    changed = np.argwhere(other.heights != terrain.heights)
    assert len(changed) and np.all((changed[:, 0] >= NB + N) & (changed[:, 0] <= NB + 2 * N))


def sample_xy(terrain, ix, iy):
    return -terrain.size_x / 2 + ix * terrain.resolution, -terrain.size_y / 2 + iy * terrain.resolution


def test_height_at_samples_and_midpoints(terrain):
    rng = np.random.default_rng(0)
    iy, ix = rng.integers(0, terrain.heights.shape[0] - 1, 50), rng.integers(0, terrain.heights.shape[1] - 1, 50)
    x, y = sample_xy(terrain, ix, iy)
    h = terrain.heights.astype(np.float64)
    assert np.allclose(terrain.height_at(x, y), h[iy, ix], atol=1e-7)
    half = terrain.resolution / 2
    assert np.allclose(terrain.height_at(x + half, y), (h[iy, ix] + h[iy, ix + 1]) / 2, atol=1e-7)
    assert np.allclose(terrain.height_at(x, y + half), (h[iy, ix] + h[iy + 1, ix]) / 2, atol=1e-7)
    # Cell centres lie on MuJoCo's diagonal (ix, iy)-(ix+1, iy+1).
    assert np.allclose(terrain.height_at(x + half, y + half), (h[iy, ix] + h[iy + 1, ix + 1]) / 2, atol=1e-7)
    # Outside the field: clamped to the edge value (the flat border).
    assert np.allclose(terrain.height_at(np.array([-100.0, 100.0]), np.array([0.0, 100.0])), 0.0)


def build_model(terrain, block_size: float = BLOCK_SIZE):
    spec = mujoco.MjSpec()
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1],
                            friction=[0.8, 0.01, 0.001], condim=3, conaffinity=1, contype=1, priority=1)
    spec.worldbody.add_body(name="probe", pos=[0, 0, 1]).add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.05])
    add_terrain(spec, terrain, block_size=block_size)
    return spec


def ray_heights(model, xs, ys):
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    geomid = np.zeros((1, 1), np.int32)
    probe = model.body("probe").id  # the free sphere hovering over the origin is not ground
    out = []
    for x, y in zip(xs, ys):
        dist = mujoco.mj_ray(model, data, np.array([x, y, 5.0]), np.array([0.0, 0.0, -1.0]), None, 1, probe, geomid)
        assert dist >= 0 and model.geom(int(geomid[0, 0])).name.startswith("terrain")
        out.append(5.0 - dist)
    return np.array(out)


def test_mujoco_surface_equals_heights(terrain):
    spec = build_model(terrain)
    model = spec.compile()
    assert spec.geom("floor") is None
    geom = model.geom("terrain")
    assert np.allclose(geom.friction, [0.8, 0.01, 0.001]) and geom.priority[0] == 1 and geom.condim[0] == 3
    rng = np.random.default_rng(1)
    iy, ix = rng.integers(0, terrain.heights.shape[0] - 1, 40), rng.integers(0, terrain.heights.shape[1] - 1, 40)
    x, y = sample_xy(terrain, ix, iy)
    assert np.allclose(ray_heights(model, x, y), terrain.heights[iy, ix], atol=1e-5)
    # Anywhere inside cells, including the far corner of the field.
    fx, fy = rng.uniform(-3.5, 3.5, 60), rng.uniform(-6.5, 6.5, 60)
    fx, fy = np.append(fx, [3.5, 3.44]), np.append(fy, [6.5, 6.47])
    assert np.allclose(ray_heights(model, fx, fy), terrain.height_at(fx, fy), atol=1e-5)
    # to_xml keeps the elevation data (printed to ~6 digits), so an exported model reloads with
    # the same ground to well under a micrometre.
    reloaded = mujoco.MjModel.from_xml_string(spec.to_xml())
    assert np.allclose(ray_heights(reloaded, fx, fy), terrain.height_at(fx, fy), atol=1e-5)
    assert np.abs(reloaded.hfield_data - model.hfield_data).max() * model.hfield_size[0, 2] < 1e-6


def test_all_flat_terrain_compiles_at_zero():
    flat = generate(small_cfg(types={"flat": 1.0}), seed=0)
    model = build_model(flat).compile()
    assert np.allclose(ray_heights(model, [0.0, 1.23, -3.0], [0.0, -4.56, 6.0]), 0.0, atol=1e-6)


def test_a_field_in_blocks_is_the_same_surface(terrain):
    """7 x 13 m in 1 m blocks (the default, 16 m, keeps it whole): 7 x 13 hfields, each centred on
    itself, sharing edge samples; rays anywhere, edges and far corner included, see the heights,
    every block takes the floor's contact settings, and the exported XML reloads the same ground."""
    names = [name for name, _, _ in terrain_blocks(terrain, block_size=1.0)]
    assert len(names) == 7 * 13 and names[0] == "terrain_0_0" and len(terrain_blocks(terrain)) == 1
    spec = build_model(terrain, block_size=1.0)
    model = spec.compile()
    assert model.nhfield == 7 * 13 and all(np.allclose(model.geom(n).friction, [0.8, 0.01, 0.001]) for n in names)
    assert np.allclose(model.geom_pos[model.geom("terrain_0_0").id, :2], [-3.0, -6.0])  # its own centre, not the field's
    rng = np.random.default_rng(2)
    iy, ix = rng.integers(0, terrain.heights.shape[0], 40), rng.integers(0, terrain.heights.shape[1], 40)
    x, y = sample_xy(terrain, ix, iy)
    assert np.allclose(ray_heights(model, x, y), terrain.heights[iy, ix], atol=1e-5)
    fx, fy = np.append(rng.uniform(-3.5, 3.5, 60), [3.5, 0.5, -2.5]), np.append(rng.uniform(-6.5, 6.5, 60), [6.5, 1.5, 0.3])
    assert np.allclose(ray_heights(model, fx, fy), terrain.height_at(fx, fy), atol=1e-5)
    reloaded = mujoco.MjModel.from_xml_string(spec.to_xml())
    assert np.allclose(ray_heights(reloaded, fx, fy), terrain.height_at(fx, fy), atol=1e-5)


@pytest.mark.parametrize("num_cols", [6, 10], ids=["one_field", "blocks"])
def test_a_robot_model_with_its_own_terrain_hfield_gets_the_generated_one_beside_it(num_cols):
    """dm_control's quadruped names its own hfield and geom 'terrain': a task's terrain: section was
    refused ("do not match ... export it again"). The generated terrain takes a name of its own, and
    the model with it (an exported bundle's) is left as it is when the edit runs on it again."""
    from robolearn.scene import scene

    terrain = generate(small_cfg(num_cols=num_cols, tile_size=2.0 if num_cols == 6 else 4.0), seed=0)
    xml = """<mujoco><asset><hfield name="terrain" nrow="11" ncol="11" size="3 3 1 0.1"/></asset><worldbody>
             <geom name="floor" type="plane" size="5 5 0.1"/><geom name="terrain" type="hfield" hfield="terrain"/>
             <body name="torso" pos="0 0 0.5"><freejoint/><geom type="sphere" size="0.1"/></body></worldbody></mujoco>"""
    spec = mujoco.MjSpec.from_string(xml)
    edit = scene.with_terrain(None, terrain)
    edit(spec)
    model = spec.compile()
    ours = [name for name, _, _ in terrain_blocks(terrain, scene.OWN_TERRAIN)]
    assert len(ours) == (1 if num_cols == 6 else 3)
    assert model.nhfield == 1 + len(ours) and model.hfield("terrain").nrow == 11
    assert all(model.geom(name).type == mujoco.mjtGeom.mjGEOM_HFIELD for name in ours)
    exported = mujoco.MjSpec.from_string(spec.to_xml())
    edit(exported)  # the bundle's model: nothing added twice
    assert exported.compile().nhfield == model.nhfield


@pytest.mark.parametrize("ground", [
    '<geom name="ground" type="plane" size="10 10 .1" friction="0.7 0.01 0.001"/>',
    '<geom type="plane" size="10 10 .1" friction="0.7 0.01 0.001"/>',  # unnamed
    '<geom name="slab" type="box" size="5 5 .05" pos="0 0 -.05" friction="0.7 0.01 0.001"/>',
])  # fmt: skip
def test_the_models_level_ground_goes_whatever_its_name_and_walls_and_obstacles_stay(terrain, ground):
    """A ground plane left under the terrain fills its dips; any level world ground is replaced
    (its contact settings carried over), a turned plane (a wall) and a small box (an obstacle) stay."""
    spec = mujoco.MjSpec.from_string(f"""<mujoco><worldbody>{ground}
        <geom name="wall" type="plane" size="1 1 .1" pos="3 0 0" euler="0 90 0"/>
        <geom name="crate" type="box" size=".2 .2 .2" pos="1 1 .2"/>
        <body name="probe" pos="0 0 1"><freejoint/><geom type="sphere" size=".05"/></body></worldbody></mujoco>""")
    add_terrain(spec, terrain, remove_geoms=("floor", *level_ground_geoms(spec)))  # as the scene adds it
    model = spec.compile()
    names = [model.geom(g).name for g in range(model.ngeom) if model.geom_bodyid[g] == 0]
    assert "wall" in names and "crate" in names and "ground" not in names and "slab" not in names
    assert not any(model.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE and not model.geom(g).name
                   for g in range(model.ngeom))  # fmt: skip
    assert np.allclose(model.geom("terrain").friction, [0.7, 0.01, 0.001])
    rng = np.random.default_rng(2)
    fx, fy = rng.uniform(-2.5, 2.5, 30), rng.uniform(-2.5, 2.5, 30)
    assert np.allclose(ray_heights(model, fx, fy), terrain.height_at(fx, fy), atol=1e-5)  # the dips are there
