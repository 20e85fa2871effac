"""Isaac Lab manager-based tasks as robolearn environments: `robolearn train task=isaaclab:<task id>`.

    isaaclab:<gym id>            a task Isaac Lab registers (isaaclab_tasks), or robolearn's own
                                 Isaac Lab examples (examples/: RoboLearn-Velocity-Flat-Quadruped)
    isaaclab:<module>:<gym id>   imports <module> first (a package that registers its tasks)

Isaac Lab steps the simulation and computes observations, rewards, terminations and resets with
its own managers (env.py wraps them in robolearn's batched interface); robolearn's learner,
logging, checkpoints, `play` and export run on top. The bundle's layout comes from Isaac Lab's
observation and action managers (bundle.py). Nothing here imports Isaac Lab until a task is opened.
"""

PREFIX = "isaaclab:"


def isaaclab_task(name: str) -> str | None:
    """The Isaac Lab task id in a robolearn task name `isaaclab:<id>`, else None."""
    return name[len(PREFIX) :] if name.startswith(PREFIX) else None
