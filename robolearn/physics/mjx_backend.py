"""MuJoCo XLA (MJX, JAX implementation): a jitted, vmapped step with the decimation inside one
`lax.scan`, on a CUDA GPU (or JAX's CPU, which CI uses).

- Tensors cross between torch and JAX through DLPack without copies: ctrl and reset states go
  in, and after every step the state tensors (`qpos`, ...) are re-bound to torch views of the
  new JAX buffers (JAX arrays are immutable, so each step returns new ones). Treat them as
  read-only, as everywhere in the backend contract.
- Per-environment model parameters: the randomizable Model fields are held batched [N, ...] and
  vmapped over together with the Data; the rest of the Model is shared. Fields MuJoCo derives
  from masses (subtree masses, inverse weights) stay at their nominal values, and which
  frictionloss rows exist is fixed by the nominal model: randomize dof_frictionloss only where
  the MJCF gives it a nonzero value.
- JAX is told not to preallocate most of the GPU (XLA_PYTHON_CLIENT_PREALLOCATE=false, set
  before JAX is imported) so torch and JAX share the card.
- XLA compiles a task's step once per model and env count, for tens of seconds; what it compiled
  is kept in JAX's persistent cache, ~/.cache/robolearn/jax ($XDG_CACHE_HOME respected;
  JAX_COMPILATION_CACHE_DIR chooses another place), so a run of a configuration seen before starts
  at once.
"""

from __future__ import annotations

import logging
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# JAX reports at INFO each accelerator it does not find ("Unable to initialize backend 'tpu'"),
# which Hydra's INFO-level logging would print on every run
logging.getLogger("jax._src.xla_bridge").setLevel(logging.WARNING)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import mujoco  # noqa: E402
import torch  # noqa: E402
from mujoco import mjx  # noqa: E402

from robolearn.errors import UserError, one_line  # noqa: E402
from robolearn.physics.base import RANDOMIZABLE_FIELDS, PhysicsBackend, check_field, home_act, model_attr, unsupported_model  # noqa: E402

if jax.config.jax_compilation_cache_dir is None:  # JAX_COMPILATION_CACHE_DIR unset
    _cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    jax.config.update("jax_compilation_cache_dir", os.path.join(_cache_home, "robolearn", "jax"))

_STATE = ("qpos", "qvel", "act", "time", "ctrl", "qacc_warmstart", "history", "qfrc_applied", "xfrc_applied",
          "mocap_pos", "mocap_quat")


def _to_jax(t: torch.Tensor) -> jax.Array:
    return jax.dlpack.from_dlpack(t.detach().contiguous())


def _to_torch(a: jax.Array) -> torch.Tensor:
    return torch.from_dlpack(a)


def _jax_device(device: torch.device) -> jax.Device:
    """JAX's device for torch's; JAX that cannot start there (JAX_PLATFORMS naming a platform this
    machine or JAX install lacks, or no CUDA plugin) is a UserError, not JAX's assertion."""
    platform = "gpu" if device.type == "cuda" else "cpu"
    index = (device.index if device.index is not None else torch.cuda.current_device()) if platform == "gpu" else 0
    try:
        return jax.devices(platform)[index]
    except Exception as exc:  # AssertionError, RuntimeError ("Unable to initialize backend"), IndexError
        chosen = os.environ.get("JAX_PLATFORMS")
        setting = f" with JAX_PLATFORMS={chosen}" if chosen is not None else ""
        valid = f"unset JAX_PLATFORMS or include {'cuda' if platform == 'gpu' else 'cpu'} in it" if chosen is not None \
            else ("install JAX's CUDA plugin (pip install -e '.[mjx]' on a CUDA machine)" if platform == "gpu" else "reinstall JAX")
        detail = one_line(exc)[:150] or type(exc).__name__
        raise UserError(f"physics=mjx cannot start JAX on the {device.type.upper()}{setting} ({detail}); valid: {valid}, "
                        "or another physics= backend") from None  # fmt: skip


class MjxBackend(PhysicsBackend):
    name = "mjx"

    def __init__(self, model: mujoco.MjModel, num_envs: int, device: torch.device | str, reset_sensors: str = "exact"):
        super().__init__(model, num_envs, torch.device(device), reset_sensors)
        self._jdev = _jax_device(self.device)
        try:
            mx = mjx.put_model(model, device=self._jdev, impl="jax")
            d0 = mjx.make_data(model, device=self._jdev, impl="jax")
        except NotImplementedError as exc:
            raise unsupported_model("mjx", exc) from None
        if model.na:  # an episode starts from the home keyframe's activations
            d0 = d0.replace(act=jax.device_put(jnp.asarray(home_act(model), d0.act.dtype), self._jdev))
        self._fields = {f: jnp.broadcast_to(model_attr(mx, f), (num_envs, *model_attr(mx, f).shape)) for f in RANDOMIZABLE_FIELDS}
        self._data = jax.vmap(lambda _: d0)(jnp.arange(num_envs))

        def with_fields(fields):
            return mx.tree_replace(fields)

        def substeps(fields, d, ctrl):  # ctrl [substeps, nu]: one per physics step
            return jax.lax.scan(lambda d, c: (mjx.step(with_fields(fields), d.replace(ctrl=c)), None), d, ctrl)[0]

        self._step = jax.jit(jax.vmap(substeps))

        blank = jnp.asarray(self.blank_at_reset)

        def reset(fields, d, mask, qpos, qvel):
            fresh = jax.vmap(lambda q, v: d0.replace(qpos=q, qvel=v))(qpos, qvel)
            if model.nsensordata:  # sensors (and kinematics) of the new state
                fresh = jax.vmap(lambda f, x: mjx.forward(with_fields(f), x))(fields, fresh)
                fresh = fresh.replace(sensordata=jnp.where(blank, 0.0, fresh.sensordata))  # reset_sensors=kinematic
            pick = lambda new, old: jnp.where(mask.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)  # noqa: E731
            return jax.tree_util.tree_map(pick, fresh, d)

        self._reset = jax.jit(reset)
        self._set_field = jax.jit(lambda old, new, mask: jnp.where(mask.reshape((-1,) + (1,) * (old.ndim - 1)), new, old))
        self._expose()

    def _expose(self) -> None:
        d = self._data
        self.qpos, self.qvel, self.act = _to_torch(d.qpos), _to_torch(d.qvel), _to_torch(d.act)
        self.sensordata, self.time = _to_torch(d.sensordata), _to_torch(d.time)

    def step(self, ctrl: torch.Tensor, substeps: int) -> None:
        if ctrl.dim() == 2:
            ctrl = ctrl.unsqueeze(1).expand(-1, substeps, -1)
        self._data = self._step(self._fields, self._data, _to_jax(ctrl.float()))
        self._expose()

    def set_velocity(self, qvel: torch.Tensor, mask: torch.Tensor) -> None:
        old = self._data.qvel
        self._data = self._data.replace(qvel=self._set_field(old, _to_jax(qvel.float()), _to_jax(mask)))
        self._expose()

    def reset(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        self._data = self._reset(self._fields, self._data, _to_jax(mask), _to_jax(qpos.float()), _to_jax(qvel.float()))
        self._expose()

    def model_field(self, field: str) -> torch.Tensor:
        check_field(field)
        return _to_torch(self._fields[field])

    def set_model_field(self, field: str, values: torch.Tensor, mask: torch.Tensor) -> None:
        check_field(field)
        old = self._fields[field]
        self._fields[field] = self._set_field(old, _to_jax(values.to(torch.float32)), _to_jax(mask))

    def state_dict(self) -> dict[str, torch.Tensor]:
        state = {k: _to_torch(getattr(self._data, k)) for k in _STATE}
        state.update({f"field/{k}": _to_torch(v) for k, v in self._fields.items()})
        return {k: v.clone().cpu() for k, v in state.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        put = lambda t: jax.device_put(jnp.asarray(t.numpy()), self._jdev)  # noqa: E731
        self._data = self._data.replace(**{k: put(state[k]) for k in _STATE})
        self._fields = {k.removeprefix("field/"): put(v) for k, v in state.items() if k.startswith("field/")}
        self._expose()
