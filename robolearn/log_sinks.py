"""Where a run's numbers go besides metrics.jsonl: TensorBoard and Weights & Biases (`logger=`),
behind one small interface that RunLogger fans out to.

    sink.scalars({"train/kl": 0.01, ...}, step)    once per iteration
    sink.video(clip, step)                         a training clip (train_clips.py)
    sink.final({"eval/return_mean": 480.0}, step)  the end-of-training evaluation
    sink.close()

Each sink gets the run's composed config when it opens: TensorBoard as text (the YAML) and as
hyperparameters (the hparams plugin), W&B as the run's config. W&B is imported only when chosen.
"""

from __future__ import annotations

import importlib.util
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from omegaconf import DictConfig, OmegaConf

from robolearn.errors import UserError, disk_full, one_line

WANDB_ID_FILE = "wandb_run_id"
"""The run's W&B id, in the run directory: a resumed run continues the same W&B run."""

HPARAM_METRICS = ("eval/return_mean", "eval/episode_length_mean", "train/mean_episode_return",
                  "train/mean_episode_length")  # fmt: skip
"""The scalars TensorBoard's hparams table shows next to a run's settings (their last values)."""

RUNNER_HPARAMS = ("num_steps_per_env", "max_iterations", "episode_window")
"""The runner's settings that change what is learned (the others: checkpoints, clips, display)."""


@dataclass
class Clip:
    """A training clip of env 0, drawn and encoded (train_clips.py)."""

    iteration: int
    """The iteration the clip ends at (its file: videos/train_it<iteration>.mp4)."""
    path: Path
    """The H.264 mp4."""
    gif: bytes
    """The same clip smaller and at fewer frames a second, for TensorBoard's image plugin."""
    gif_size: tuple[int, int]
    """The GIF's width and height."""
    frames: int
    fps: float


class Sink(Protocol):
    def scalars(self, values: dict[str, float], step: int) -> None: ...
    def video(self, clip: Clip, step: int) -> None: ...
    def final(self, values: dict[str, float], step: int) -> None: ...
    def close(self) -> None: ...


def tag(key: str) -> str:
    """A metrics row's key as a logger tag: grouped keys keep their group, the rest go to train/."""
    return key if "/" in key else f"train/{key}"


def scalar_values(row: dict) -> dict[str, float]:
    """The finite numbers of a metrics row, tagged; the iteration is the step, not a value."""
    return {tag(k): float(v) for k, v in row.items()
            if k != "iteration" and isinstance(v, (int, float)) and math.isfinite(v)}  # fmt: skip


def check_logger(logger: str) -> None:
    """Refuse logger=wandb|both where the wandb package is missing, before anything is written."""
    if logger in ("wandb", "both") and importlib.util.find_spec("wandb") is None:
        raise UserError(f"logger={logger} needs the wandb package: pip install 'robolearn[wandb]'")


def hyperparameters(cfg: DictConfig, backend: str, device: str) -> dict[str, float | int | str | bool]:
    """The settings that make a run what it is, flat: task, physics backend, device, seed,
    randomization, every algo and env setting and the runner's learning ones (lists as text)."""
    level = cfg.randomization.level
    values = {"task": cfg.task.name, "physics": backend, "device": device, "seed": cfg.seed,
              "randomization": getattr(level, "name", str(level))}  # fmt: skip
    runner = {f"runner.{k}": cfg.runner[k] for k in RUNNER_HPARAMS}
    sections = {f"{s}.{k}": v for s in ("algo", "env") for k, v in OmegaConf.to_container(cfg[s], resolve=True).items()}
    for key, value in {**sections, **runner}.items():
        values[key] = value if isinstance(value, (bool, int, float, str)) else str(value)
    return values


def open_sinks(cfg: DictConfig, run_dir: Path, start_iteration: int, backend: str, device: str) -> list[Sink]:
    """The sinks `cfg.logger` names, opened; W&B first, so that its failure to start leaves no run."""
    sinks: list[Sink] = []
    config = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    if cfg.logger in ("wandb", "both"):
        sinks.append(WandbSink(run_dir, cfg.wandb.project, cfg.wandb.entity, cfg.wandb.mode, config))
    if cfg.logger in ("tensorboard", "both"):
        yaml = OmegaConf.to_yaml(cfg, resolve=True)
        sinks.append(TensorBoardSink(run_dir, start_iteration, yaml, hyperparameters(cfg, backend, device)))
    return sinks


def _quiet_full_disk_in_threads() -> None:
    """A full disk met by TensorBoard's writer thread prints no traceback of its own: the training
    meets the same error at its next write and says it in one line (errors.disk_full)."""
    previous = threading.excepthook
    if getattr(previous, "quiet_full_disk", False):
        return

    def hook(args) -> None:
        if disk_full(args.exc_value) is None:
            previous(args)

    hook.quiet_full_disk = True
    threading.excepthook = hook


class TensorBoardSink:
    """<run>/tensorboard: scalars, the config as text, hyperparameters, clips as animated images."""

    def __init__(self, run_dir: Path, start_iteration: int, config_yaml: str, hparams: dict):
        from torch.utils.tensorboard import SummaryWriter
        from torch.utils.tensorboard.summary import hparams as hparams_summaries

        # purge_step drops events a crashed run wrote after its last checkpoint.
        purge = start_iteration + 1 if start_iteration else None
        self._writer = SummaryWriter(str(run_dir / "tensorboard"), purge_step=purge)
        _quiet_full_disk_in_threads()
        self._writer.add_text("config", f"```yaml\n{config_yaml}```", start_iteration)
        experiment, start, self._end = hparams_summaries(hparams, dict.fromkeys(HPARAM_METRICS, 0.0))
        self._writer.file_writer.add_summary(experiment)
        self._writer.file_writer.add_summary(start)

    def scalars(self, values: dict[str, float], step: int) -> None:
        for key, value in values.items():
            self._writer.add_scalar(key, value, step)

    def video(self, clip: Clip, step: int) -> None:
        from tensorboard.compat.proto.summary_pb2 import Summary

        width, height = clip.gif_size
        image = Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=clip.gif)
        summary = Summary(value=[Summary.Value(tag="video/train", image=image)])
        self._writer.file_writer.add_summary(summary, clip.iteration)

    def final(self, values: dict[str, float], step: int) -> None:
        self.scalars(values, step)

    def close(self) -> None:
        self._writer.file_writer.add_summary(self._end)  # the hparams session ended
        self._writer.close()


class WandbSink:
    """A W&B run named after the run folder, writing under <run>/wandb/; a resumed run continues
    the W&B run whose id the run directory holds."""

    def __init__(self, run_dir: Path, project: str, entity: str | None, mode: str, config: dict):
        import wandb

        self._wandb = wandb
        id_file = run_dir / WANDB_ID_FILE
        run_id = id_file.read_text().strip() if id_file.is_file() else None
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._run = wandb.init(project=project, entity=entity or None, mode=mode or None, name=run_dir.name,
                                   dir=str(run_dir), config=config, id=run_id, resume="allow",
                                   allow_val_change=True)  # fmt: skip
        except Exception as exc:  # not logged in, no network, a bad entity
            raise UserError(f"logger=wandb: W&B did not start ({one_line(exc)}); log in with `wandb login`, "
                            f"or train with wandb.mode=offline and `wandb sync` later") from None  # fmt: skip
        if self._run.id != run_id and not self._run.disabled:
            id_file.write_text(self._run.id + "\n")
        self._videos: tuple[int, list] = (-1, [])  # the clips logged at the latest step

    def scalars(self, values: dict[str, float], step: int) -> None:
        self._run.log(values, step=step)

    def video(self, clip: Clip, step: int) -> None:
        """At the step it arrives in (W&B's steps only go forward), captioned with its iteration;
        several clips in one step as a list, since a second value would replace the first."""
        video = self._wandb.Video(str(clip.path), caption=f"iteration {clip.iteration}", format="mp4")
        videos = [*self._videos[1], video] if self._videos[0] == step else [video]
        self._videos = (step, videos)
        self._run.log({"video/train": videos if len(videos) > 1 else video}, step=step)

    def final(self, values: dict[str, float], step: int) -> None:
        self._run.summary.update(values)

    def close(self) -> None:
        self._run.finish()

