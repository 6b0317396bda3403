"""Claim 2: task generators, the batched AoT stack against a naive per-model loop, verdicts, config."""
import copy
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from attncap.claims import INCONCLUSIVE, LEARNED, NOT_REPRODUCED, PARTIALLY, REPRODUCED, STILL_MOVING
from attncap.claims import aot_memorization as claim
from attncap.config import ConfigError, validate_config
from attncap.experiments.aot_memorization import job_parts, stacks
from attncap.models.aot_memorization import AoTStack
from attncap.tasks.aot_memorization import EpochShuffler, all_pairs, make_block
from attncap.theory import accuracy_bound, associations_from_accuracy
from attncap.train import TrainSettings, tail_lr_fraction


# ------------------------------------------------------------------------------ task ---------
def test_block_is_seeded_and_consistent():
    table, sample = make_block(7, 500, 3)
    again, sample_again = make_block(7, 500, 3)
    assert torch.equal(table, again) and torch.equal(sample, sample_again)
    assert table.shape == (7, 7) and sample.shape == (500, 3)
    assert int(table.min()) >= 0 and int(table.max()) < 7
    assert torch.equal(sample[:, 2], table[sample[:, 0], sample[:, 1]])
    pairs = all_pairs(table)
    assert pairs.shape == (49, 3) and torch.equal(pairs[:, 2], table[pairs[:, 0], pairs[:, 1]])
    assert len({tuple(p) for p in pairs[:, :2].tolist()}) == 49


def test_shuffler_visits_every_sequence_once_per_epoch():
    sample = torch.arange(10).unsqueeze(1).repeat(1, 3)
    shuffle = EpochShuffler(sample, 4, [torch.Generator().manual_seed(s) for s in (0, 1)])
    assert shuffle.batches_per_epoch == 3
    for epoch in range(2):
        seen = torch.cat([shuffle(epoch * 3 + b)[:, :, 0] for b in range(3)], dim=1)
        for m in range(2):
            assert sorted(seen[m].tolist()) == list(range(10))
    assert not torch.equal(shuffle(0), shuffle(3))  # reshuffled between epochs


def test_associations_invert_accuracy_closed_form():
    n = 50
    x = np.array([0.0, 17.0, 300.0, 2500.0])
    acc = accuracy_bound(x, n)
    np.testing.assert_allclose(associations_from_accuracy(acc, n), x, rtol=0, atol=1e-9)
    assert math.isclose(accuracy_bound(0, n), 1 / n) and math.isclose(accuracy_bound(10**6, n), 1.0)


# ----------------------------------------------------------------------------- model ---------
def naive_logits(model: AoTStack, tokens: torch.Tensor) -> torch.Tensor:
    """The same network written with explicit loops over models, examples and heads (float64)."""
    dh = model.d_head
    out = torch.zeros(model.n_models, tokens.shape[1], model.n_tokens, dtype=torch.float64)
    for m in range(model.n_models):
        E, P, U = model.embed.weight[m], model.position.weight[m], model.unembed.weight[m]
        for b in range(tokens.shape[1]):
            t1, t2 = tokens[m, b, 0], tokens[m, b, 1]
            xs = [E[t1] + P[0], E[t2] + P[1]]
            if model.project:
                xs = [model.down.weight[m] @ x for x in xs]
            update = torch.zeros(model.out_proj.shape[2], dtype=torch.float64)
            for j in range(model.heads[m]):
                W = model.in_proj[m, j]
                q = W[:dh] @ xs[1]
                ks = [W[dh:2 * dh] @ x for x in xs]
                vs = [W[2 * dh:] @ x for x in xs]
                scores = torch.stack([q @ k for k in ks]) / math.sqrt(dh)
                a = torch.exp(scores - scores.max())
                a = a / a.sum()
                update = update + model.out_proj[m, j] @ (a[0] * vs[0] + a[1] * vs[1])
            if model.project:
                update = model.up.weight[m] @ update
            r = E[t2] + update
            w = model.widths[m]
            if w:
                hidden = F.gelu(model.mlp_in[m, :w] @ r + model.mlp_bias[m, :w])
                r = r + model.mlp_out[m, :, :w] @ hidden
            out[m, b] = U @ r
    return out


@pytest.mark.parametrize("layout,d,d_head,heads,widths", [
    ("shared", 4, 4, [1, 3, 2], None),
    ("shared", 5, 3, [2, 1, 3], None),  # shared down/up projections
    ("shared", 3, 5, [2, 2, 1], None),  # d < d_h: the shared map goes up
    ("per_head", 5, 3, [1, 2, 3], None),
    ("shared", 4, 4, [1, 1, 1], [0, 5, 8]),  # one head + MLP baseline
])
def test_stack_matches_naive_loop(layout, d, d_head, heads, widths):
    model = AoTStack([0, 1, 2], heads, n_tokens=6, d=d, d_head=d_head, layout=layout, mlp_widths=widths).double()
    tokens = torch.randint(0, 6, (3, 5, 3), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(model(tokens), naive_logits(model, tokens), rtol=1e-12, atol=1e-12)


def test_init_depends_only_on_own_seed_and_shape():
    a = AoTStack([4, 9], [3, 1], n_tokens=6, d=4, d_head=4)
    b = AoTStack([9], [1], n_tokens=6, d=4, d_head=4)
    torch.testing.assert_close(a.embed.weight[1], b.embed.weight[0], rtol=0, atol=0)
    torch.testing.assert_close(a.in_proj[1, :1], b.in_proj[0], rtol=0, atol=0)


def test_parameter_counts_equal_at_matched_mlp_width():
    d, h = 6, 5
    aot = AoTStack([0], [h], n_tokens=6, d=d, d_head=d).parameter_counts()[0]
    mlp = AoTStack([0], [1], n_tokens=6, d=d, d_head=d, mlp_widths=[2 * d * (h - 1)]).parameter_counts()[0]
    assert aot["params_attention"] == 4 * d * d * h
    w = 2 * d * (h - 1)
    assert mlp["params_attention"] + mlp["params_mlp"] - w == aot["params_attention"]  # equal up to the MLP bias
    trainable = sum(p.numel() for p in AoTStack([0], [h], n_tokens=6, d=d, d_head=d).parameters())
    assert trainable == aot["params_attention"] + aot["params_embedding"]


def test_parts_cover_every_stack_once(smoke_config):
    for exp, spec in smoke_config["aot_memorization"].items():
        for group in (True, False):
            spec = {**spec, "group_heads": group, "jobs": 3}
            dealt = [s for part in job_parts(exp, spec).values() for s in part]
            assert sorted(map(repr, dealt)) == sorted(map(repr, stacks(exp, spec)))
            models = sum(len(s.seeds) for s in dealt)
            per_config = len(spec["seeds"])
            assert models % per_config == 0


# -------------------------------------------------------------------------- verdicts ---------
# Noise of the synthetic tables: the seed s.d. of one run's running accuracy measured at the default
# protocol (64 epochs; config/config.yaml), A1 N = 50, d = 8, H = 1 / 11 / 21 over 5 seeds: 0.008 / 0.011 /
# 0.006; A6 N = 10, d = 2, H = 5 / 13 over 10 seeds: 0.057 / 0.118 (see PUBLISHED_TOLERANCE). A2, A3 and A5
# (N = 50 / 70, same protocol) are given A1's level.
SD_A1 = 0.01
SD_A6 = 0.08
HEADS = (1, 6, 11, 16, 21)
DIMS = (5, 6, 7, 8, 9, 10)


def runs(experiment, rows, n=50, steps=4096, sd=0.0, seeds=3, rng=0, lr_last10=1.0, loss_drop=0.01):
    """Synthetic run rows: (d, d_head, heads, acc[, model, layout, width]) → full result columns, `seeds`
    runs each, every run's accuracy drawn with s.d. `sd` around acc; certificate columns of a settled run."""
    gen = np.random.default_rng(rng)
    out = []
    for d, d_head, heads, acc, *rest in rows:
        model, layout, width = (rest + ["aot", "shared", 0])[:3] if rest else ("aot", "shared", 0)
        for seed in range(seeds):
            a = float(np.clip(acc + sd * gen.standard_normal(), 1 / n, 1.0))
            out.append({"model": model, "layout": layout, "N": n, "d": d, "d_head": d_head, "heads": heads,
                        "mlp_width": width, "seed": seed, "steps": steps, "acc_running": a, "acc_table": a,
                        "X_running": associations_from_accuracy(a, n),
                        "X_table": round(a * n * n), "X_table_chance_corrected": associations_from_accuracy(a, n),
                        "bound_X": heads * d_head + d,
                        "params_nonembedding": 4 * d_head**2 * heads + 2 * d * width + width,
                        "final_loss": 1.0, "loss_drop_last10": loss_drop, "lr_last10": lr_last10})
    return pd.DataFrame(out)


def slope_law(d, exponent=2.5):
    return 2e-4 * d**exponent * 5**(2.5 - exponent)  # per-head accuracy slope; equal at d = 5 for any exponent


def linear_a1(slope=slope_law, sd=0.0, rng=0, dims=DIMS, seeds=3):
    """Intercept 0.07: the published A1 lines (d = 6 / 8 / 10) meet H = 0 at 0.07–0.09."""
    return runs("A1", [(d, d, h, 0.07 + slope(d) * h) for d in dims for h in HEADS], sd=sd, rng=rng, seeds=seeds)


def sqrt_a1(sd=SD_A1, rng=0):
    """The rival of linear_in_H: the same accuracy at H = 1 and H = 21, growing like √H in between."""
    rows = []
    for d in DIMS:
        lo, hi = 0.07 + slope_law(d), 0.07 + slope_law(d) * 21
        rows += [(d, d, h, lo + (hi - lo) * (math.sqrt(h) - 1) / (math.sqrt(21) - 1)) for h in HEADS]
    return runs("A1", rows, sd=sd, rng=rng)


def square_a1(sd=SD_A1, rng=0):
    """The superlinear rival: the same accuracy at H = 1 and H = 21, growing like H² in between (the audit: the √H
    comparison alone gave the linear law Akaike weight 0.9996 on such a table)."""
    rows = []
    for d in DIMS:
        lo, hi = 0.07 + slope_law(d), 0.07 + slope_law(d) * 21
        rows += [(d, d, h, lo + (hi - lo) * (h**2 - 1) / (21**2 - 1)) for h in HEADS]
    return runs("A1", rows, sd=sd, rng=rng)


def gain_a1(per_head, sd=SD_A1, rng=0, seeds=3):
    """A1 whose heads add `per_head(d_h)` associations each (X = d + per_head·H)."""
    return runs("A1", [(d, d, h, float(accuracy_bound(d + per_head(d) * h, 50))) for d in DIMS for h in HEADS],
                sd=sd, rng=rng, seeds=seeds)


def a2_table(law, sd=SD_A1, rng=0):
    return runs("A2", [(10, h, 20, law(h)) for h in (1, 2, 4, 6, 8, 10)], sd=sd, rng=rng)


def a3_table(law, sd=SD_A1, rng=0):
    return runs("A3", [(d, 10, 20, law(d)) for d in (5, 7, 9, 10, 11, 13, 15)], sd=sd, rng=rng)


def a6_table(associations, sd=SD_A6, rng=0):
    return runs("A6", [(2, 2, h, float(accuracy_bound(associations(h), 10))) for h in (1, 5, 9, 13, 17, 21)],
                n=10, sd=sd, seeds=20, rng=rng)


def a5_table(aot, mlp, sd=SD_A1, rng=0):
    """AoT with H heads (accuracy aot(H)) and one head + MLP of the same budget (accuracy mlp(H)), 2 seeds."""
    rows = [(10, 10, h, aot(h), "aot", "shared", 0) for h in (1, 6, 11, 16)]
    rows += [(10, 10, 1, mlp(h), "mlp", "shared", 20 * (h - 1)) for h in (1, 6, 11, 16)]
    return runs("A5", rows, n=70, steps=16384, sd=sd, seeds=2, rng=rng)


def verdict(check, table, *args):
    return check(table, *args).verdict


RNGS = (0, 1, 2)  # each falsification case is drawn three times: the decision must not hang on one draw


@pytest.mark.parametrize("rng", RNGS)
def test_linear_in_heads_beats_sqrt(rng):
    assert verdict(claim.linear_in_heads, linear_a1(sd=SD_A1, rng=rng)) == REPRODUCED
    assert verdict(claim.linear_in_heads, sqrt_a1(rng=rng)) == NOT_REPRODUCED
    assert verdict(claim.linear_in_heads, square_a1(rng=rng)) == NOT_REPRODUCED


def test_linear_in_heads_edges():
    flat = linear_a1(slope=lambda d: -1e-3)  # a falling line is no growth
    assert claim.linear_in_heads(flat.assign(acc_running=flat["acc_running"] + 0.5)).verdict == NOT_REPRODUCED
    assert claim.linear_in_heads(runs("A1", [(5, 5, h, 0.1 * h) for h in (1, 2)])).verdict == INCONCLUSIVE
    check = claim.linear_in_heads(linear_a1(sd=SD_A1, dims=(5, 6)))  # two d values only
    assert check.verdict == INCONCLUSIVE and check.reason.startswith("not resolved")


@pytest.mark.parametrize("rng", RNGS)
def test_per_head_gain_against_the_bound_slope(rng):
    assert verdict(claim.per_head_gain, linear_a1(sd=SD_A1, rng=rng)) == REPRODUCED
    assert verdict(claim.per_head_gain, gain_a1(lambda dh: 3 * dh, rng=rng)) == REPRODUCED
    assert verdict(claim.per_head_gain, gain_a1(lambda dh: 0.5 * dh, rng=rng)) == NOT_REPRODUCED


@pytest.mark.parametrize("rng", RNGS)
def test_slope_exponent_beats_the_linear_gain(rng):
    assert verdict(claim.slope_exponent, linear_a1(sd=SD_A1, rng=rng)) == REPRODUCED
    rival = linear_a1(slope=lambda d: slope_law(d, 1.0), sd=SD_A1, rng=rng)  # per-head gain ∝ d_h
    assert verdict(claim.slope_exponent, rival) == NOT_REPRODUCED


@pytest.mark.parametrize("rng", RNGS)
def test_above_bound(rng):
    assert verdict(claim.above_bound, linear_a1(sd=SD_A1, rng=rng)) == REPRODUCED
    # X = d + 0.25·d_h·H < H·d_h + d. 'Violated' is read family-wise over every interval (Bonferroni, 2 per
    # configuration), which 3 seeds (t with 2 degrees of freedom) often cannot resolve and 6 (the default tier's) do
    below = gain_a1(lambda dh: 0.25 * dh, rng=rng, seeds=6)
    assert verdict(claim.above_bound, below) == NOT_REPRODUCED
    mixed = pd.concat([linear_a1(sd=SD_A1, rng=rng, seeds=6),
                       below.assign(d=below["d"] + 10, d_head=below["d_head"] + 10)])
    assert verdict(claim.above_bound, mixed) == NOT_REPRODUCED  # one resolved violation refutes "at every configuration"
    assert claim.above_bound(None).verdict == INCONCLUSIVE


def test_above_bound_uses_chance_corrected_table_count():
    chance = runs("A1", [(5, 5, h, 1 / 50 + 1e-4 * h) for h in HEADS], sd=0.002)
    chance["X_table"] = 50  # a model at chance still gets ≈ N² / N = 50 pairs right
    assert claim.above_bound(chance).verdict == NOT_REPRODUCED


@pytest.mark.parametrize("rng", RNGS)
def test_head_dim_scaling_quadratic_vs_linear(rng):
    assert verdict(claim.head_dim_scaling, a2_table(lambda h: 0.05 + 0.008 * h**2, rng=rng)) == REPRODUCED
    assert verdict(claim.head_dim_scaling, a2_table(lambda h: 0.05 + 0.08 * h, rng=rng)) == NOT_REPRODUCED
    three = runs("A2", [(10, h, 20, 0.05 + 0.008 * h**2) for h in (1, 2, 4)])
    assert claim.head_dim_scaling(three).verdict == INCONCLUSIVE  # 3 values of d_h only


@pytest.mark.parametrize("rng", RNGS)
def test_two_regimes_vs_one_line(rng):
    kinked = a3_table(lambda d: 0.1 + 0.08 * min(d, 10) + 0.002 * max(d - 10, 0), rng=rng)
    assert verdict(claim.two_regimes, kinked) == REPRODUCED
    assert verdict(claim.two_regimes, a3_table(lambda d: 0.1 + 0.03 * d, rng=rng)) == NOT_REPRODUCED
    mild = a3_table(lambda d: 0.1 + 0.04 * min(d, 10) + 0.02 * max(d - 10, 0), rng=rng)  # flattens 2×, not 5×
    assert verdict(claim.two_regimes, mild) == NOT_REPRODUCED
    assert claim.two_regimes(None).verdict == INCONCLUSIVE


@pytest.mark.parametrize("rng", RNGS)
def test_d2_checks(rng):
    good = a6_table(lambda h: 1.4 * 2 * h + 8, rng=rng)
    assert claim.d2_bound(good).verdict == REPRODUCED
    assert claim.d2_slope(good).verdict == REPRODUCED
    below = a6_table(lambda h: 0.7 * (2 * h + 2), rng=rng)  # under the bound at every H
    assert claim.d2_bound(below).verdict == NOT_REPRODUCED
    at_bound_slope = a6_table(lambda h: 2 * h + 12, rng=rng)  # above the bound, but gains only d_h per head
    assert claim.d2_bound(at_bound_slope).verdict == REPRODUCED
    assert claim.d2_slope(at_bound_slope).verdict == NOT_REPRODUCED


def test_d2_bound_rival_side_errs_at_most_its_rate_over_the_h_values():
    """Accuracy exactly at φ(2H + 2) at all 6 H: 'violated' (any one H below) must come out in ≤ 2.5% of draws,
    family-wise (measured 2.0% of 400; 9.8% with each H read at 95% alone, which this test refuses)."""
    draws = 400
    violated = sum(claim.d2_bound(a6_table(lambda h: 2 * h + 2, rng=seed)).verdict == NOT_REPRODUCED
                   for seed in range(draws))
    assert violated / draws <= 0.035  # 0.025 plus about one binomial SD of the estimate


# A law just outside a claimed range (by about one interval half-width at the default tier's noise) puts the point
# estimate inside the range in more draws than the check's stated error rate allows (review: d2_slope_ratio read 11
# of 200 tables drawn at ratio 1.70 "reproduced" on its point estimate). Only an interval wholly inside the range
# may decide "reproduced": each side of a 95% interval errs ≤ 2.5%, the rate the tolerance states.
OUTSIDE_DRAWS = 200


def refuses_outside(check, table, estimate):
    """(draws read 'reproduced', draws whose point estimate lies in the range) over OUTSIDE_DRAWS tables."""
    got = [check(table(rng)) for rng in range(OUTSIDE_DRAWS)]
    return sum(c.verdict == REPRODUCED for c in got), sum(estimate(c.measured) for c in got)


def test_in_range_decides_on_the_whole_interval():
    from attncap.claims.laws import CLAIMED, NOT_RESOLVED, RIVAL, Exponent

    def estimate(slope, low, high):
        return Exponent(slope, low, high, 0.0, 1.0, 10, 0.95)
    assert claim.in_range(estimate(1.4, 1.25, 1.55), (1.2, 1.6), 1.0) == CLAIMED
    assert claim.in_range(estimate(1.59, 1.45, 1.74), (1.2, 1.6), 1.0) == NOT_RESOLVED  # the point alone is inside
    assert claim.in_range(estimate(1.21, 0.95, 1.47), (1.2, 1.6), 1.0) == NOT_RESOLVED
    assert claim.in_range(estimate(1.7, 1.62, 1.78), (1.2, 1.6), 1.0) == RIVAL
    assert claim.in_range(estimate(1.0, 0.9, 1.1), (1.2, 1.6), 1.0) == RIVAL
    assert claim.in_range(estimate(1.0, 0.9, 1.1), (0.5, 1.5), 1.0) == NOT_RESOLVED  # a rival inside the range
    assert claim.in_range(estimate(math.nan, -math.inf, math.inf), (1.2, 1.6), 1.0) == NOT_RESOLVED


@pytest.mark.parametrize("ratio", (1.12, 1.70))  # D2_SLOPE_RANGE = (1.2, 1.6)
def test_d2_slope_refuses_a_ratio_just_outside_the_range(ratio):
    lo, hi = claim.D2_SLOPE_RANGE
    false, inside = refuses_outside(claim.d2_slope, lambda rng: a6_table(lambda h: ratio * 2 * h + 8, rng=rng),
                                    lambda m: lo <= m["ratio_to_bound"] <= hi)
    allowed = (1 - claim.LEVEL) / 2 * OUTSIDE_DRAWS
    assert inside > allowed  # a rule on the point estimate would fail here
    assert false <= allowed


@pytest.mark.parametrize("exponent, scale", [(1.45, 1.0), (3.6, 0.25)])  # EXPONENT_RANGE = (1.5, 3.5)
def test_slope_exponent_refuses_an_exponent_just_outside_the_range(exponent, scale):
    """At 3.6 the per-head slope is scaled down so that d = 10 stays unsaturated (0.07 + 21·0.034 = 0.78)."""
    lo, hi = claim.EXPONENT_RANGE
    false, inside = refuses_outside(
        claim.slope_exponent, lambda rng: linear_a1(slope=lambda d: scale * slope_law(d, exponent), sd=SD_A1, rng=rng),
        lambda m: lo <= m["slope"] <= hi)
    allowed = (1 - claim.LEVEL) / 2 * OUTSIDE_DRAWS
    assert inside > allowed
    assert false <= allowed


@pytest.mark.parametrize("rng", RNGS)
def test_aot_linear_in_parameters_vs_sqrt(rng):
    linear = a5_table(lambda h: 0.02 + 0.03 * h, lambda h: 0.02 + 0.01 * h, rng=rng)
    assert verdict(claim.aot_linear_in_parameters, linear) == REPRODUCED
    lo, hi = 0.05, 0.5
    sqrt = a5_table(lambda h: lo + (hi - lo) * (math.sqrt(h) - 1) / 3, lambda h: 0.02 + 0.01 * h, rng=rng)
    assert verdict(claim.aot_linear_in_parameters, sqrt) == NOT_REPRODUCED
    # superlinear growth (0.05 → 0.69 over H = 1..16, quadratic in the parameters) lies nearer a line than √params:
    # the √ comparison alone reads it 'reproduced'; the nested quadratic rival refuses it
    square = a5_table(lambda h: 0.05 + 0.0025 * h * h, lambda h: 0.02 + 0.01 * h, rng=rng)
    assert claim.heads_law(claim.unsaturated(square[square["model"] == "aot"]), "params_nonembedding").preferred == "claimed"
    assert verdict(claim.aot_linear_in_parameters, square) == NOT_REPRODUCED


@pytest.mark.parametrize("rng", RNGS)
def test_aot_vs_mlp(rng):
    ahead = a5_table(lambda h: 0.02 + 0.03 * h, lambda h: 0.02 + 0.02 * h, rng=rng)
    assert verdict(claim.aot_vs_mlp, ahead) == REPRODUCED
    # the authors' (and our default tier's) numbers: the MLP ahead at H = 6 / 11 / 16
    measured = {1: (0.05, 0.05), 6: (0.152, 0.235), 11: (0.225, 0.382), 16: (0.303, 0.458)}
    behind = a5_table(lambda h: measured[h][0], lambda h: measured[h][1], rng=rng)
    assert verdict(claim.aot_vs_mlp, behind) == NOT_REPRODUCED


@pytest.mark.parametrize("rng", RNGS)
def test_an_mlp_still_learning_can_only_widen_its_lead(rng):
    """The MLP ahead while its runs are still learning: 'not reproduced' stands (more training raises the MLP).
    The AoT ahead with the MLP still learning, or an AoT run still learning, stays withheld: that side could
    still move against the decision."""
    measured = {1: (0.05, 0.05), 6: (0.152, 0.235), 11: (0.225, 0.382), 16: (0.303, 0.458)}
    behind = a5_table(lambda h: measured[h][0], lambda h: measured[h][1], rng=rng)
    good = behind.assign(loss_drop_last10=0.003)
    mlp_moving = good.assign(loss_drop_last10=np.where(good["model"] == "mlp", 0.2, 0.003))
    result = claim.mlp_ahead_stands(mlp_moving)
    assert result.verdict == NOT_REPRODUCED and "can only widen its lead" in result.reason
    aot_moving = good.assign(loss_drop_last10=np.where(good["model"] == "aot", 0.2, 0.003))
    assert claim.mlp_ahead_stands(aot_moving).verdict == INCONCLUSIVE
    ahead = a5_table(lambda h: 0.02 + 0.03 * h, lambda h: 0.02 + 0.02 * h, rng=rng)
    ahead = ahead.assign(loss_drop_last10=np.where(ahead["model"] == "mlp", 0.2, 0.003))
    assert claim.mlp_ahead_stands(ahead).verdict == INCONCLUSIVE
    assert claim.mlp_ahead_stands(good).verdict == NOT_REPRODUCED  # all certified: the plain decision


def test_an_mlp_whose_loss_rose_is_no_lower_bound():
    """Review of claim 2: an MLP run that fails its certificate because its loss *rose* has not settled and is no
    lower bound on the MLP, so 'not reproduced' does not stand on it (a loss still falling does)."""
    measured = {1: (0.05, 0.05), 6: (0.152, 0.235), 11: (0.225, 0.382), 16: (0.303, 0.458)}
    behind = a5_table(lambda h: measured[h][0], lambda h: measured[h][1], rng=0)
    rose = behind.assign(loss_drop_last10=np.where(behind["model"] == "mlp", -0.2, 0.003))
    assert claim.mlp_ahead_stands(rose).verdict == INCONCLUSIVE
    fell = behind.assign(loss_drop_last10=np.where(behind["model"] == "mlp", 0.2, 0.003))
    assert claim.mlp_ahead_stands(fell).verdict == NOT_REPRODUCED


def test_aot_vs_mlp_reads_its_rival_family_wise():
    """A tie at every budget (the sentence 'at least as well' true): one budget with the MLP ahead at 95% decided
    'not reproduced' in 8% of draws; its side is read at 1 − 0.05/budgets (≤ 2.5% per check, 1.5 standard errors
    of the Monte Carlo allowed)."""
    draws = 200
    wrong = sum(claim.aot_vs_mlp(a5_table(lambda h: 0.02 + 0.03 * h, lambda h: 0.02 + 0.03 * h, rng=r)).verdict
                in (NOT_REPRODUCED, PARTIALLY) for r in range(draws))
    assert wrong / draws <= 0.025 + 1.5 * math.sqrt(0.025 * 0.975 / draws)


def test_aot_vs_mlp_inside_the_seed_spread_is_not_resolved():
    tie = a5_table(lambda h: 0.02 + 0.03 * h, lambda h: 0.02 + 0.03 * h + 0.002, sd=0.02)
    check = claim.aot_vs_mlp(tie)
    assert check.verdict == INCONCLUSIVE and "not resolved" in check.reason


@pytest.mark.parametrize("rng", RNGS)
def test_published_match(rng):
    rows = [(d, d, h, acc) for d, table in claim.PUBLISHED_A1.items() for h, acc in table.items()]
    a6 = runs("A6", [(2, 2, h, acc) for h, acc in claim.PUBLISHED_A6.items()], n=10, sd=SD_A6, seeds=20, rng=rng)
    exact = runs("A1", rows, sd=SD_A1, rng=rng)
    assert claim.published_match(exact, a6).verdict == REPRODUCED
    # a different model: accuracies off by more than the tolerance everywhere
    off = exact.assign(acc_running=exact["acc_running"] + 0.05)
    assert claim.published_match(off, a6.assign(acc_running=a6["acc_running"] - 0.15)).verdict == NOT_REPRODUCED
    assert claim.published_match(runs("A1", [(5, 5, 1, 0.1)]), None).verdict == INCONCLUSIVE


def test_short_training_is_inconclusive():
    tables = {"A1": linear_a1(sd=SD_A1).assign(steps=16)}
    assert {c.verdict for c in claim.checks(tables)} == {INCONCLUSIVE}


def test_missing_certificate_columns_are_never_invented():
    tables = {"A1": linear_a1(sd=SD_A1).drop(columns=["lr_last10"])}
    gated = {c.id: c for c in claim.checks(tables)}
    assert gated["linear_in_H"].verdict == INCONCLUSIVE and "missing" in gated["linear_in_H"].reason
    assert gated["above_bound"].verdict == INCONCLUSIVE  # a lower bound too: a missing certificate is not soft


def test_learning_certificate_gates_trained_checks():
    good = linear_a1(sd=SD_A1)
    learned = {c.id: c for c in claim.checks({"A1": good})}
    assert learned["linear_in_H"].verdict == REPRODUCED and learned["linear_in_H"].precondition
    # a learned run still fails on the claim itself
    assert {c.id: c for c in claim.checks({"A1": gain_a1(lambda dh: 0.5 * dh)})}["per_head_gain"].verdict == NOT_REPRODUCED
    # diverged: every trained check is withheld, with the reason
    diverged = good.assign(final_loss=np.where(good["heads"] == 6, np.nan, 1.0))
    gated = {c.id: c for c in claim.checks({"A1": diverged})}
    for check_id in ("above_bound", "linear_in_H", "per_head_gain", "slope_exponent"):
        assert gated[check_id].verdict == INCONCLUSIVE and "diverged" in gated[check_id].reason
    # loss still falling: shape laws and the per-head slope withheld; a lower bound that passes stands,
    # one that fails is withheld
    moving = good.assign(loss_drop_last10=0.2)
    gated = {c.id: c for c in claim.checks({"A1": moving})}
    for check_id in ("linear_in_H", "per_head_gain", "slope_exponent"):
        assert gated[check_id].verdict == INCONCLUSIVE and "not settled" in gated[check_id].reason
    assert gated["above_bound"].verdict == REPRODUCED and "passes although" in gated["above_bound"].reason
    low = gain_a1(lambda dh: 0.5 * dh).assign(loss_drop_last10=0.2)
    assert {c.id: c for c in claim.checks({"A1": low})}["above_bound"].verdict == INCONCLUSIVE
    # saturated runs (accuracy ≥ 0.95) need no plateau: they cannot store more
    saturated = good.assign(acc_running=0.99, loss_drop_last10=0.3)
    assert "not settled" not in {c.id: c for c in claim.checks({"A1": saturated})}["linear_in_H"].reason


@pytest.mark.parametrize("rng", RNGS)
def test_a_certified_violation_of_the_bound_stands_beside_moving_runs(rng):
    """Review of claim 2: a configuration resolved below the bound on certified runs was withheld because an
    unrelated configuration was still moving. Training the moving one more can only raise its X, so the violation
    stands; a violation whose own runs are moving is withheld (more training could lift it over the bound)."""
    below = gain_a1(lambda dh: 0.25 * dh, rng=rng, seeds=6)  # X = d + 0.25·d_h·H, below H·d_h + d
    above = linear_a1(sd=SD_A1, rng=rng, seeds=6).assign(d=lambda f: f["d"] + 10, d_head=lambda f: f["d_head"] + 10)
    moving_above = pd.concat([below, above.assign(loss_drop_last10=0.2)], ignore_index=True)
    check = {c.id: c for c in claim.checks({"A1": moving_above})}["above_bound"]
    assert check.verdict == NOT_REPRODUCED and "stands" in check.reason and "not settled" in check.reason
    moving_below = pd.concat([below.assign(loss_drop_last10=0.2), above], ignore_index=True)
    assert {c.id: c for c in claim.checks({"A1": moving_below})}["above_bound"].verdict == INCONCLUSIVE
    # the same for d = 2 (A6): a certified H under φ(2H + 2) beside a moving H
    a6 = a6_table(lambda h: 0.7 * (2 * h + 2) if h == 21 else 1.4 * 2 * h + 8, rng=rng)
    a6 = a6.assign(loss_drop_last10=np.where(a6["heads"] == 5, 0.2, 0.01))
    d2 = {c.id: c for c in claim.checks({"A6": a6})}["d2_bound"]
    assert d2.verdict == NOT_REPRODUCED and "stands" in d2.reason
    a6 = a6.assign(loss_drop_last10=np.where(a6["heads"] == 21, 0.2, 0.01))
    assert {c.id: c for c in claim.checks({"A6": a6})}["d2_bound"].verdict == INCONCLUSIVE


def test_decayed_schedule_cannot_fake_a_plateau():
    """The issue's case: loss falling 30% per tenth at full rate shows ≈ 3% under claim 2's linear decay to 5%
    (lr_last10 ≈ 0.097): under 5% raw, but 30% per unit of learning rate, so still moving. Judged per run:
    one moving seed withholds its configuration."""
    good = linear_a1(sd=SD_A1)
    decayed = good.assign(loss_drop_last10=0.03, lr_last10=0.097)
    assert {c.id: c for c in claim.checks({"A1": decayed})}["linear_in_H"].verdict == INCONCLUSIVE
    assert {c.id: c for c in claim.checks({"A1": good.assign(loss_drop_last10=0.003, lr_last10=0.097)})}[
        "linear_in_H"].verdict == REPRODUCED
    one_seed = good.assign(loss_drop_last10=np.where((good["seed"] == 1) & (good["d"] == 7), 0.03, 0.003),
                           lr_last10=0.097)
    check = {c.id: c for c in claim.checks({"A1": one_seed})}["linear_in_H"]
    # d = 7 (all five of its configurations) is withheld; the other d decide
    assert check.verdict == REPRODUCED and "seed=1" in check.reason and "5 withheld" in check.reason
    assert "d=7" in check.reason and check.measured["withheld_configurations"] == 5
    # the per-run status column is the same rule
    status = [claim.run_status(r.final_loss, r.acc_running, r.loss_drop_last10, r.lr_last10)
              for r in one_seed.itertuples()]
    assert list(claim.certified(one_seed)) == [s == LEARNED for s in status]
    assert sum(s == STILL_MOVING for s in status) == (one_seed["loss_drop_last10"] == 0.03).sum()


def test_experiment_writes_lr_last10_and_a_status_that_agrees(smoke_config):
    from attncap.experiments.aot_memorization import train_stack

    spec = {**smoke_config["aot_memorization"]["A6"], "epochs": 2}
    table, sample = make_block(spec["N"], spec["n_sequences"], 0)
    stack = stacks("A6", spec)[0]
    frame = train_stack(stack, spec, table, sample)
    settings = TrainSettings(steps=8, lr=spec["lr"], schedule="linear", schedule_every=4,
                             final_lr_fraction=spec["final_lr"] / spec["lr"], schedule_span=2)
    expected_lr = tail_lr_fraction(settings, 8)
    protocol = frame[frame["arm"] == claim.PROTOCOL_ARM]
    assert np.allclose(protocol["lr_last10"], expected_lr) and 0 < expected_lr < 1
    converged = frame[frame["arm"] == claim.CONVERGED_ARM]
    assert list(converged["lr_last10"]) == [tail_lr_fraction(settings, n) for n in converged["steps_run"]]
    assert list(frame["status"]) == [claim.run_status(r.final_loss, r.acc_running, r.loss_drop_last10, r.lr_last10)
                                     for r in frame.itertuples()]


# ------------------------------------------------------------------- converged arm ---------
CONTINUED_SPEC = {"epochs": 4, "continue_cap": 2}  # smoke A6: 16-step budget; settled, continued and capped runs


def _a6_stack(smoke_config, **override):
    spec = {**smoke_config["aot_memorization"]["A6"], **CONTINUED_SPEC, **override}
    table, sample = make_block(spec["N"], spec["n_sequences"], 0, 0)
    return stacks("A6", spec)[-1], spec, table, sample


def test_converged_arm_leaves_the_protocol_arm_bitwise_unchanged(smoke_config):
    """One training serves both arms: continuing the uncertified models after the budget changes nothing
    the protocol arm reads (running accuracy, loss, full-table accuracy at the budget, certificate), bit for
    bit; a run stopped at the budget (continue_cap = 1) gives the same protocol rows, and converged rows
    equal to them."""
    from attncap.experiments.aot_memorization import train_stack

    stack, spec, table, sample = _a6_stack(smoke_config)
    continued = train_stack(stack, spec, table, sample)
    stopped = train_stack(stack, {**spec, "continue_cap": 1}, table, sample)
    arms = {name: {arm: f[f["arm"] == arm].reset_index(drop=True) for arm in ("protocol", "converged")}
            for name, f in (("continued", continued), ("stopped", stopped))}
    same = [c for c in continued.columns if c not in ("wall_time_s", "cap_steps")]
    pd.testing.assert_frame_equal(arms["continued"]["protocol"][same], arms["stopped"]["protocol"][same],
                                  check_exact=True)
    assert (arms["stopped"]["converged"]["continued_steps"] == 0).all()
    pd.testing.assert_frame_equal(arms["stopped"]["converged"][same].drop(columns="arm"),
                                  arms["stopped"]["protocol"][same].drop(columns="arm"), check_exact=True)
    conv, prot = arms["continued"]["converged"], arms["continued"]["protocol"]
    moved = conv["continued_steps"] > 0
    assert moved.any() and (~moved).any() and conv["capped"].any() and (moved & ~conv["capped"]).any(), \
        "the case must have runs settled at the budget, continued until settled, and capped"
    # a run certified at the budget is frozen there: its converged row is its protocol row
    keep = [c for c in same if c != "arm"]
    pd.testing.assert_frame_equal(conv.loc[~moved, keep], prot.loc[~moved, keep], check_exact=True)
    assert (conv["steps_run"] == conv["steps"] + conv["continued_steps"]).all()
    assert (conv["steps_run"] <= 2 * conv["steps"]).all() and (conv["cap_steps"] == 2 * conv["steps"]).all()
    # continuation stops on the claim's own certificate: every continued run that did not reach the cap is
    # certified by the rule of its status column (and of the checks' gate)
    assert (conv.loc[moved & ~conv["capped"], "status"] == LEARNED).all()
    assert (conv.loc[conv["capped"], "steps_run"] == conv.loc[conv["capped"], "cap_steps"]).all()
    assert (prot.loc[moved, "status"] != LEARNED).all()  # only runs uncertified at the budget go on
    # deterministic: the same config gives the same numbers
    again = train_stack(stack, spec, table, sample)
    pd.testing.assert_frame_equal(again[same], continued[same], check_exact=True)


def test_budget_study_trains_every_model_to_the_cap_and_reads_each_budget(smoke_config):
    """`certify=False` (scripts/budget_drift.py) trains every model to the cap with the in-budget steps of the
    pipeline's run; the history it returns holds every step's accuracy and loss; the script's reading at the
    budget is the protocol row (running accuracy, loss change, certificate), and the step it says the rule first
    certifies a run is the converged arm's own stopping step."""
    import importlib.util
    import pathlib

    from attncap.experiments.aot_memorization import train_stack

    stack, spec, table, sample = _a6_stack(smoke_config)
    history: dict = {}
    forced = train_stack(stack, spec, table, sample, certify=False, history=history)
    usual = train_stack(stack, spec, table, sample)
    budget, cap = int(forced["steps"].iloc[0]), int(forced["cap_steps"].iloc[0])
    conv = forced[forced["arm"] == "converged"]
    assert (conv["steps_run"] == cap).all() and conv["capped"].all()
    assert history["accuracies"].shape == history["losses"].shape == (cap, len(stack.seeds))
    same = [c for c in forced.columns if c not in ("wall_time_s",)]
    pd.testing.assert_frame_equal(forced[forced["arm"] == "protocol"][same].reset_index(drop=True),
                                  usual[usual["arm"] == "protocol"][same].reset_index(drop=True), check_exact=True)
    path = pathlib.Path(__file__).parents[1] / "scripts" / "budget_drift.py"
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location("budget_drift", path))
    module.__spec__.loader.exec_module(module)
    read = module.readings(forced, history, spec, [1.0, 2.0])
    at_budget = read[read["budget_multiple"] == 1.0].reset_index(drop=True)
    protocol = usual[usual["arm"] == "protocol"].reset_index(drop=True)
    for column in ("acc_running", "loss_drop_last10", "lr_last10"):
        assert at_budget[column].tolist() == pytest.approx(protocol[column].tolist(), rel=1e-9), column
    assert at_budget["status"].tolist() == protocol["status"].tolist()
    stopped = usual[usual["arm"] == "converged"].reset_index(drop=True)
    assert stopped["capped"].any() and (~stopped["capped"]).any()  # both branches below are exercised
    for (_, r), (_, s) in zip(at_budget.iterrows(), stopped.iterrows()):
        if s["capped"]:  # never certified within the cap: neither is the forced run, whose steps are the same
            assert pd.isna(r["certified_at_step"])
        else:
            assert r["certified_at_step"] == s["steps_run"]


def two_arms(protocol: pd.DataFrame, converged: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([protocol.assign(arm=claim.PROTOCOL_ARM), converged.assign(arm=claim.CONVERGED_ARM)],
                     ignore_index=True)


def test_law_checks_read_the_converged_arm_and_published_match_the_protocol_arm():
    # the protocol arm: the authors' numbers at d = 6, 8, 10 (√H-shaped, the rival, at d = 5, 7, 9), its loss
    # still falling at the budget
    published = runs("A1", [(d, d, h, acc) for d, table in claim.PUBLISHED_A1.items() for h, acc in table.items()],
                     sd=SD_A1)
    rival = sqrt_a1()
    protocol = pd.concat([published, rival[~rival["d"].isin(list(claim.PUBLISHED_A1))]], ignore_index=True)
    protocol = protocol.assign(loss_drop_last10=0.03, lr_last10=0.097)
    # the converged arm: the same runs continued until settled, linear in H, away from the published values
    converged = linear_a1(sd=SD_A1).assign(continued_steps=2000, steps_run=6096, capped=False, cap_steps=16384)
    got = {c.id: c for c in claim.checks({"A1": two_arms(protocol, converged)})}
    for check_id in ("linear_in_H", "per_head_gain", "slope_exponent", "above_bound"):
        assert got[check_id].verdict == REPRODUCED, check_id
    assert got["published_match"].verdict == REPRODUCED  # on the protocol arm, whose loss may still fall
    # the arms swapped: the laws now read the moving √H runs, published_match the converged table
    swapped = {c.id: c for c in claim.checks({"A1": two_arms(converged, protocol)})}
    assert swapped["linear_in_H"].verdict == INCONCLUSIVE and "not settled" in swapped["linear_in_H"].reason
    assert swapped["published_match"].verdict == claim.published_match(converged, None).verdict != REPRODUCED
    # no converged arm at all: the law checks have nothing to decide on
    only_protocol = {c.id: c for c in claim.checks({"A1": protocol.assign(arm=claim.PROTOCOL_ARM)})}
    assert only_protocol["linear_in_H"].verdict == INCONCLUSIVE


def test_runs_that_reach_the_cap_are_named_with_the_cap():
    moving = linear_a1(sd=SD_A1).assign(loss_drop_last10=0.2, steps=4096, steps_run=16384, continued_steps=12288,
                                        cap_steps=16384, capped=(lambda f: f["heads"] == 21))
    check = {c.id: c for c in claim.checks({"A1": two_arms(linear_a1(sd=SD_A1), moving)})}["linear_in_H"]
    assert check.verdict == INCONCLUSIVE
    assert "cap (16384 steps = 4× the 4096-step budget)" in check.reason and "heads=21" in check.reason
    assert "18 run(s)" in check.reason  # 6 d × 3 seeds at H = 21


def test_expected_cells_ask_for_both_arms(smoke_config):
    from attncap.experiments.aot_memorization import expected_cells

    cells = expected_cells(smoke_config["aot_memorization"])
    for stem, rows in cells.items():
        arms = pd.DataFrame(rows)["arm"].value_counts()
        assert set(arms.index) == {"protocol", "converged"} and arms.nunique() == 1, stem


# ---------------------------------------------------------------------------- config ---------
@pytest.fixture
def aot_config(smoke_config):
    config = copy.deepcopy(smoke_config)
    config["claims"] = ["aot_memorization"]
    return config


def test_smoke_config_valid(aot_config):
    validate_config(aot_config)


@pytest.mark.parametrize("experiment,key,value,needle", [
    ("A2", "d_head", [1, 2, 6], "aot_memorization.A2.d_head: d_h=6 > d=4"),
    ("A1", "N", 1, "aot_memorization.A1.N"),
    ("A1", "heads", [0, 2], "aot_memorization.A1.heads[0]"),
    ("A6", "heads", [], "aot_memorization.A6.heads"),
    ("A5", "batch", 1024, "aot_memorization.A5.batch"),
])
def test_bad_shapes_rejected(aot_config, experiment, key, value, needle):
    aot_config["aot_memorization"][experiment][key] = value
    with pytest.raises(ConfigError, match=None) as err:
        validate_config(aot_config)
    assert needle in str(err.value)


def test_per_head_layout_rejects_small_d(aot_config):
    aot_config["aot_memorization"]["A3"]["layouts"] = ["shared", "per_head"]  # d = 2 < d_h = 4
    with pytest.raises(ConfigError) as err:
        validate_config(aot_config)
    assert "aot_memorization.A3.d: d_h=4 > d=2" in str(err.value)


def test_only_checked_layouts_are_continued(smoke_config):
    """The per-head layout is an ablation no check is gated on: it gets no continuation (compute is spent
    where a verdict needs it), so its converged rows are its protocol rows."""
    from attncap.experiments.aot_memorization import train_stack

    spec = {**smoke_config["aot_memorization"]["A2"], **CONTINUED_SPEC}
    table, sample = make_block(spec["N"], spec["n_sequences"], 0, 0)
    stack = next(s for s in stacks("A2", spec) if s.layout == "per_head")
    frame = train_stack(stack, spec, table, sample)
    assert (frame["cap_steps"] == frame["steps"]).all() and (frame["continued_steps"] == 0).all()
    assert not frame["capped"].any()


# --------------------------------------------------------------------------------- resume ---------
class _Killed(Exception):
    pass


def _killed_and_resumed(experiment_id, spec, tmp_path, monkeypatch, kill_stack, kill_step, seed=0):
    """Run the job whole; run it again killed at step `kill_step` of its `kill_stack`-th stack (1-based), then
    once more to resume. Returns the whole table, the resumed table, the files saved at the kill and the
    stacks (by d) the resumed job trained."""
    from attncap.experiments import aot_memorization as experiment
    from attncap.experiments.context import RunContext

    make = lambda scratch: RunContext.create(claim="aot_memorization", experiment=experiment_id, part="all",
                                             seed=seed, scratch=scratch)
    whole = experiment.run(experiment_id, spec, make(None))
    trained, serve, real_train = [], EpochShuffler.__call__, experiment.train_stack

    def counting(stack, *args, **kwargs):
        trained.append(stack.d)
        return real_train(stack, *args, **kwargs)

    def dying(self, step):
        if len(trained) == kill_stack and step == kill_step:
            raise _Killed
        return serve(self, step)

    monkeypatch.setattr(experiment, "train_stack", counting)
    monkeypatch.setattr(EpochShuffler, "__call__", dying)
    scratch = tmp_path / "resume"
    with pytest.raises(_Killed):
        experiment.run(experiment_id, spec, make(scratch))
    saved = sorted(p.suffix for p in scratch.iterdir())
    served = []
    monkeypatch.setattr(EpochShuffler, "__call__", lambda self, step: served.append(step) or serve(self, step))
    trained.clear()
    resumed = experiment.run(experiment_id, spec, make(scratch))
    make(scratch).clear_scratch()
    assert not scratch.exists()
    assert 0 < served[0] <= kill_step  # the killed training went on from its last checkpoint, not from step 0
    return whole, resumed, saved, trained


def test_a_job_killed_mid_continuation_resumes_bitwise(smoke_config, tmp_path, monkeypatch, fixed_revision):
    """Issue 22: a job killed while continuing its runs past the budget resumes from its last checkpoint
    and writes bitwise the table of a job never interrupted."""
    from attncap.experiments.aot_memorization import steps_of

    spec = {**smoke_config["aot_memorization"]["A6"], **CONTINUED_SPEC}
    kill = steps_of(spec) + 5  # 5 steps into the continuation; checkpoints every tenth of the budget
    # block seed 3: runs settled at the budget, continued until settled (2 steps) and to the cap (16)
    whole, resumed, saved, _ = _killed_and_resumed("A6", spec, tmp_path, monkeypatch, kill_stack=1, kill_step=kill,
                                                   seed=3)
    assert saved == [".pt"]
    assert (whole["continued_steps"] > 5).any(), "the case must continue past the kill"
    same = [c for c in whole.columns if c != "wall_time_s"]
    pd.testing.assert_frame_equal(resumed[same], whole[same], check_exact=True)


def test_a_killed_job_does_not_retrain_its_finished_stacks(smoke_config, tmp_path, monkeypatch, fixed_revision):
    spec = smoke_config["aot_memorization"]["A1"]
    whole, resumed, saved, trained = _killed_and_resumed("A1", spec, tmp_path, monkeypatch, kill_stack=2, kill_step=9)
    assert saved == [".pkl", ".pt"]  # the first stack's rows, the second's checkpoint
    assert len(trained) == 1  # only the killed stack is trained again (from its checkpoint)
    same = [c for c in whole.columns if c != "wall_time_s"]
    pd.testing.assert_frame_equal(resumed[same], whole[same], check_exact=True)


def test_shape_laws_withhold_only_the_configurations_with_an_uncertified_run():
    """Issue 22 (the gate withholds only the part that depends on an uncertified model): one still-moving seed
    at d = 8, H = 16 withholds that configuration (every seed of it), and the law is decided on the rest."""
    def moving_at(table):
        return table.assign(loss_drop_last10=np.where((table["d"] == 8) & (table["heads"] == 16)
                                                      & (table["seed"] == 0), 0.2, 0.01))
    for rng in RNGS:
        got = {c.id: c for c in claim.checks({"A1": moving_at(linear_a1(sd=SD_A1, rng=rng))})}
        for check_id in ("linear_in_H", "per_head_gain", "slope_exponent"):
            check = got[check_id]
            assert check.verdict == REPRODUCED, (check_id, check.reason)
            assert "1 withheld" in check.reason and "heads=16" in check.reason and "not settled" in check.reason
            assert check.measured["withheld_configurations"] == 1
        # the runs the figures draw the fits from (certified_part) are exactly those decided on
        table = moving_at(linear_a1(sd=SD_A1, rng=rng))
        part = claim.certified_part(table)
        assert len(part) == len(table) - 3 and not ((part["d"] == 8) & (part["heads"] == 16)).any()
        fit = claim.heads_fits(part)[8]
        assert got["per_head_gain"].measured["d=8"]["associations_per_head"] == fit.gain.slope
        # the rival drawn the same way is refused on the certified part too
        assert {c.id: c for c in claim.checks({"A1": moving_at(sqrt_a1(rng=rng))})}["linear_in_H"].verdict == NOT_REPRODUCED
        slow = moving_at(gain_a1(lambda dh: 0.5 * dh, rng=rng))
        assert {c.id: c for c in claim.checks({"A1": slow})}["per_head_gain"].verdict == NOT_REPRODUCED


def test_dh_quadratic_counts_the_configurations_its_fit_reads():
    """A2 holds the shared layout (the fit) and the per_head ablation (not read): a reason decided on the certified
    part counts the shared configurations the fit reads, and names the ablation's apart."""
    law = lambda h: 0.05 + 0.008 * h**2  # noqa: E731
    table = pd.concat([a2_table(law), runs("A2", [(10, h, 20, law(h), "aot", "per_head", 0) for h in (1, 2, 4, 6, 8, 10)],
                                            sd=SD_A1)], ignore_index=True)
    table = table.assign(loss_drop_last10=np.where((table["layout"] == "shared") & (table["d_head"] >= 8), 0.2, 0.01))
    check = {c.id: c for c in claim.checks({"A2": table})}["dh_quadratic"]
    assert check.verdict == REPRODUCED, check.reason
    assert check.measured["configs"] == 4 and check.measured["withheld_configurations"] == 2
    assert check.reason.startswith("decided on the 4 configurations whose every run is certified; 2 withheld")
    assert check.reason.endswith("not the 6 configurations of the per_head layout (an ablation)")
    # an uncertified ablation run is not read, so it withholds nothing
    ablation = table.assign(loss_drop_last10=np.where(table["layout"] == "per_head", 0.2, 0.01))
    assert {c.id: c for c in claim.checks({"A2": ablation})}["dh_quadratic"].reason == ""


def test_a_configuration_is_withheld_whole_and_an_undecidable_part_stays_inconclusive():
    from attncap.claims import Certificate, Check, gate_certified_part
    table = linear_a1(sd=SD_A1)
    passed = pd.Series(~((table["d"] == 10) & (table["heads"] == 21) & (table["seed"] == 1)), index=table.index)
    seen = []

    def decide(frame):
        seen.append(frame)
        return claim.linear_in_heads(frame)

    failed = Certificate.fail(STILL_MOVING, "loss not settled: one run", ["one run"])
    check = gate_certified_part(decide(table), decide, table, "precondition", failed, passed, claim.KEYS)
    part = seen[-1]
    assert not ((part["d"] == 10) & (part["heads"] == 21)).any()  # all three seeds of it, not only seed 1
    assert len(part) == len(table) - 3 and check.verdict == REPRODUCED and check.precondition == "precondition"
    # every configuration with an uncertified run: nothing left to decide on, the whole check is withheld
    none = gate_certified_part(decide(table), decide, table, "precondition", failed,
                               pd.Series(False, index=table.index), claim.KEYS)
    assert none.verdict == INCONCLUSIVE and none.reason.startswith("loss not settled")
    # a part too small to decide (H = 16 and 21 withheld at every d: 3 H per d) keeps the certificate's reason
    small = pd.Series(table["heads"] < 16, index=table.index)
    kept = gate_certified_part(decide(table), decide, table, "precondition", failed, small, claim.KEYS)
    assert kept.verdict == INCONCLUSIVE and "not settled" in kept.reason and "do not decide it either" in kept.reason
    # a certificate that holds decides on every run, exactly as gate
    assert gate_certified_part(decide(table), decide, table, "p", Certificate(), passed, claim.KEYS).verdict == REPRODUCED
    assert isinstance(check, Check)


def test_a_run_at_chance_is_no_measurement():
    """Review of claim 2: runs stuck at chance (table accuracy 1/N, loss flat) certified as settled and refuted the
    bound, the per-head gain and the AoT. A run storing nothing above chance is the recipe failing to start:
    under-trained, withheld, never 'not reproduced'."""
    chance = runs("A1", [(d, d, h, 1 / 50 + 0.002) for d in DIMS for h in HEADS], sd=0.001, seeds=6)
    assert not claim.certificate(chance).ok and claim.certificate(chance).kind == "under-trained"
    assert not claim.certified(chance).any()
    checks = {c.id: c for c in claim.checks({"A1": chance})}
    for name in ("above_bound", "per_head_gain", "linear_in_H"):
        assert checks[name].verdict == INCONCLUSIVE, (name, checks[name].verdict)
    # the same runs a few binomial SE above chance (N = 50: 50 ± 7 of 2500 pairs) do store something
    assert claim.certified(runs("A1", [(5, 5, 1, 0.05)])).all()
    # at chance beside runs of its kind that store more (the recipe's positive control): a low capacity, counted
    grid = runs("A1", [(5, 5, 1, 1 / 50 + 0.001), (5, 5, 6, 0.06), (5, 5, 11, 0.1)])
    assert claim.certified(grid).all()
