"""`robolearn tune`: hyperparameter search on Ray Tune, with population-based training (PBT) or
early stopping (ASHA), over ordinary robolearn runs.

    robolearn tune tune.scheduler=pbt tune.num_samples=8 task=quadruped_flat \\
        'algo.learning_rate=tag(log,interval(1e-4,1e-2))' algo.entropy_coef=0.0,0.005,0.01

Arguments starting with `tune.` set the search (tune_options.py); every other argument is a training
override, and a Hydra sweep expression makes that key part of the search space: a,b,c is a grid
(every value, times tune.num_samples), choice() / range() / interval() / tag(log,interval()) are
sampled for each trial; PBT perturbs them all (reading and checking the space: tune_space.py).
Each trial is a robolearn run in <tune.dir>/<trial name>/ (config.yaml, metrics, checkpoints,
bundle: tune_trial.py); Ray's own records go to <tune.dir>/ray/. The search ends with the same
summary.md / summary.csv as a Hydra sweep (sweeps.py). With tune.address (or RAY_ADDRESS) the
trials run on that Ray cluster, unchanged; tune.dir must then be on storage every node sees.
Ctrl-C (or SIGTERM) stops every running trial at the end of its iteration with a checkpoint (as
`robolearn train` stops; `resume=` continues it), starts no other, writes the summary of the trials
so far and exits 130 (143); a second one stops at once.
"""

from __future__ import annotations

import datetime
import math
import os
import signal
import socket
import threading
from contextlib import nullcontext
from pathlib import Path

from robolearn.errors import UserError, one_line
from robolearn.interrupts import stop_on_signals
from robolearn.run_dir import check_writable
from robolearn.tune_options import split_args
from robolearn.tune_options import settings as check_settings
from robolearn.tune_space import categories, check_space, grid, search_space
from robolearn.tune_stop import SearchStop, Stopped, stopped_line, unstarted_unwarned
from robolearn.tune_summary import summary_row, trial_error, unstarted_grid


def tune_verb(args: list[str]) -> int:
    options, overrides = split_args(args)
    try:
        import ray
        from ray import tune
    except ImportError:
        raise UserError("robolearn tune needs Ray Tune, an optional extra: pip install 'robolearn[tune]'") from None
    address = options["address"] or os.environ.get("RAY_ADDRESS") or None
    settings = check_settings(options, address)
    fixed, space = search_space(overrides)
    cfg = check_space(fixed, space)
    scheduler, mode, rungs = _scheduler(settings, cfg, space, fixed)
    _reachable(address)
    folder = _folder(options["dir"])  # the last check: nothing is written before the others pass

    from robolearn import sweeps
    from robolearn.tune_trial import STOP_FILE, run_trial

    # Ctrl-C / SIGTERM end the search through the stopper below (every trial stops, the summary is
    # written), not through Ray's own SIGINT handler (it says to resume with Tuner.restore and exits 0)
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
    client = bool(address and address.startswith("ray://"))  # the search itself runs on the cluster: no stopper
    cpus, gpus = settings["cpus_per_trial"], settings["gpus_per_trial"]
    stop = None
    try:
        try:
            ray.init(address=address, num_cpus=None if address else settings["num_cpus"],
                     include_dashboard=False, configure_logging=False)  # fmt: skip
        except Exception as exc:  # no cluster there, refused, another Ray version
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            raise UserError(f"cannot start {where}: {type(exc).__name__}: {one_line(exc)[:200]}") from None
        with nullcontext(None) if client else stop_on_signals() as stop:
            try:
                from ray.tune.search.basic_variant import BasicVariantGenerator

                variants = BasicVariantGenerator(max_concurrent=settings["max_concurrent"] or 0)
                stopper = None if stop is None else SearchStop(stop, folder / STOP_FILE, variants)
                trainable = tune.with_parameters(run_trial, base=fixed, folder=str(folder), cpus=cpus,
                                                 rungs=rungs)  # fmt: skip
                trainable = tune.with_resources(trainable, {"cpu": cpus, "gpu": gpus})
                tuner = tune.Tuner(
                    trainable, param_space=space,
                    tune_config=tune.TuneConfig(metric="objective", mode=mode, scheduler=scheduler,
                                                num_samples=settings["num_samples"], search_alg=variants),
                    # every reported checkpoint is kept: PBT may exploit one reported perturbations ago
                    run_config=tune.RunConfig(name="ray", storage_path=str(folder), verbose=1,
                                              stop=stopper and stopper.stopper(), callbacks=stopper and [stopper.callback()],
                                              failure_config=tune.FailureConfig(max_failures=0)),
                )  # fmt: skip
                where = "the Ray cluster" if address else "a local Ray instance"
                print(f"tuning {cfg.task.name} with {settings['scheduler']} into {folder} on {where} at "
                      f"{ray.get_runtime_context().gcs_address}", flush=True)  # fmt: skip
                with unstarted_unwarned(stopper):
                    results = _fit(tuner, stop, folder)
            finally:
                _shut_down(ray)  # still under the handlers: a second signal does not cut it short
    except KeyboardInterrupt:  # a second signal, or one while Ray started: stopped at once
        signum = (stop.signum if stop is not None else None) or signal.SIGINT
        raise Stopped(signum, f"stopped by {signal.Signals(signum).name} at once; the trials' runs so far "
                               f"are in {folder}") from None  # fmt: skip
    finally:
        ray.shutdown()  # after a failed or interrupted start (nothing left to do otherwise)
        (folder / STOP_FILE).unlink(missing_ok=True)
    signum = stop.signum if stop is not None else None
    if results is None:  # the signal broke the search itself: its runs are still there
        raise Stopped(signum, f"stopped by {signal.Signals(signum).name}; the trials' runs so far are in {folder}")
    rows = [summary_row(r, cfg) for r in results]
    if signum is not None and settings["scheduler"] != "pbt":  # PBT's trials change their values as they go
        rows += unstarted_grid(space, settings["num_samples"], rows, cfg)
    written = sweeps.write_summary(folder, rows)
    if signum is not None:
        raise Stopped(signum, stopped_line(signum, folder, rows, written))
    if written is not None:
        print(sweeps.summary_line(*written), flush=True)
    failed = [r for r in results if r.error is not None]
    if failed:
        raise UserError(f"{len(failed)} of {len(rows)} trials failed; the first: {trial_error(failed[0].error)}")
    return 0


def _fit(tuner, stop, folder: Path):
    """tuner.fit()'s results; None where a signal (`stop`: interrupts.stop_on_signals, None for a Ray
    client) broke the search on its way to stop it."""
    if stop is not None and stop():  # a signal while the search was being set up
        raise Stopped(stop.signum, f"stopped by {signal.Signals(stop.signum).name} before any trial started; "
                                    f"the search's folder: {folder}")  # fmt: skip
    try:
        return tuner.fit()
    except Exception:  # what a signal broke on its way (a trial's files half written, ...)
        if stop is None or not stop():
            raise
        return None


def _shut_down(ray) -> None:
    """ray.shutdown(), which ends the local instance's processes (raylet, agents, workers), with
    SIGINT and SIGTERM ignored meanwhile: a signal cutting it short would leave them running."""
    if threading.current_thread() is not threading.main_thread():
        ray.shutdown()
        return
    saved = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        ray.shutdown()
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def asha_rungs(grace: float, rf: float, max_t: float) -> tuple[int, ...]:
    """The iterations where ASHA may stop a trial (a trial saves there too): grace * rf**k up to
    max_t, as Ray's AsyncHyperBand (one bracket) places them (tests/test_tune_rungs.py compares with
    Ray's own)."""
    count = int(math.log(max_t / grace) / math.log(rf) + 1)
    return tuple(sorted({math.ceil(grace * rf**k) for k in range(count)}))


def _scheduler(settings: dict, cfg, space: dict, fixed: list[str]):
    """(Tune scheduler, mode, ASHA's rungs) of the checked tune.* values (_settings); PBT checkpoints at every
    perturbation: runner.save_interval is set to the perturbation interval (appended to `fixed`)
    unless given."""
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, PopulationBasedTraining

    name, iterations = settings["scheduler"], int(cfg.runner.max_iterations)
    mode = "max" if cfg.objective.direction == "maximize" else "min"
    if name == "fifo":
        return FIFOScheduler(), mode, ()
    if name == "asha":
        grace = settings["grace_period"] or max(1, iterations // 10)
        # max_t one past the run's end: a trial that reaches its last iteration ends itself, after its
        # evaluation and export (ASHA stopping it at max_t would kill it before them)
        grace, rf = min(grace, iterations), settings["reduction_factor"]
        return ASHAScheduler(time_attr="iteration", max_t=iterations + 1, grace_period=grace, reduction_factor=rf), \
            mode, asha_rungs(grace, rf, iterations + 1)  # fmt: skip
    interval = settings["perturbation_interval"] or max(1, iterations // 5)
    if "algo.learning_rate" in space and cfg.algo.schedule != "fixed":
        raise UserError(f"PBT searching algo.learning_rate needs algo.schedule=fixed (algo.schedule="
                        f"{cfg.algo.schedule} sets the rate itself, and a copied checkpoint carries it)")  # fmt: skip
    if not any(o.startswith("runner.save_interval=") for o in fixed):
        fixed.append(f"runner.save_interval={interval}")
    elif interval % cfg.runner.save_interval:
        raise UserError(f"tune.perturbation_interval={interval} is not a multiple of runner.save_interval="
                        f"{cfg.runner.save_interval}: PBT copies the checkpoint written at each perturbation; "
                        f"set runner.save_interval={interval} or a divisor of it")  # fmt: skip
    class FinalResultsStay(PopulationBasedTraining):
        """PBT that leaves a trial's last iteration alone: exploiting there would replace the trial's
        finished policy with another's before its export, and pair its objective with a perturbed
        config that never trained (a max_iterations that is a multiple of the interval)."""

        def on_trial_result(self, tune_controller, trial, result: dict) -> str:
            if result.get("iteration", 0) >= iterations:
                return self.CONTINUE
            return super().on_trial_result(tune_controller, trial, result)

    scheduler = FinalResultsStay(
        time_attr="iteration", perturbation_interval=interval,
        hyperparam_mutations={key: grid(domain) or categories(domain) or domain for key, domain in space.items()},
        quantile_fraction=settings["quantile_fraction"], resample_probability=settings["resample_probability"],
        require_attrs=True, synch=settings["synch"],
    )  # fmt: skip
    return scheduler, mode, ()


def _reachable(address: str | None) -> None:
    """A host:port cluster address that nothing answers at is one line now (Ray would retry for minutes)."""
    if not address or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not port.isdigit():
        raise UserError(f"tune.address={address} is not valid; valid: auto, <host>:<port> or ray://<host>:<port>")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as exc:
        raise UserError(f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}); start it with ray start "
                        f"--head, or give its address with tune.address= or RAY_ADDRESS") from None  # fmt: skip


def _folder(given: str) -> Path:
    folder = Path(given).expanduser() if given else Path("runs/tune") / datetime.datetime.now().strftime(
        "%Y-%m-%d_%H-%M-%S_%f")  # fmt: skip
    if folder.exists() and not folder.is_dir():
        raise UserError(f"tune.dir={folder} is a file; choose a new folder for the search")
    if folder.exists() and any(folder.iterdir()):
        raise UserError(f"tune.dir={folder} is not empty; choose a new folder (a search never writes over runs)")
    check_writable(folder, "tune.dir")
    folder.mkdir(parents=True, exist_ok=True)
    return folder.resolve()
