"""The shared trainer: a model trained inside a batched stack follows the trajectory it follows alone,
and the linear per-epoch schedule reproduces torch's LinearLR exactly."""
import math

import pytest
import torch

from attncap.models.aot_memorization import AoTStack, per_model_accuracy, per_model_cross_entropy
from attncap.tasks.aot_memorization import EpochShuffler, make_block
from attncap.train import TrainSettings, generators, lr_factor, train_batched


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models: one thread is fastest and avoids contention on shared machines."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _train(seeds, heads, widths, *, layout="shared", d=4, d_head=4, steps=24):
    torch.manual_seed(123)  # global RNG must not matter: every model draws from its own generators
    table, sample = make_block(8, 128, 5)
    model = AoTStack(seeds, heads, n_tokens=8, d=d, d_head=d_head, layout=layout, mlp_widths=widths)
    shuffle = EpochShuffler(sample, 32, generators(seeds, offset=3))
    settings = TrainSettings(steps=steps, lr=0.01, optimizer="adam", schedule="linear", schedule_every=4,
                             final_lr_fraction=0.05, schedule_span=steps // 4)
    accs, losses = [], []

    def loss_fn(net, batch):
        logits = net(batch)
        accs.append(per_model_accuracy(logits.detach(), batch[..., 2]))
        return per_model_cross_entropy(logits, batch[..., 2])

    train_batched(model, shuffle, loss_fn, settings, on_step=lambda s, l, b: losses.append(l))
    return model, torch.stack(accs), torch.stack(losses)


def _active(model, i):
    """Model i's weights without padding, as a flat vector."""
    h, w = model.heads[i], model.widths[i]
    parts = [model.embed.weight[i], model.position.weight[i], model.unembed.weight[i],
             model.in_proj[i, :h], model.out_proj[i, :h]]
    if w:
        parts += [model.mlp_in[i, :w], model.mlp_bias[i, :w], model.mlp_out[i, :, :w]]
    if model.project:
        parts += [model.down.weight[i], model.up.weight[i]]
    return torch.cat([p.detach().reshape(-1) for p in parts])


@pytest.mark.parametrize("layout,d,d_head,widths", [
    ("shared", 5, 3, None),  # padded heads and the shared down/up projections
    ("per_head", 3, 2, None),
    ("shared", 4, 4, [0, 8, 16]),  # padded MLP hidden units
])
def test_batched_equals_alone(layout, d, d_head, widths):
    seeds, heads = [0, 1, 2], [1, 3, 2] if widths is None else [1, 1, 1]
    batched, acc_b, loss_b = _train(seeds, heads, widths, layout=layout, d=d, d_head=d_head)
    for i, seed in enumerate(seeds):
        alone, acc_a, loss_a = _train([seed], [heads[i]], None if widths is None else [widths[i]],
                                      layout=layout, d=d, d_head=d_head)
        torch.testing.assert_close(_active(batched, i), _active(alone, 0), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(loss_b[:, i], loss_a[:, 0], rtol=1e-4, atol=1e-5)
        assert torch.equal(acc_b[:, i], acc_a[:, 0])


def test_padding_never_moves():
    model, _, _ = _train([0, 1], [1, 3], [0, 6])
    assert torch.count_nonzero(model.in_proj[0, 1:]) == 0
    assert torch.count_nonzero(model.out_proj[0, 1:]) == 0
    assert torch.count_nonzero(model.mlp_in[0]) == 0 and torch.count_nonzero(model.mlp_out[0]) == 0


def test_linear_schedule_matches_torch_linear_lr():
    """Reference code: Adam(lr=0.1) with LinearLR(start_factor=0.1, end_factor=0.005, total_iters=64)
    stepped once per epoch → effective 1e-2 decaying towards 5e-4."""
    epochs, per_epoch = 64, 64
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([param], lr=0.1)
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, end_factor=0.005, total_iters=epochs)
    reference = []
    for _ in range(epochs):
        reference.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    settings = TrainSettings(steps=epochs * per_epoch, lr=0.01, optimizer="adam", schedule="linear",
                             schedule_every=per_epoch, final_lr_fraction=0.05, schedule_span=epochs)
    ours = [settings.lr * lr_factor(step, settings) for step in range(settings.steps)]
    for e in range(epochs):
        block = ours[e * per_epoch:(e + 1) * per_epoch]
        assert all(math.isclose(v, reference[e], rel_tol=1e-12) for v in block)
    assert math.isclose(ours[0], 0.01) and math.isclose(ours[-1], 0.01 * (1 - 0.95 * 63 / 64))


def test_default_linear_schedule_unchanged():
    """Without schedule_span the last unit still reaches the final value (other claims rely on it)."""
    s = TrainSettings(steps=100, lr=1.0, schedule="linear", schedule_every=10, final_lr_fraction=0.1)
    assert lr_factor(0, s) == 1.0 and math.isclose(lr_factor(99, s), 0.1)


def test_early_stopped_model_holds_still_and_others_train_as_alone():
    """A model marked done stops updating at that step; its batch-mates follow their solo trajectory."""
    torch.manual_seed(0)
    seeds = [1, 2]
    base = torch.nn.Parameter(torch.randn(2, 3))
    target = torch.randn(2, 3)

    def run(freeze_at):
        w = torch.nn.Parameter(base.detach().clone())
        model = torch.nn.Module()
        model.w = w
        snaps = {}

        def on_step(step, losses, batch):
            snaps[step] = w.detach().clone()
            if freeze_at is not None and step >= freeze_at:
                return torch.tensor([True, False])
            return None

        out = train_batched(model, lambda s: None, lambda m, b: ((m.w - target) ** 2).sum(1),
                            TrainSettings(steps=12, lr=0.1, optimizer="adamw", weight_decay=0.1), on_step=on_step)
        return w.detach(), snaps, out

    w_free, snaps_free, _ = run(None)
    w_stop, snaps_stop, out = run(4)
    assert torch.equal(w_stop[0], snaps_free[4][0])  # model 0 kept its parameters after step 4
    assert torch.allclose(w_stop[1], w_free[1])  # model 1 trained as if alone
    assert out["model_steps"] == [5, 12]
    assert out["model_loss_history"].shape == (12, 2)


def _swap_losses(compile: bool, steps: int = 12) -> torch.Tensor:
    """Per-model loss history of a tiny two-mixer swap-task LM (softmax and DeltaNet on one model axis)."""
    from attncap.models.lm import BatchedLM, masked_token_loss
    from attncap.tasks.swap_state_tracking import sample, vocab_size

    model = BatchedLM([0, 1], ["softmax", "deltanet_02"], vocab=vocab_size(3), d_model=16, n_layers=1, n_heads=2,
                      mlp_ratio=2, positional="rotary")
    gen = torch.Generator().manual_seed(1)
    data = [sample(3, 6, 8, gen) for _ in range(steps)]

    def batch(step):
        return data[step].tokens.expand(2, -1, -1), data[step].targets.expand(2, -1, -1)

    result = train_batched(model, batch, lambda net, b: masked_token_loss(net(b[0]), b[1]),
                           TrainSettings(steps=steps, lr=3e-3, clip_norm=1.0, compile=compile))
    return result["model_loss_history"]


def test_compiled_steps_match_eager():
    """torch.compile'd training steps follow the eager trajectory within float32 tolerance (or, on a
    machine without a working compiler, fall back to eager and match exactly)."""
    eager = _swap_losses(False)
    compiled = _swap_losses(True)
    torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-5)


def test_compile_falls_back_to_eager_without_a_compiler(monkeypatch, capsys):
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(inductor_config.cpp, "cxx", ("/nonexistent/c++",))
    monkeypatch.setattr(inductor_config, "fx_graph_cache", False)  # a cached graph would need no compiler
    torch._dynamo.reset()
    fallback = _swap_losses(True, steps=4)
    torch._dynamo.reset()
    assert "torch.compile unavailable" in capsys.readouterr().err
    torch.testing.assert_close(fallback, _swap_losses(False, steps=4), rtol=0, atol=0)
