"""The loggers a run's numbers go to (log_sinks.py), read back from what they wrote."""

import io
from pathlib import Path

import pytest
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2

from robolearn.compose import compose_train
from robolearn.errors import UserError
from robolearn.log_sinks import Clip, TensorBoardSink, check_logger, hyperparameters, scalar_values


def read_events(folder: Path) -> EventAccumulator:
    events = EventAccumulator(str(folder), size_guidance={"tensors": 0, "images": 0, "scalars": 0})
    events.Reload()
    return events


def hparams_data(events: EventAccumulator, which: str):
    return plugin_data_pb2.HParamsPluginData.FromString(events.PluginTagToContent("hparams")[f"_hparams_/{which}"])


def tiny_gif() -> bytes:
    out = io.BytesIO()
    frames = [Image.new("RGB", (16, 12), color) for color in ((200, 0, 0), (0, 200, 0))]
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    return out.getvalue()


def test_hyperparameters_are_the_runs_key_settings_flat():
    cfg = compose_train(["task=cartpole", "env.num_envs=32", "algo.learning_rate=3e-4", "seed=7"])
    hp = hyperparameters(cfg, "mujoco", "cpu")
    assert hp["task"] == "cartpole" and hp["physics"] == "mujoco" and hp["device"] == "cpu" and hp["seed"] == 7
    assert hp["env.num_envs"] == 32 and hp["algo.learning_rate"] == pytest.approx(3e-4)
    assert hp["runner.num_steps_per_env"] == cfg.runner.num_steps_per_env and hp["randomization"] == "default"
    assert hp["algo.actor_hidden_dims"] == str(list(cfg.algo.actor_hidden_dims))  # lists as text
    assert "runner.video_interval" not in hp and "runner.save_interval" not in hp  # not what is learned
    assert all(isinstance(v, (bool, int, float, str)) for v in hp.values())


def test_scalar_values_tag_plain_keys_under_train_and_drop_the_step_and_non_finite():
    row = {"iteration": 3, "kl": 0.5, "health/nonfinite_resets": 0, "entropy": float("inf"), "note": "x"}
    assert scalar_values(row) == {"train/kl": 0.5, "health/nonfinite_resets": 0.0}


def test_tensorboard_holds_the_config_text_hparams_scalars_clip_and_evaluation(tmp_path):
    cfg = compose_train(["task=cartpole"])
    sink = TensorBoardSink(tmp_path, 0, "task:\n  name: cartpole\n", hyperparameters(cfg, "mujoco", "cpu"))
    sink.scalars({"train/mean_episode_return": 1.5}, 1)
    sink.scalars({"train/mean_episode_return": 2.5}, 2)
    sink.video(Clip(2, tmp_path / "train_it000002.mp4", tiny_gif(), (16, 12), 2, 10.0), 2)
    sink.final({"eval/return_mean": 480.0}, 2)
    sink.close()

    events = read_events(tmp_path / "tensorboard")
    text = events.Tensors("config/text_summary")[0].tensor_proto.string_val[0].decode()
    assert text == "```yaml\ntask:\n  name: cartpole\n```"  # a code block in TensorBoard's text tab
    experiment = hparams_data(events, "experiment").experiment
    names = {h.name for h in experiment.hparam_infos}
    assert {"task", "physics", "seed", "env.num_envs", "algo.learning_rate", "runner.num_steps_per_env"} <= names
    assert {m.name.tag for m in experiment.metric_infos} >= {"eval/return_mean", "train/mean_episode_return"}
    start = hparams_data(events, "session_start_info").session_start_info.hparams
    assert start["task"].string_value == "cartpole" and start["algo.learning_rate"].number_value == pytest.approx(1e-3)
    assert hparams_data(events, "session_end_info").session_end_info.status  # written at close
    assert [(s.step, s.value) for s in events.Scalars("train/mean_episode_return")] == [(1, 1.5), (2, 2.5)]
    assert [(s.step, s.value) for s in events.Scalars("eval/return_mean")] == [(2, 480.0)]
    (image,) = events.Images("video/train")
    assert (image.step, image.width, image.height) == (2, 16, 12)
    assert Image.open(io.BytesIO(image.encoded_image_string)).n_frames == 2  # animated


def test_wandb_chosen_but_not_installed_is_one_line_naming_the_extra(monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else find_spec(name, *a))
    for logger in ("wandb", "both"):
        with pytest.raises(UserError) as info:
            check_logger(logger)
        assert str(info.value) == f"logger={logger} needs the wandb package: pip install 'robolearn[wandb]'"
    check_logger("tensorboard")
    check_logger("none")
