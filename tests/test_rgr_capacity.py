"""Claim 4 (rgr_capacity): data, scorer, search, verdicts and config checks against brute force."""
from __future__ import annotations

import copy
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from sklearn.metrics import f1_score as sk_f1

from attncap.claims import (DIVERGED, INCONCLUSIVE, MISSING, NOT_REPRODUCED, PARTIALLY, REPRODUCED, STILL_MOVING,
                            Certificate)
from attncap.claims import rgr_capacity as claims
from attncap.config import ConfigError, validate_config
from attncap.experiments import rgr_capacity as exp
from attncap.models.rgr_capacity import (ScorerBank, aggregate, balanced_logistic_loss, constructed_weights,
                                         f1_per_model, head_scores)
from attncap.tasks import rgr_capacity as tasks

ROOT = Path(__file__).resolve().parents[1]


# ---- tasks -----------------------------------------------------------------------------------------

def test_embeddings_one_hot_and_unit_norm():
    rng = np.random.default_rng(0)
    assert np.array_equal(tasks.embeddings(8, 8, rng), np.eye(8))
    x = tasks.embeddings(40, 8, rng)
    assert x.shape == (40, 8)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-12)
    with pytest.raises(ValueError):
        tasks.embeddings(4, 8, rng)


def test_graphs_have_the_right_degrees():
    rng = np.random.default_rng(1)
    perm = tasks.permutation_graph(50, rng)
    assert (perm.sum(1) == 1).all() and (perm.sum(0) == 1).all() and not perm.diagonal().any()
    graph = tasks.out_degree_graph(30, 4, rng)
    assert (graph.sum(1) == 4).all() and not graph.diagonal().any()
    assert tasks.n_edges("permutation", 30, 1) == 30 and tasks.n_edges("out_degree", 30, 4) == 120
    with pytest.raises(ValueError):
        tasks.out_degree_graph(5, 5, rng)


def test_contexts_are_distinct_and_hold_targets_about_half_the_time():
    rng = np.random.default_rng(2)
    adj = tasks.permutation_graph(200, rng)
    ctx = tasks.sample_contexts(adj, 16, 400, rng)
    assert ctx.shape == (400, 16)
    assert all(len(set(row)) == 16 for row in ctx)
    present = [adj[np.ix_(row, row)].sum() for row in ctx]
    # 8 sources, each target added with p = 1/2 (a few more by chance): about 4 edges per context
    assert 3.5 < np.mean(present) < 5.0


def test_f1_matches_sklearn_and_brute_force():
    rng = np.random.default_rng(3)
    m = 12
    adj = tasks.out_degree_graph(m, 2, rng)
    scores = rng.standard_normal((m, m)) + 2.0 * adj
    pairs = [(i, j) for i in range(m) for j in range(m) if i != j]
    truth = [adj[i, j] for i, j in pairs]
    pred = [scores[i, j] > 0.7 for i, j in pairs]
    assert tasks.all_pairs_f1(scores, 0.7, adj) == pytest.approx(sk_f1(truth, pred))
    ctx = tasks.sample_contexts(adj, 5, 7, rng)
    tp = fp = fn = 0
    for row in ctx:
        for i, j in itertools.permutations(row, 2):
            p, t = scores[i, j] > 0.7, adj[i, j]
            tp, fp, fn = tp + (p and t), fp + (p and not t), fn + (t and not p)
    assert tasks.context_f1(scores, 0.7, adj, ctx) == pytest.approx(2 * tp / (2 * tp + fp + fn))
    assert tasks.f1_score(0, 0, 0) == 1.0


def test_best_threshold_is_the_brute_force_optimum():
    rng = np.random.default_rng(4)
    m = 10
    adj = tasks.permutation_graph(m, rng)
    scores = np.round(rng.standard_normal((m, m)) + 1.5 * adj, 1)  # ties on purpose
    tau, best = tasks.best_threshold(scores, adj)
    values = np.unique(scores)
    candidates = np.concatenate([[values[0] - 1], (values[:-1] + values[1:]) / 2, [values[-1] + 1]])
    brute = max(tasks.all_pairs_f1(scores, t, adj) for t in candidates)
    assert best == pytest.approx(brute)
    assert tasks.all_pairs_f1(scores, tau, adj) == pytest.approx(best)


# ---- the scorer ------------------------------------------------------------------------------------

def test_head_scores_match_a_naive_loop():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(7, 5, generator=gen, dtype=torch.float64)
    wq = torch.randn(3, 2, 5, generator=gen, dtype=torch.float64)
    wk = torch.randn(3, 2, 5, generator=gen, dtype=torch.float64)
    s = head_scores(x, wq, wk)
    naive = torch.zeros(3, 7, 7, dtype=torch.float64)
    for k, i, j in itertools.product(range(3), range(7), range(7)):
        naive[k, i, j] = torch.dot(wq[k] @ x[i], wk[k] @ x[j])
    torch.testing.assert_close(s, naive)
    torch.testing.assert_close(aggregate(s), naive.max(0).values)
    smooth = aggregate(s, 1e-3)
    torch.testing.assert_close(smooth, naive.max(0).values, atol=1e-2, rtol=0)


def test_head_max_sends_the_gradient_to_the_winning_heads_only():
    """The hard max over heads: its gradient is the upstream gradient at the winning head(s) and 0 elsewhere,
    bit for bit (a tie gives each tied head the whole gradient), in float32 and float64."""
    for dtype in (torch.float32, torch.float64):
        gen = torch.Generator().manual_seed(1)
        s = torch.randn(2, 4, 6, 6, generator=gen, dtype=dtype)
        s[0, 2, 1, 3] = s[0, 1, 1, 3] = s[0, :, 1, 3].max() + 1  # a tie between heads 1 and 2 at one pair
        s.requires_grad_(True)
        upstream = torch.randn(2, 6, 6, generator=gen, dtype=dtype)
        (aggregate(s) * upstream).sum().backward()
        winners = s.detach() == s.detach().amax(1, keepdim=True)
        assert torch.equal(s.grad, torch.where(winners, upstream.unsqueeze(1), torch.zeros((), dtype=dtype)))
        assert winners[0, 1, 1, 3] and winners[0, 2, 1, 3] and s.grad.dtype == dtype


def test_bank_forward_and_loss_match_per_model_computation():
    heads, d_k = [1, 2, 4, 2], [8, 4, 2, 4]
    bank = ScorerBank(heads, d_k, [0, 1, 2, 3], d_model=6).double()
    x = torch.randn(4, 9, 6, dtype=torch.float64)
    out = bank(x)
    adj = torch.zeros(4, 9, 9, dtype=torch.bool)
    adj[:, torch.arange(9), (torch.arange(9) + 1) % 9] = True
    valid = ~torch.eye(9, dtype=torch.bool).expand(4, 9, 9)
    loss = balanced_logistic_loss(out, bank.tau, adj, valid)
    for i in range(4):
        wq, wk, tau = bank.model_weights(i)
        assert wq.shape == (heads[i], d_k[i], 6)
        s = head_scores(x[i], wq, wk).amax(0)
        torch.testing.assert_close(out[i], s)
        margin = s - tau
        pos = [float(torch.nn.functional.softplus(-margin[a, b])) for a in range(9) for b in range(9) if adj[i, a, b]]
        neg = [float(torch.nn.functional.softplus(margin[a, b])) for a in range(9) for b in range(9)
               if a != b and not adj[i, a, b]]
        assert float(loss[i].detach()) == pytest.approx(np.mean(pos) + np.mean(neg))
    f1 = f1_per_model(out, bank.tau, adj, valid)
    for i in range(4):
        assert float(f1[i]) == pytest.approx(tasks.all_pairs_f1(out[i].detach().numpy(), float(bank.tau[i].detach()),
                                                               adj[i].numpy()))


def _spec(**train):
    base = dict(steps=60, lr=0.05, eval_every=10, patience=40, min_delta=0.005, target_f1=0.99,
                temperature=None, pos_weight=1.0, init_scale=0.5)
    base.update(train)
    return dict(heads=[1, 2], seeds=[0, 1], train=base, contexts=dict(sizes=[6], n_contexts=5, p_target=0.5),
                search=dict(start_d_k_total=4, rel_tol=0.25), construct=True)


def test_a_model_trains_the_same_with_or_without_batch_mates():
    cell = dict(m=16, d_model=8, graph="permutation", k=1)
    spec = _spec()
    datas = {s: exp.cell_data(cell, s, spec) for s in (0, 1)}
    together = exp.train_requests(cell, [(1, 4, 0), (2, 4, 1), (2, 8, 0)], spec, datas, "cpu")
    alone = exp.train_requests(cell, [(2, 4, 1)], spec, datas, "cpu")
    for key in ("f1_all", "tau", "steps_run", "f1_ctx6"):
        assert together[1][key] == pytest.approx(alone[0][key], rel=1e-4, abs=1e-6)
    again = exp.train_requests(cell, [(1, 4, 0), (2, 4, 1), (2, 8, 0)], spec, datas, "cpu")
    assert [r["f1_all"] for r in again] == [r["f1_all"] for r in together]


def test_constructed_uncompressed_single_head_is_exact_with_enough_dimensions():
    rng = np.random.default_rng(5)
    x = np.eye(32)
    adj = tasks.permutation_graph(32, rng)
    wq, wk = constructed_weights(x, adj, 1, 512, rng)
    s = head_scores(torch.tensor(x), torch.tensor(wq), torch.tensor(wk)).amax(0).numpy()
    assert tasks.all_pairs_f1(s, 0.5, adj) == 1.0
    np.testing.assert_allclose(s[adj], 1.0, atol=0.3)  # stored pairs ≈ 1, others ≈ 0 ± 1/√d_k
    assert np.abs(s[~adj & ~np.eye(32, dtype=bool)]).max() < 0.5


# ---- the search -----------------------------------------------------------------------------------

@pytest.mark.parametrize("threshold,h,start", [(37, 1, 8), (37, 4, 8), (5, 1, 64), (100, 2, 16)])
def test_search_brackets_a_monotone_threshold(threshold, h, start):
    s = exp.Search(h, 0, start, cap=1024, rel_tol=0.25)
    while not s.finished:
        assert s.next % h == 0
        s.record(s.next, s.next >= threshold)
    assert s.dk_star >= threshold and s.lo < threshold
    assert s.dk_star - s.lo <= max(h, 0.25 * s.lo)


def test_search_is_censored_at_the_cap():
    s = exp.Search(2, 0, 4, cap=32, rel_tol=0.25)
    while not s.finished:
        assert s.next <= 32
        s.record(s.next, False)
    assert math.isnan(s.dk_star) and s.lo == 32


def test_run_search_on_a_synthetic_evaluator():
    spec = _spec()
    spec["heads"], spec["seeds"] = [1, 2, 4], [0, 1]
    cell = dict(m=64, d_model=16, graph="permutation", k=1)

    def evaluate(requests):
        return [dict(h=h, d_k_total=dk, seed=seed, f1_all=float(dk >= 12 * h ** 0.5)) for h, dk, seed in requests]

    evals, stars = exp.run_search(cell, spec, evaluate, "trained")
    result = {(s["h"], s["seed"]): s["dk_star"] for s in stars}
    assert result[(1, 0)] in (12, 13, 14, 15)
    assert 24 <= result[(4, 1)] <= 28
    assert all(not s["censored"] for s in stars)


def test_parts_skip_cells_an_earlier_search_covers():
    base = _spec()
    section = {"R2": dict(base, m=[64, 128], d_model=[16]), "R4": dict(base, d_model=[8, 16], ratio=8),
               "R5": dict(base, d_model=[16])}
    assert exp.parts("R4", section["R4"], section) == ["m64-d8-k0"]
    assert exp.parts("R4", section["R4"]) == ["m64-d8-k0", "m128-d16-k0"]
    section["R4"]["seeds"] = [5]
    assert exp.parts("R4", section["R4"], section) == ["m64-d8-k0", "m128-d16-k0"]
    assert exp.parts("R5", section["R5"], section) == ["m16-d16-k0"]


# ---- verdicts -------------------------------------------------------------------------------------
#
# Falsification: every check reads a table drawn from its claimed law as reproduced and one drawn from
# its rival as not reproduced (or partially). The noise is the level the default tier measures (run of
# main 08627c9, default tier, 2 seeds; measured in this file's session from results/rgr_capacity/runs):
#   * D_K* of one (cell, h, seed): seed spread of log D_K* (bracket middle) within a (cell, h), RMS 0.155;
#     thresholds drawn with SD 0.13 give that spread of bracket middles after the search (0.15-0.17);
#   * the search itself: the pipeline's own `Search` (start 16, rel_tol 0.25, cap h·d_model) brackets
#     every threshold, so the search resolution is the real one;
#   * R1 curves: seed SD of F1 in the transition (0.2 < F1 < 0.98), RMS 0.09 (binomial-shaped here:
#     0.09 at F1 = 0.5, shrinking to 0 at F1 = 0 and 1, as the seeds do at saturation).
# The law fit of that run leaves a residual of 0.37 (log) per cell: a misfit of the claimed law, not a
# replicate noise; with it added per cell neither the claim nor its no-log rival is resolved on the
# default grid (inconclusive, never the wrong verdict: `test_capacity_law_is_never_wrong_at_the_misfit_level`).

SEED_SIGMA = 0.13
F1_SIGMA = 0.09
HEADS = (1, 2, 4, 8, 16)


def _default_cells():
    out = [(m, d, "permutation", 1) for m in (32, 64, 128) for d in (8, 16, 32)]
    out += [(64, d, "out_degree", k) for d in (16, 32) for k in (1, 2, 4)]
    return out + [(256, 32, "permutation", 1)] + [(d, d, "permutation", 1) for d in (64, 128)]


def _paper_cells():
    out = [(m, d, "permutation", 1) for m in (64, 128, 256, 512) for d in (16, 32, 64)]
    out += [(m, d, "out_degree", k) for m in (64, 128, 256, 512) for d in (16, 32, 64) for k in (1, 2, 4)]
    return out + [(64, 8, "permutation", 1)] + [(d, d, "permutation", 1) for d in (32, 128)]


def _simulate(cells, law, profile, seeds=(0, 1), rng=0, heads=HEADS, sigma_seed=SEED_SIGMA, sigma_cell=0.0,
              experiment="R2"):
    """Search rows drawn from `law(m', d_model)` (the best split's D_K*) times `profile(m, d_model, h)` (each
    split's factor over the best; math.inf: the split never passes), with lognormal noise per cell
    (`sigma_cell`) and per (cell, h, seed), bracketed by the pipeline's Search; each search's deciding
    failure is an eval row that stopped on a plateau (certified)."""
    rng = np.random.default_rng(rng)
    rows = []
    for m, d, graph, k in cells:
        m_edges = tasks.n_edges(graph, m, k)
        base = law(m_edges, d) * math.exp(sigma_cell * rng.standard_normal())
        name = exp.cell_name(dict(m=m, d_model=d, graph=graph, k=k))
        for h in heads:
            for seed in seeds:
                threshold = base * profile(m, d, h) * math.exp(sigma_seed * rng.standard_normal())
                search = exp.Search(h, seed, 16, h * d, 0.25)
                while not search.finished:
                    search.record(search.next, search.next >= threshold)
                common = dict(experiment=experiment, kind="trained", cell=name, m=m, d_model=d, graph=graph,
                              out_degree=k, m_edges=m_edges, compression=m / d, law_x=tasks.law_x(m_edges, d), h=h,
                              seed=seed)
                rows.append(dict(common, row_type="dkstar", dk_star=search.dk_star, dk_fail=float(search.lo),
                                 censored=search.hi is None, d_k_cap=h * d))
                rows.append(dict(common, row_type="eval", d_k_total=float(search.lo), f1_all=0.5, stopped="plateau"))
    return pd.DataFrame(rows)


def _best_h_profile(m, d, h):
    """Best split h* ≈ the compression ratio (capped at 32), each factor 2 away from it costs 30 %."""
    best = min(5, max(0, round(math.log2(max(m / d, 1)))))
    return 1 + 0.3 * abs(math.log2(h) - best)


LAW = {"claimed": lambda me, d: 0.35 * me * math.log(me) / d, "no_log": lambda me, d: 1.4 * me / d,
       "no_d_model": lambda me, d: 0.1 * me, "square": lambda me, d: 0.02 * (me * math.log(me) / d) ** 2}


def _law_verdict(law, cells=None, rng=0, seeds=(0, 1, 2, 3, 4), **kw):
    table = _simulate(_paper_cells() if cells is None else cells, LAW[law], _best_h_profile, seeds=seeds, rng=rng,
                      heads=HEADS + (32,), **kw)
    return claims.checks({"R2": table})[0]


@pytest.mark.parametrize("rng", [0, 1, 2])
def test_capacity_law_falsification(rng):
    """Paper grid (m ≤ 512, m' ≤ 2048, 5 seeds), default-tier noise: the claimed law reads reproduced; D_K* ∝
    m'/d_model (no log factor) loses the comparison with it and reads not reproduced (its 1/d_model part also
    beats a d_model-free law, a pass the rival shares); D_K* ∝ m' and a squared law read not reproduced. (30 draws
    each: claimed reproduced 30/30, no-log rival preferred 30/30 with the per-cell misfit off.)"""
    good = _law_verdict("claimed", rng=rng)
    assert good.verdict == REPRODUCED, good.reason
    assert good.measured["vs_no_log"]["preferred"] == "claimed" and good.rival.startswith("D_K* = c_family·m'/d_model")
    no_log = _law_verdict("no_log", rng=rng)
    assert no_log.verdict == NOT_REPRODUCED and no_log.measured["vs_no_log"]["preferred"] == "rival"
    assert _law_verdict("no_d_model", rng=rng).verdict == NOT_REPRODUCED
    square = _law_verdict("square", rng=rng)
    assert square.verdict == NOT_REPRODUCED and "outside [0.7, 1.3]" in square.reason


def test_free_exponent_refutes_only_where_every_bracket_end_is_outside(monkeypatch):
    """The squared law's free exponent lies outside [0.7, 1.3] at every end of the search brackets: refuted. Where
    one end's interval still meets the range, the search's resolution leaves the exponent open, as the fixed laws
    are decided: not resolved (the fixed-exponent comparisons, which the claimed law wins on this table, cannot
    make it a pass)."""
    square = _law_verdict("square")
    ends = square.measured["free_exponent_interval_by_end"]
    assert square.verdict == NOT_REPRODUCED and "at every end" in square.reason
    assert all(high < 0.7 or low > 1.3 for low, high in ends.values())
    original = claims.law_decision

    def one_end_inside(points):
        decision = original(points)
        decision["exponent_by_end"]["lower"] = {**decision["exponent_by_end"]["lower"], "interval": [1.0, 1.2]}
        return decision

    monkeypatch.setattr(claims, "law_decision", one_end_inside)
    open_end = _law_verdict("square")
    assert open_end.verdict == INCONCLUSIVE and "middle, upper end" in open_end.reason
    assert open_end.measured["free_exponent_interval_by_end"]["lower"] == [1.0, 1.2]


def test_an_exponent_outside_the_range_at_some_bracket_ends_is_not_a_pass(monkeypatch):
    """The fixed-exponent laws cannot tell exponent 1 from 1.35: where the free exponent's interval lies outside
    [0.7, 1.3] at two bracket ends and meets it at the third, the law is not resolved, not reproduced (a pass there
    is one a steeper law would also get). Where every end meets it but the free fit's R² is below the spec's 0.9
    at some end, the law reads partially."""
    good = _law_verdict("claimed")
    assert good.verdict == REPRODUCED and all(r >= 0.9 for r in good.measured["free_fit_r2_by_end"].values())
    original = claims.law_decision

    def steeper(points):
        decision = original(points)
        for end, interval in (("lower", [1.41, 1.48]), ("middle", [1.34, 1.39])):
            decision["exponent_by_end"][end] = {**decision["exponent_by_end"][end], "interval": interval}
        return decision

    monkeypatch.setattr(claims, "law_decision", steeper)
    open_exponent = _law_verdict("claimed")
    assert open_exponent.verdict == INCONCLUSIVE and "lower, middle end" in open_exponent.reason

    def loose(points):
        decision = original(points)
        decision["exponent_by_end"]["upper"] = {**decision["exponent_by_end"]["upper"], "r2": 0.85}
        return decision

    monkeypatch.setattr(claims, "law_decision", loose)
    scattered = _law_verdict("claimed")
    assert scattered.verdict == PARTIALLY and "R²" in scattered.reason and "upper 0.850" in scattered.reason


def test_a_split_that_passed_at_its_first_budget_does_not_pull_the_cells_lower_end():
    """A bracket that starts at 0 takes half its upper end as its lower end, split by split, before the minimum over
    h: a 16-head split that passed at its first budget (0, 16] does not drag the cell's lower end below the best
    splits' brackets (10, 12] and (8, 12]."""
    common = dict(experiment="R2", kind="trained", cell="m64-d16-k0", m=64, d_model=16, graph="permutation",
                  out_degree=1, m_edges=64, compression=4.0, law_x=tasks.law_x(64, 16), seed=0, row_type="dkstar",
                  censored=False)
    rows = pd.DataFrame([dict(common, h=h, dk_fail=lo, dk_star=hi, d_k_cap=16 * h)
                         for h, lo, hi in ((1, 10, 12), (2, 10, 12), (4, 8, 12), (16, 0, 16))])
    point = claims.law_points(rows).iloc[0]
    assert point["lower"] == pytest.approx(8.0) and point["upper"] == pytest.approx(12.0)
    assert point["middle"] == pytest.approx(math.sqrt(8 * 12))


def test_capacity_law_on_the_default_grid_never_reads_the_wrong_verdict():
    """Default grid (m ≤ 256, 2 seeds): the d_model-free rival is always rejected, the log factor only
    sometimes resolved (30 draws: claimed law reproduced 7-13, else inconclusive; no-log rival
    not reproduced 14-29, else inconclusive); a rival never reads reproduced, the claim never not reproduced."""
    for rng in range(4):
        good = _law_verdict("claimed", _default_cells(), rng=rng, seeds=(0, 1))
        assert good.verdict in (REPRODUCED, INCONCLUSIVE)
        if good.verdict == INCONCLUSIVE:
            assert good.reason.startswith("not resolved: the claimed law against D_K* = c_family·m'/d_model")
        assert _law_verdict("no_log", _default_cells(), rng=rng, seeds=(0, 1)).verdict in (NOT_REPRODUCED, INCONCLUSIVE)
        assert _law_verdict("no_d_model", _default_cells(), rng=rng, seeds=(0, 1)).verdict == NOT_REPRODUCED


def test_capacity_law_is_never_wrong_at_the_misfit_level():
    """With the default tier's per-cell residual (0.37 in log) added, the log factor is not resolved: the
    verdict is inconclusive or right, never the rival's."""
    for rng in range(3):
        assert _law_verdict("claimed", rng=rng, sigma_cell=0.35).verdict in (REPRODUCED, INCONCLUSIVE, PARTIALLY)
        assert _law_verdict("no_log", rng=rng, sigma_cell=0.35).verdict != REPRODUCED


def test_capacity_law_censoring_and_too_few_cells():
    table = _simulate(_paper_cells(), LAW["claimed"], _best_h_profile, seeds=(0, 1, 2), heads=HEADS + (32,))
    stars = (table["row_type"] == "dkstar") & (table["cell"] == "m512-d16-k0")
    table.loc[stars, "censored"], table.loc[stars, "dk_star"] = True, np.nan
    check = claims.checks({"R2": table})[0]
    assert check.verdict == PARTIALLY and check.measured["cells_censored"] == 1
    few = _simulate(_paper_cells()[:3], LAW["claimed"], _best_h_profile)
    assert claims.checks({"R2": few})[0].verdict == INCONCLUSIVE
    assert claims.checks({})[0].verdict == INCONCLUSIVE


def test_learning_certificate_gates_trained_checks():
    table = _simulate(_paper_cells(), LAW["claimed"], _best_h_profile, seeds=(0, 1, 2), heads=HEADS + (32,))
    budget = table.assign(stopped=np.where(table["row_type"] == "eval", "budget", None))
    check = claims.checks({"R2": budget})[0]
    assert check.verdict == INCONCLUSIVE and "step budget" in check.reason and check.measured["cells_fitted"] > 40
    cert = claims.certificate({"R2": budget}, claims.SEARCHES)
    assert isinstance(cert, Certificate) and cert.kind == STILL_MOVING and len(cert.runs) == (budget["row_type"] == "eval").sum()
    diverged = table.assign(stopped=np.where(table["row_type"] == "eval", "diverged", None))
    assert claims.certificate({"R2": diverged}, claims.SEARCHES).kind == DIVERGED
    assert all(c.verdict == INCONCLUSIVE for c in claims.checks({"R2": diverged})[:4])
    assert claims.certificate({"R2": table.drop(columns="stopped")}, claims.SEARCHES).kind == MISSING
    assert claims.certificate({}, claims.SEARCHES).kind == MISSING
    assert claims.certificate({"R2": table}, claims.SEARCHES).ok
    # certified searches still fail on the claim itself
    assert _law_verdict("no_d_model").verdict == NOT_REPRODUCED


def test_capacity_law_allows_a_constant_per_graph_family():
    law = lambda me, d: LAW["claimed"](me, d)
    cells = _paper_cells()
    table = _simulate(cells, law, _best_h_profile, seeds=(0, 1, 2, 3, 4), heads=HEADS + (32,))
    third = table["graph"] == "out_degree"  # out-degree cells: same law, a third the constant
    for col in ("dk_star", "dk_fail"):
        table.loc[third & (table["row_type"] == "dkstar"), col] /= 3
    check = claims.checks({"R2": table})[0]
    assert check.verdict == REPRODUCED, check.reason
    constants = check.measured["log_constants"]
    assert constants["permutation"] - constants["out_degree"] == pytest.approx(math.log(3), abs=0.15)


ONE_HOT = [(32, 32, "permutation", 1), (64, 64, "permutation", 1), (128, 128, "permutation", 1)]


def test_one_head_uncompressed_falsification():
    """Claimed: one head at 3·ln m, each split h^1.6 times that (the default tier measured D_K*(h) ≈
    h·D_K*(1) in one-hot cells, which 2 seeds resolve in 1 of 3 cells once the seed spread widens the ranges). Rival: one head needs 2.5× the best split (h = 4). Noise: default tier, 2 seeds."""
    law = lambda me, d: math.log(me)
    claimed = lambda m, d, h: h ** 1.6
    rival = lambda m, d, h: 2.5 if h == 1 else 1 + 0.3 * abs(math.log2(h) - 2)
    for rng in range(3):
        good = claims.checks({"R5": _simulate(ONE_HOT, lambda me, d: 3 * law(me, d), claimed, rng=rng, experiment="R5")})[1]
        assert good.verdict == REPRODUCED, good.measured
        bad = claims.checks({"R5": _simulate(ONE_HOT, lambda me, d: 4 * law(me, d), rival, rng=rng, experiment="R5")})[1]
        assert bad.verdict == NOT_REPRODUCED, bad.measured
    # one uncompressed cell of the default grid (m = d_model = 32, 2 seeds): decided in some draws, never wrongly
    one_cell = lambda law, profile, rng: claims.checks({"R2": _simulate(_default_cells()[:3], law, profile, rng=rng)})[1]
    assert {one_cell(LAW["claimed"], _best_h_profile, r).verdict for r in range(6)} == {REPRODUCED, INCONCLUSIVE}
    refused = {one_cell(lambda me, d: 4 * law(me, d), rival, r).verdict for r in range(6)}
    assert refused <= {NOT_REPRODUCED, INCONCLUSIVE} and NOT_REPRODUCED in refused  # refuted in some draws, never passed


def _m32_rows(one_head: tuple[int, int]) -> pd.DataFrame:
    """The default tier's m = d_model = 32 cell: h = 1 searched to `one_head` = (fail, pass), h = 2 in (4, 6]
    and (2, 4] (its budgets are even: both exact), h = 4 in (4, 8]."""
    rows = []
    for seed, (fail2, pass2) in enumerate([(4, 6), (2, 4)]):
        for h, fail, dk in [(1, *one_head), (2, fail2, pass2), (4, 4, 8)]:
            rows.append(dict(row_type="dkstar", kind="trained", cell="m32-d32-k0", m=32, d_model=32, graph="permutation",
                             out_degree=1, m_edges=32, compression=1.0, law_x=tasks.law_x(32, 32), h=h, seed=seed,
                             dk_star=float(dk), dk_fail=float(fail), censored=False, d_k_cap=32 * h))
    return pd.DataFrame(rows)


def test_a_search_that_meets_its_lattice_has_found_d_k_star_exactly():
    """An h-head split spends D_K = h·d_k: failing at 2 and passing at 4 pins D_K* = 4 for h = 2 (3 is not a
    budget it can have) but leaves (2, 4] open for one head."""
    b = claims._brackets(_m32_rows((2, 4)))
    one, two = b[b["h"] == 1], b[b["h"] == 2]
    assert (one["lo"] == 2).all() and (one["hi"] == 4).all()
    assert two["lo"].tolist() == two["hi"].tolist() == [6.0, 4.0]
    four = b[b["h"] == 4]
    assert (four["lo"] == 8).all() and (four["hi"] == 8).all()  # the only multiple of 4 in (4, 8]
    # the law fits read the smooth threshold: anywhere in (fail, pass]
    smooth = claims._brackets(_m32_rows((2, 4)), on_lattice=False)
    assert smooth["lo"].tolist() == _m32_rows((2, 4))["dk_fail"].tolist()


def test_one_head_uncompressed_on_the_lattice_and_inside_the_search_resolution():
    """One head found exactly at 3, two heads exactly at 6 and 4: 3 ≤ 1.25·4 even after the seed spread
    widens the ranges, so claimed. One head left at (2, 4] (its search stopped a step early) could be
    1.25× above two heads' 4 at the widened ends: not resolved, said as such."""
    assert claims.one_head_uncompressed(_m32_rows((2, 3))).verdict == REPRODUCED
    check = claims.one_head_uncompressed(_m32_rows((2, 4)))
    assert check.verdict == INCONCLUSIVE and check.reason.startswith("not resolved") and "m32-d32-k0" in check.reason


COMPRESSED = [(64, 16, "permutation", 1), (128, 16, "permutation", 1), (128, 32, "permutation", 1),
              (256, 32, "permutation", 1), (32, 8, "permutation", 1)]


def test_heads_help_compressed_falsification():
    """Claimed: the best split at h ≈ r, one head 4× worse (or censored above d_model). Rival: one head best
    (at 0.6·d_model, within its cap), every split 2.5·h^0.3 worse. Noise: default tier, 2 seeds."""
    helps = lambda m, d, h: 4.0 if h == 1 else _best_h_profile(m, d, h)
    one_best = lambda m, d, h: 1.0 if h == 1 else 2.5 * h ** 0.3
    law = lambda me, d: 0.3 * me * math.log(me) / d
    for rng in range(3):
        assert claims.checks({"R2": _simulate(COMPRESSED, law, helps, rng=rng)})[2].verdict == REPRODUCED
        # one head within its cap (0.6·d_model), every split worse
        bad = claims.checks({"R2": _simulate(COMPRESSED, lambda me, d: 0.6 * d, one_best, rng=rng)})[2]
        assert bad.verdict == NOT_REPRODUCED, bad.measured
    uncompressed_only = claims.checks({"R5": _simulate(ONE_HOT, lambda me, d: 3.0, lambda m, d, h: h, experiment="R5")})
    assert uncompressed_only[2].verdict == INCONCLUSIVE and uncompressed_only[3].verdict == INCONCLUSIVE


GROWTH = [(64, 8, "permutation", 1), (128, 8, "permutation", 1), (256, 8, "permutation", 1),
          (64, 16, "permutation", 1), (128, 16, "permutation", 1), (256, 16, "permutation", 1)]


def test_best_h_grows_falsification():
    """Claimed: the best h doubles with m at fixed d_model (h* ≈ m/(2·d_model), 2.2× worse one factor 2
    away). Rival (the issue's case): one head best in every compressed cell (h = 2 needs 3×), ties everywhere. Also a best h that
    falls with m. Noise: default tier, 2 seeds."""
    law = lambda me, d: 2.4 * me / d
    grows = lambda m, d, h: 1 + 1.2 * abs(math.log2(h) - math.log2(m / d) + 1)
    ties = lambda m, d, h: 1 + 2 * math.log2(h)
    falls = lambda m, d, h: 1 + 1.2 * abs(math.log2(h) - (6 - math.log2(m / d)))
    for rng in range(3):
        good = claims.checks({"R2": _simulate(GROWTH, law, grows, rng=rng)})[3]
        assert good.verdict == REPRODUCED and good.measured["grows"] >= 1 and good.measured["falls"] == 0, good.measured
        tie = claims.checks({"R2": _simulate(GROWTH, lambda me, d: 6.0, ties, rng=rng)})[3]
        assert tie.verdict == NOT_REPRODUCED and tie.measured["ties"] == tie.measured["pairs"] == 4, tie.measured
        fall = claims.checks({"R2": _simulate(GROWTH, law, falls, rng=rng)})[3]
        assert fall.verdict in (NOT_REPRODUCED, PARTIALLY) and fall.measured["falls"] >= 1, fall.measured
        # growth at d_model = 8, but at 16 the best h falls on the lattice of what an h-head scorer can spend (m = 64:
        # 4 heads need 12 dims, 1 and 2 heads 13–14; m = 128: 2 heads 20, 4 heads 24): its pairs are not resolved
        # and could hide a fall, so one growth is not enough (the audit: a true fall had read 'reproduced' 139 of
        # 200 times when overlapping sets counted as no fall)
        open_pairs = claims.checks({"R2": _simulate(GROWTH, law, _lattice_fall, rng=rng)})[3]
        assert open_pairs.verdict == INCONCLUSIVE and "could hide a fall" in open_pairs.reason, open_pairs.measured


def _lattice_fall(m, d, h):
    """D_K* profile (× the law) whose best h grows at d_model = 8 and falls 4 → 2 at d_model = 16 (m = 64 → 128),
    a fall that holds on the multiples of h an h-head scorer can spend, not only in the smooth profile."""
    if d == 8:
        return 1 + 1.2 * abs(math.log2(h) - math.log2(m / d) + 1)
    if m == 64:
        return {1: 1.3, 2: 1.3}.get(h, 1.0)
    if m == 128:
        return {1: 1.0, 2: 1.0, 4: 1.1}.get(h, 1.5)
    return 1 + 1.2 * abs(math.log2(h) - 4)


def test_best_h_step_reads_a_fall_only_where_the_sets_allow_one():
    """The sets hold the h that may be best; a pair decides only what holds for every choice inside them."""
    assert claims.best_h_step([4, 8], [16]) == claims.GROWS
    assert claims.best_h_step([4, 8], [1, 2]) == claims.FALLS
    assert claims.best_h_step([4], [4]) == claims.TIES
    # sharing only the boundary h: 2 → 2 (a tie) or a growth, never a fall (the default tier's d_model = 32 pair)
    assert claims.best_h_step([1, 2], [2, 4, 8]) == claims.best_h_step([4], [4, 8]) == claims.NO_FALL
    # any overlap beyond the boundary allows a fall: 2 → 1 inside [1, 2] → [1, 2], 4 → 2 inside [2, 4] → [2, 8]
    assert claims.best_h_step([1, 2], [1, 2]) == claims.best_h_step([2, 4], [2, 8]) == claims.NOT_RESOLVED


@pytest.mark.parametrize("steps, verdict", [
    (["grows", "does not fall", "does not fall"], REPRODUCED),  # the default tier's pairs
    (["grows", "ties", "does not fall"], REPRODUCED),
    (["does not fall", "does not fall"], INCONCLUSIVE),  # no growth shown: it may be ties everywhere
    (["grows", "does not fall", "not resolved"], INCONCLUSIVE),  # the open pair could hide a fall
    (["grows", "does not fall", "falls"], PARTIALLY),
    (["ties", "ties"], NOT_REPRODUCED),
])
def test_best_h_grows_verdict_from_its_pairs(monkeypatch, steps, verdict):
    pairs = {f"pair {i}": {"best_h_sets": "", "outcome": step} for i, step in enumerate(steps)}
    monkeypatch.setattr(claims, "best_h_pairs", lambda rows: pairs)
    check = claims.best_h_grows(pd.DataFrame())
    assert check.verdict == verdict and check.measured["does_not_fall"] == steps.count("does not fall")


def test_best_h_grows_does_not_pass_a_fall_on_the_lattice():
    """A 'does not fall' pair trusts each set to hold its cell's best h; drawn from a real fall (`_lattice_fall`,
    default-tier seed noise), the check never reads 'reproduced' (0 of 30 in the audit of this rule, and 0 of 100
    at other fall sizes; 1–3 of 100 where the two falling cells' seed SD was 0.30 against 0.05 elsewhere)."""
    law = lambda me, d: 2.4 * me / d
    verdicts = [claims.checks({"R2": _simulate(GROWTH, law, _lattice_fall, rng=rng)})[3].verdict for rng in range(20)]
    assert REPRODUCED not in verdicts and NOT_REPRODUCED not in verdicts


def _r1(curves, seeds=(0, 1, 2), rng=0, sigma=F1_SIGMA, grid=(8, 16, 24, 32, 48, 64, 96, 128)) -> pd.DataFrame:
    """R1 rows: `curves[h]` maps D_K to the mean F1; each seed adds noise sigma·4F1(1−F1)·N(0, 1)."""
    rng = np.random.default_rng(rng)
    rows = []
    for h, curve in curves.items():
        for dk in grid:
            for s in seeds:
                f = curve(dk)
                f1 = float(np.clip(f + sigma * 4 * f * (1 - f) * rng.standard_normal(), 0, 1))
                rows.append(dict(row_type="eval", kind="trained", cell="m128-d16-k0", h=h, d_k_total=dk, seed=s,
                                 f1_all=f1, stopped="target" if f1 >= 0.99 else "plateau"))
    return pd.DataFrame(rows)


def _logistic(d50, width):
    """F1 = 0.5 at d50 and 0.99 at width·d50 (logistic in log D_K)."""
    scale = math.log(width) / math.log(99)
    return lambda dk: 1 / (1 + math.exp(-(math.log(dk) - math.log(d50)) / scale))


def test_sharp_threshold_falsification():
    """Claimed: F1 from 0.5 to 0.99 within a factor 1.8 (h = 2, 4, 8 at D_K 12, 20, 28). Rival: a gradual
    rise, factor 12. h = 1 stuck at 0.07 (as measured) is not measurable. Noise: default tier F1 spread."""
    flat = lambda dk: 0.07
    for rng in range(3):
        sharp = {1: flat, 2: _logistic(12, 1.8), 4: _logistic(20, 1.8), 8: _logistic(28, 1.8)}
        good = claims.checks({"R1": _r1(sharp, rng=rng)})[4]
        assert good.verdict == REPRODUCED and good.measured["heads_not_measurable"] == [1], good.measured
        slow = {1: flat, 2: _logistic(12, 12), 4: _logistic(16, 12), 8: _logistic(20, 12)}
        bad = claims.checks({"R1": _r1(slow, rng=rng)})[4]
        assert bad.verdict == NOT_REPRODUCED, bad.measured
    one_split = claims.checks({"R1": _r1({1: flat, 2: _logistic(12, 1.8)})})[4]
    assert one_split.verdict == INCONCLUSIVE and "only 1 of 2 head splits" in one_split.reason
    assert claims.checks({})[4].verdict == INCONCLUSIVE


def test_threshold_brackets_follow_the_grid():
    curve = {2: lambda dk: {8: 0.2, 16: 0.45, 24: 0.7, 32: 0.995}.get(dk, 1.0)}
    b = claims.threshold_brackets(_r1(curve, seeds=(0,), sigma=0))
    row = b.iloc[0]
    assert (row["dk_low"], row["dk_high"]) == (16, 32)
    assert row["width_lo"] == pytest.approx(24 / 24) and row["width_hi"] == pytest.approx(2.0)
    never = claims.threshold_brackets(_r1({4: lambda dk: 0.3 if dk < 24 else 0.9}, seeds=(0,), sigma=0)).iloc[0]
    assert never["width_hi"] == math.inf and never["width_lo"] == pytest.approx(128 / 24)


# ---- config ---------------------------------------------------------------------------------------

def _smoke():
    config = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    config["claims"] = ["rgr_capacity"]
    return config


def test_smoke_and_default_configs_are_valid():
    validate_config(_smoke())
    for name in ("config.yaml", "paper.yaml"):
        config = yaml.safe_load((ROOT / "config" / name).read_text())
        if "rgr_capacity" in config:
            config["claims"] = ["rgr_capacity"]
            validate_config(config)


@pytest.mark.parametrize("mutate,needle", [
    (lambda c: c["R1"].update(d_k_total=[4, 6]), "R1.d_k_total: h=4 does not divide D_K=6"),
    (lambda c: c["R2"].update(m=[4]), "R2.d_model: d_model=8 > m=4"),
    (lambda c: c["R3"].update(out_degree=[32]), "R3.out_degree: out-degree k=32 >= m=32"),
    (lambda c: c["R4"].update(ratio=1), "rgr_capacity.R4.ratio"),
    (lambda c: c["R2"].update(heads=[]), "rgr_capacity.R2.heads"),
    (lambda c: c["R2"].update(typo=1), "rgr_capacity.R2"),
])
def test_bad_configs_are_rejected_with_the_key(mutate, needle):
    config = copy.deepcopy(_smoke())
    mutate(config["rgr_capacity"])
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    assert needle in str(err.value)


def _search_table(cells_dk: dict, experiment="R2") -> pd.DataFrame:
    """cells_dk: (m, d, graph, k) -> {h: D_K* or None (censored)}, same for both seeds; each search's
    bracket is (0.85·D_K*, D_K*] and its deciding failure converged on a plateau."""
    rows = []
    for (m, d, graph, k), by_h in cells_dk.items():
        m_edges = tasks.n_edges(graph, m, k)
        for h, dk in by_h.items():
            for seed in (0, 1):
                rows.append(dict(experiment=experiment, row_type="dkstar", kind="trained",
                                 cell=exp.cell_name(dict(m=m, d_model=d, graph=graph, k=k)), m=m, d_model=d,
                                 graph=graph, out_degree=k, m_edges=m_edges, compression=m / d,
                                 law_x=tasks.law_x(m_edges, d), h=h, seed=seed, d_k_cap=h * d,
                                 dk_star=np.nan if dk is None else float(dk), censored=dk is None,
                                 dk_fail=float(h * d) if dk is None else 0.85 * dk))
                rows.append(dict(rows[-1], row_type="eval", d_k_total=rows[-1]["dk_fail"], f1_all=0.9,
                                 stopped="plateau"))
    return pd.DataFrame(rows)


def test_only_deciding_failures_and_compared_cells_withhold_a_verdict():
    """A failure at the step budget matters only where it decides D_K* (the largest failing D_K, or the
    cap of a censored search) and only in the cells the check compares."""
    cells = {(32, 32, "permutation", 1): {1: 4, 2: 8, 4: 16}, (64, 16, "permutation", 1): {1: None, 2: 20, 4: 24}}
    table = _search_table(cells)
    stars = table["row_type"] == "dkstar"
    table.loc[stars, "dk_fail"] = table.loc[stars, "dk_star"].fillna(16) / 2
    table.loc[stars, "d_k_cap"] = 16 * table.loc[stars, "h"]
    evals = table[~stars].copy()
    evals["d_k_total"] = evals["dk_star"].fillna(16) / 2  # the deciding failure of each search
    early = evals.assign(d_k_total=1.0, stopped="budget")  # a failure far below D_K*: it decides nothing
    table = pd.concat([table[stars], evals, early], ignore_index=True)
    assert claims.checks({"R2": table})[1].verdict == REPRODUCED  # one head suffices, uncompressed
    deciding = (table["row_type"] == "eval") & (table["cell"] == "m32-d32-k0") & (table["d_k_total"] > 1)
    table.loc[deciding, "stopped"] = "budget"
    checks = claims.checks({"R2": table})
    assert checks[1].verdict == INCONCLUSIVE and "step budget" in checks[1].reason
    assert checks[2].verdict == REPRODUCED  # heads help (compressed cell m64-d16) is not affected


def test_a_deciding_training_without_a_known_stop_reason_is_not_certified():
    """The certificate counts a deciding failure only with a stop reason it knows: a missing or unknown one withholds
    the check (it cannot tell a settled run from one cut short), as a run at the budget does."""
    table = _search_table({(32, 32, "permutation", 1): {1: 4, 2: 8, 4: 16}})
    stars = table["row_type"] == "dkstar"
    assert claims.checks({"R2": table})[1].verdict == REPRODUCED
    for unknown in (np.nan, "", "unknown"):
        table.loc[~stars, "stopped"] = unknown
        check = claims.checks({"R2": table})[1]
        assert check.verdict == INCONCLUSIVE and "no stop reason" in check.reason


def test_a_scorer_whose_loss_goes_non_finite_is_recorded_as_diverged():
    """At a learning rate of 1e30 the loss is not finite from the first steps: the patience rule stops the run as
    diverged (its F1 on non-finite scores reads 0, which is no measurement), not as a plateau."""
    cell = dict(m=16, d_model=8, graph="permutation", k=1)
    spec = _spec(lr=1e30)
    datas = {s: exp.cell_data(cell, s, spec) for s in (0, 1)}
    rows = exp.train_requests(cell, [(1, 4, 0), (2, 8, 1)], spec, datas, "cpu")
    assert [r["stopped"] for r in rows] == ["diverged", "diverged"]
    assert all(r["steps_run"] == spec["train"]["eval_every"] + 1 for r in rows)  # the first evaluation


def test_an_uncertified_search_withholds_its_cell_only():
    """A deciding training still improving at its budget withholds the cell it decides, not the check: the check is
    decided on the other cells (reason naming the one withheld), unless they cannot decide it alone."""
    cells = {(64, 16, "permutation", 1): {1: 40, 2: 20, 4: 24}, (128, 16, "permutation", 1): {1: 90, 2: 40, 4: 30}}
    table = _search_table(cells)
    assert claims.checks({"R2": table})[2].verdict == REPRODUCED  # heads help in both compressed cells
    moving = (table["row_type"] == "eval") & (table["cell"] == "m128-d16-k0")
    table.loc[moving, "stopped"] = "budget"
    check = claims.checks({"R2": table})[2]
    assert check.verdict == REPRODUCED and "m128-d16-k0" in check.reason and "step budget" in check.reason
    assert check.measured["withheld_configurations"] == 1


def test_heads_help_unresolved_between_seeds():
    """One head best in seed 1, two heads in seed 0: the seed ranges overlap, not resolved."""
    table = _search_table({(64, 16, "permutation", 1): {1: 24, 2: 20}})
    stars = table["row_type"] == "dkstar"
    table.loc[stars & (table["seed"] == 1) & (table["h"] == 2), ["dk_star", "dk_fail"]] = [30.0, 26.0]
    check = claims.checks({"R2": table})[2]
    assert check.verdict == INCONCLUSIVE and check.reason.startswith("not resolved")
    equal = _search_table({(64, 16, "permutation", 1): {1: 16, 2: 32, 4: 48}})
    assert claims.checks({"R2": equal})[2].verdict == NOT_REPRODUCED


# ---- continuation until certified (issue 22) ------------------------------------------------------

def _continued(steps, max_steps=None, patience=400):
    spec = _spec(steps=steps, eval_every=5, patience=patience, lr=0.02)
    if max_steps is not None:
        spec["train"]["max_steps"] = max_steps
    return spec


CONTINUED_CELL = dict(m=24, d_model=8, graph="permutation", k=1)
CONTINUED_REQUESTS = [(1, 2, 0), (2, 4, 1), (1, 8, 0), (2, 16, 1)]


def test_a_continued_training_equals_one_training_of_the_same_length():
    """Budget 20 continued to the cap 120 by the patience rule = one training with budget 120: the same
    weights, F1 and stopping step per model; a run still improving at the end is `cap` there, `budget` here."""
    cell = CONTINUED_CELL
    datas = {s: exp.cell_data(cell, s, _continued(20)) for s in (0, 1)}
    continued = exp.train_requests(cell, CONTINUED_REQUESTS, _continued(20, 120), datas, "cpu")
    whole = exp.train_requests(cell, CONTINUED_REQUESTS, _continued(120), datas, "cpu")
    short = exp.train_requests(cell, CONTINUED_REQUESTS, _continued(20), datas, "cpu")
    assert any(r["stopped"] == "budget" for r in short)  # the case the continuation exists for
    assert any(r["steps_run"] > 20 for r in continued)
    for a, b in zip(continued, whole):
        assert (a["f1_all"], a["tau"], a["steps_run"]) == (b["f1_all"], b["tau"], b["steps_run"])
        assert a["stopped"] == {"budget": "cap"}.get(b["stopped"], b["stopped"])
        assert (a["budget"], a["max_steps"], b["max_steps"]) == (20, 120, 120)
    for a, b in zip(continued, short):  # models settled within the budget are not trained further
        if b["stopped"] in ("target", "plateau"):
            assert (a["f1_all"], a["steps_run"], a["stopped"]) == (b["f1_all"], b["steps_run"], b["stopped"])


def test_early_stopped_models_are_frozen_and_skipped():
    """A settled model is left out of the forward pass (scores_of) and held fixed by the loop: the others
    train exactly as they would beside it."""
    bank = ScorerBank([1, 2, 2, 4], [8, 4, 4, 2], [0, 1, 2, 3], d_model=6).double()
    x = torch.randn(4, 9, 6, dtype=torch.float64)
    full = bank(x)
    torch.testing.assert_close(bank.scores_of([1, 3], x), full[[1, 3]], rtol=0, atol=0)
    assert bank.scores_of([], x).shape == (0, 9, 9)
    # one model settles early (patience 5 on a hopeless budget), the others keep going
    cell = CONTINUED_CELL
    spec = _continued(60, 60, patience=400)
    datas = {s: exp.cell_data(cell, s, spec) for s in (0, 1)}
    early = _continued(60, 60, patience=10)
    together = exp.train_requests(cell, CONTINUED_REQUESTS, early, datas, "cpu")
    for request, row in zip(CONTINUED_REQUESTS, together):
        alone = exp.train_requests(cell, [request], early, datas, "cpu")[0]
        # approx for the float only: pytest ≥ 9.2 refuses a string inside approx(..., rel=...)
        assert row["f1_all"] == pytest.approx(alone["f1_all"], rel=1e-6)
        assert (row["steps_run"], row["stopped"]) == (alone["steps_run"], alone["stopped"])


def test_searches_read_the_continued_trainings():
    """The D_K* search decides on the continued result: budget 10 continued to 150 gives the search of a
    150-step budget (two heads pass at D_K = 12), not the one of a 10-step budget (nothing passes)."""
    cell = dict(m=16, d_model=8, graph="permutation", k=1)
    spec = _spec(steps=10, eval_every=5, patience=400, lr=0.1)
    spec["train"]["max_steps"] = 150
    spec["heads"], spec["seeds"] = [1, 2], [0]
    datas = {0: exp.cell_data(cell, 0, spec)}

    def search(s):
        return exp.run_search(cell, s, lambda req: exp.train_requests(cell, req, s, datas, "cpu"), "trained")

    continued_evals, continued = search(spec)
    whole_spec = {**spec, "train": {**spec["train"], "steps": 150}}
    whole_spec["train"].pop("max_steps")
    _, whole = search(whole_spec)
    _, short = search({**spec, "train": {**spec["train"], "max_steps": None}})
    assert [s["dk_star"] for s in continued] == [s["dk_star"] for s in whole]
    assert [s["dk_star"] for s in continued] != [s["dk_star"] for s in short]
    assert all(r["stopped"] != "budget" for r in continued_evals)
    assert any(r["stopped"] == "target" and r["steps_run"] > 10 for r in continued_evals)


def test_the_certificate_reads_the_continued_runs_and_names_the_cap():
    table = _search_table({(32, 32, "permutation", 1): {1: 4, 2: 8}})
    evals = table["row_type"] == "eval"
    table.loc[evals, ["budget", "max_steps", "steps_run"]] = [4000, 16000, 9000]
    assert claims.certificate({"R2": table}, claims.SEARCHES).ok  # continued past the budget, then a plateau
    capped = table.copy()
    capped.loc[evals, "stopped"] = "cap"
    capped.loc[evals, "steps_run"] = 16000
    certificate = claims.certificate({"R2": capped}, claims.SEARCHES)
    assert certificate.kind == STILL_MOVING
    assert "at the cap of 16000 steps (4× the 4000-step budget) they were continued to" in certificate.text
    check = claims.checks({"R2": capped})[1]
    assert check.verdict == INCONCLUSIVE and "16000" in check.reason


def test_a_cap_below_the_budget_is_rejected():
    config = copy.deepcopy(_smoke())
    config["rgr_capacity"]["R2"]["train"] = {**config["rgr_capacity"]["R2"]["train"], "max_steps": 10}
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    assert "R2.train.max_steps: max_steps=10 < steps=" in str(err.value)


class _Killed(Exception):
    pass


def test_a_killed_search_resumes_bitwise_without_retraining_finished_rounds(tmp_path, monkeypatch, fixed_revision):
    """Issue 22: a search job killed inside a training (here the second round's, during its continuation
    past the budget) resumes when run again: finished trainings are read back, the killed one continues from
    its checkpoint, and the search ends with the rows of a job never interrupted."""
    from attncap.experiments.context import RunContext

    cell = dict(m=16, d_model=8, graph="permutation", k=1)
    spec = _spec(steps=10, eval_every=5, patience=400, lr=0.1)
    spec["train"]["max_steps"] = 150
    spec["heads"], spec["seeds"] = [1, 2], [0]
    datas = {0: exp.cell_data(cell, 0, spec)}
    make = lambda scratch: RunContext.create(claim="rgr_capacity", experiment="R2", part=exp.cell_name(cell),
                                             scratch=scratch)
    whole = exp.run_search(cell, spec, exp._trained(make(None), cell, spec, datas), "trained")
    trainings, evaluations, real_train, real_f1 = [], [], exp.train_requests, exp.f1_per_model

    def counting(*args, **kwargs):
        trainings.append(1)
        evaluations.clear()
        return real_train(*args, **kwargs)

    def dying(*args, **kwargs):
        evaluations.append(1)
        if len(trainings) == 2 and len(evaluations) == 4:  # round 2, step 20: continued past the 10-step budget
            raise _Killed
        return real_f1(*args, **kwargs)

    monkeypatch.setattr(exp, "train_requests", counting)
    monkeypatch.setattr(exp, "f1_per_model", dying)
    scratch = tmp_path / "resume"
    with pytest.raises(_Killed):
        exp.run_search(cell, spec, exp._trained(make(scratch), cell, spec, datas), "trained")
    assert sorted(p.suffix for p in scratch.iterdir()) == [".pkl", ".pt"]
    monkeypatch.setattr(exp, "f1_per_model", real_f1)
    trainings.clear()
    found, real_loop = [], exp.train_batched

    def loop(*args, checkpoint=None, **kwargs):
        found.append(checkpoint is not None and Path(checkpoint.path).exists())
        return real_loop(*args, checkpoint=checkpoint, **kwargs)

    monkeypatch.setattr(exp, "train_batched", loop)
    resumed = exp.run_search(cell, spec, exp._trained(make(scratch), cell, spec, datas), "trained")
    rounds = max(r["round"] for r in whole[0]) + 1
    assert len(trainings) == rounds - 1  # round 1 was read back
    assert found[0] and not any(found[1:])  # the killed training went on from its checkpoint
    assert any(r["steps_run"] > 20 for r in whole[0] if r["round"] == 1), "the killed training must go on past the kill"
    strip = lambda rows: [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rows]
    assert strip(resumed[0]) == strip(whole[0]) and resumed[1] == whole[1]
