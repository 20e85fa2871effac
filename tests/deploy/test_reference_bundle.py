"""The reference bundle committed under docs/ still verifies and runs in the current runtime: a
format change that would strand bundles on robots fails here first."""

from pathlib import Path

import numpy as np
import pytest

from robolearn_deploy import Policy

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("reference", ["quadruped_flat_cpu", "quadruped_flat_h200"])
def test_committed_quadruped_bundle_verifies_and_acts(reference):
    """The CPU-trained bundle (2026-11-22) is the oldest format kept; the H200-trained one (2026-11-27)
    is the reference users are pointed to."""
    bundle = REPO / "docs" / "reference" / reference / "bundle"
    policy = Policy(bundle, engine="onnxruntime")  # checks every file's sha256 and the layout
    assert policy.bundle.meta["task"] == "quadruped_flat" and policy.bundle.obs_size == 45
    action = policy.act(np.zeros(45, dtype=np.float32))
    assert action.shape == (12,) and np.isfinite(action).all()
    trained = policy.bundle.meta["evaluation"]
    assert trained["terminated_fraction"] < 0.05 and trained["lin_vel_error"] < 0.2
