"""`python -m robolearn <verb> ...` (what torchrun runs: torchrun --nproc_per_node=2 -m robolearn train ...)."""

import sys

from robolearn.cli import main

sys.exit(main())
