"""Claim 2: task generators, the batched AoT stack against a naive per-model loop, verdicts, config."""
import copy
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from attncap.claims import INCONCLUSIVE, NOT_REPRODUCED, PARTIALLY, REPRODUCED
from attncap.claims import aot_memorization as claim
from attncap.config import ConfigError, validate_config
from attncap.experiments.aot_memorization import job_parts, stacks
from attncap.models.aot_memorization import AoTStack
from attncap.tasks.aot_memorization import (EpochShuffler, accuracy_bound, all_pairs, associations_from_accuracy,
                                            make_block)


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
def runs(experiment, rows, n=50, steps=4096):
    """Synthetic run rows: (d, d_head, heads, acc) → full result columns, three seeds each."""
    out = []
    for d, d_head, heads, acc, *rest in rows:
        model, layout, width = (rest + ["aot", "shared", 0])[:3] if rest else ("aot", "shared", 0)
        for seed in range(3):
            out.append({"model": model, "layout": layout, "N": n, "d": d, "d_head": d_head, "heads": heads,
                        "mlp_width": width, "seed": seed, "steps": steps, "acc_running": acc, "acc_table": acc,
                        "X_running": associations_from_accuracy(acc, n),
                        "X_table": round(acc * n * n), "bound_X": heads * d_head + d,
                        "params_nonembedding": 4 * d_head**2 * heads + 2 * d * width + width,
                        "final_loss": 1.0, "loss_drop_last10": 0.01})
    return pd.DataFrame(out)


def linear_a1(slope_per_dim=lambda d: 2e-4 * d**2.5):
    return runs("A1", [(d, d, h, 0.02 + slope_per_dim(d) * h) for d in (5, 6, 7, 8) for h in (1, 6, 11, 16, 21)])


def test_linear_in_heads_and_gain():
    good = linear_a1()
    assert claim.linear_in_heads(good).verdict == REPRODUCED
    assert claim.per_head_gain(good).verdict == REPRODUCED
    assert claim.slope_exponent(good).verdict == REPRODUCED
    curved = runs("A1", [(d, d, h, 0.02 + 0.0004 * h**3 / 21**2) for d in (5, 6, 7) for h in (1, 6, 11, 16, 21)])
    flat = runs("A1", [(d, d, h, 0.03 + 1e-5 * h) for d in (5, 6, 7) for h in (1, 6, 11, 16, 21)])
    assert claim.linear_in_heads(curved.assign(acc_running=np.sqrt(curved["acc_running"]))).verdict == NOT_REPRODUCED
    assert claim.per_head_gain(flat).verdict == NOT_REPRODUCED
    assert claim.slope_exponent(linear_a1(lambda d: 1e-3 * d**0.5)).verdict == NOT_REPRODUCED
    assert claim.linear_in_heads(runs("A1", [(5, 5, h, 0.1 * h) for h in (1, 2)])).verdict == INCONCLUSIVE
    assert claim.linear_in_heads(linear_a1().query("d <= 6")).verdict == INCONCLUSIVE  # two d values only


def test_above_bound():
    assert claim.above_bound(linear_a1()).verdict == REPRODUCED
    low = runs("A1", [(9, 9, h, 0.021) for h in (1, 6, 11, 21)])  # X ≈ 2.5 < H·d_h + d
    assert claim.above_bound(low).verdict == NOT_REPRODUCED
    assert claim.above_bound(pd.concat([linear_a1(), low])).verdict == PARTIALLY
    assert claim.above_bound(None).verdict == INCONCLUSIVE


def test_head_dim_scaling():
    quad = runs("A2", [(10, h, 20, 0.05 + 0.008 * h**2) for h in (1, 2, 4, 6, 8, 10)])
    lin = runs("A2", [(10, h, 20, 0.05 + 0.08 * h) for h in (1, 2, 4, 6, 8, 10)])
    assert claim.head_dim_scaling(quad).verdict == REPRODUCED
    assert claim.head_dim_scaling(lin).verdict == NOT_REPRODUCED
    assert claim.head_dim_scaling(quad.iloc[:9]).verdict == INCONCLUSIVE  # 3 points only


def test_two_regimes():
    kinked = runs("A3", [(d, 10, 20, 0.1 + 0.08 * min(d, 10) + 0.002 * max(d - 10, 0)) for d in (5, 7, 9, 10, 11, 13, 15)])
    straight = runs("A3", [(d, 10, 20, 0.1 + 0.03 * d) for d in (5, 7, 9, 10, 11, 13, 15)])
    assert claim.two_regimes(kinked).verdict == REPRODUCED
    assert claim.two_regimes(straight).verdict == NOT_REPRODUCED
    assert claim.two_regimes(None).verdict == INCONCLUSIVE


def test_d2_checks():
    n = 10
    good = runs("A6", [(2, 2, h, float(accuracy_bound(1.4 * 2 * h + 8, n))) for h in (1, 5, 9, 13, 17, 21)], n=n)
    bad = runs("A6", [(2, 2, h, float(accuracy_bound(2 * h, n))) for h in (1, 5, 9, 13, 17, 21)], n=n)
    assert claim.d2_bound(good).verdict == REPRODUCED
    assert claim.d2_bound(bad).verdict == NOT_REPRODUCED
    assert claim.d2_slope(good).verdict == REPRODUCED
    assert claim.d2_slope(bad).verdict == NOT_REPRODUCED


def test_aot_vs_mlp():
    def a5(aot_slope, mlp_slope):
        rows = [(10, 10, h, 0.02 + aot_slope * h, "aot", "shared", 0) for h in (1, 6, 11, 16)]
        rows += [(10, 10, 1, 0.02 + mlp_slope * h, "mlp", "shared", 20 * (h - 1)) for h in (1, 6, 11, 16)]
        return runs("A5", rows, n=70, steps=16384)
    assert claim.aot_linear_in_parameters(a5(0.01, 0.005)).verdict == REPRODUCED
    assert claim.aot_vs_mlp(a5(0.01, 0.005)).verdict == REPRODUCED
    assert claim.aot_vs_mlp(a5(0.005, 0.01)).verdict == NOT_REPRODUCED
    curved = a5(0.01, 0.005)
    curved.loc[curved["model"] == "aot", "acc_running"] **= 0.3
    assert claim.aot_linear_in_parameters(curved).verdict == NOT_REPRODUCED


def test_published_match():
    rows = [(d, d, h, acc) for d, table in claim.PUBLISHED_A1.items() for h, acc in table.items()]
    exact = runs("A1", rows)
    assert claim.published_match(exact, None).verdict == REPRODUCED
    assert claim.published_match(exact.assign(acc_running=exact["acc_running"] + 0.05), None).verdict == NOT_REPRODUCED
    assert claim.published_match(runs("A1", [(5, 5, 1, 0.1)]), None).verdict == INCONCLUSIVE


def test_short_training_is_inconclusive():
    tables = {"A1": linear_a1().assign(steps=16)}
    by_id = {c.id: c.verdict for c in claim.checks(tables)}
    assert set(by_id.values()) == {INCONCLUSIVE}


def test_learning_certificate_gates_trained_checks():
    good = linear_a1()
    learned = {c.id: c for c in claim.checks({"A1": good})}
    assert learned["linear_in_H"].verdict == REPRODUCED and learned["linear_in_H"].precondition
    # a learned run still fails on the claim itself
    flat = runs("A1", [(d, d, h, 0.03 + 1e-5 * h) for d in (5, 6, 7) for h in (1, 6, 11, 16, 21)])
    assert {c.id: c for c in claim.checks({"A1": flat})}["per_head_gain"].verdict == NOT_REPRODUCED
    # diverged: every trained check is withheld, with the reason
    diverged = good.assign(final_loss=np.where(good["heads"] == 6, np.nan, 1.0))
    gated = {c.id: c for c in claim.checks({"A1": diverged})}
    for check_id in ("above_bound", "linear_in_H", "per_head_gain", "slope_exponent"):
        assert gated[check_id].verdict == INCONCLUSIVE and "diverged" in gated[check_id].reason
    # loss still falling: shape laws withheld; a lower bound that passes stands, one that fails is withheld
    moving = good.assign(loss_drop_last10=0.2)
    gated = {c.id: c for c in claim.checks({"A1": moving})}
    assert gated["linear_in_H"].verdict == INCONCLUSIVE and "not plateaued" in gated["linear_in_H"].reason
    assert gated["above_bound"].verdict == REPRODUCED
    low = runs("A1", [(9, 9, h, 0.021) for h in (1, 6, 11, 16, 21)]).assign(loss_drop_last10=0.2)
    assert {c.id: c for c in claim.checks({"A1": low})}["above_bound"].verdict == INCONCLUSIVE
    # saturated runs (accuracy ≥ 0.95) need no plateau: they cannot store more
    saturated = good.assign(acc_running=0.99, loss_drop_last10=0.3)
    assert "not plateaued" not in {c.id: c for c in claim.checks({"A1": saturated})}["linear_in_H"].reason


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
