"""A metric with `per: final` is the mean of its value over each episode's last `window_s`
seconds, however the episode ended: checked against the values recorded step by step."""

import pytest
import torch

from robolearn import registry
from robolearn.errors import UserError
from robolearn.evaluate import evaluate
from robolearn.mdp.observations import joint_pos

METRICS = """extends: cartpole
metrics:
  final_angle: {func: joint_pos_l2, params: {joints: [hinge]}, per: final, window_s: 0.1}
  mean_angle: {func: joint_pos_l2, params: {joints: [hinge]}}
"""


@pytest.fixture
def with_metrics(installed_tasks, tmp_path):
    def install(text=METRICS):
        (tmp_path / "metrics.yaml").write_text(text)
        installed_tasks["cartpole_metrics"] = registry.TaskPlugin(config=tmp_path / "metrics.yaml")
        return "cartpole_metrics"

    return install


def test_final_window_mean_with_early_terminations(make_env, with_metrics):
    env = make_env(with_metrics(), ["randomization=none"], num_envs=6)
    assert env.metrics.window_steps[env.metrics.names.index("final_angle")].item() == 5  # 0.1 s at 50 Hz
    values, dones = [], []
    after_physics, step = env.metrics.after_physics, env.step

    def record_values():  # each step's value, before the resets at the episodes' end
        after_physics()
        values.append(joint_pos(env, ["hinge"])[:, 0].square().clone())

    def record_step(action):
        out = step(action)
        dones.append((out[2] | out[3]).clone())
        return out

    env.metrics.after_physics, env.step = record_values, record_step
    gen = torch.Generator().manual_seed(1)
    metrics, _ = evaluate(env, lambda obs: torch.rand(6, 1, generator=gen) * 4 - 2, progress=False)  # hard pushes
    values, dones = torch.stack(values), torch.stack(dones)  # [T, N]
    lengths = dones.float().argmax(0) + 1  # each env's first episode ends at its first done
    assert lengths.max() < env.max_episode_length and len(set(lengths.tolist())) > 2  # poles fell, at different steps
    finals = [values[max(0, n - 5):n, e].mean() for e, n in enumerate(lengths.tolist())]
    assert metrics["final_angle"] == pytest.approx(torch.stack(finals).mean().item(), rel=1e-5)
    steps = sum(values[:n, e].sum() for e, n in enumerate(lengths.tolist()))
    assert metrics["mean_angle"] == pytest.approx((steps / lengths.sum()).item(), rel=1e-5)
    assert metrics["final_angle"] > 2 * metrics["mean_angle"]  # the falls are at the episodes' ends


def test_a_bad_window_or_per_is_one_line(make_env, with_metrics):
    with pytest.raises(UserError, match=r"task.metrics.final_angle.window_s=0.0 is out of range; valid: > 0"):
        make_env(with_metrics(METRICS.replace("window_s: 0.1", "window_s: 0.0")))
    with pytest.raises(UserError, match="per must be one of step, meter, final, got 'last'"):
        make_env(with_metrics(METRICS.replace("per: final", "per: last")))


class RaisingMetric:
    """A class metric (built once, unchecked at build) that fails on its first step."""

    def __init__(self, env):
        pass

    def __call__(self, env):
        raise KeyError("ee_site")


class ScalarMetric(RaisingMetric):
    def __call__(self, env):
        return torch.tensor(3.0)  # one value, not one per env


@pytest.mark.parametrize("term, message", [
    (RaisingMetric, "task 'cartpole_metrics': metric term 'bad' (odd) failed: KeyError: 'ee_site'"),
    (ScalarMetric, "metric term 'bad' (odd): must return [num_envs] torch.float32 on cpu, got () torch.float32"),
])  # fmt: skip
def test_a_class_metric_that_fails_in_evaluation_is_one_line(make_env, installed_tasks, tmp_path, term, message):
    (tmp_path / "metrics.yaml").write_text("extends: cartpole\nmetrics:\n  bad: {func: odd}\n")
    installed_tasks["cartpole_metrics"] = registry.TaskPlugin(config=tmp_path / "metrics.yaml", terms={"odd": term})
    env = make_env("cartpole_metrics", ["randomization=none"], num_envs=2)
    with pytest.raises(UserError) as err:
        evaluate(env, lambda obs: torch.zeros(2, 1), progress=False)
    assert message in str(err.value) and "\n" not in str(err.value)



def test_an_evaluation_where_the_policy_acts_nan_in_some_envs_is_refused(make_env):
    """The env resets an env whose action is not finite after one step: without the check, those
    episodes would count as one-step episodes of return ~0."""
    env = make_env(num_envs=4)

    def act(obs):
        actions = torch.zeros(obs.shape[0], env.num_actions)
        actions[1] = float("nan")  # one env's policy output broken
        return actions

    with pytest.raises(UserError, match=r"^the policy's actions are not finite \(NaN or inf\) in 1 of 4 environments"):
        evaluate(env, act, progress=False)
