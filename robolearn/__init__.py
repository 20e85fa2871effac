"""robolearn: GPU-parallel MuJoCo environments, PPO, and deployable policy bundles."""

import os as _os
import sys as _sys

# Offscreen rendering (play's videos, training clips) without a display. MuJoCo reads MUJOCO_GL
# once, when it is first imported, which is long before anything renders; EGL is Linux-only.
if _sys.platform.startswith("linux"):
    _os.environ.setdefault("MUJOCO_GL", "egl")

__version__ = "0.1.0"
