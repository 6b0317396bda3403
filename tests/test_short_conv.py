"""Claim 1's E5 machinery: the short causal convolution shared by every mixer, and per-model early stopping
with the learning certificate in the MQAR rows."""
import math

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from attncap.experiments import retrieval_capacity as rc_exp
from attncap.experiments.context import RunContext
from attncap.models.lm import BatchedLM
from attncap.models.mixers import padded_short_convolution, short_convolution


@pytest.mark.parametrize("width", [1, 2, 4, 9])
def test_short_convolution_is_a_causal_depthwise_conv1d_per_model(width):
    g = torch.Generator().manual_seed(width)
    x, w = torch.randn(3, 2, 7, 5, generator=g, dtype=torch.float64), torch.randn(3, 5, width, generator=g, dtype=torch.float64)
    out = short_convolution(x, w)
    for m in range(3):
        ref = F.conv1d(x[m].transpose(1, 2), w[m][:, None, :], padding=width - 1, groups=5)[..., :7].transpose(1, 2)
        torch.testing.assert_close(out[m], ref, rtol=1e-12, atol=1e-12)
    later = x.clone()
    later[:, :, 4:] += 1.0  # changing positions ≥ 4 leaves the outputs before 4 unchanged
    torch.testing.assert_close(short_convolution(later, w)[:, :, :4], out[:, :, :4], rtol=0, atol=0)


@pytest.mark.parametrize("shape, width", [((9, 4, 16, 24), 4), ((3, 2, 7, 5), 9), ((2, 3, 2, 6), 4), ((2, 3, 7, 5), 1),
                                          ((2, 2, 3, 5, 6), 3)])
def test_the_in_place_convolution_gives_the_padded_forms_numbers_bit_for_bit(shape, width):
    """short_convolution's own backward (no padded copies) against the padded form autograd differentiates: the
    output, the gradient reaching the op before it (summed from every tap) and the filter's gradient are equal
    bit for bit in float32, so E5's numbers do not move with it; gradcheck confirms the backward in float64."""
    def run(conv):
        g = torch.Generator().manual_seed(sum(shape) + width)
        leaf = torch.randn(*shape, generator=g, requires_grad=True)
        mix = torch.randn(shape[-1], shape[-1], generator=g) / math.sqrt(shape[-1])
        w = torch.randn(shape[0], shape[-1], width, generator=g, requires_grad=True)
        out = conv(leaf @ mix, w)  # x made by an op, as in a block: the taps' gradients are summed into it
        (out * torch.randn(out.shape, generator=g)).sum().backward()
        return out.detach(), leaf.grad, w.grad

    for fast, plain in zip(run(short_convolution), run(padded_short_convolution)):
        assert torch.equal(fast, plain)
    x = torch.randn(2, 3, 5, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 4, min(width, 4), dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(short_convolution, (x, w))


def _lm(**kw):
    return BatchedLM([3, 5, 7, 9], ["softmax", "softmax", "linear_elu", "linear_elu"], vocab=32, d_model=16,
                     n_layers=2, max_len=16, **kw)


def test_models_without_the_convolution_keep_their_init_and_numbers():
    tokens = torch.randint(0, 32, (4, 2, 12), generator=torch.Generator().manual_seed(0))
    plain = _lm()
    assert not any("conv" in name for name in plain.state_dict())
    mixed = _lm(short_conv=4, conv_models=[False, True, False, True])
    for name, value in plain.state_dict().items():
        assert torch.equal(value, mixed.state_dict()[name]), name
    a, b = plain(tokens), mixed(tokens)
    assert torch.equal(a[0], b[0]) and torch.equal(a[2], b[2])
    assert not torch.allclose(a[1], b[1])


@pytest.mark.parametrize("place", ["input", "qkv"])
def test_convolution_trains_only_where_it_is_used(place):
    tokens = torch.randint(0, 32, (4, 2, 12), generator=torch.Generator().manual_seed(1))
    model = _lm(short_conv=3, short_conv_on=place, conv_models=[True, False, True, False])
    model(tokens).square().mean().backward()
    grad = model.blocks[0].conv.weight.grad
    assert grad.shape == (4, 16 if place == "input" else 48, 3)
    assert grad[0].abs().sum() > 0 and grad[1].abs().sum() == 0 and grad[3].abs().sum() == 0


def test_tied_embeddings_score_with_the_token_table():
    model = _lm(tie_embeddings=True)
    assert not hasattr(model, "unembed")
    assert model(torch.zeros(4, 1, 5, dtype=torch.long)).shape == (4, 1, 5, 32)


SPEC = {"vocab": 32, "seq_len": 16, "kv_pairs": [2, 4], "d_model": [16], "mixers": ["softmax", "linear_elu"],
        "layers": 1, "heads": 1, "seeds": [0], "steps": 30, "batch": 8, "lr": 0.003, "weight_decay": 0.1,
        "warmup_steps": 2, "eval_batches": 1, "curriculum": True, "positional": "learned", "short_conv": [True, False],
        "short_conv_width": 4, "short_conv_on": "qkv", "mlp_ratio": 0, "tie_embeddings": True,
        "target_accuracy": 0.99, "eval_every": 5, "check_batches": 1, "plateau_steps": 10, "plateau_delta": 0.01}


def _run(**changes):
    context = RunContext.create(claim="retrieval_capacity", experiment="E5", part="d16", device="cpu")
    return rc_exp.mqar(SPEC | changes, context)


def test_every_model_stops_when_solved_and_rows_carry_the_certificate():
    rows = _run(target_accuracy=0.0)  # every model "solves" at the first check
    assert len(rows) == 8 and set(rows["short_conv"]) == {0, 4}
    assert (rows["steps_run"] == 5).all() and (rows["stop_reason"] == "solved").all()
    assert (rows["steps"] == 5).all()  # the loop ends once every model is done
    for column in ("final_train_loss", "loss_curve", "train_accuracy", "status", "accuracy_trace", "loss_trace"):
        assert column in rows
    assert rows["final_train_loss"].map(math.isfinite).all()


def test_plateau_and_step_limit_are_told_apart():
    # any gain < 1 counts as a plateau: the loss is read on two windows of plateau_steps, so the first stop is
    # after two windows and one check (5 + 2·10 steps)
    rows = _run(plateau_delta=1.0)
    assert (rows["stop_reason"] == "plateau").all() and (rows["steps_run"] == 25).all()
    rows = _run(plateau_steps=1000)  # no plateau possible within 30 steps, nothing solves at 0.99
    assert set(rows["stop_reason"]) <= {"max_steps", "solved"} and (rows["steps_run"] <= 30).all()


def test_runs_on_the_copy_plateau_are_restarted_and_the_others_are_untouched():
    once = _run(plateau_delta=1.0)  # every model stops on a plateau after 15 steps, most at chance
    again = _run(plateau_delta=1.0, restarts=2)
    chance = 1.5 / once["kv_pairs"]
    stuck = (once["accuracy"] < chance).to_numpy()
    assert stuck.any() and (once["attempt"] == 1).all()
    # a run off the plateau is the same run, number for number; one on it is trained again from a fresh draw
    kept = ["accuracy", "final_train_loss", "steps_run", "model_seed", "accuracy_trace"]
    pd.testing.assert_frame_equal(once.loc[~stuck, kept], again.loc[~stuck, kept])
    assert (again.loc[stuck, "attempt"] > 1).all() and (again.loc[stuck, "model_seed"] != once.loc[stuck, "model_seed"]).all()
    for _, row in again[stuck].iterrows():
        earlier = [float(a) for a in str(row["earlier_accuracies"]).split()]
        assert len(earlier) == row["attempt"] - 1 and all(a < 1.5 / row["kv_pairs"] for a in earlier)
        # it stopped restarting because it left the plateau, or because the attempts ran out
        assert row["accuracy"] >= 1.5 / row["kv_pairs"] or row["attempt"] == 3
    assert (again["attempt"] == 1).sum() == (~stuck).sum()


def test_a_diverged_model_is_stopped_and_recorded_as_diverged():
    configs, model_seeds = rc_exp.mqar_grid(SPEC, "d16")
    model = rc_exp.mqar_model(SPEC, configs, model_seeds)
    check = [tuple(rc_exp.mqar_batch_stack(SPEC, configs, [torch.Generator().manual_seed(i) for i in range(8)], 4))]
    monitor = rc_exp.MqarMonitor(model, check, SPEC, steps=30)
    losses = torch.ones(8)
    losses[3] = math.nan
    done = monitor(0, losses, None)
    assert done.tolist() == [i == 3 for i in range(8)] and monitor.reason[3] == "diverged"
    from attncap.claims import DIVERGED, learning_status

    assert learning_status(math.nan, 0.0) == DIVERGED


def test_a_flat_accuracy_with_a_falling_loss_is_not_a_plateau():
    """The copy-a-value plateau: check accuracy flat at 1/kv while the loss still falls (the recall circuit is
    forming); the monitor keeps training until the loss has stopped falling too (claims.still_moving)."""
    spec = dict(SPEC, eval_every=10, plateau_steps=20, plateau_delta=0.01, target_accuracy=0.99)
    model = rc_exp.mqar_model(spec, *rc_exp.mqar_grid(spec, "d16"))
    monitor = rc_exp.MqarMonitor(model, [], spec, steps=200)
    monitor.check_accuracy = lambda: torch.full((len(monitor.done),), 0.25)

    def run(loss_at):
        for step in range(60):
            monitor(step, torch.full((len(monitor.done),), loss_at(step)), None)
        return monitor.reason[0]

    assert run(lambda step: 3.0 * 0.99 ** step) == "max_steps"  # falls ~18% per 20 steps: still moving
    monitor = rc_exp.MqarMonitor(model, [], spec, steps=200)
    monitor.check_accuracy = lambda: torch.full((len(monitor.done),), 0.25)
    assert run(lambda step: 2.8) == "plateau"


def test_the_loss_must_read_flat_on_two_windows():
    """One flat pair of window losses is not enough: the monitor looks every eval_every steps, so a pair can
    look flat by chance while the loss still falls. A loss that fell until one window ago and is flat since
    is not settled yet; flat for two windows, it is."""
    spec = dict(SPEC, eval_every=10, plateau_steps=20, plateau_delta=0.01, target_accuracy=0.99)
    model = rc_exp.mqar_model(spec, *rc_exp.mqar_grid(spec, "d16"))

    def stop_step(loss_at, steps=80):
        monitor = rc_exp.MqarMonitor(model, [], spec, steps=200)
        monitor.check_accuracy = lambda: torch.full((len(monitor.done),), 0.25)
        for step in range(steps):
            monitor(step, torch.full((len(monitor.done),), loss_at(step)), None)
        return monitor.stop_step[0] if monitor.reason[0] == "plateau" else None

    falling_then_flat = lambda step: 3.0 * 0.98 ** min(step, 40)  # noqa: E731, flat from step 40 on
    # each check's loss is the mean of the 10 steps before it. At step 70 the last pair (50, 70) is flat, which
    # one read would take, but the pair before (30, 50) fell; at 80 that pair, (40, 60), still fell 8%; at 90
    # both pairs are flat
    assert stop_step(falling_then_flat, steps=100) == 90
    assert stop_step(lambda step: 2.8) == 50  # flat from the start: the first check with two windows behind it


def test_a_mixer_may_have_its_own_rate_but_one_job_has_one():
    spec = dict(SPEC, lr=0.01, lr_by_mixer={"linear_elu": 0.003})
    assert rc_exp.mqar_lr(spec, ["softmax", "softmax"]) == 0.01
    assert rc_exp.mqar_lr(spec, ["linear_elu"]) == 0.003
    with pytest.raises(ValueError, match="different rates"):
        rc_exp.mqar_lr(spec, ["softmax", "linear_elu"])


def test_a_run_still_improving_at_the_budget_is_continued_and_the_others_are_unchanged():
    """E5's continuation: with continue_cap, a run at the step limit goes on at continue_lr of the peak rate up
    to the cap; runs settled within the budget are the same bit for bit (the in-budget schedule is unchanged),
    and every row states the cap it ran under."""
    plain = _run(steps=50, plateau_steps=20)
    onward = _run(steps=50, plateau_steps=20, continue_cap=3, continue_lr=0.1)
    assert (plain["step_cap"] == 50).all() and (onward["step_cap"] == 150).all()
    settled = plain["stop_reason"] != "max_steps"
    assert settled.any() and (~settled).any()  # this grid has both kinds at 50 steps
    columns = ["stop_reason", "steps_run", "accuracy", "final_train_loss", "accuracy_trace", "loss_trace"]
    assert plain.loc[settled, columns].equals(onward.loc[settled, columns])
    assert (onward.loc[~settled, "steps_run"] > 50).all() and (onward["steps_run"] <= 150).all()
    assert (onward.loc[~settled, "steps_run"] % 5 == 0).all()  # judged at the monitor's checks, every 5 steps
    at_cap = onward["stop_reason"] == "max_steps"
    assert (onward.loc[at_cap, "steps_run"] == 150).all()


@pytest.mark.parametrize("mixers", [["softmax", "linear_elu"], ["deltanet_02", "deltaformer_linear"]])
def test_dropping_stopped_models_from_the_axis_changes_no_number(monkeypatch, mixers):
    """E5 drops a stopped model from the model axis (train_batched(narrow=...)) instead of holding it there:
    every row, traces included, is the same as with the models held, with models stopping at different
    steps, in and beyond the budget, with and without the convolution, for each kind of mixer."""
    changes = dict(mixers=mixers, steps=50, plateau_steps=20, continue_cap=3, continue_lr=0.1)
    real, widths = rc_exp.train_batched, []

    def counting(*args, narrow, **kwargs):  # records how many models each narrowing leaves
        return real(*args, narrow=lambda rows: (widths.append(len(rows)), narrow(rows)), **kwargs)

    monkeypatch.setattr(rc_exp, "train_batched", counting)
    dropped = _run(**changes)
    assert len(set(widths[:-1])) > 1 and widths[-1] == len(dropped)  # narrowed in steps, then restored
    monkeypatch.setattr(rc_exp, "train_batched", lambda *args, narrow=None, **kwargs: real(*args, **kwargs))
    held = _run(**changes)
    assert dropped["steps_run"].nunique() > 2  # models stop at different steps
    columns = [c for c in held if not c.endswith("time_s")]
    pd.testing.assert_frame_equal(dropped[columns], held[columns])


def test_every_model_may_train_on_the_largest_kv_mix(monkeypatch):
    """curriculum_kv: largest trains every model on the mix of the grid's largest kv (evaluated at its own kv);
    the default trains each on its own kv's mix. Rows say which."""
    drawn = []
    original = rc_exp.mqar_curriculum_batch

    def recording(generator, batch, seq_len, vocab, kv):
        drawn.append(kv)
        return original(generator, batch, seq_len, vocab, kv)

    monkeypatch.setattr(rc_exp, "mqar_curriculum_batch", recording)
    own = _run(steps=5, plateau_steps=1000)
    assert set(drawn) == {2, 4} and (own["train_kv_max"] == own["kv_pairs"]).all()
    drawn.clear()
    largest = _run(steps=5, plateau_steps=1000, curriculum_kv="largest")
    assert set(drawn) == {4} and (largest["train_kv_max"] == 4).all()
    assert set(largest["kv_pairs"]) == {2, 4}  # still evaluated at each model's own kv
    problems = rc_exp.check_config({"E5": dict(SPEC, curriculum=False, curriculum_kv="largest")})
    assert any("curriculum_kv" in p for p in problems)


def test_a_run_stuck_below_a_kv_its_own_mixer_solved_is_restarted(monkeypatch):
    """A plateau short of solving, where the same mixer, arm and width solved more pairs, is an optimisation
    plateau (more pairs need at least as much memory): it is trained again from a fresh draw. Below the largest
    solved kv only; a run failing the largest kv anyone solved, or a kv nobody solved, is its capacity."""
    calls = []

    def attempt(spec, context, desc, configs, model_seeds):
        calls.append([(c[0], c[2], c[3]) for c in configs])
        rows = []
        for (mixer, width, kv, seed, d_model), model_seed in zip(configs, model_seeds):
            first = len(calls) == 1
            stuck = first and mixer == "softmax" and width and kv == 2  # stuck at 0.8 while kv = 4 solves
            solved = mixer == "softmax" and width
            rows.append({"mixer": mixer, "short_conv": 4 if width else 0, "kv_pairs": kv, "d_model": d_model,
                         "seed": seed, "model_seed": model_seed, "accuracy": 0.8 if stuck or not solved else 0.995,
                         "stop_reason": "plateau" if stuck or not solved else "solved", "wall_time_s": 1.0,
                         "eval_time_s": 0.1})
        return rows

    monkeypatch.setattr(rc_exp, "_mqar_attempt", attempt)
    rows = _run(restarts=2)
    assert calls[1:] == [[("softmax", 2, 0)]]  # only the stuck run went again, once (it then solved)
    again = rows[(rows["mixer"] == "softmax") & (rows["short_conv"] == 4) & (rows["kv_pairs"] == 2)].iloc[0]
    assert again["attempt"] == 2 and again["earlier_accuracies"] == "0.8" and again["stop_reason"] == "solved"
    # 0.8 is above 1.5/kv at both kv (off the copy-a-value plateau); where nobody of the run's arm solved
    # anything (linear_elu, softmax without the convolution) it is that arm's capacity: no restart
    assert (rows["attempt"] > 1).sum() == 1


def test_below_its_own_control_reads_the_arm_and_width():
    from attncap.claims.retrieval_capacity import below_its_own_control
    runs = pd.DataFrame({"mixer": ["m"] * 5 + ["n"], "short_conv": [4, 4, 4, 0, 4, 4], "d_model": [64] * 6,
                         "kv_pairs": [8, 16, 16, 4, 8, 4],
                         "stop_reason": ["plateau", "solved", "plateau", "plateau", "max_steps", "plateau"]})
    # kv 8 below a solved kv 16 of the same arm; kv 16 itself is its capacity; the no-conv arm solved
    # nothing; a run still improving is not stuck; another mixer's solved runs are no control
    assert below_its_own_control(runs).tolist() == [True, False, False, False, False, False]
    assert not below_its_own_control(runs.drop(columns="short_conv").iloc[[3, 5]]).any()
