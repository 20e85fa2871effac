"""scripts/determinism_probe.py on the CPU (its GPU runs look for where two envs part): two eager
warp envs never part (Warp's CPU device runs one thread), env.compile does in the last bit (fused
kernels round differently) but stays within 1e-3, and --compile-only names what it can compile."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "determinism_probe.py"


def probe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--num-envs", "8", "--steps", "6", *args],
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def report(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout[result.stdout.index("{"):])


def test_two_eager_envs_never_part():
    row = report(probe("--compare", "eager"))
    assert row["first_step"] is None and row["after_reset_engine"] == {}
    assert row["gaps"] == [0.0] * 6


@pytest.mark.parametrize("only", [None, "observations.compute"])  # one that runs every step (the start's reset runs eager)
def test_compiled_env_parts_in_the_last_bit_only(only):
    extra = ["--compile-only", only] if only else []
    exact = report(probe("--compare", "compiled", *extra))
    assert exact["first_step"] is not None and exact["compile_only"] == only
    assert exact["after_reset_engine"] or exact["engine"] or exact["observations"]  # what differs is named
    # the envs run on after the first difference: every step's outputs stay within 1e-3, the same episodes end
    assert len(exact["gaps"]) == 6 and max(exact["gaps"]) <= 1e-3, exact["gaps"]


def test_compile_only_names_the_valid_targets():
    result = probe("--compare", "compiled", "--compile-only", "no_such")
    assert result.returncode != 0
    line = result.stderr.strip().splitlines()[-1]
    assert "--compile-only no_such" in line and "_prepare_reset" in line and "observations.compute" in line


def test_lockstep_reports_each_steps_own_gap():
    """--lockstep: every step's largest gap (env.compile: last-bit, never past 1e-3), and with a
    zero tolerance the first step, its state entries and envs; --eager-numerics names the Inductor
    options it set (this torch has all four); --perturb makes two eager envs part in the last bits."""
    row = report(probe("--compare", "compiled", "--lockstep", "--tolerance", "1e-3", "--eager-numerics"))
    assert row["lockstep"] and row["first_step"] is None and len(row["gaps"]) == 6
    assert max(row["gaps"]) <= 1e-3 and max(row["gaps"]) > 0
    names = ["emulate_precision_casts", "division_rounding", "disable_ftz", "use_pytorch_libdevice"]
    assert row["eager_numerics"] == names
    exact = report(probe("--compare", "compiled", "--lockstep"))
    assert exact["first_step"] == 0 and exact["gaps"][0] > 0 and (exact["outputs"] or exact["state"])
    perturbed = report(probe("--compare", "eager", "--lockstep", "--perturb", "1e-6", "--tolerance", "1e-3"))
    assert perturbed["perturb"] == 1e-6 and perturbed["first_step"] is None and 0 < max(perturbed["gaps"]) < 1e-3
