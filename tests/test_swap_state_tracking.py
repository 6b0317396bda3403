"""Claim 5: the swap-task generator against brute force, an exact DeltaNet (β = 2) tracker built from
the shared mixer, the batched LM against per-model runs, the verdict functions and config checks."""
import copy
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from attncap.claims import INCONCLUSIVE, NOT_REPRODUCED, PARTIALLY, REPRODUCED
from attncap.claims import swap_state_tracking as claim
from attncap.config import ConfigError, validate_config
from attncap.experiments import swap_state_tracking as experiment
from attncap.experiments.context import RunContext
from attncap.models.lm import BatchedLM
from attncap.models.mixers import deltanet
from attncap.tasks.swap_state_tracking import IGNORE, contents_after, encode, sample, sample_swaps

ROOT = Path(__file__).resolve().parents[1]


def brute_force(a, b, n):
    out = []
    for row_a, row_b in zip(a.tolist(), b.tolist()):
        boxes, rows = list(range(n)), []
        for x, y in zip(row_a, row_b):
            boxes[x], boxes[y] = boxes[y], boxes[x]
            rows.append(list(boxes))
        out.append(rows)
    return torch.tensor(out)


def test_contents_match_brute_force():
    g = torch.Generator().manual_seed(0)
    for n in (2, 3, 5, 8):
        a, b = sample_swaps(n, 20, 7, g)
        assert (a != b).all()
        assert torch.equal(contents_after(a, b, n), brute_force(a, b, n))


def test_swaps_are_uniform_over_ordered_pairs():
    a, b = sample_swaps(4, 3000, 4, torch.Generator().manual_seed(1))
    counts = np.zeros((4, 4))
    np.add.at(counts, (a.flatten().numpy(), b.flatten().numpy()), 1)
    assert counts.trace() == 0
    expected = counts.sum() / 12
    off = counts[~np.eye(4, dtype=bool)]
    assert np.abs(off - expected).max() < 5 * math.sqrt(expected)


def test_encoding_layout_and_targets():
    n = 5
    a = torch.tensor([[0, 3, 1]])
    b = torch.tensor([[2, 0, 4]])
    batch = encode(a, b, n, query=torch.tensor([3]))
    assert batch.tokens.tolist() == [[0, 7, 3, 5, 1, 9, 13]]
    # after (0,2): box0=2; after (3,0): box3=2; after (1,4): box1=4; query box 3 → object 2
    assert batch.targets.tolist() == [[IGNORE, 2, IGNORE, 2, IGNORE, 4, 2]]
    assert batch.query_target.tolist() == [2]


def test_sampling_is_deterministic():
    one = sample(4, 6, 3, torch.Generator().manual_seed(5))
    two = sample(4, 6, 3, torch.Generator().manual_seed(5))
    assert torch.equal(one.tokens, two.tokens) and torch.equal(one.targets, two.targets)


def test_deltanet_with_beta_two_tracks_swaps_exactly():
    """Construction: with k_t = (e_a − e_b)/√2, v_t = −k_t and β = 2 the DeltaNet state is P − I, P the
    permutation box → object, so argmax(e_c + S_t e_c) is the object in box c, at any length."""
    n, steps, batch = 6, 200, 4
    g = torch.Generator().manual_seed(2)
    a, b = sample_swaps(n, steps, batch, g)
    eye = torch.eye(n, dtype=torch.float64)
    k = (eye[a] - eye[b]) / math.sqrt(2)
    query_box = torch.randint(0, n, (batch, steps), generator=g)
    q = eye[query_box]
    out = deltanet(q, k, -k, torch.full((batch, steps), 2.0, dtype=torch.float64))
    predicted = (q + out).argmax(-1)
    truth = contents_after(a, b, n).gather(2, query_box[..., None])[..., 0]
    assert torch.equal(predicted, truth)
    # β < 1 cannot do it: the same construction with β = 1 fails somewhere
    out1 = deltanet(q, k, -k, torch.full((batch, steps), 1.0, dtype=torch.float64))
    assert not torch.equal((q + out1).argmax(-1), truth)


def test_batched_lm_matches_models_run_alone():
    mixers = ["softmax", "deltaformer_exp", "deltaformer_linear", "deltanet_02"]
    seeds = [3, 4, 5, 6]
    kwargs = dict(vocab=9, d_model=16, n_layers=2, n_heads=2, mlp_ratio=2, positional="rotary")
    together = BatchedLM(seeds, mixers, **kwargs).double()
    tokens = torch.randint(0, 9, (4, 3, 11), generator=torch.Generator().manual_seed(0))
    logits = together(tokens)
    norms = together.value_norm()
    for i, (seed, mixer) in enumerate(zip(seeds, mixers)):
        alone = BatchedLM([seed], [mixer], **kwargs).double()
        torch.testing.assert_close(alone(tokens[i : i + 1]), logits[i : i + 1], atol=1e-10, rtol=0)
        torch.testing.assert_close(alone.value_norm(), norms[i : i + 1], atol=1e-10, rtol=0)


SMALL = dict(n_objects=[3], models=["softmax", "deltanet_02"], seeds=[0], boundary_n=[], boundary_seeds=[0, 1],
             T_train=4, d_model=8, layers=1, heads=2, mlp_ratio=1, steps=3, batch=4, lr=0.003, weight_decay=0.1,
             warmup_steps=1, final_lr_fraction=0.1, clip=1.0, eval_batches=1, test_multipliers=[1, 2, 4])


def test_experiment_rows_and_determinism():
    def once():
        ctx = RunContext.create(claim="swap_state_tracking", experiment="S1", part="n3", tier="test")
        return experiment.run("S1", SMALL, ctx)

    first, second = once(), once()
    assert len(first) == 2 * 3
    assert set(first["T_test"]) == {4, 8, 16}
    assert first["acc"].between(0, 1).all() and first["acc_final_query"].between(0, 1).all()
    assert first.loc[first["T_test"] == 16, "acc_by_position"].str.split().map(len).eq(16).all()
    cols = ["acc", "acc_mean", "acc_final_query", "final_train_loss", "max_value_norm"]
    pd.testing.assert_frame_equal(first[cols], second[cols])


def test_boundary_seeds_apply_only_at_boundary_n():
    spec = dict(SMALL, n_objects=[3, 4], boundary_n=[4])
    assert len(experiment.model_grid("S1", spec, 3)) == 2
    assert len(experiment.model_grid("S1", spec, 4)) == 4
    assert [g["mixer"] for g in experiment.model_grid("S2", dict(spec, kernels=["exp", "zero"]), 3)] == [
        "deltaformer_exp", "deltaformer_zero"]


# ---- verdicts -------------------------------------------------------------------------------------

def grid(acc):
    """Synthetic S1 table from {(mixer, n, multiplier): acc}."""
    rows = [{"mixer": m, "n_objects": n, "test_multiplier": k, "acc": a, "d_head": 8}
            for (m, n, k), a in acc.items()]
    return pd.DataFrame(rows)


MIXERS = ["softmax", "deltaformer_exp", "deltanet_02"]


def paper_like():
    """What the paper predicts: Transformer fine at n ≤ 4 only, DeltaFormer and DeltaNet(0,2) everywhere."""
    acc = {}
    for m, n, k in itertools.product(MIXERS, (3, 4, 5, 8), (1, 2, 4)):
        acc[(m, n, k)] = 1.0 if (m != "softmax" or n <= 4 or k == 1) else 1.0 / n
    return grid(acc)


def failing():
    """Nothing learns: chance everywhere."""
    return grid({(m, n, k): 1.0 / n for m, n, k in itertools.product(MIXERS, (3, 4, 5, 8), (1, 2, 4))})


@pytest.mark.parametrize("check", [claim.sanity, claim.construction, claim.main_claim, claim.boundary])
def test_verdicts_pass_fail_and_inconclusive(check):
    assert check(paper_like()).verdict == REPRODUCED
    assert check(failing()).verdict == NOT_REPRODUCED
    assert check(None).verdict == INCONCLUSIVE
    assert check(pd.DataFrame(columns=["mixer", "n_objects", "test_multiplier", "acc", "d_head"])).verdict == INCONCLUSIVE


def test_main_claim_needs_every_cell_and_reports_partial():
    frame = paper_like()
    assert claim.main_claim(frame[frame["n_objects"] != 8]).verdict == INCONCLUSIVE
    frame.loc[(frame["mixer"] == "softmax") & (frame["n_objects"] == 8), "acc"] = 0.95
    assert claim.main_claim(frame).verdict == PARTIALLY


def test_construction_ignores_n_above_d_head_and_boundary_needs_both_sides():
    frame = paper_like()
    frame.loc[(frame["mixer"] == "deltanet_02") & (frame["n_objects"] == 8), "acc"] = 0.1
    frame["d_head"] = 4
    assert claim.construction(frame).verdict == REPRODUCED
    assert claim.boundary(frame[frame["n_objects"] <= 4]).verdict == INCONCLUSIVE


def test_boundary_is_not_fooled_by_falling_chance():
    frame = failing()
    frame = pd.concat([frame, grid({("softmax", 2, k): 0.5 for k in (1, 2, 4)})], ignore_index=True)
    assert claim.boundary(frame).verdict == NOT_REPRODUCED  # 1/2 − 1/5 = 0.3 raw, 0 above chance


def test_checks_reads_s1():
    verdicts = [c.verdict for c in claim.checks({"S1": paper_like()})]
    assert verdicts == [REPRODUCED] * 4
    assert [c.verdict for c in claim.checks({})] == [INCONCLUSIVE] * 4


# ---- config -------------------------------------------------------------------------------------

def smoke_config():
    config = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    config["claims"] = ["swap_state_tracking"]
    return config


def test_smoke_config_is_valid():
    validate_config(smoke_config())


@pytest.mark.parametrize("edit, key", [
    (lambda c: c["S1"].update(heads=3), "swap_state_tracking.S1.heads"),
    (lambda c: c["S2"].update(warmup_steps=10**6), "swap_state_tracking.S2.warmup_steps"),
    (lambda c: c["S1"].update(test_multipliers=[1, 2, 3]), "swap_state_tracking.S1.test_multipliers"),
    (lambda c: c["S1"].update(boundary_n=[99]), "swap_state_tracking.S1.boundary_n"),
    (lambda c: c["S1"].update(models=["softmax", "lstm"]), "swap_state_tracking.S1.models"),
    (lambda c: c["S2"].update(kernels=["round"]), "swap_state_tracking.S2.kernels"),
    (lambda c: c["S1"].update(n_objects=[1]), "swap_state_tracking.S1.n_objects"),
    (lambda c: c["S1"].pop("T_train"), "swap_state_tracking.S1"),
])
def test_bad_configs_are_rejected_naming_the_key(edit, key):
    config = smoke_config()
    section = copy.deepcopy(config["swap_state_tracking"])
    edit(section)
    config["swap_state_tracking"] = section
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        validate_config(config)


def test_notebook_is_built_from_its_source():
    from attncap.notebook import percent_to_notebook

    source = (ROOT / "notebooks" / "swap_state_tracking.py").read_text()
    built = (ROOT / "notebooks" / "swap_state_tracking.ipynb").read_text()
    import nbformat

    assert nbformat.reads(built, as_version=4).cells == percent_to_notebook(source).cells
