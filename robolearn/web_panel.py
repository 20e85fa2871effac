"""The browser viewer's control panel (viser GUI): what it shows and what it asks for.

The panel never touches the env: its callbacks run on viser's thread and only post requests
(`Request`) to a queue that the simulation loop (web_viewer.py) applies between two env steps.
"""

from __future__ import annotations

import html
import queue
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Request:
    kind: str
    """pause | resume | step | reset | speed | command | drive | checkpoint | follow"""
    value: Any = None
    name: str = ""


def reward_bars(names: list[str], values: np.ndarray) -> str:
    """Each reward term's weighted value as a bar from the middle (green: positive, red: negative),
    scaled to the largest magnitude among the terms."""
    scale = max(float(np.abs(values).max(initial=0.0)), 1e-9)
    rows = []
    for name, value in zip(names, values):
        width = 50.0 * abs(float(value)) / scale
        left = 50.0 if value >= 0 else 50.0 - width
        colour = "#2e9e4f" if value >= 0 else "#d9453b"
        rows.append(
            '<div style="display:flex;align-items:center;gap:6px;font:12px sans-serif;margin:3px 0">'
            f'<span style="width:38%;overflow:hidden;text-overflow:ellipsis;white-space:nowrap" title="{html.escape(name)}">'
            f"{html.escape(name)}</span>"
            '<span style="position:relative;flex:1;height:10px;background:#e8e8e8">'
            '<span style="position:absolute;left:50%;width:1px;height:100%;background:#999"></span>'
            f'<span style="position:absolute;left:{left:.1f}%;width:{width:.1f}%;height:100%;background:{colour}"></span>'
            "</span>"
            f'<span style="width:20%;text-align:right;font-family:monospace">{float(value):+.3f}</span></div>'
        )  # fmt: skip
    return "".join(rows) or "<i>no reward terms</i>"


class Panel:
    """Pause / step / reset, speed, the task's commands as sliders, the run's checkpoints, the
    status line and the reward bars. `requests` is what the page asked for since the last drain."""

    def __init__(self, server, commands: dict[str, tuple[list[str], np.ndarray]], checkpoints: list[str],
                 current: str) -> None:  # fmt: skip
        self.requests: queue.SimpleQueue[Request] = queue.SimpleQueue()
        gui = server.gui
        with gui.add_folder("Policy"):
            self.status = gui.add_markdown("starting ...")
            pause = gui.add_button_group("Run", ("Pause", "Step", "Reset"))
            resume = gui.add_button("Resume", visible=False)
            speed = gui.add_slider("Speed ×", min=0.1, max=4.0, step=0.1, initial_value=1.0)
        self._pause, self._resume = pause, resume

        @pause.on_click
        def _(event) -> None:
            kind = event.target.value.lower()
            self.requests.put(Request(kind))
            if kind == "pause":
                resume.visible = True

        @resume.on_click
        def _(_) -> None:
            self.requests.put(Request("resume"))
            resume.visible = False

        @speed.on_update
        def _(_) -> None:
            self.requests.put(Request("speed", float(speed.value)))

        with gui.add_folder("Reward terms (weighted, this step)"):
            self.bars = gui.add_html("")
        self._command_widgets(gui, commands)
        with gui.add_folder("Checkpoint"):
            self.checkpoint = gui.add_dropdown("Load", checkpoints or [current], initial_value=current)
            follow = gui.add_checkbox("Follow newest", initial_value=True,
                                      hint="load each new checkpoint the run writes (a run still training)")  # fmt: skip
        self._follow = follow

        @self.checkpoint.on_update
        def _(_) -> None:  # the loop ignores a choice of the checkpoint already loaded
            self.requests.put(Request("checkpoint", str(self.checkpoint.value)))

        @follow.on_update
        def _(_) -> None:
            self.requests.put(Request("follow", bool(follow.value)))

    def _command_widgets(self, gui, commands: dict[str, tuple[list[str], np.ndarray]]) -> None:
        """Per command: 'drive' (the sliders set it in every env, held through resets) and one slider
        per component over the command's range."""
        for name, (components, ranges) in commands.items():
            with gui.add_folder(f"Command: {name}"):
                drive = gui.add_checkbox("Drive with sliders", initial_value=False,
                                         hint="off: the task samples this command as in training")  # fmt: skip
                sliders = []
                for component, (low, high) in zip(components, ranges):
                    if high - low < 1e-6:  # a fixed component still gets a usable slider
                        low, high = low - 1.0, high + 1.0
                    sliders.append(gui.add_slider(component, min=float(low), max=float(high),
                                                  step=float(high - low) / 100, initial_value=float(np.clip(0.0, low, high))))  # fmt: skip

            def post(_=None, name=name, drive=drive, sliders=sliders) -> None:
                values = [float(s.value) for s in sliders]
                self.requests.put(Request("drive", values if drive.value else None, name))

            drive.on_update(post)
            for slider in sliders:
                slider.on_update(lambda _, post=post, drive=drive: post() if drive.value else None)

    def drain(self) -> list[Request]:
        out = []
        while True:
            try:
                out.append(self.requests.get_nowait())
            except queue.Empty:
                return out

    def show(self, status: str, names: list[str], values: np.ndarray) -> None:
        self.status.content = status
        self.bars.content = reward_bars(names, values)

    def set_checkpoints(self, names: list[str], current: str) -> None:
        if list(self.checkpoint.options) != names:
            self.checkpoint.options = names
        if self.checkpoint.value != current:
            self.checkpoint.value = current

    @property
    def following(self) -> bool:
        return bool(self._follow.value)
