"""Domain randomization beyond model fields: actuator latency, pushes, gravity tilt, presets and
adaptive ranges (automatic domain randomization)."""


import functools

import pytest
import torch
from omegaconf import OmegaConf

from robolearn.config_task import TaskCfg
from robolearn.envs.batched_env import BatchedEnv
from robolearn.errors import UserError
from robolearn.mdp.events import push_by_setting_velocity
from robolearn.mdp.observations import model_field
from robolearn.mdp.state import root_addresses
from robolearn.registry import TaskPlugin

DT, DECIMATION = 0.01, 4

# A 1 kg block on a frictionless slider pushed by a motor: with Euler integration its velocity
# after physics step j is exactly DT * (sum of the forces applied in steps 0..j).
BLOCK_XML = f"""<mujoco><option timestep="{DT}" integrator="Euler" gravity="0 0 0"/>
<worldbody><body name="block"><joint name="x" type="slide" axis="1 0 0"/>
<geom type="box" size="0.1 0.1 0.1" mass="1" contype="0" conaffinity="0"/></body></worldbody>
<actuator><motor name="push" joint="x"/></actuator></mujoco>"""


def block_env(tmp_path, physics, num_envs, delay_steps):
    (tmp_path / "block.xml").write_text(BLOCK_XML)
    task = {
        "name": "block", "asset": str(tmp_path / "block.xml"), "decimation": DECIMATION, "episode_length_s": 100.0,
        "observations": {"policy": {"terms": {"v": {"func": "joint_vel"}}}},
        "rewards": {"alive": {"func": "is_alive"}},
        "events": {"latency": {"func": "randomize_action_delay", "mode": "reset", "params": {"steps": delay_steps}}},
    }  # fmt: skip
    (tmp_path / "block.yaml").write_text(OmegaConf.to_yaml(task))
    cfg = OmegaConf.merge(OmegaConf.structured(TaskCfg), task)
    return BatchedEnv(cfg, TaskPlugin("block", tmp_path / "block.yaml"), num_envs, physics=physics, seed=3,
                      physics_settings={"num_threads": 1})  # fmt: skip


@pytest.mark.parametrize("physics", ["mujoco", "warp", "mjx"])
def test_latency_delays_each_action_by_exactly_the_sampled_physics_steps(tmp_path, physics):
    n = 12
    env = block_env(tmp_path, physics, n, [0, 6])  # up to 1.5 control steps late
    env.reset()
    delay = env.actions.delay.clone()
    assert delay.min() >= 0 and delay.max() <= 6 and delay.unique().numel() >= 4  # drawn per env
    gen = torch.Generator().manual_seed(0)
    actions = torch.rand(8, n, 1, generator=gen) * 2 - 1
    force = torch.zeros(n)  # hand computation: the force acting in each physics step
    velocity = torch.zeros(n)
    for t, action in enumerate(actions):
        env.step(action)
        for s in range(DECIMATION):
            j = t * DECIMATION + s
            source = torch.div(j - delay, DECIMATION, rounding_mode="floor")  # the control step acting
            force = torch.where(source >= 0, actions[source.clamp(min=0), torch.arange(n), 0], torch.zeros(n))
            velocity += DT * force
        assert torch.allclose(env.physics.qvel[:, 0], velocity, atol=1e-5), (t, delay)
    env.close()


def test_latency_restarts_from_rest_at_reset_and_is_redrawn(tmp_path):
    env = block_env(tmp_path, "mujoco", 16, [2, 5])
    env.reset()
    first = env.actions.delay.clone()
    assert first.min() >= 2 and first.max() <= 5
    for _ in range(3):
        env.step(torch.ones(16, 1))
    everyone = torch.ones(16, dtype=torch.bool)
    env._reset_envs(everyone, record=False)
    assert not torch.equal(env.actions.delay, first)  # a reset event: drawn again
    env.step(torch.ones(16, 1))  # the first 2..5 physics steps still act with the rest ctrl (0)
    expected = DT * (DECIMATION - env.actions.delay.clamp(max=DECIMATION)).float()
    assert torch.allclose(env.physics.qvel[:, 0], expected, atol=1e-6)
    env.close()


def test_latency_range_is_checked(tmp_path):
    with pytest.raises(UserError, match="randomize_action_delay: steps must be 0 <= low <= high"):
        block_env(tmp_path, "mujoco", 2, [3, 1])


def quadruped(make_env, preset="sim2real", num_envs=8, physics="mujoco", overrides=()):
    return make_env("quadruped_flat", overrides=[f"randomization={preset}", *overrides], num_envs=num_envs,
                    physics=physics)  # fmt: skip


def base_velocity(env):
    _, d = root_addresses(env)
    return env.physics.qvel[:, d : d + 6].clone()


def test_push_adds_the_drawn_velocity_to_the_masked_bases_only(make_env):
    env = quadruped(make_env)
    env.reset()
    env.step(torch.zeros(8, 12))
    before = base_velocity(env)
    mask = torch.tensor([True, False] * 4)
    push_by_setting_velocity(env, mask, velocity_range=[0.3, 0.5], angular_range=[-0.2, 0.2])
    kick = base_velocity(env) - before
    assert torch.all(kick[~mask] == 0)
    assert torch.all((kick[mask][:, :2] >= 0.3 - 1e-5) & (kick[mask][:, :2] <= 0.5 + 1e-5))
    assert torch.all(kick[mask][:, 2] == 0) and kick[mask][:, 3:].abs().max() <= 0.2 + 1e-5
    assert kick[mask][:, 0].std() > 0  # per env


@pytest.mark.parametrize("physics", ["mujoco", "warp"])  # mjx: set_velocity in tests/physics, pushes in test_every_task
def test_interval_pushes_change_the_base_velocity_on_schedule(make_env, physics):
    """Twin envs, one pushed by exactly +1 m/s in x and y every 0.1 s (5 control steps)."""
    common = ["task.events.push.interval_s=[0.1,0.1]", "task.events.push.adaptive=null", "~task.events.gravity_tilt",
              "~task.events.action_delay", "~task.terminations.trunk_contact", "~task.terminations.bad_orientation", "randomization.observation_noise=false"]
    pushed = quadruped(make_env, num_envs=2, physics=physics, overrides=[*common, "task.events.push.params.velocity_range=[1.0,1.0]"])
    calm = quadruped(make_env, num_envs=2, physics=physics, overrides=[*common, "task.events.push.params.velocity_range=[0.0,0.0]"])
    pushed.reset(), calm.reset()
    for t in range(1, 6):
        pushed.step(torch.zeros(2, 12)), calm.step(torch.zeros(2, 12))
        difference = base_velocity(pushed) - base_velocity(calm)
        if t < 5:
            assert difference.abs().max() < 1e-4, t
    assert torch.allclose(difference[:, :2], torch.ones(2, 2), atol=1e-4)  # pushed after step 5's physics
    assert difference[:, 2:].abs().max() < 1e-4


@pytest.mark.parametrize("physics", ["mujoco", "warp", "mjx"])
def test_gravity_tilt_keeps_magnitude_stays_in_range_and_is_redrawn_at_reset(make_env, physics):
    env = quadruped(make_env, num_envs=6, physics=physics, overrides=["task.events.gravity_tilt.adaptive=null"])
    env.reset()
    g = env.physics.model_field("opt.gravity").double().clone()
    assert torch.allclose(g.norm(dim=1), torch.full((6,), 9.81, dtype=torch.float64), atol=1e-5)
    tilt = torch.acos(-g[:, 2] / g.norm(dim=1))
    assert torch.all(tilt <= 0.05 + 1e-5) and tilt.std() > 0 and g[:, 0].std() > 0
    env._reset_envs(torch.tensor([True, False] * 3))
    again = env.physics.model_field("opt.gravity").double()
    assert torch.all(again[0::2] != g[0::2]) and torch.equal(again[1::2], g[1::2])


def test_presets_choose_events_noise_and_adaptivity(make_env):
    def names(env):
        return set(env.events.names)

    none, default, sim2real = (quadruped(make_env, preset, num_envs=2) for preset in ("none", "default", "sim2real"))
    assert names(none) == {"reset_base", "reset_joints"}
    assert names(default) == names(none) | {"foot_friction", "trunk_mass", "com_offset", "motor_strength", "armature",
                                           "pd_gains", "joint_damping"}  # fmt: skip
    assert names(sim2real) == names(default) | {"action_delay", "push", "gravity_tilt"}
    assert not default.events.adaptive and set(sim2real.events.adaptive) == {"push", "gravity_tilt"}
    for env in (none, default, sim2real):
        env.reset()
    policy = none.observations.compute()["policy"].clone()
    assert torch.equal(policy, none.observations.compute()["policy"])  # noise off: the same twice
    noisy = default.observations.compute()["policy"].clone()
    assert not torch.equal(noisy, default.observations.compute()["policy"])


@pytest.mark.parametrize("preset", ["default", "sim2real"])
def test_an_adaptive_startup_event_is_refused(make_env, preset):
    """In a preset that holds adaptive ranges too (default), as a term's params are checked there."""
    with pytest.raises(UserError, match="adaptive range needs mode reset or interval"):
        quadruped(make_env, preset, overrides=["task.events.push.mode=startup"])


@pytest.mark.parametrize("preset", ["none", "default", "sim2real"])
def test_an_adaptive_range_without_its_limits_or_step_is_one_line_in_every_preset(make_env, preset):
    """An `adaptive:` added from the command line without limits used to pass in silence where the
    preset holds the range (and fail with OmegaConf's 'Missing mandatory value' under sim2real); a
    metric reward ablated to weight 0 is refused only where the range adapts."""
    cartpole = functools.partial(make_env, "cartpole", num_envs=2)
    with pytest.raises(UserError, match=r"event 'hinge_damping': adaptive.limits is not set; valid: \[low, high\] around "
                                        r"params.range=\[0.0, 0.002\]"):  # fmt: skip
        cartpole(overrides=[f"randomization={preset}", "task.events.hinge_damping.adaptive.step=0.001"])
    with pytest.raises(UserError, match="event 'hinge_damping': adaptive.step is not set"):
        cartpole(overrides=[f"randomization={preset}", "task.events.hinge_damping.adaptive.limits=[0,0.01]"])
    ablated = ["task.rewards.track_lin_vel_xy.weight=0"]
    if preset == "sim2real":
        with pytest.raises(UserError, match="adaptive metric 'track_lin_vel_xy' is a reward term with weight 0"):
            quadruped(make_env, preset, overrides=ablated)
    else:
        assert not quadruped(make_env, preset, overrides=ablated).events.adaptive


def finish_episodes(env, adr, group_value):
    """Finish `min_episodes` episodes in every env with the given per-group metric value."""
    k = env.rewards.names.index(adr.cfg.metric)
    env.episode_steps.fill_(100)
    value = torch.tensor(group_value)[adr.group]
    env.rewards.episode_sums[k] = value * env.rewards.weights[k] * 100
    for _ in range(adr.cfg.min_episodes):
        adr.record(env, torch.ones(env.num_envs, dtype=torch.bool))


def test_adaptive_range_widens_narrows_per_group_within_limits(make_env):
    env = quadruped(make_env, num_envs=8)
    adr = env.events.adaptive["push"]  # [-0.5, 0.5], limits [-1, 1], step 0.1, widen >= 0.7, narrow < 0.4
    assert adr.cfg.num_groups == 4 and torch.equal(adr.per_env, torch.tensor([[-0.5, 0.5]]).repeat(8, 1))
    finish_episodes(env, adr, [0.9, 0.5, 0.9, 0.1])  # group 1 in between, group 3 failing
    adr.update()
    expected = torch.tensor([[-0.6, 0.6], [-0.5, 0.5], [-0.6, 0.6], [-0.5, 0.5]])
    assert torch.allclose(adr.range, expected)  # group 3 cannot get narrower than where it started
    assert torch.allclose(adr.per_env, expected[torch.arange(8) % 4])
    for _ in range(10):
        finish_episodes(env, adr, [0.9, 0.5, 0.9, 0.1])
        adr.update()
    assert torch.allclose(adr.range[0], torch.tensor([-1.0, 1.0]))  # stopped at the limits
    finish_episodes(env, adr, [0.2, 0.5, 0.9, 0.1])
    adr.update()
    assert torch.allclose(adr.range[0], torch.tensor([-0.9, 0.9]))  # failing again: narrows
    adr.record(env, torch.ones(8, dtype=torch.bool))  # too few episodes: no move
    before = adr.range.clone()
    adr.update()
    assert torch.equal(adr.range, before)


def test_adaptive_ranges_drive_sampling_are_logged_and_checkpointed(make_env):
    env = quadruped(make_env, num_envs=8)
    env.reset()
    adr = env.events.adaptive["push"]
    adr.range[0] = torch.tensor([-1.0, 1.0])
    adr.per_env.copy_(adr.range[adr.group])
    everyone = torch.ones(8, dtype=torch.bool)
    kicks = []
    for _ in range(40):
        before = base_velocity(env)
        push_by_setting_velocity(env, everyone, velocity_range=adr.per_env)
        kicks.append((base_velocity(env) - before)[:, :2])
    kicks = torch.stack(kicks).abs().amax(dim=(0, 2))
    wide = adr.group == 0
    assert torch.all(kicks[wide] > 0.5) and torch.all(kicks[~wide] <= 0.5 + 1e-5)
    stats = env.pop_episode_stats()
    assert stats["adr/push/velocity_range/group0/high"] == pytest.approx(1.0)
    assert stats["adr/gravity_tilt/tilt_range/group3/high"] == pytest.approx(0.05)
    other = quadruped(make_env, num_envs=8)
    other.load_state_dict(env.state_dict())
    assert torch.equal(other.events.adaptive["push"].range, adr.range)
    assert torch.equal(other.events.adaptive["push"].per_env, adr.per_env)


def test_adaptive_metric_survival_counts_time_outs(make_env):
    env = quadruped(make_env, num_envs=8)
    adr = env.events.adaptive["gravity_tilt"]  # survival: widen >= 0.9, narrow < 0.7
    env.terminated = torch.tensor([False, False, True, True] * 2)  # env i is in group i % 4
    for _ in range(adr.cfg.min_episodes):
        adr.record(env, torch.ones(8, dtype=torch.bool))
    adr.update()
    assert torch.allclose(adr.range, torch.tensor([[0.0, 0.06], [0.0, 0.06], [0.0, 0.05], [0.0, 0.05]]))


def test_gravity_is_observable_and_option_fields_take_no_names(make_env):
    env = quadruped(make_env, num_envs=4)
    env.reset()
    observed = model_field(env, "opt.gravity")  # e.g. a privileged critic input
    assert observed.shape == (4, 3) and torch.allclose(observed, env.physics.model_field("opt.gravity").float())
    assert observed[:, 0].std() > 0
    with pytest.raises(UserError, match="'opt.gravity' is a model option.*leave out its names"):
        env.scene.field_rows("opt.gravity", ["trunk"])


@pytest.mark.parametrize("task", ["cartpole", "pendulum", "quadruped_flat", "quadruped_rough"])
def test_the_none_preset_leaves_only_initial_state_events(make_env, task):
    overrides = ["randomization=none"]
    if task == "quadruped_rough":
        overrides += ["task.terrain.num_levels=2", "task.terrain.num_cols=2", "task.terrain.tile_size=4.0",
                      "task.terrain.border=1.0", "task.terrain.max_init_level=0"]  # fmt: skip
    env = make_env(task, overrides=overrides, num_envs=2)
    funcs = {term.source for term in env.events.terms}
    assert funcs and funcs <= {"reset_joints_uniform", "reset_root_state"}, funcs
    assert not env.events.adaptive


@pytest.mark.parametrize("within", [True, False])
def test_joint_resets_start_inside_the_joints_ranges(make_env, within):
    # arm_reach's joints: shoulder_lift [-2.0, 2.0], elbow [-2.8, 2.8], ...; home at 0 except a few
    # tenths. A reset range of +-4 rad would start most joints past their limits.
    env = make_env("arm_reach", ["randomization=none", "task.events.reset_joints.params.position_range=[-4.0,4.0]",
                                 f"+task.events.reset_joints.params.within_limits={str(within).lower()}"], num_envs=64)
    env.reset()
    limits = env.scene.qpos_limits[env.scene.joints(None).qpos]
    start = env.reset_qpos[:, env.scene.joints(None).qpos]
    inside = (start >= limits[:, 0]) & (start <= limits[:, 1])
    if within:
        assert inside.all()
        assert (start == limits[:, 0]).any() and (start == limits[:, 1]).any()  # clipped, not redrawn
        assert start.std(dim=0).min() > 0.5  # still spread over the range
    else:
        assert not inside.all()


def test_limit_fraction_scales_a_joints_reset_range_to_its_own_range(make_env):
    """limit_fraction=0.5 narrows +-4 rad to a quarter of each joint's range either side of its
    default (shoulder_lift [-2, 2]: +-1; elbow [-2.8, 2.8]: +-1.4): draws spread over that window,
    never to a limit; velocities are untouched by it."""
    env = make_env("arm_reach", ["randomization=none", "task.events.reset_joints.params.position_range=[-4.0,4.0]",
                                 "+task.events.reset_joints.params.limit_fraction=0.5"], num_envs=256)
    env.reset()
    qpos = env.scene.joints(None).qpos
    limits = env.scene.qpos_limits[qpos]
    default = env.default_qpos[0, qpos]
    cap = 0.5 * (limits[:, 1] - limits[:, 0]) / 2
    # the window: +-cap around the default, cut at the limits (wrist_pitch's home is 1.57 of 2.094)
    low, high = torch.maximum(-cap, limits[:, 0] - default), torch.minimum(cap, limits[:, 1] - default)
    assert (high - low).min() > 0.4, (low, high)
    offset = env.reset_qpos[:, qpos] - env.default_qpos[:, qpos]
    assert torch.all((offset >= low - 1e-6) & (offset <= high + 1e-6)), (offset.min(0).values, offset.max(0).values)
    width = high - low  # spread over the whole window, not piled at one end
    assert torch.all(offset.max(0).values > high - 0.1 * width) and torch.all(offset.min(0).values < low + 0.1 * width)
    start = env.reset_qpos[:, qpos]
    assert not ((start == limits[:, 0]) | (start == limits[:, 1])).any()


def test_limit_fraction_out_of_range_is_one_line(make_env):
    with pytest.raises(UserError, match=r"limit_fraction=1.5 is out of range; valid: 0 < limit_fraction <= 1"):
        env = make_env("arm_reach", ["randomization=none", "+task.events.reset_joints.params.limit_fraction=1.5"],
                       num_envs=2)  # fmt: skip
        env.reset()


@pytest.mark.parametrize("name, func, added", [
    ("push", "push_by_setting_velocity", "{func:push_by_setting_velocity,mode:interval,interval_s:[1,2],level:sim2real,"
                                         "params:{velocity_range:[-0.5,0.5]}}"),
    ("root", "reset_root_state", "{func:reset_root_state,mode:reset}"),
])  # fmt: skip
def test_an_event_that_moves_the_floating_base_is_refused_at_build_on_a_model_without_one(make_env, name, func, added):
    """cartpole has no free joint: a push (interval) used to fail only when it first fired, minutes
    into training, a root reset at the first reset. Both now fail when the env is built, in every
    preset (this push is a sim2real event, not run under default)."""
    with pytest.raises(UserError, match=rf"event '{name}' \({func}\) moves the floating base, and the model has no free "
                                        rf"joint; valid: remove it \(~task.events.{name}\)"):  # fmt: skip
        make_env("cartpole", overrides=["randomization=default", f"+task.events.{name}={added}"], num_envs=2)
