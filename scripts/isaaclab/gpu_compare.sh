#!/usr/bin/env bash
# Issue 17 part 3 on the GPU machine: robolearn's learner on Isaac Lab 3.0's Newton physics
# (task=isaaclab:RoboLearn-Velocity-Flat-Quadruped: our quadruped, converted to USD, shipped with
# robolearn) at 4,096 envs, to compare with the same robot on robolearn's own warp backend
# (scripts/gpu_acceptance.sh walk: same learner, same recipe family, same GPU).
#
#   after staging scripts/isaaclab/make_gpu_bundle.sh's parts (one device call each, back to back):
#   bash scripts/isaaclab/gpu_compare.sh [SECONDS]     (default 420; one call: the first is the cold
#                                                      Warp kernel cache, a second call the warm one)
#   IL_OVERRIDES='"env.sim.physics.num_substeps=1"' bash scripts/isaaclab/gpu_compare.sh ...
#       Isaac Lab's own overrides (quoted, comma-separated), e.g. one solver step per 5 ms physics step
#       as robolearn takes (Isaac Lab's stock Newton config takes 2 of 2.5 ms)
#
# Writes under $OUT, per call (N = 1, 2, ...): il_versions.txt; il_run<N>_metrics.jsonl (every
# iteration: env-steps/s, robolearn's episode means and Isaac Lab's own episode logs under
# isaaclab/..., e.g. Metrics/base_velocity/error_vel_xy and Episode_Termination/base_contact);
# il_run<N>_rows_at.txt (seconds from launch at which each metrics row had appeared: the wall time
# from launch, imports and kernel compilation included); il_run<N>_checkpoints.tgz (every 20
# iterations: score them later on the CPU, no device time, with robolearn's evaluation).
set -uo pipefail
# (IL_TASK=cartpole IL_ENVS=64 IL_ROOT=/tmp/il IL_SITE=.venv/lib/python3.11/site-packages PATH=.venv/bin:$PATH:
#  a CPU dry run of this script)
site=${IL_SITE:-/root/site-il}
[ -d "$site" ] || { echo "stage scripts/isaaclab/make_gpu_bundle.sh's parts first ($site is missing)"; exit 2; }
# mujoco imports on EGL there only with the .gl packages: glfw (nothing is drawn in these runs)
export PYTHONPATH=$site:$PWD PYTHONUNBUFFERED=1 WARP_CACHE_PATH=/root/warp-cache-il MUJOCO_GL=${MUJOCO_GL:-glfw}
OUT=${OUT:-/tmp/out}
root=${IL_ROOT:-/root/il}
mkdir -p "$OUT" "$root"
n=$(( $(ls -d $root/run* 2>/dev/null | wc -l) + 1 ))
run=$root/run$n
# robolearn's entry points (its tasks, the isaaclab: prefix) come from an install; no network, no dependencies
python3 -c "import robolearn.registry as r; assert r.discover_tasks()" 2>/dev/null ||
  python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1
python3 - > "$OUT/il_versions.txt" 2>&1 <<'PY'
import importlib.metadata as m
import torch
for p in ("isaaclab", "newton", "warp-lang", "mujoco", "mujoco-warp", "rsl-rl-lib", "robolearn"):
    try:
        print(p, m.version(p))
    except m.PackageNotFoundError:
        print(p, "missing")
print("torch", torch.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")
PY
launch_ms=$(( $(date +%s%N) / 1000000 ))
python3 -m robolearn.cli train task=${IL_TASK:-isaaclab:RoboLearn-Velocity-Flat-Quadruped} env.num_envs=${IL_ENVS:-4096} \
  runner.max_iterations=100000 runner.save_interval=20 runner.keep_checkpoints=1000 runner.progress=false \
  runner.export_onnx=false runner.video_interval=0 "isaaclab.overrides=[${IL_OVERRIDES:-}]" hydra.run.dir=$run \
  > "$OUT/il_run${n}_train.log" 2>&1 &
train=$!
: > "$OUT/il_run${n}_rows_at.txt"
rows=0
limit_ms=$(( ${1:-420} * 1000 ))
while kill -0 $train 2>/dev/null; do
  elapsed_ms=$(( $(date +%s%N) / 1000000 - launch_ms ))
  if [ $elapsed_ms -gt $limit_ms ]; then kill -TERM $train; wait $train; break; fi  # stops with a checkpoint
  seen=$( [ -f $run/metrics.jsonl ] && wc -l < $run/metrics.jsonl || echo 0)
  if [ "$seen" -gt "$rows" ]; then
    echo "$seen $(( elapsed_ms / 1000 )).$(printf %03d $(( elapsed_ms % 1000 )))" >> "$OUT/il_run${n}_rows_at.txt"
    rows=$seen
  fi
  sleep 0.5
done
grep -v "^Warp\|^Module" "$OUT/il_run${n}_train.log" | tail -6
cp $run/metrics.jsonl "$OUT/il_run${n}_metrics.jsonl" 2>/dev/null
# the weights only (~20 MB a checkpoint with the optimizer: too much to send back)
python3 scripts/slim_checkpoints.py $run/checkpoints $root/slim$n/run$n/checkpoints
cp $run/config.yaml $run/manifest.json $root/slim$n/run$n/ 2>/dev/null
tar -C $root/slim$n -czf "$OUT/il_run${n}_checkpoints.tgz" run$n 2>/dev/null
echo "run $n: $rows metrics rows; last row at $(tail -1 "$OUT/il_run${n}_rows_at.txt" | cut -d' ' -f2) s from launch"
