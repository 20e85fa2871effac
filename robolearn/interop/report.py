"""What `robolearn import` prints: where the bundle went, how the joint order was settled, a recurrent
actor's core, parity."""

from __future__ import annotations

from robolearn.interop.importer import ImportResult


def print_import(result: ImportResult) -> None:
    print(f"imported {result.framework} run, checkpoint {result.checkpoint.name}; joint order from {result.joint_order_from}")
    if result.memory:
        print(f"  recurrent actor ({result.memory}): the bundle takes and returns its state (robot.yaml policy_state)")
    for report in result.artifacts:
        print(f"  {report.line()}")
    if result.run_onnx_max_abs_diff is not None:
        print(f"  the run's own ONNX export vs the checkpoint's actor: max abs diff {result.run_onnx_max_abs_diff:.2e}")
    print(f"  sim2sim: {result.sim2sim}")
    print(f"bundle: {result.path}")
