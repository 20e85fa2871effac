"""Cut a run's checkpoints down to what scoring needs (the model weights and the run's counters),
keeping each file's time: the GPU machine sends back ~0.2 MB a checkpoint instead of ~20 MB (the
env's and optimizer's state), and scripts/bench_quadruped.py --score reads the file times.

    python scripts/slim_checkpoints.py RUN_DIR/checkpoints [OUT_DIR]   (default: in place)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from robolearn import checkpoint

KEEP = ("format", "iteration", "env_steps", "wall_time_s", "model")


def main() -> None:
    source = Path(sys.argv[1])
    target = Path(sys.argv[2]) if len(sys.argv) > 2 else source
    target.mkdir(parents=True, exist_ok=True)
    for path in checkpoint.list_checkpoints(source):
        payload, stat = checkpoint.load(path), path.stat()
        checkpoint.save_atomic({k: payload[k] for k in KEEP if k in payload}, target / path.name)
        os.utime(target / path.name, (stat.st_atime, stat.st_mtime))


if __name__ == "__main__":
    main()
