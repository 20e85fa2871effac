#!/usr/bin/env bash
# ONNX Runtime's CUDA build for the GPU machine (its onnxruntime is the CPU build), for the CUDA
# provider's numbers (scripts/bench_ort_providers.py, `gpu_acceptance.sh ort`):
#
#   bash scripts/make_ort_gpu_bundle.sh [DEST]      (default .gpu-ort; add /DEST/ to .git/info/exclude)
#   then on the GPU machine, one device call per part, back to back:  bash DEST/partN/stage.sh
#
# One wheel, ~256 MB: 6 parts of 45 MB. onnxruntime-gpu 1.31.1 is built for CUDA 13, as that
# machine's torch 2.11 is; bench_ort_providers.py preloads CUDA and cuDNN from the nvidia wheels
# torch brought. It installs into /root/site-ort; gpu_acceptance.sh sources /root/ort-env.sh when
# it is there, which puts it before the machine's CPU build. Its dependencies (numpy, protobuf,
# flatbuffers, packaging) are on the machine already.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.gpu-ort}
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 -d "$wheels" onnxruntime-gpu==1.31.1 2> >(grep -v "is ignored" >&2)
bash scripts/split_wheel_bundle.sh "$wheels" "$dest" ort
