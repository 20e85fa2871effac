"""The memory task end to end: on pendulum_partial (the angular velocity hidden from the policy) the
recipe's GRU swings the pendulum up and holds it, the same-sized MLP trained as long does not; the recurrent
bundle keeps its return when the deploy runtime runs it in sim2sim, through ONNX Runtime and through a
TensorRT engine (the stand-in of tests/fakes: the export and runtime plumbing, not TensorRT itself)."""

import json

from .conftest import metrics, robolearn

SOLVED = 700.0  # pendulum's solved mean return (of 1000; docs/benchmarks.md)
REACHED = 0.8 * SOLVED
"""What the GRU's 10-iteration mean return must reach within ITERATIONS: near solved, far above anything
the MLP reaches (best -55 and -46 over 250 iterations)."""
ITERATIONS = 250
SEED = 6
"""Whether a seed solves within 250 iterations still varies from seed to seed, and with the last bits of
the arithmetic, so from one VM (CPU, libraries) to another. With the recipe's one minibatch, on
2026-11-30's VM, 10 of seeds 0-10 held the solved window within 250 iterations (seed 4: best 657);
seed 6 first at iteration 135 with a best of 784 (docs/benchmarks.md, Memory). REACHED leaves margin
for the next VM's last bits."""


def windows(run_dir) -> list[float]:
    """The mean episode return over each 10 consecutive iterations (each already a 100-episode mean):
    windows[i] covers iterations i + 1 .. i + 10."""
    returns = [r["mean_episode_return"] for r in metrics(run_dir)]
    return [sum(returns[i : i + 10]) / 10 for i in range(len(returns) - 9)]


def test_a_gru_solves_the_partially_observed_pendulum_and_an_mlp_does_not(tmp_path, fake_tensorrt):
    common = ["train", "task=pendulum_partial", f"seed={SEED}", "runner.progress=false", "runner.video_interval=0"]
    gru = robolearn(*common, f"runner.max_iterations={ITERATIONS}", f"hydra.run.dir={tmp_path / 'gru'}", cwd=tmp_path)
    assert gru.returncode == 0, gru.stderr[-2000:]
    gru_windows = windows(tmp_path / "gru")
    assert max(gru_windows) >= REACHED, max(gru_windows)
    # the same-sized MLP, trained as long as the GRU took to come near solving the task (the MLP's
    # iterations cost half the GRU's; over all 250 it never came near either: docs/benchmarks.md, best -55 and -46)
    solved_at = next(i for i, w in enumerate(gru_windows) if w >= REACHED) + 10
    mlp = robolearn(*common, f"runner.max_iterations={solved_at}", "algo.policy=mlp", "algo.actor_hidden_dims=[64,64]",
                    "runner.export_onnx=false", f"hydra.run.dir={tmp_path / 'mlp'}", cwd=tmp_path)  # fmt: skip
    assert mlp.returncode == 0, mlp.stderr[-2000:]
    assert max(windows(tmp_path / "mlp")) < 0.5 * SOLVED, (solved_at, max(windows(tmp_path / "mlp")))

    report = tmp_path / "sim2sim.json"
    result = robolearn("sim2sim", f"bundle={tmp_path / 'gru' / 'export'}", "episodes=16", f"report={report}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(report.read_text())
    # the deterministic evaluation (256 episodes from random angles, randomization on) comes close to
    # the solved training return, far from anything the MLP reached
    assert summary["ended_by_watchdog"] == 0 and summary["training_evaluation"]["return_mean"] >= 0.85 * SOLVED, summary
    assert summary["return_comparison"]["ratio"] >= 0.9, summary

    # the same run exported with a TensorRT engine: sim2sim's runtime picks the engine and keeps the return
    trt = tmp_path / "trt"
    result = robolearn("export", f"run={tmp_path / 'gru'}", "format=tensorrt", f"out={trt}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (trt / "policy.fp32.engine").is_file()
    trt_report = tmp_path / "sim2sim_trt.json"
    result = robolearn("sim2sim", f"bundle={trt}", "episodes=16", f"report={trt_report}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    on_trt = json.loads(trt_report.read_text())
    assert on_trt["engine"] == "tensorrt fp32" and on_trt["ended_by_watchdog"] == 0, on_trt
    assert on_trt["return_comparison"]["ratio"] >= 0.9, on_trt
