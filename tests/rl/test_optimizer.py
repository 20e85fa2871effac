"""The device-side Adam against torch.optim.Adam (same math), and its in-place state."""

import pytest
import torch

from robolearn.rl.optimizer import Adam


def test_adam_matches_torch_adam_over_many_steps():
    gen = torch.Generator().manual_seed(0)
    ours = [torch.nn.Parameter(torch.randn(5, 3, generator=gen)), torch.nn.Parameter(torch.randn(3, generator=gen))]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    lr = torch.tensor(1e-2)
    a, b = Adam([ours[:1], ours[1:]], lr), torch.optim.Adam(theirs, lr=1e-2)
    for step in range(60):
        if step == 30:  # a schedule changing the rate in place reaches the optimizer
            lr.fill_(3e-3)
            b.param_groups[0]["lr"] = 3e-3
        for p, q in zip(ours, theirs):
            p.grad.copy_(torch.randn(p.shape, generator=gen))  # the grads are views of one buffer
            q.grad = p.grad.clone()
        a.step()
        b.step()
    for p, q in zip(ours, theirs):
        assert torch.allclose(p, q, atol=1e-6)


def test_parameters_and_gradients_live_in_one_buffer_each():
    layer = torch.nn.Linear(3, 2)
    extra = torch.nn.Parameter(torch.ones(2))
    weight = layer.weight.detach().clone()
    opt = Adam([list(layer.parameters()), [extra]], torch.tensor(1e-3))
    assert torch.equal(layer.weight, weight)  # values kept
    assert layer.weight.data_ptr() == opt.flat.data_ptr() and opt.group_slices == [slice(0, 8), slice(8, 10)]
    (layer(torch.ones(1, 3)).sum() + extra.sum()).backward()
    assert layer.weight.grad.data_ptr() == opt.flat_grad.data_ptr()  # autograd accumulated in place
    assert torch.equal(opt.group_grads()[1], torch.ones(2))
    opt.zero_grad()
    assert not opt.flat_grad.any() and layer.weight.grad is not None


def test_adam_state_loads_in_place():
    params = [torch.nn.Parameter(torch.zeros(4))]
    lr = torch.tensor(1e-3)
    opt = Adam([params], lr)
    params[0].grad.fill_(1.0)
    opt.step()
    saved = opt.state_dict()
    held = (opt.lr, opt.step_count, opt.exp_avg)
    params[0].grad.fill_(-3.0)
    opt.step()
    lr.fill_(5.0)
    opt.load_state_dict(saved)
    assert held[0] is lr and lr.item() == pytest.approx(1e-3) and held[1].item() == 1.0
    assert torch.equal(held[2], saved["exp_avg"])


def test_a_disabled_step_leaves_everything_and_an_enabled_one_is_a_plain_step():
    gen = torch.Generator().manual_seed(1)
    ours = [torch.nn.Parameter(torch.randn(4, generator=gen))]
    plain = [torch.nn.Parameter(ours[0].detach().clone())]
    a, b = Adam([ours], torch.tensor(1e-2)), Adam([plain], torch.tensor(1e-2))
    for step in range(20):
        grad = torch.randn(4, generator=gen)
        a.flat_grad.copy_(grad)
        b.flat_grad.copy_(grad)
        a.step(torch.tensor(True))
        b.step()
        if step % 5 == 4:  # a poisoned gradient, refused on the device
            before = {k: v.clone() for k, v in a.state_dict().items()}, a.flat.clone()
            a.flat_grad.fill_(float("nan"))
            a.step(torch.tensor(False))
            assert all(torch.equal(v, before[0][k]) for k, v in a.state_dict().items())
            assert torch.equal(a.flat, before[1])
    assert torch.allclose(a.flat, b.flat, atol=1e-7) and torch.equal(a.step_count, b.step_count)
