"""MuJoCo Warp: every environment is a world of one batched mujoco_warp Data, on a CUDA GPU
(or on Warp's CPU device, which CI uses).

- State tensors are zero-copy torch views of the Warp arrays (`wp.to_torch`), float32.
- ctrl is a torch tensor the Warp Data reads directly (`wp.from_torch`), so stepping copies
  nothing between torch and Warp.
- The decimated step (`substeps` x mjw.step), the masked reset and the sensor refresh after it
  (`mjw.forward`; `mjw.step1`, its position and velocity stages, where no sensor needs the solver
  or physics.reset_sensors=kinematic) are each captured once as a graph (a CUDA graph on a GPU)
  and replayed. The reset is plain kernels, so the env may capture it in its own torch graph; step
  and refresh run the solver, whose `wp.capture_while` loop needs a Warp-owned capture, or the
  collision stage, which allocates scratch memory, so the env replays them between its graphs
  (`write_reset` + `refresh` are `reset` in two halves). On a GPU, Warp works on its own stream,
  ordered after torch's pending work and before torch's next work by device-side stream waits (no
  host syncs); inside the env's own torch graph capture it launches on the capturing stream.
- Per-environment model parameters are Warp model fields with a leading world dimension
  (`put_model(batch_sizes=...)`; gravity by giving `m.opt.gravity` one vector per world),
  written from torch through the same zero-copy views; fields MuJoCo derives from masses and
  inertias are recomputed with `set_const`.
- Controls given per physics step are read in place: each substep of the captured loop points
  the Data's ctrl at that step's slice of one [substeps, N, nu] buffer.
- Contact and constraint buffers are sized per world: physics.nconmax / physics.njmax where set,
  otherwise mujoco_warp's defaults, raised where a short native-MuJoCo probe of the model needs
  more (contact_budget.py). Overflows are recorded per world by the engine; `health()` reads
  them once per iteration and names the setting to raise.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

import mujoco
import mujoco_warp as mjw
import torch
import warp as wp

from robolearn.errors import UserError
from robolearn.physics.base import (INERTIAL_FIELDS, RANDOMIZABLE_FIELDS, PhysicsBackend, check_field, home_act,
                                    model_attr, solver_sensors, unsupported_model)
from robolearn.physics.contact_budget import buffer_sizes
from robolearn.physics.warp_kernels import compile_ahead

wp.config.log_level = wp.LOG_WARNING
wp.config.quiet = True
_NO_DRIVER = b"Warp CUDA warning: Could not find or load the NVIDIA CUDA driver."


def _init_warp() -> None:
    """wp.init(); on a machine without CUDA, without the line Warp's native code prints to stderr
    about the missing driver (Warp's CPU device is what robolearn asked for there). Anything
    else printed meanwhile is passed on."""
    if torch.cuda.is_available():
        wp.init()
        return
    with tempfile.TemporaryFile() as caught:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(caught.fileno(), 2)
        try:
            wp.init()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        caught.seek(0)
        rest = [line for line in caught.read().splitlines(keepends=True) if not line.startswith(_NO_DRIVER)]
    if rest:
        sys.stderr.write(b"".join(rest).decode(errors="replace"))
        sys.stderr.flush()


try:
    _init_warp()
except OSError as exc:  # Warp makes its kernel cache (WARP_CACHE_PATH, else ~/.cache/warp) at init
    raise UserError(f"physics=warp cannot make its kernel cache {exc.filename} ({exc.strerror}); valid: WARP_CACHE_PATH "
                    "unset or a folder this user may write") from None  # fmt: skip

# Derived model fields set_const recomputes: batched too, or only world 0 would get new values.
_DERIVED = ("body_subtreemass", "body_invweight0", "dof_invweight0", "tendon_invweight0", "actuator_acc0")
# State beyond qpos/qvel/act/time that a checkpoint must carry for an exact resume.
_STATE = ("qacc_warmstart", "history", "qfrc_applied", "xfrc_applied", "mocap_pos", "mocap_quat")
# Which overflow means which buffer (solver iteration limits are not buffer overflows).
_BUFFER = {
    mjw.OverflowType.NEFC: "physics.njmax",
    mjw.OverflowType.NJMAX_NNZ: "physics.njmax",
    mjw.OverflowType.BROADPHASE: "physics.nconmax",
    mjw.OverflowType.NARROWPHASE: "physics.nconmax",
    mjw.OverflowType.CCD: "physics.nconmax",
}


def _derived_sizes(model: mujoco.MjModel, nconmax: int, njmax: int) -> tuple[int, int]:
    """The buffers not set (0): mujoco_warp's defaults (what one world of make_data gets), raised
    where the model's probe needs more, which is said once on stderr."""
    one = mjw.make_data(model, nworld=1)
    sizes, why = buffer_sizes(model, {"nconmax": nconmax or int(one.naconmax), "njmax": njmax or int(one.njmax)},
                              keep={k for k, v in (("nconmax", nconmax), ("njmax", njmax)) if v})  # fmt: skip
    if why is not None:
        print(f"robolearn: {why}", file=sys.stderr)
    return sizes["nconmax"], sizes["njmax"]


class WarpBackend(PhysicsBackend):
    name = "warp"
    fields_traceable = True

    def __init__(
        self, model: mujoco.MjModel, num_envs: int, device: torch.device | str, nconmax: int = 0, njmax: int = 0,
        deterministic: bool = False, reset_sensors: str = "exact",
    ):  # fmt: skip
        super().__init__(model, num_envs, torch.device(device), reset_sensors)
        if self.device.type == "cuda":
            index = self.device.index if self.device.index is not None else torch.cuda.current_device()
            self.device = torch.device("cuda", index)
            self._wp_device = wp.get_device(f"cuda:{index}")
            # Graphs cannot be captured on torch's default (legacy) stream: Warp works on its own
            # stream, ordered after and before torch's work by device-side waits.
            self._wrapped: dict[int, wp.Stream] = {}
            self._stream = wp.Stream(self._wp_device)
        else:
            self._wp_device, self._stream = wp.get_device("cpu"), None
        with self._scope():
            self.batch_sizes = {f: num_envs for f in (*RANDOMIZABLE_FIELDS, *_DERIVED) if "." not in f}
            """The model fields with a world dimension (put_model's batch_sizes); gravity is one more."""
            try:
                self.m = mjw.put_model(model, batch_sizes=self.batch_sizes)
            except NotImplementedError as exc:
                raise unsupported_model("warp", exc) from None
            self.m.opt.warn_overflow = 0  # overflows are read from d.overflow instead (health())
            if deterministic:  # contact order and float sums independent of thread scheduling
                self.m.opt.deterministic = mjw.DeterminismType.ALL
            self.m.opt.gravity = wp.array([model.opt.gravity] * num_envs, dtype=wp.vec3)  # per world
            if not (nconmax and njmax):
                nconmax, njmax = _derived_sizes(model, nconmax, njmax)
            self.d = mjw.make_data(model, nworld=num_envs, nconmax=nconmax, njmax=njmax)
        self.nconmax, self.njmax = int(self.d.naconmax // num_envs), int(self.d.njmax)

        self._ctrl = torch.zeros(num_envs, model.nu, device=self.device)
        self._wp_ctrl = wp.from_torch(self._ctrl)
        self.d.ctrl = self._wp_ctrl
        self._ctrl_seq: dict[int, tuple[torch.Tensor, list]] = {}
        """Per-physics-step controls, by substep count: a [substeps, N, nu] buffer and its slices."""
        self._reset_mask = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        self._wp_reset_mask = wp.from_torch(self._reset_mask)
        view = wp.to_torch
        self.qpos, self.qvel, self.act = view(self.d.qpos), view(self.d.qvel), view(self.d.act)
        act = home_act(model)
        self._home_act = torch.as_tensor(act, dtype=self.act.dtype, device=self.device) if act.any() else None
        """The home keyframe's activations, where they are not all 0 (a fresh Data's)."""
        self._sensordata, self.time = view(self.d.sensordata), view(self.d.time)
        self._stale: torch.Tensor | None = None
        """Worlds reset since the last step whose sensors wait for a read (mark_stale)."""
        self._extra_state = {k: view(getattr(self.d, k)) for k in _STATE}
        self._overflow = view(self.d.overflow)
        self._overflow_seen = torch.zeros_like(self._overflow)
        """Overflow bits of worlds since reset (a reset clears the engine's own bits)."""
        self._sensors_kept = torch.zeros_like(self._sensordata)
        self._fields = {f: view(model_attr(self.m, f)) for f in RANDOMIZABLE_FIELDS}
        self._graphs: dict[str, object] = {}
        self._work: dict[str, object] = {}
        self.graph_safe = self.device.type == "cuda"
        self.refreshes = model.nsensordata > 0
        sleeps = bool(model.opt.enableflags & mujoco.mjtEnableBit.mjENBL_SLEEP)  # step1 does not wake trees
        solve = reset_sensors == "exact" and bool(solver_sensors(model))
        self.kinematic_refresh = self.refreshes and not (solve or sleeps)
        """No sensor needs the solver at a reset: the refresh runs mujoco_warp's position and
        velocity stages (step1) instead of a whole forward."""
        blank = sleeps and self.blank_at_reset.any()  # kinematic mode through a forward: zeroed after it
        self._blank = torch.from_numpy(self.blank_at_reset).to(self.device) if blank else None
        with self._scope():  # the kernels of a reset, a forward and a step, compiled in parallel
            compile_ahead(self._first_calls)
        self._run("reset", lambda: mjw.reset_data(self.m, self.d, self._wp_reset_mask))
        self._reset_mask.fill_(True)
        self._run("reset", None)
        self._run("forward", lambda: mjw.forward(self.m, self.d))

    def _first_calls(self) -> None:
        """What the first reset and step launch, and set_const (inertial randomization): recorded by
        compile_ahead, whose pass runs no kernel (the Model is only written by kernels; the Data
        is reset right after)."""
        mjw.reset_data(self.m, self.d, self._wp_reset_mask)
        mjw.forward(self.m, self.d)
        if self.kinematic_refresh:
            mjw.step1(self.m, self.d)
        mjw.step(self.m, self.d)
        mjw.set_const(self.m, self.d)

    def _torch_stream(self) -> wp.Stream:
        stream = torch.cuda.current_stream(self.device)
        if stream.cuda_stream not in self._wrapped:
            self._wrapped[stream.cuda_stream] = wp.stream_from_torch(stream)
        return self._wrapped[stream.cuda_stream]

    @contextlib.contextmanager
    def _scope(self):
        """Run Warp work after torch's pending work and make torch's later work wait for it.
        Inside a torch CUDA-graph capture (the env's), launch on the capturing stream instead."""
        if self._stream is None:
            with wp.ScopedDevice(self._wp_device):
                yield
        elif torch.cuda.is_current_stream_capturing():
            # no implicit waits: one on a stream outside the capture would invalidate it
            with wp.ScopedStream(self._torch_stream(), sync_enter=False, sync_exit=False):
                yield
        else:
            torch_stream = self._torch_stream()
            self._stream.wait_stream(torch_stream)
            with wp.ScopedStream(self._stream, sync_enter=False, sync_exit=False):
                yield
            torch_stream.wait_stream(self._stream)

    def _run(self, key: str, work=None) -> None:
        """Replay the Warp graph `key`; the first time, run `work` once (compiles kernels) and
        capture it. Inside a torch capture, launch the kernels so they join the torch graph."""
        self._work.setdefault(key, work)
        with self._scope():
            if self._stream is not None and torch.cuda.is_current_stream_capturing():
                self._work[key]()
                return
            if key not in self._graphs:
                self._work[key]()
                with wp.ScopedCapture(device=self._wp_device) as capture:
                    self._work[key]()
                self._graphs[key] = capture.graph
            wp.capture_launch(self._graphs[key])

    def step(self, ctrl: torch.Tensor, substeps: int) -> None:
        self._stale = None  # the step computes every world's sensors
        if ctrl.dim() == 2:
            key = f"step{substeps}"
            self._ctrl.copy_(ctrl)

            def substep_loop():
                for _ in range(substeps):
                    mjw.step(self.m, self.d)
        else:
            key = f"step{substeps}_per_step_ctrl"
            if substeps not in self._ctrl_seq:
                buffer = torch.zeros(substeps, self.num_envs, self.model.nu, device=self.device)
                self._ctrl_seq[substeps] = (buffer, [wp.from_torch(buffer[k]) for k in range(substeps)])
            buffer, slices = self._ctrl_seq[substeps]
            buffer.copy_(ctrl.transpose(0, 1))
            self._ctrl.copy_(ctrl[:, -1])  # what the Data holds afterwards (checkpoints, resets)

            def substep_loop():  # each step's kernels are recorded reading their own slice
                for k in range(substeps):
                    self.d.ctrl = slices[k]
                    mjw.step(self.m, self.d)
                self.d.ctrl = self._wp_ctrl

        if key not in self._graphs:  # compiling/capturing advances the state: keep it
            saved = self.state_dict()
            self._run(key, substep_loop)
            self.load_state_dict(saved)
        self._run(key, substep_loop)

    def set_velocity(self, qvel: torch.Tensor, mask: torch.Tensor) -> None:
        torch.where(mask.unsqueeze(1), qvel, self.qvel, out=self.qvel)

    def reset(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        self.write_reset(mask, qpos, qvel)
        self.refresh(mask)

    def write_reset(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        self._overflow_seen.bitwise_or_(self._overflow)  # reset_data clears the engine's bits
        self._reset_mask.copy_(mask)
        self._run("reset", None)  # a fresh Data in the masked worlds (time, warmstart, ...)
        m = mask.unsqueeze(1)
        torch.where(m, qpos, self.qpos, out=self.qpos)
        torch.where(m, qvel, self.qvel, out=self.qvel)
        if self._home_act is not None:
            torch.where(m, self._home_act, self.act, out=self.act)

    @property
    def sensordata(self) -> torch.Tensor:
        """Sensor readings [N, nsensordata]; reading it refreshes the worlds mark_stale left."""
        self.refresh_stale()
        return self._sensordata

    def mark_stale(self, mask: torch.Tensor) -> None:
        """Refresh the masked worlds at the next read of `sensordata` before a step, if any."""
        self._stale = mask if self._stale is None else self._stale | mask

    def refresh_stale(self) -> None:
        if self._stale is not None:
            self.refresh(self._stale)

    def refresh(self, mask: torch.Tensor) -> None:
        """Sensors of the new state in the reset worlds (and any mark_stale left): one forward of
        every world (mujoco_warp has no per-world mask), then the other worlds get their readings
        back, bit for bit. Where no sensor needs the solver (kinematic_refresh), the forward's
        position and velocity stages only (step1: it zeroes sensordata first, so solver-stage
        sensors read 0)."""
        if not self.refreshes:
            return
        if self._stream is not None and torch.cuda.is_current_stream_capturing():
            raise RuntimeError("WarpBackend.refresh allocates (collision) and may run the solver's capture_while: "
                               "call it between torch graphs")  # fmt: skip
        if self._stale is not None:
            mask, self._stale = mask | self._stale, None
        sensors = self._sensordata
        self._sensors_kept.copy_(sensors)
        if self.kinematic_refresh:
            self._run("kinematic refresh", lambda: mjw.step1(self.m, self.d))
        else:
            self._run("forward", None)
        torch.where(mask.unsqueeze(1), sensors, self._sensors_kept, out=sensors)
        if self._blank is not None:
            sensors.masked_fill_(mask.unsqueeze(1) & self._blank, 0.0)

    def model_field(self, field: str) -> torch.Tensor:
        check_field(field)
        return self._fields[field]

    def set_model_field(self, field: str, values: torch.Tensor, mask: torch.Tensor) -> None:
        view = self.model_field(field)
        shape = (self.num_envs,) + (1,) * (view.dim() - 1)
        torch.where(mask.reshape(shape), values.to(view), view, out=view)
        if field in INERTIAL_FIELDS:
            if self._stream is not None and torch.cuda.is_current_stream_capturing():
                raise UserError(
                    f"randomizing {field} at reset or interval needs MuJoCo Warp's set_const, which cannot run "
                    "inside the env's CUDA graph: use mode=startup for it or set env.cuda_graph=false"
                )
            with self._scope():
                mjw.set_const(self.m, self.d)

    def health(self) -> str | None:
        buffers = sum(int(flag) for flag in _BUFFER)  # not ITERATIONS: a solver limit, not a buffer
        bits = (self._overflow | self._overflow_seen) & buffers
        if not bool((bits != 0).any()):
            return None
        settings = sorted({s for flag, s in _BUFFER.items() if bool((bits & int(flag)).any())})
        worlds = int((bits != 0).sum())
        return (
            f"MuJoCo Warp buffers overflowed in {worlds} of {self.num_envs} environments "
            f"(nconmax={self.nconmax} contacts and njmax={self.njmax} constraints per environment): "
            f"raise {' and '.join(settings)}"
        )

    def _state_tensors(self) -> dict[str, torch.Tensor]:
        return {"qpos": self.qpos, "qvel": self.qvel, "act": self.act, "time": self.time, "ctrl": self._ctrl,
                "overflow_seen": self._overflow_seen, **self._extra_state}  # fmt: skip

    def state_dict(self) -> dict[str, torch.Tensor]:
        state = self._state_tensors()
        state.update({f"field/{k}": v for k, v in self._fields.items()})
        return {k: v.detach().clone().cpu() for k, v in state.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self._stale = None  # the forward below computes every world's sensors
        for key, target in self._state_tensors().items():
            target.copy_(state[key])
        # set_const only where an inertial field moved: each call recomputes the compiled model's
        # derived constants in float32 (up to ~3e-5 off), so a round trip would change the model
        moved = False
        for key, value in state.items():
            if key.startswith("field/"):
                name = key.removeprefix("field/")
                field = self._fields[name]
                moved |= name in INERTIAL_FIELDS and not torch.equal(field, value.to(field.device))
                field.copy_(value)
        with self._scope():
            if moved:
                mjw.set_const(self.m, self.d)
            mjw.forward(self.m, self.d)
