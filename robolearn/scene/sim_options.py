"""Physics options a task YAML may set (`sim:`): written into the model spec before it compiles,
so the training model and the exported bundle's MJCF carry the same integrator, solver, ...

    sim: {timestep: 0.002, integrator: implicitfast, solver: newton, iterations: 50, cone: elliptic}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import mujoco

ENUMS = {
    "integrator": (mujoco.mjtIntegrator, "mjINT_"),
    "solver": (mujoco.mjtSolver, "mjSOL_"),
    "cone": (mujoco.mjtCone, "mjCONE_"),
}
"""The options named by a MuJoCo enum, and the prefix of its members (mjINT_RK4 -> rk4)."""


def choices(option: str) -> list[str]:
    """The valid values of an enum option, as a task YAML writes them (lower case)."""
    enum, prefix = ENUMS[option]
    return [name[len(prefix):].lower() for name in enum.__members__]


def set_options(spec: mujoco.MjSpec, options: Mapping) -> None:
    """Write each option that is set (not None) into spec.option (values already validated)."""
    for key, value in options.items():
        if value is None:
            continue
        if key in ENUMS:
            enum, prefix = ENUMS[key]
            value = int(getattr(enum, prefix + str(value).upper()))
        setattr(spec.option, key, value)


def with_sim_options(edit: Callable | None, options: Mapping) -> Callable | None:
    """The task's spec edit followed by its physics options; `edit` itself when none is set."""
    options = {k: v for k, v in options.items() if v is not None}
    if not options:
        return edit

    def edit_with_options(spec: mujoco.MjSpec) -> None:
        if edit is not None:
            edit(spec)
        set_options(spec, options)

    return edit_with_options
