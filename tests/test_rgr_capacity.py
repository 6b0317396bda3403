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

from attncap.claims import INCONCLUSIVE, NOT_REPRODUCED, PARTIALLY, REPRODUCED
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

def _search_table(cells_dk: dict, experiment="R2") -> pd.DataFrame:
    """cells_dk: (m, d, graph, k) -> {h: D_K* or None (censored)}, same for both seeds."""
    rows = []
    for (m, d, graph, k), by_h in cells_dk.items():
        m_edges = tasks.n_edges(graph, m, k)
        for h, dk in by_h.items():
            for seed in (0, 1):
                rows.append(dict(experiment=experiment, row_type="dkstar", kind="trained",
                                 cell=exp.cell_name(dict(m=m, d_model=d, graph=graph, k=k)), m=m, d_model=d,
                                 graph=graph, out_degree=k, m_edges=m_edges, compression=m / d,
                                 law_x=tasks.law_x(m_edges, d), h=h, seed=seed,
                                 dk_star=np.nan if dk is None else float(dk), censored=dk is None))
                # the search's last failing training, converged on a plateau (the learning certificate)
                rows.append(dict(rows[-1], row_type="eval", f1_all=0.9, stopped="plateau"))
    return pd.DataFrame(rows)


def _law_cells(power=1.0, censor_h1=True):
    out = {}
    for m, d in [(64, 16), (128, 16), (256, 16), (128, 32), (256, 32), (256, 64)]:
        x = tasks.law_x(m, d)
        best = 0.5 * x ** power
        out[(m, d, "permutation", 1)] = {1: None if censor_h1 else 3 * best, 2: 1.5 * best, 4: best}
    return out


def test_capacity_law_verdicts():
    good = claims.checks({"R2": _search_table(_law_cells(1.0))})[0]
    assert good.id == "capacity_law" and good.verdict == REPRODUCED
    assert good.measured["slope"] == pytest.approx(1.0, abs=1e-6)
    bad = claims.checks({"R2": _search_table(_law_cells(2.0))})[0]
    assert bad.verdict == NOT_REPRODUCED
    cells = _law_cells(1.0)
    cells[(512, 16, "permutation", 1)] = {1: None, 2: None, 4: None}
    assert claims.checks({"R2": _search_table(cells)})[0].verdict == PARTIALLY
    few = {k: v for k, v in list(_law_cells(1.0).items())[:2]}
    assert claims.checks({"R2": _search_table(few)})[0].verdict == INCONCLUSIVE
    assert claims.checks({})[0].verdict == INCONCLUSIVE


def test_learning_certificate_gates_trained_checks():
    table = _search_table(_law_cells(1.0))
    budget = table.assign(stopped=np.where(table["row_type"] == "eval", "budget", None))
    check = claims.checks({"R2": budget})[0]
    assert check.verdict == INCONCLUSIVE and "step budget" in check.reason and check.measured["slope"] == pytest.approx(1.0)
    diverged = table.assign(stopped=np.where(table["row_type"] == "eval", "diverged", None))
    assert all(c.verdict == INCONCLUSIVE for c in claims.checks({"R2": diverged})[:4])
    # certified searches still fail on the claim itself
    assert claims.checks({"R2": _search_table(_law_cells(2.0))})[0].verdict == NOT_REPRODUCED


def test_capacity_law_allows_a_constant_per_graph_family():
    cells = _law_cells(1.0)
    for m, d in [(64, 16), (128, 16), (256, 32), (256, 64)]:  # out-degree cells: same slope, a third the constant
        best = 0.5 * tasks.law_x(tasks.n_edges("out_degree", m, 2), d) / 3
        cells[(m, d, "out_degree", 2)] = {1: None, 2: 1.5 * best, 4: best}
    check = claims.checks({"R2": _search_table(cells)})[0]
    assert check.verdict == REPRODUCED and check.measured["slope"] == pytest.approx(1.0, abs=1e-6)
    assert check.measured["one_constant_r2"] < check.measured["r2"]


def test_one_head_uncompressed_verdicts():
    ok = {(32, 32, "permutation", 1): {1: 8, 2: 8, 4: 8}, (64, 64, "permutation", 1): {1: 10, 2: 9, 4: 12}}
    fail = {(32, 32, "permutation", 1): {1: 16, 2: 8, 4: 8}}
    assert claims.checks({"R5": _search_table(ok, "R5")})[1].verdict == REPRODUCED
    assert claims.checks({"R5": _search_table(fail, "R5")})[1].verdict == NOT_REPRODUCED
    assert claims.checks({"R2": _search_table(_law_cells(), "R2")})[1].verdict == INCONCLUSIVE


def test_heads_help_and_best_h_grow_verdicts():
    helps = {(64, 16, "permutation", 1): {1: None, 2: 20, 4: 24},
             (128, 16, "permutation", 1): {1: None, 2: 40, 4: 32},
             (256, 16, "permutation", 1): {1: None, 2: 90, 4: 64}}
    checks = claims.checks({"R2": _search_table(helps)})
    assert checks[2].verdict == REPRODUCED and checks[3].verdict == REPRODUCED
    hurts = {(64, 16, "permutation", 1): {1: 16, 2: 20, 4: 24},
             (128, 16, "permutation", 1): {1: 30, 2: 40, 4: 48}}
    checks = claims.checks({"R2": _search_table(hurts)})
    assert checks[2].verdict == NOT_REPRODUCED
    shrinking = {(64, 16, "permutation", 1): {1: None, 2: 30, 4: 24},
                 (128, 16, "permutation", 1): {1: None, 2: 40, 4: 48}}
    assert claims.checks({"R2": _search_table(shrinking)})[3].verdict == NOT_REPRODUCED
    uncompressed_only = {(32, 32, "permutation", 1): {1: 8, 2: 8}}
    checks = claims.checks({"R5": _search_table(uncompressed_only, "R5")})
    assert checks[2].verdict == INCONCLUSIVE and checks[3].verdict == INCONCLUSIVE


def _r1(curves: dict) -> pd.DataFrame:
    rows = [dict(row_type="eval", kind="trained", cell="m64_d16", h=h, d_k_total=dk, seed=s, f1_all=f1,
                 stopped="target" if f1 >= 0.99 else "plateau")
            for h, curve in curves.items() for dk, f1 in curve.items() for s in (0, 1)]
    return pd.DataFrame(rows)


def test_sharp_threshold_verdicts():
    sharp = {2: {8: 0.2, 16: 0.45, 32: 0.995, 64: 1.0}, 4: {8: 0.3, 16: 0.9, 32: 1.0}}
    assert claims.checks({"R1": _r1(sharp)})[4].verdict == REPRODUCED
    slow = {2: {8: 0.2, 16: 0.6, 32: 0.8, 64: 0.95, 128: 0.995}, 4: {8: 0.3, 16: 0.7, 32: 0.9, 64: 0.995}}
    assert claims.checks({"R1": _r1(slow)})[4].verdict == NOT_REPRODUCED
    one_split = claims.checks({"R1": _r1({2: sharp[2], 1: {8: 0.2, 16: 0.3}})})[4]
    assert one_split.verdict == INCONCLUSIVE and "only 1 of 2 head splits" in one_split.reason
    never = {1: {8: 0.2, 16: 0.3}}
    assert claims.checks({"R1": _r1(never)})[4].verdict == INCONCLUSIVE
    assert claims.checks({})[4].verdict == INCONCLUSIVE


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


def test_only_deciding_failures_and_compared_cells_withhold_a_verdict():
    """A failure at the step budget matters only where it decides D_K* (the largest failing D_K, or the
    cap of a censored search) and only in the cells the check compares."""
    cells = {(32, 32, "permutation", 1): {1: 8, 2: 8, 4: 8}, (64, 16, "permutation", 1): {1: None, 2: 20, 4: 24}}
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
