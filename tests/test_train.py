"""The shared trainer: a model trained inside a batched stack follows the trajectory it follows alone,
and the linear per-epoch schedule reproduces torch's LinearLR exactly."""
import math

import pytest
import torch

from attncap.models.aot_memorization import AoTStack, per_model_accuracy, per_model_cross_entropy
from attncap.tasks.aot_memorization import EpochShuffler, make_block
from attncap.train import (Checkpoint, TrainSettings, generators, lr_factor, plateau_certified, plateau_drop,
                           tail_lr_fraction, train_batched)


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


def test_a_continued_run_trains_at_its_own_rate_and_the_budget_keeps_its_schedule():
    """continue_lr_fraction sets the rate beyond the budget only (a cosine to 0 would leave a continued run
    unable to learn or to be judged settled); None holds the schedule's final value as before."""
    plain = TrainSettings(steps=100, lr=1.0, schedule="cosine", warmup_steps=10)
    onward = TrainSettings(steps=100, lr=1.0, schedule="cosine", warmup_steps=10, continue_lr_fraction=0.1)
    assert [lr_factor(s, plain) for s in range(100)] == [lr_factor(s, onward) for s in range(100)]
    assert lr_factor(100, plain) == lr_factor(500, plain) == 0.0
    assert lr_factor(100, onward) == lr_factor(500, onward) == 0.1
    assert math.isclose(tail_lr_fraction(onward, 200, window=100), 0.1)


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


# ---- continuation until certified, and exact save/resume (issue 22, section 1) ---------------------

def _ramp_model(walls, noise=False):
    """One scalar w per model and loss exp(-min(w, wall)) with gradient -1 below the wall (0 beyond): Adam
    moves w by exactly lr a step, so the loss falls exponentially (never certified) until w reaches the
    model's wall, then it is flat (certified once the last 20% of the model's history is flat). `noise`
    multiplies the loss by a draw of the global RNG."""
    model = torch.nn.Module()
    model.w = torch.nn.Parameter(torch.zeros(len(walls)))
    wall = torch.tensor(walls)

    def loss_fn(net, batch):
        value = torch.exp(-torch.minimum(net.w, wall)).detach()
        if noise:
            value = value * (1 + 1e-3 * torch.rand(len(walls)))
        slope = net.w * (net.w.detach() < wall)
        return value + (slope.detach() - slope)  # exactly value, with gradient -1

    return model, loss_fn


_RAMP = TrainSettings(steps=50, lr=0.1, optimizer="adam")


def test_new_arguments_unused_or_inert_change_nothing(tmp_path):
    """Without continuation or checkpoint the loop is the one every claim ran; with a predicate that
    certifies everything at the budget and a checkpoint written along the way, the numbers are the same."""
    walls = [1.0, 5.0, float("inf")]
    plain_model, loss_fn = _ramp_model(walls, noise=True)
    torch.manual_seed(0)
    plain = train_batched(plain_model, lambda s: None, loss_fn, _RAMP)
    inert_model, loss_fn = _ramp_model(walls, noise=True)
    torch.manual_seed(0)
    inert = train_batched(inert_model, lambda s: None, loss_fn, _RAMP, max_steps=200,
                          until_certified=lambda h, n: torch.ones(h.shape[1], dtype=torch.bool),
                          checkpoint=Checkpoint(tmp_path / "run.ckpt", every=7))
    assert torch.equal(plain_model.w, inert_model.w)
    assert torch.equal(plain["model_loss_history"], inert["model_loss_history"])
    assert plain["loss_history"] == inert["loss_history"] and plain["steps_run"] == inert["steps_run"] == 50
    assert plain["model_steps"] == inert["model_steps"] == [50] * 3
    assert plain["capped"] == inert["capped"] == [False] * 3 and plain["budget"] == 50
    assert inert["certified"] == [True] * 3 and not (tmp_path / "run.ckpt").exists()


def test_continued_until_certified_or_capped():
    """Model 0 plateaus early (certified at the budget: not trained past it); model 1 is still improving at
    the budget and is continued until certified, before the cap; model 2 never plateaus and stops at the
    cap, reported capped. Batch-mates do not change a model's trajectory or stopping step."""
    def run(walls, **kwargs):
        model, loss_fn = _ramp_model(walls)
        out = train_batched(model, lambda s: None, loss_fn, _RAMP, **kwargs)
        return model.w.detach().clone(), out

    check = plateau_certified(_RAMP)
    w_plain, plain = run([1.0, 5.0, float("inf")])
    assert check(plain["model_loss_history"], torch.tensor(plain["model_steps"])).tolist() == [True, False, False]
    w, out = run([1.0, 5.0, float("inf")], until_certified=check, max_steps=200)
    assert out["budget"] == 50 and out["steps_run"] == 200
    assert out["model_steps"][0] == 50 and torch.equal(w[0], w_plain[0])  # certified: stopped at the budget
    assert 50 < out["model_steps"][1] < 200 and out["model_steps"][1] % 5 == 0  # re-checked every 10% of 50
    assert out["model_steps"][2] == 200
    assert out["certified"] == [True, True, False] and out["capped"] == [False, False, True]
    own = out["model_loss_history"][:out["model_steps"][1], 1]
    assert plateau_drop(own) == 0.0  # the certificate the CSV will compute holds for model 1
    w_pair, pair = run([1.0, 5.0], until_certified=check, max_steps=200)  # nobody left at the cap
    assert pair["steps_run"] == out["model_steps"][1] < 200 and pair["model_steps"] == out["model_steps"][:2]
    assert torch.equal(w_pair, w[:2]) and pair["capped"] == [False, False]


def test_stopped_models_dropped_from_the_axis_keep_every_number():
    """train_batched(narrow=...): a certified model leaves the axis (parameters and Adam state narrowed, the
    caller told which models are left) instead of being held there; each model's parameters, own losses,
    steps, certificate and cap are those of the loop that holds it, and the full axis is back at the end."""
    walls = [1.0, 5.0, float("inf")]
    check = plateau_certified(_RAMP)

    def run(dropping):
        model = torch.nn.Module()
        model.w = torch.nn.Parameter(torch.zeros(len(walls)))
        left = {"wall": torch.tensor(walls), "calls": []}

        def loss_fn(net, batch):
            value = torch.exp(-torch.minimum(net.w, left["wall"])).detach()
            slope = net.w * (net.w.detach() < left["wall"])
            return value + (slope.detach() - slope)

        def narrow(rows):
            left["calls"].append(rows.tolist())
            left["wall"] = torch.tensor(walls)[rows]

        out = train_batched(model, lambda s: None, loss_fn, _RAMP, until_certified=check, max_steps=200,
                            narrow=narrow if dropping else None)
        return model.w.detach().clone(), out, left["calls"]

    w_held, held, _ = run(False)
    w, out, calls = run(True)
    assert calls == [[1, 2], [2], [0, 1, 2]]  # model 0 certified at the budget, model 1 later, then restored
    assert torch.equal(w, w_held)
    for key in ("model_steps", "steps_run", "certified", "capped"):
        assert out[key] == held[key]
    for m, n in enumerate(out["model_steps"]):
        assert torch.equal(out["model_loss_history"][:n, m], held["model_loss_history"][:n, m])
        assert out["model_loss_history"][n:, m].isnan().all()  # not on the axis any more


def test_dropping_models_needs_the_model_axis_on_every_parameter():
    model = torch.nn.Module()
    model.w = torch.nn.Parameter(torch.zeros(3))
    model.shared = torch.nn.Parameter(torch.zeros(2))  # no model axis: cannot be narrowed

    def loss_fn(net, batch):
        return (net.w - 1) ** 2 + net.shared.sum()

    with pytest.raises(ValueError, match="model axis first"):
        train_batched(model, lambda s: None, loss_fn, _RAMP, narrow=lambda rows: None,
                      on_step=lambda step, losses, batch: torch.tensor([step == 3, False, False]))


def test_plateau_certified_is_the_certificate_rule():
    """The continuation predicate and attncap.claims' learning status agree, schedules included."""
    from attncap.claims import STILL_MOVING, learning_status
    from attncap.train import final_loss

    gen = torch.Generator().manual_seed(0)
    for settings in (TrainSettings(steps=80, lr=1.0, schedule="cosine", final_lr_fraction=0.1, warmup_steps=5),
                     TrainSettings(steps=80, lr=1.0, schedule="linear", final_lr_fraction=0.0),
                     TrainSettings(steps=80, lr=1.0)):
        check = plateau_certified(settings)
        for n in (40, 80, 120):
            rates = torch.tensor([0.0, 1e-4, 1e-3, 3e-3, 1e-2])
            history = torch.exp(-rates * torch.arange(n).unsqueeze(1)) * (1 + 0.01 * torch.rand(n, 5, generator=gen))
            history[-3:, 4] = math.nan
            mine = check(history, torch.full((5,), n)).tolist()
            for m in range(5):
                own = history[:, m].tolist()
                status = learning_status(final_loss(own), loss_drop=plateau_drop(own),
                                         lr_fraction=tail_lr_fraction(settings, n))
                if n <= settings.steps or not math.isfinite(final_loss(own)):  # one read: the certificate
                    assert mine[m] == (status != STILL_MOVING), (settings, n, m, status)
                else:  # continued: the certificate and the read one window earlier
                    window = int(n * 0.1)
                    earlier = own[:n - window]
                    before = learning_status(final_loss(earlier), loss_drop=plateau_drop(earlier[-2 * window:], 0.5),
                                             lr_fraction=tail_lr_fraction(settings, n - window, window=window))
                    assert mine[m] == (status != STILL_MOVING and before != STILL_MOVING), (settings, n, m)


def test_repeated_looks_need_two_flat_reads():
    """A loss still falling just faster than the rule allows, under batch noise, looked at every few steps:
    with one read per look many runs are stopped on a window pair that happens to look flat; with two
    adjacent pairs (plateau_settled's reads=2, what a continuation uses) far fewer, while a flat loss settles
    at the first look either way. One read is plateau_drop's rule exactly."""
    from attncap.claims import still_moving
    from attncap.train import plateau_settled

    gen = torch.Generator().manual_seed(1)
    def flat_rate(end, window):
        return 1.0

    def first_settled(losses, reads, looks):
        return next((n for n in looks if plateau_settled(losses[:n], flat_rate, reads=reads)), None)

    looks = range(1000, 4001, 50)
    stopped = {1: 0, 2: 0}
    runs = 200
    for _ in range(runs):
        steps = torch.arange(1, 4001, dtype=torch.float64)
        # loss ∝ step^-0.5: the last 10%-window 5.4% below the one before at every length (the rule allows 5%),
        # noise 3% per step
        falling = (steps ** -0.5 * (1 + 0.03 * torch.randn(4000, generator=gen, dtype=torch.float64))).tolist()
        for reads in (1, 2):
            stopped[reads] += first_settled(falling, reads, looks) is not None
        flat = (1 + 0.03 * torch.randn(4000, generator=gen, dtype=torch.float64)).tolist()
        assert first_settled(flat, 1, looks) == first_settled(flat, 2, looks) == 1000
        slow = (steps ** -0.25 * (1 + 0.03 * torch.randn(4000, generator=gen, dtype=torch.float64))).tolist()
        assert first_settled(slow, 2, looks) == 1000  # 2.8% per window: settled, on two reads too
        own = falling[:1000]
        assert plateau_settled(own, flat_rate) == (not still_moving(plateau_drop(own), 1.0))
    assert stopped[1] > 0.9 * runs and stopped[2] < 0.1 * stopped[1], stopped  # measured: 195 and 0 of 200


@pytest.mark.parametrize("settings", [
    TrainSettings(steps=40, lr=1.0, schedule="linear", schedule_every=4, final_lr_fraction=0.05, schedule_span=10),
    TrainSettings(steps=40, lr=1.0, schedule="linear", schedule_every=4, final_lr_fraction=0.05, schedule_span=20),
    TrainSettings(steps=40, lr=1.0, schedule="cosine", final_lr_fraction=0.1, warmup_steps=8),
    TrainSettings(steps=40, lr=1.0, schedule="cosine", final_lr_fraction=0.1, warmup_steps=60),
    TrainSettings(steps=40, lr=1.0, schedule="linear", schedule_every=7, final_lr_fraction=0.2),
    TrainSettings(steps=40, lr=1.0, warmup_steps=10),
])
def test_rate_beyond_the_budget_is_the_final_rate_held(settings, monkeypatch):
    """Past the budget the factor is the schedule's value at step `steps`, constant (the final fraction for
    a finished decay; never a warm-up still rising or a decay running on past schedule_span), and the
    continued loop applies exactly that rate."""
    import attncap.train as train

    beyond = [lr_factor(step, settings) for step in range(settings.steps, 4 * settings.steps)]
    assert len(set(beyond)) == 1
    finished = settings.warmup_steps < settings.steps and settings.schedule_span in (None, 10)
    if settings.schedule != "constant" and finished:  # a decay that ran its course: its final fraction
        assert math.isclose(beyond[0], settings.final_lr_fraction)
    assert math.isclose(tail_lr_fraction(settings, 2 * settings.steps), beyond[0])
    optimizers = []
    monkeypatch.setattr(train, "make_optimizer", lambda model, s: optimizers.append(
        torch.optim.Adam(model.parameters(), lr=s.lr)) or optimizers[-1])
    rates = []
    model, loss_fn = _ramp_model([float("inf")])
    train_batched(model, lambda s: None, loss_fn, settings, max_steps=100, on_step=lambda step, l, b: rates.append(
        optimizers[0].param_groups[0]["lr"]), until_certified=lambda h, n: torch.zeros(1, dtype=torch.bool))
    # on_step(step) sees the rate of the next step
    assert rates == pytest.approx([settings.lr * lr_factor(step + 1, settings) for step in range(100)], rel=1e-12)
    assert set(rates[settings.steps - 1:]) == {settings.lr * beyond[0]}


class _Killed(Exception):
    pass


def _aot_run(path, kill_at=None):
    """Fresh objects each call, as a restarted job builds them; the kill comes from next_batch."""
    seeds = [0, 1, 2]
    _, sample = make_block(8, 128, 5)
    model = AoTStack(seeds, [1, 3, 2], n_tokens=8, d=5, d_head=3, layout="shared")
    gens = generators(seeds, offset=3)
    shuffle = EpochShuffler(sample, 48, gens)  # 3 batches an epoch: checkpoints fall mid-epoch
    settings = TrainSettings(steps=24, lr=0.01, optimizer="adam", schedule="linear", schedule_every=3,
                             final_lr_fraction=0.05, schedule_span=8, foreach=True)

    def next_batch(step):
        if step == kill_at:
            raise _Killed
        return shuffle(step)

    out = train_batched(model, next_batch, lambda net, b: per_model_cross_entropy(net(b), b[..., 2]), settings,
                        on_step=lambda step, l, b: torch.tensor([False, step >= 15, False]),
                        checkpoint=None if path is None else Checkpoint(path, every=5, generators=gens,
                                                                        stateful=[shuffle]))
    return [p.detach().clone() for p in model.parameters()], out


def test_run_resumed_from_checkpoint_is_bitwise_one_run(tmp_path):
    """Killed at step 22 (last save at step 20: mid-epoch, after model 1 froze at step 15), resumed with the
    same checkpoint by fresh objects: parameters, loss history and model_steps are bitwise one run's."""
    torch.manual_seed(0)
    one, one_out = _aot_run(None)
    path = tmp_path / "sub" / "aot.ckpt"
    with pytest.raises(_Killed):
        _aot_run(path, kill_at=22)
    assert path.exists() and not list(path.parent.glob("*.tmp"))
    torch.manual_seed(999)  # a restarted job's global RNG is not the killed one's
    resumed, out = _aot_run(path)
    assert all(torch.equal(a, b) for a, b in zip(one, resumed))
    assert torch.equal(one_out["model_loss_history"], out["model_loss_history"])
    assert one_out["model_steps"] == out["model_steps"] == [24, 16, 24] and out["steps_run"] == 24
    assert not path.exists()  # finished normally: the checkpoint is gone


def test_killed_mid_continuation_resumes_exactly(tmp_path):
    """A continued run (frozen models, extended limit, global-RNG noise) killed beyond its budget resumes
    from its last checkpoint and ends bitwise as the uninterrupted run; other settings are refused."""
    walls = [1.0, 5.0, float("inf")]

    def run(path, kill_at=None, settings=_RAMP):
        model, loss_fn = _ramp_model(walls, noise=True)

        def next_batch(step):
            if step == kill_at:
                raise _Killed
        out = train_batched(model, next_batch, loss_fn, settings, until_certified=plateau_certified(settings),
                            max_steps=150, checkpoint=None if path is None else Checkpoint(path, every=7))
        return model.w.detach().clone(), out

    torch.manual_seed(3)
    w_one, one = run(None)
    path = tmp_path / "ramp.ckpt"
    torch.manual_seed(3)
    with pytest.raises(_Killed):
        run(path, kill_at=110)
    with pytest.raises(ValueError, match="other settings"):
        run(path, settings=TrainSettings(steps=50, lr=0.2, optimizer="adam"))
    torch.manual_seed(4)
    w, out = run(path)
    assert torch.equal(w_one, w) and torch.equal(one["model_loss_history"], out["model_loss_history"])
    assert one["model_steps"] == out["model_steps"] and one["model_steps"][0] == 50 and 50 < one["model_steps"][1]
    assert out["capped"] == one["capped"] == [False, False, True] and not path.exists()
