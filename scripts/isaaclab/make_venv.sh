#!/usr/bin/env bash
# An environment where robolearn runs Isaac Lab tasks (task=isaaclab:<id>) and their tests:
#   bash scripts/isaaclab/make_venv.sh [VENV]        (default .venv-isaaclab; 1 min with a warm pip cache, 2.3 GB)
#   VENV/bin/python -m pytest tests/isaaclab
# Isaac Lab 3.0.0 declares Python 3.12 and pins torch 2.11; on Python 3.11 with another torch it is
# installed with --ignore-requires-python --no-deps: that runs (tested here) but is unsupported
# upstream. Its 2.x releases need Isaac Sim and cannot be used. See requirements.txt for why robolearn
# itself goes in with --no-deps.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${1:-.venv-isaaclab}
TORCH=${TORCH:-torch==2.13.0}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PIP="$VENV/bin/pip"
"$PIP" install -q "$TORCH"
WHEELS=$(mktemp -d)
# pip download for Python 3.12 (what the wheels declare), installed here without their pins
"$PIP" download -q --no-deps --python-version 3.12 --only-binary=:all: isaaclab==3.0.0 rsl-rl-lib==5.5.1 -d "$WHEELS"
"$PIP" download -q --no-deps tensordict==0.15.3 -d "$WHEELS"  # pins torch>=2.11 exactly as Isaac Lab does
"$PIP" install -q --no-deps --ignore-requires-python "$WHEELS"/*.whl
"$PIP" install -q -r scripts/isaaclab/requirements.txt
"$PIP" install -q --no-deps --no-build-isolation -e .
rm -rf "$WHEELS" robolearn.egg-info
"$VENV/bin/python" -c "import isaaclab, isaaclab_tasks, newton, robolearn; print('Isaac Lab', __import__('importlib.metadata').metadata.version('isaaclab'), 'ready in $VENV')"
