"""ONNX Runtime's execution providers on one policy: latency per call, batch 1 and large batches.

    python scripts/bench_ort_providers.py [--providers CPUExecutionProvider CUDAExecutionProvider]
                                          [--hidden 128 128 128] [--batches 1 4096] [--out rows.jsonl]

The policy is the quadruped's shape (45 observations, 12 actions, the recipe's [128, 128, 128]
actor, random weights: latency does not depend on them), exported by robolearn's own exporter in
fp32 and fp16 (fp16 network behind an fp32 interface). Each call is `session.run` with numpy in
and out, as robot code calls it, so a GPU provider's time includes the copies to and from the
device. A provider ONNX Runtime cannot start here (e.g. CUDA without the onnxruntime-gpu wheel or
its CUDA libraries) is reported as unavailable with the reason, never timed on the CPU instead.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

from robolearn.export.onnx import export_onnx
from robolearn.rl.models import ActorCritic, InferencePolicy
from robolearn_deploy.timing import latency_ms

OBS, ACTIONS = 45, 12


def open_session(path: Path, provider: str) -> tuple[ort.InferenceSession | None, str | None]:
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    if provider not in ort.get_available_providers():
        return None, f"not in this onnxruntime build ({', '.join(ort.get_available_providers())})"
    try:
        session = ort.InferenceSession(str(path), options, providers=[provider])
    except Exception as exc:  # onnxruntime raises its own error types: reported, not timed
        return None, " ".join(str(exc).split())[:300]
    if session.get_providers()[0] != provider:  # ONNX Runtime falls back to the CPU silently
        return None, f"the session fell back to {session.get_providers()[0]}"
    return session, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--providers", nargs="+", default=["CPUExecutionProvider", "CUDAExecutionProvider"])
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 128, 128])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4096])
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if hasattr(ort, "preload_dlls"):  # onnxruntime-gpu: CUDA/cuDNN from the nvidia-* wheels torch brought
        try:
            ort.preload_dlls()
        except Exception:  # a CPU-only machine: open_session says why CUDA is out
            pass
    torch.manual_seed(0)
    rows = [{"machine": platform.processor() or platform.machine(), "onnxruntime": ort.__version__,
             "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
             "date": time.strftime("%Y-%m-%d"), "hidden": args.hidden}]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        policy = InferencePolicy(ActorCritic(OBS, OBS, ACTIONS, args.hidden, [32]))
        for precision in ("fp32", "fp16"):
            path = export_onnx(policy, OBS, Path(tmp) / f"policy_{precision}.onnx", precision)
            for provider in args.providers:
                session, why = open_session(path, provider)
                if session is None:
                    rows.append({"precision": precision, "provider": provider, "unavailable": why})
                    continue
                for batch in args.batches:
                    x = np.random.default_rng(0).standard_normal((batch, OBS)).astype(np.float32)
                    repeats = args.repeats if batch == 1 else max(50, args.repeats // 10)
                    r = latency_ms(lambda: session.run(["actions"], {"obs": x}), repeats=repeats, warmup=100)
                    rows.append({"precision": precision, "provider": provider, "batch": batch,
                                 "median_us": 1e3 * r["median"], "p99_us": 1e3 * r["p99"]})  # fmt: skip
    for row in rows:
        print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "a") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)


if __name__ == "__main__":
    main()
