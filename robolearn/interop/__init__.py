"""Policies trained elsewhere, brought into robolearn's bundle: rsl_rl runs of Isaac Lab and mjlab."""
