"""How `robolearn tune` stops on Ctrl-C or SIGTERM (tune.py): the trials are told to end their
iteration with a checkpoint (tune_trial.STOP_FILE) and Tune stops the search once none runs; the
line the search ends with."""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path

from robolearn.interrupts import Interrupted


class Stopped(Interrupted):
    """The search stopped on a signal: one line saying where its results are, exit 128 + the signal."""

    def __init__(self, signum: int, text: str):
        super().__init__(signum, Path(), 0, None)
        self.text = text

    def line(self) -> str:
        return self.text


STOP_GRACE_S = 300.0
"""How long a stopping search waits for its running trials to end their iteration and save."""


class SearchStop:
    """Ends the search once `stop` (interrupts.stop_on_signals) saw a signal: first `stop_file` tells
    the trials to stop at their next iteration boundary with a checkpoint (tune_trial.py), then Tune
    stops the search once no trial runs (or after STOP_GRACE_S). Stopping it at once would kill each
    trial where it is, with nothing saved since its last save_interval."""

    def __init__(self, stop, stop_file: Path, variants):
        """variants: the search's BasicVariantGenerator, which creates no trial once the search stops."""
        self.stop, self.stop_file, self.variants = stop, stop_file, variants
        self.running = 0
        self.asked_at: float | None = None

    def stop_all(self) -> bool:
        if not self.stop():
            return False
        if self.asked_at is None:
            self.asked_at = time.monotonic()
            self.variants.set_finished()
            self.stop_file.write_text("the search is stopping: each trial ends at its next iteration boundary\n")
            print(f"stopping: each running trial ends its iteration and saves a checkpoint (up to {STOP_GRACE_S:.0f} s; "
                  "a second Ctrl+C stops at once)", flush=True)  # fmt: skip
        return self.running == 0 or time.monotonic() - self.asked_at > STOP_GRACE_S

    def stopper(self):
        from ray.tune import Stopper

        search = self

        class SignalStopper(Stopper):
            def __call__(self, trial_id, result) -> bool:
                return False

            def stop_all(self) -> bool:
                return search.stop_all()

        return SignalStopper()

    def callback(self):
        """A Tune callback that counts the trials running or about to (each pending one starts, sees
        the stop file and reports that it never trained) at every step of Tune's loop."""
        from ray.tune import Callback

        search = self

        class CountRunning(Callback):
            def on_step_begin(self, iteration, trials, **info):
                search.running = sum(t.status in ("RUNNING", "PENDING") for t in trials)

        return CountRunning()


@contextlib.contextmanager
def unstarted_unwarned(search: SearchStop | None):
    """Without Ray's warning that it found no results for the trials a stopping search never started
    (its summary lists them as not started)."""
    import logging

    def keep(record: logging.LogRecord) -> bool:
        return search is None or search.asked_at is None or not record.getMessage().startswith("Failed to fetch metrics")

    logger = logging.getLogger("ray.tune.analysis.experiment_analysis")
    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def stopped_line(signum: int, folder: Path, rows: list[dict], written) -> str:
    """What a search stopped by a signal leaves: the trials that finished, and where every run is."""
    name = signal.Signals(signum).name
    if written is None:
        return f"stopped by {name} before any trial reported; the search's folder: {folder}"
    finished = sum(r["status"] == "finished" for r in rows)
    unstarted = sum(r["status"] == "not started" for r in rows)
    part_way = len(rows) - finished - unstarted
    others = (f", {part_way} stopped part-way" if part_way else "") + (f", {unstarted} not started" if unstarted else "")
    resume = "; robolearn train resume=<run_dir> continues a stopped one" if part_way else ""
    return (f"stopped by {name}: {finished} of {len(rows)} trials finished{others}; every trial's run so far is in "
            f"{folder}, ranked in {written[0]}{resume}")  # fmt: skip
