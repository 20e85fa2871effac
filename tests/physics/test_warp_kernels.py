"""compile_ahead: the record pass runs no kernel and finds every module (and block size) a piece of
work launches, through a solver-style loop, both branches of a conditional and an occupancy query;
the parallel load then leaves nothing for the real run to compile. Kernels made here are new to
any kernel cache (a fresh constant in their source), so the checks cannot pass on modules loaded
by another test. Warp's CPU device."""

import secrets

import pytest
import torch

from robolearn.physics import BACKENDS

pytestmark = pytest.mark.skipif(BACKENDS["warp"].available(torch.device("cpu")) is not None, reason="warp not installed")


def fresh_kernels(wp):
    """Three kernels x <- x * scale + salt and one that zeroes a flag, each its own module, whose
    source no cache has seen."""
    salt = float(secrets.randbits(20))

    def make(scale):
        @wp.kernel(module="unique")
        def kernel(x: wp.array(dtype=wp.float32)):
            i = wp.tid()
            x[i] = x[i] * scale + salt

        return kernel

    @wp.kernel(module="unique")
    def done(flag: wp.array(dtype=wp.int32)):
        flag[0] = wp.int32(salt) * 0

    return (make(2.0), make(3.0), make(5.0), done), salt


def work_on(wp, kernels, x, flag):
    loop, branch, other, done = kernels

    passes = []

    def body():
        passes.append(1)
        if len(passes) > 3:  # one pass in the record run, one in the real run: this loop never ends
            raise RuntimeError("capture_while did not stop after one pass")
        wp.launch(loop, dim=x.shape[0], inputs=[x])
        wp.launch(done, dim=1, inputs=[flag])  # a kernel ends the loop, as a solver's done flag

    def work():
        wp.get_suggested_block_size(branch, x.device)
        flag.fill_(1)
        wp.capture_while(flag, body)
        wp.capture_if(flag, on_true=lambda: wp.launch(branch, dim=x.shape[0], inputs=[x]),
                      on_false=lambda: wp.launch(other, dim=x.shape[0], inputs=[x]))  # fmt: skip

    return work


def test_compile_ahead_loads_every_launched_module_and_runs_none():
    import warp as wp

    from robolearn.physics.warp_kernels import compile_ahead

    kernels, salt = fresh_kernels(wp)
    x = wp.ones(4, dtype=wp.float32, device="cpu")
    flag = wp.zeros(1, dtype=wp.int32, device="cpu")
    work = work_on(wp, kernels, x, flag)
    warp_functions = (wp.capture_while, wp.capture_if, wp.get_suggested_block_size)
    assert all(not k.module.execs for k in kernels)
    assert compile_ahead(work, max_workers=2) == 4
    assert all(k.module.execs for k in kernels), "a launched module was not loaded ahead"
    assert x.numpy().tolist() == [1.0] * 4, "the record pass ran a kernel"
    assert (wp.capture_while, wp.capture_if, wp.get_suggested_block_size) == warp_functions, "Warp not restored"

    work()  # the real run: the loop once (1 * 2 + s), then the false branch (flag is 0 after it)
    assert x.numpy().tolist() == [(2.0 + salt) * 5.0 + salt] * 4


def test_a_failing_record_pass_changes_nothing():
    import warp as wp

    from robolearn.physics.warp_kernels import compile_ahead

    load = wp.capture_while

    def broken():
        raise ValueError("a host read the record pass cannot answer")

    assert compile_ahead(broken, max_workers=2) == 0
    assert wp.capture_while is load


def test_one_worker_does_nothing():
    import warp as wp

    from robolearn.physics.warp_kernels import compile_ahead

    kernels, _ = fresh_kernels(wp)
    x = wp.ones(4, dtype=wp.float32, device="cpu")
    flag = wp.zeros(1, dtype=wp.int32, device="cpu")
    assert compile_ahead(work_on(wp, kernels, x, flag), max_workers=1) == 0
    assert all(not k.module.execs for k in kernels)


def test_the_backend_built_with_kernels_compiled_ahead_equals_one_built_without(monkeypatch):
    """The record pass runs on the backend's own Model and Data: afterwards every Model array and
    the first reset's state are what a backend built without it holds, bit for bit."""
    import warp as wp

    from robolearn.paths import assets_dir
    from robolearn.physics import load_model, make_backend

    model = load_model(assets_dir() / "quadruped.xml")
    built = {}
    for workers in ("0", "2"):
        monkeypatch.setenv("ROBOLEARN_WARP_COMPILE_WORKERS", workers)
        backend = make_backend("warp", model, 3, torch.device("cpu"))
        arrays = {k: v.numpy().copy() for k, v in vars(backend.m).items() if isinstance(v, wp.array)}
        arrays |= {f"data.{k}": v.clone() for k, v in backend.state_dict().items()}
        arrays["sensordata"] = backend.sensordata.clone()
        built[workers] = arrays
    assert built["0"].keys() == built["2"].keys() and len(built["0"]) > 100
    for key, value in built["0"].items():
        other = built["2"][key]
        same = torch.equal(value, other) if isinstance(value, torch.Tensor) else (value.tobytes() == other.tobytes())
        assert same, f"{key} differs"


@pytest.mark.parametrize("text", ["abc", "-2", "1.5"])
def test_a_bad_worker_count_is_one_line(monkeypatch, text):
    from robolearn.errors import UserError
    from robolearn.physics.warp_kernels import workers

    monkeypatch.setenv("ROBOLEARN_WARP_COMPILE_WORKERS", text)
    with pytest.raises(UserError, match=f"ROBOLEARN_WARP_COMPILE_WORKERS={text} is not valid; valid: a whole number"):
        workers()
    monkeypatch.setenv("ROBOLEARN_WARP_COMPILE_WORKERS", " 3 ")
    assert workers() == 3
