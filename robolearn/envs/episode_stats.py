"""What training reports about episodes: means over the last K finished episodes, kept on the device.

Every step, the episodes that ended write one row each (return, length, each reward term's sum,
which termination fired) into a ring of K rows; `summary()` reads the ring once (the only host
read, once per iteration) and returns the means over the episodes it holds. Before any episode
has ended there is nothing to report, and the summary says so (no mean keys) instead of NaN.
"""

from __future__ import annotations

import torch


class EpisodeStats:
    def __init__(self, window: int, columns: list[str], device: torch.device):
        if window < 1:
            raise ValueError(f"the episode window must hold at least 1 episode, got {window}")
        self.window = window
        self.columns = list(columns)
        self.rows = torch.zeros(window + 1, len(columns), device=device)
        """The last `window` finished episodes' rows; row `window` takes the rows not kept."""
        self.written = torch.zeros((), dtype=torch.long, device=device)
        """Episodes finished since training began."""
        self.finished = torch.zeros((), dtype=torch.long, device=device)
        """Episodes finished since the last summary."""

    def record(self, done: torch.Tensor, values: torch.Tensor) -> None:
        """Add the rows values[i] [C] of the envs where done [N] is True (no host sync)."""
        count = done.long().cumsum(0)
        total = count[-1]
        # of the episodes ending on this step only the last `window` fit; the rest go to the spare row
        keep = done & (count > total - self.window)
        slot = torch.where(keep, (self.written + count - 1) % self.window, self.window)
        self.rows.index_copy_(0, slot, values)
        self.written += total
        self.finished += total

    def summary(self, extra: dict[str, torch.Tensor] | None = None) -> dict[str, float]:
        """{"episodes": finished since the last summary, and, once any episode has finished,
        "episode_window": how many the means cover and the mean of every column}; `extra` device
        scalars are read in the same host read and returned as floats."""
        extra = extra or {}
        head = torch.stack([self.finished, self.written, *extra.values()]).float()
        values = torch.cat([head, self.rows[: self.window].sum(0)]).tolist()
        self.finished.zero_()
        (finished, written, *extras), sums = values[: len(head)], values[len(head) :]
        out: dict[str, float] = {"episodes": float(finished), **dict(zip(extra, extras))}
        if written == 0:
            return out
        held = min(int(written), self.window)
        out["episode_window"] = float(held)
        for name, total in zip(self.columns, sums):
            out[name] = total / held
        return out

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"rows": self.rows.clone(), "written": self.written.clone(), "finished": self.finished.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.rows.copy_(state["rows"])
        self.written.copy_(state["written"])
        self.finished.copy_(state["finished"])
