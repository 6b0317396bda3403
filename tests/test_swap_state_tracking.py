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
from attncap.claims import DIVERGED, LEARNED, UNDER_TRAINED
from attncap.tasks.swap_state_tracking import (IGNORE, contents_after, encode, query_offset, sample, sample_swaps,
                                               vocab_size)

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
    # default: one token per swap, id a·n + b, target at that token; query token n² + c
    one = encode(a, b, n, query=torch.tensor([3]))
    assert one.tokens.tolist() == [[2, 15, 9, 28]]
    assert one.targets.tolist() == [[2, 2, 4, 2]]
    assert vocab_size(n) == 30 and query_offset(n) == 25
    # the two-token form: a, then n + b, target at the second token; query token 2n + c
    batch = encode(a, b, n, query=torch.tensor([3]), tokens_per_swap=2)
    assert vocab_size(n, 2) == 15
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
             T_train=4, tokens_per_swap=1, d_model=8, layers=1, heads=2, mlp_ratio=1, steps=3, batch=4, lr=0.003,
             adam_betas=[0.9, 0.98], weight_decay=0.1, warmup_steps=1, final_lr_fraction=0.1, clip=1.0,
             eval_batches=1, test_multipliers=[1, 2, 4], curriculum_start=2, check_every=1, check_batches=1,
             promote_accuracy=0.95, stop_accuracy=0.99)


def test_experiment_rows_and_determinism():
    def once(part="n3"):
        ctx = RunContext.create(claim="swap_state_tracking", experiment="S1", part=part, tier="test")
        return experiment.run("S1", SMALL, ctx)

    first, second = once(), once()
    assert len(first) == 2 * 3
    assert set(first["status"]) <= {LEARNED, UNDER_TRAINED}
    assert (first["steps_run"] <= SMALL["steps"]).all() and first["loss_curve"].str.len().gt(0).all()
    # one job per (n, mixer) gives the same rows as the whole n in one job (models train as if alone)
    alone = once("n3-deltanet_02")
    pd.testing.assert_frame_equal(alone[cols := ["acc", "final_train_loss", "steps_run"]].reset_index(drop=True),
                                  first[first["mixer"] == "deltanet_02"][cols].reset_index(drop=True),
                                  check_exact=False, rtol=1e-4, atol=1e-6)
    assert set(first["T_test"]) == {4, 8, 16}
    assert first["acc"].between(0, 1).all() and first["acc_final_query"].between(0, 1).all()
    assert first.loc[first["T_test"] == 16, "acc_by_position"].str.split().map(len).eq(16).all()
    cols = ["acc", "acc_mean", "acc_final_query", "final_train_loss", "max_value_norm"]
    pd.testing.assert_frame_equal(first[cols], second[cols])


def test_boundary_seeds_apply_only_at_boundary_n():
    spec = dict(SMALL, n_objects=[3, 4], boundary_n=[4])
    assert len(experiment.model_grid("S1", spec, 3)) == 2
    assert len(experiment.model_grid("S1", spec, 4)) == 4
    assert len(experiment.model_grid("S1", spec, 4, "softmax")) == 2
    assert experiment.parts("S1", spec) == ["n3-softmax", "n3-deltanet_02", "n4-softmax", "n4-deltanet_02"]
    assert experiment.parse_part("n4-deltanet_02") == (4, "deltanet_02")


def test_curriculum_doubles_up_to_t_train():
    assert experiment.curriculum(dict(T_train=32, curriculum_start=8)) == [8, 16, 32]
    assert experiment.curriculum(dict(T_train=24, curriculum_start=8)) == [8, 16, 24]
    assert experiment.curriculum(dict(T_train=8, curriculum_start=8)) == [8]
    assert experiment.curriculum(dict(T_train=8)) == [8]


def test_deltaformer_beta_range_and_ablation_rows():
    from attncap.models.mixers import BETA_MAX, MIXERS, SOFTMAX_MIXERS

    assert BETA_MAX["deltaformer_exp"] == 2.0 and BETA_MAX["deltanet_02"] == 2.0
    assert BETA_MAX["deltaformer_exp_01"] == 1.0 and BETA_MAX["deltaformer_linear_01"] == 1.0
    assert {"deltaformer_exp_01", "deltaformer_linear_01"} <= set(MIXERS) & SOFTMAX_MIXERS
    # the ablation mixer computes the same function; only the β range (set by the block) differs
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 6, 4, generator=g, dtype=torch.float64) for _ in range(3))
    beta = torch.rand(2, 6, generator=g, dtype=torch.float64)
    torch.testing.assert_close(MIXERS["deltaformer_exp"](q, k, v, beta), MIXERS["deltaformer_exp_01"](q, k, v, beta))


def test_early_stopping_holds_learned_models_and_records_steps():
    """A model that passes its held-out check stops updating and its job ends early; n = 2 objects and
    T_train = 2 swaps are learned within a few dozen steps."""
    spec = dict(SMALL, n_objects=[2], T_train=2, curriculum_start=2, steps=400, lr=0.01, warmup_steps=5,
                batch=64, eval_batches=2, check_every=20, stop_accuracy=0.99, models=["deltanet_02"])
    ctx = RunContext.create(claim="swap_state_tracking", experiment="S1", part="n2-deltanet_02", tier="test")
    rows = experiment.run("S1", spec, ctx)
    assert rows["stopped_early"].all() and (rows["steps_run"] < 400).all()
    assert (rows["status"] == LEARNED).all()


# ---- verdicts -------------------------------------------------------------------------------------

def grid(acc, loss=0.01, certificate=True):
    """Synthetic S1 table from {(mixer, n, multiplier): acc}; with `certificate` the rows carry the learning
    certificate (train_accuracy = the run's accuracy at T_train, final_train_loss = `loss`)."""
    rows = [{"mixer": m, "n_objects": n, "test_multiplier": k, "acc": a, "d_head": 8, "seed": 0, "T_train": 32}
            for (m, n, k), a in acc.items()]
    frame = pd.DataFrame(rows)
    if certificate:
        at_train = frame[frame["test_multiplier"] == 1].set_index(["mixer", "n_objects"])["acc"]
        frame["train_accuracy"] = [at_train[(m, n)] for m, n in zip(frame["mixer"], frame["n_objects"])]
        frame["final_train_loss"] = loss
    return frame


MIXERS = ["softmax", "deltaformer_linear", "deltanet_02"]
CELLS = list(itertools.product(MIXERS, (3, 4, 5, 8), (1, 2, 4)))


def control_table(acc=1.0, loss=0.01):
    frame = grid({("softmax", n, k): acc for n in (3, 5) for k in (1, 2, 4)}, loss=loss)
    return frame.assign(T_train=4)


def paper_like():
    """What the paper predicts: Transformer fine at n ≤ 4 only, DeltaFormer and DeltaNet(0,2) everywhere;
    every model learned T_train."""
    return grid({(m, n, k): 1.0 if (m != "softmax" or n <= 4 or k == 1) else 1.0 / n for m, n, k in CELLS})


def learned_but_failing():
    """Every model learned T_train, none generalizes: chance at 2T and 4T."""
    return grid({(m, n, k): 1.0 if k == 1 else 1.0 / n for m, n, k in CELLS})


def under_trained():
    """Nothing learns: chance everywhere, T_train included."""
    return grid({(m, n, k): 1.0 / n for m, n, k in CELLS})


def diverged():
    """Every run's loss is non-finite; a diverged run has no accuracy (NaN, never 0)."""
    return grid({(m, n, k): math.nan for m, n, k in CELLS}, loss=math.nan)


TRAINED = [claim.construction, claim.main_claim, claim.boundary, claim.published]
COMPARED_WITH_TRANSFORMER = (claim.main_claim, claim.published)


def judge(check, frame, control=None):
    """Run a check; the ones that compare with the Transformer also read the positive control (S3)."""
    if check in COMPARED_WITH_TRANSFORMER:
        return check(frame, control_table() if control is None else control)
    return check(frame)


@pytest.mark.parametrize("check", TRAINED + [claim.sanity])
def test_verdicts_pass_and_inconclusive(check):
    assert judge(check, paper_like()).verdict == REPRODUCED
    assert judge(check, None).verdict == INCONCLUSIVE
    empty = pd.DataFrame(columns=["mixer", "n_objects", "test_multiplier", "acc", "d_head"])
    assert judge(check, empty).verdict == INCONCLUSIVE


@pytest.mark.parametrize("check", TRAINED)
def test_learned_runs_fail_on_the_claim_itself(check):
    result = judge(check, learned_but_failing())
    assert result.verdict == NOT_REPRODUCED and not result.reason
    assert result.precondition and result.measured


@pytest.mark.parametrize("check", TRAINED)
def test_under_trained_and_diverged_runs_are_inconclusive(check):
    for frame, word in ((under_trained(), "under-trained"), (diverged(), "diverged")):
        result = judge(check, frame)
        assert result.verdict == INCONCLUSIVE, (check.__name__, word)
        assert word in result.reason
        assert result.measured  # the numbers stay


def test_under_trained_reason_names_the_model_and_its_accuracy():
    frame = paper_like()
    frame.loc[(frame["mixer"] == "deltaformer_linear") & (frame["n_objects"] == 5), ["acc", "train_accuracy"]] = 0.34
    result = judge(claim.main_claim, frame)
    assert result.verdict == INCONCLUSIVE
    assert "mixer=deltaformer_linear n_objects=5 reached 0.34" in result.reason


@pytest.mark.parametrize("check", COMPARED_WITH_TRANSFORMER)
def test_transformer_failing_in_distribution_withholds_the_verdict(check):
    """The paper predicts the Transformer fails at n ≥ 5, but a compared model at chance in distribution
    decides nothing: inconclusive, with the equal-budget verdict named; without the control, likewise."""
    frame = paper_like()
    weak = (frame["mixer"] == "softmax") & (frame["n_objects"] >= 5)
    frame.loc[weak, "acc"] = 0.3
    frame.loc[weak, "train_accuracy"] = 0.3
    result = judge(check, frame)
    assert result.verdict == INCONCLUSIVE and "would be 'reproduced'" in result.reason
    assert "did not learn T_train" in result.reason and "equal training budget" in result.reason
    failed = judge(check, frame, control_table(acc=0.3))
    assert failed.verdict == INCONCLUSIVE and "positive control failed" in failed.reason
    assert check(frame, None).verdict == INCONCLUSIVE


def kernel_ablation(exp_acc, linear_acc=1.0, loss=0.01):
    s1 = paper_like()
    linear = s1["mixer"] == "deltaformer_linear"
    s1.loc[linear, "acc"] = linear_acc
    s1.loc[linear, "train_accuracy"] = linear_acc
    s2 = grid({("deltaformer_exp", 5, k): exp_acc for k in (1, 2, 4)}, loss=loss)
    return s1, s2


def test_kernel_check_reads_the_exp_ablation_beside_linear():
    assert claim.kernel(*kernel_ablation(exp_acc=0.3)).verdict == REPRODUCED
    assert claim.kernel(*kernel_ablation(exp_acc=0.99)).verdict == NOT_REPRODUCED
    # κ1 = linear is the check's own positive control: if it did not learn, nothing is decided
    result = claim.kernel(*kernel_ablation(exp_acc=0.3, linear_acc=0.4))
    assert result.verdict == INCONCLUSIVE and "under-trained" in result.reason
    assert claim.kernel(*kernel_ablation(exp_acc=math.nan, loss=math.nan)).verdict == INCONCLUSIVE
    assert claim.kernel(paper_like(), None).verdict == INCONCLUSIVE


def test_one_diverged_seed_makes_the_cell_inconclusive():
    frame = paper_like()
    extra = frame[(frame["mixer"] == "softmax") & (frame["n_objects"] == 5)].assign(
        seed=1, acc=math.nan, train_accuracy=math.nan, final_train_loss=math.nan)
    result = judge(claim.main_claim, pd.concat([frame, extra], ignore_index=True))
    assert result.verdict == INCONCLUSIVE and "diverged: mixer=softmax n_objects=5" in result.reason


def test_sanity_and_control_gates():
    # the control learned, a model at n = 3 did not: sanity fails on its own terms
    frame = paper_like()
    frame.loc[(frame["mixer"] == "softmax") & (frame["n_objects"] == 3) & (frame["test_multiplier"] == 1),
              ["acc", "train_accuracy"]] = 0.6
    assert claim.sanity(frame, control_table()).verdict == PARTIALLY  # 2 of 3 models pass
    # the positive control failed: the recipe cannot train, sanity says nothing
    result = claim.sanity(paper_like(), control_table(acc=0.3))
    assert result.verdict == INCONCLUSIVE and "positive control" in result.reason
    assert claim.sanity(diverged(), control_table()).verdict == INCONCLUSIVE
    # the control itself: learned → reproduced, at chance → not reproduced (it measures learning),
    # diverged → inconclusive
    assert claim.control(control_table()).verdict == REPRODUCED
    assert claim.control(control_table(acc=0.3)).verdict == NOT_REPRODUCED
    assert claim.control(control_table(acc=math.nan, loss=math.nan)).verdict == INCONCLUSIVE
    assert claim.control(None).verdict == INCONCLUSIVE
    # a smoke-tier budget is too short to expect the control to learn: no verdict either way
    short = claim.control(control_table(acc=0.3).assign(steps=100))
    assert short.verdict == INCONCLUSIVE and "too short" in short.reason


def test_main_claim_needs_every_cell_and_reports_partial():
    frame = paper_like()
    assert judge(claim.main_claim, frame[frame["n_objects"] != 8]).verdict == INCONCLUSIVE
    frame.loc[(frame["mixer"] == "softmax") & (frame["n_objects"] == 8), "acc"] = 0.95
    assert judge(claim.main_claim, frame).verdict == PARTIALLY
    assert "n=4,2T (reference, S_4 solvable)" in judge(claim.main_claim, frame).measured


def test_construction_ignores_n_above_d_head_and_boundary_needs_both_sides():
    frame = paper_like()
    frame.loc[(frame["mixer"] == "deltanet_02") & (frame["n_objects"] == 8), ["acc", "train_accuracy"]] = 0.1
    frame["d_head"] = 4
    assert claim.construction(frame).verdict == REPRODUCED
    assert claim.boundary(frame[frame["n_objects"] <= 4]).verdict == INCONCLUSIVE


def test_boundary_is_not_fooled_by_falling_chance():
    frame = learned_but_failing()
    frame = pd.concat([frame, grid({("softmax", 2, k): 1.0 if k == 1 else 0.5 for k in (1, 2, 4)})],
                      ignore_index=True)
    assert claim.boundary(frame).verdict == NOT_REPRODUCED  # 1/2 − 1/5 = 0.3 raw, 0 above chance


def test_published_compares_with_the_papers_numbers():
    result = claim.published(paper_like())
    assert result.measured["transformer_largest_n"] == 4 and result.measured["deltaformer_largest_n"] == 8
    assert result.measured["paper_deltaformer"] == 128 and result.measured["paper_transformer"] == 5


def test_checks_read_s1_s2_and_s3():
    s1, s2 = kernel_ablation(exp_acc=0.3)
    verdicts = [c.verdict for c in claim.checks({"S1": s1, "S2": s2, "S3": control_table()})]
    assert verdicts == [REPRODUCED] * 7
    assert [c.verdict for c in claim.checks({})] == [INCONCLUSIVE] * 7


def test_certificate_columns_in_rows():
    """The experiment records the certificate; a diverged run gets NaN accuracy and status 'diverged'."""
    from attncap.claims import learning_status

    assert learning_status(math.nan, 0.0) == DIVERGED
    assert learning_status(0.1, 0.95) == LEARNED and learning_status(0.1, 0.5) == UNDER_TRAINED


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
    (lambda c: c["S2"].update(models=["deltaformer_round"]), "swap_state_tracking.S2.models"),
    (lambda c: c["S1"].update(tokens_per_swap=3), "swap_state_tracking.S1.tokens_per_swap"),
    (lambda c: c["S3"].update(curriculum_start=99), "swap_state_tracking.S3.curriculum_start"),
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

