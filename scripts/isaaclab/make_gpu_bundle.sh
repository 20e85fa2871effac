#!/usr/bin/env bash
# The minimal Isaac Lab set for the GPU machine (issue 17 part 3: Isaac Lab on Newton vs robolearn's
# warp backend on one H100), as offline wheel parts of at most 45 MB (a device call carries 64 MiB,
# the working tree included):
#
#   bash scripts/isaaclab/make_gpu_bundle.sh [DEST]          (default .gpu-isaaclab; add /DEST/ to .git/info/exclude)
#   then on the GPU machine, one device call per part, back to back:  bash DEST/partN/stage.sh
#   and then:  bash scripts/isaaclab/gpu_compare.sh (it sets PYTHONPATH itself; /root/il-env.sh
#   is for commands of your own; parts cut by scripts/split_wheel_bundle.sh)
#
# That machine has Python 3.12 and torch 2.11 (CUDA 13): Isaac Lab 3.0.0's own pins, so there it runs
# as supported upstream. What it lacks is listed below: the set HOW.md found by running Isaac Lab
# kit-less until no import failed (no open3d, isaacsim, transformers, torchvision, scipy, usd-exchange),
# Isaac Lab's physics pins (warp-lang 1.17, newton 1.6.1, mujoco/mujoco-warp 3.12) and robolearn's
# own pure-Python needs. It installs into /root/site-il, apart from robolearn's own bundle
# (../shared/gpu/make-bundle.sh, /root/site: MuJoCo 4, warp-lang 1.19), which the same machine may
# hold for the warp side of the comparison; never put both on one PYTHONPATH. Left out because the
# machine has them (torch's and JAX's dependencies): numpy, sympy, mpmath, fsspec, typing_extensions,
# setuptools, MarkupSafe, ml_dtypes, onnx, onnxruntime, protobuf, flatbuffers.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=${1:-.gpu-isaaclab}
wheels=$(mktemp -d)
pins=(isaaclab==3.0.0 rsl-rl-lib==5.5.1 tensordict==0.15.3 pyvers==0.2.3 cloudpickle==3.1.3
      warp-lang==1.17.0 newton==1.6.1 newton-usd-schemas==0.6.0 mujoco==3.12.0 mujoco-warp==3.12.0
      usd-core==26.8 gymnasium==1.4.0 farama-notifications==0.0.6 hydra-core==1.3.8 omegaconf==2.3.1
      prettytable==3.18.0 wcwidth==0.9.4 psutil==7.2.2 lazy-loader==0.6 tensorboard==2.21.0
      tensorboard-data-server==0.7.2 absl-py==2.5.1 grpcio==1.85.3 markdown==3.11.3 werkzeug==3.1.9
      gitpython==3.2.1 gitdb==4.0.12 smmap==5.0.3 rich==15.0.0 markdown-it-py==4.3.0 mdurl==0.1.2
      pygments==2.21.0 trimesh==5.2.0 onnxscript==0.7.2 onnx-ir==1.1.0 pyyaml==6.0.4
      imageio-ffmpeg==0.8.1 pillow==13.0.0 glfw==2.11.0 pyopengl==3.1.10 etils==1.15.0 zipp==4.1.2
      packaging==26.3)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux_2_12_x86_64 --platform any \
  -d "$wheels" "${pins[@]}" 2> >(grep -v "is ignored" >&2)
# Hydra's parser runtime is published only as an sdist: a pure-Python wheel built here
python3 -m pip wheel -q --no-deps -w "$wheels" antlr4-python3-runtime==4.9.3 2> >(grep -v "is ignored" >&2)
bash scripts/split_wheel_bundle.sh "$wheels" "$dest" il
rm -rf "$wheels"
