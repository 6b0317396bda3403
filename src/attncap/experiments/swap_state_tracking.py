"""Claim 5 experiments: train small LMs (Transformer, DeltaFormer, DeltaNet) on the swap task and test
length generalization. S1 is the model × n grid, S2 the ablations (κ1 = linear, β ∈ (0, 1)) beside S1's
models at the same n and seed, S3 the Transformer positive control at a short training length.

One job trains one mixer at one n (`context.part` = "n<n>-<mixer>", every seed of that cell on one model
axis): on a CPU, stacking models gains nothing (README), and a job ends as soon as its own models have
learned, so early stopping saves real time. Every model follows a length curriculum: it trains on
sequences of `curriculum_start` swaps, doubling (up to T_train) each time a held-out check finds it
learned the current length (accuracy over the last quarter of the swaps ≥ `promote_accuracy`); at
T_train it stops (its parameters are held fixed) once `stop_checks` consecutive checks reach
`stop_accuracy`, or at `steps`. Why each run stopped is its `stop_reason` (`stop_reason`).
Models with the same seed start from the same initial weights and draw from the same data stream.

Options for the state-tracking recipe of the word-problem literature (issue 22): `mixed_lengths` makes
every batch mix all lengths ≤ the current training length (each sequence is scored on a prefix of
uniformly random length 1..L: for a causal model that is a sequence of that length), `positional` picks
rotary (default), learned absolute positions (in-distribution only: positions beyond T_train are never
trained) or none, `schedule` the learning-rate decay after warm-up (cosine or constant), `stage_steps` a
budget per curriculum length (a model that has not learned its current length within it stops there;
`learned_T` records the longest length a held-out check passed at `promote_accuracy`, confirmed on
`confirm_batches` batches of fresh sequences before it counts or promotes, `confirmed`), `stage_cap` how far
past that budget a model whose loss at this length is still falling may go on (the plateau rule of
`learning_status` over its steps at this length, checked every `check_every` steps: once at the first look,
on two adjacent window pairs at every later one, `attncap.train.plateau_settled`; at the last length, T_train,
up to the rest of the run's `steps` instead: nothing comes after it, and the cap would end a run that reached
T_train early short of the budget every run may use), and `depths`
a per-part depth axis (a list for every model, or {mixer: [depths]}; part names gain "-L<depth>").
`follow_multiplier` (m) keeps a model training after it solved T_train, checking its accuracy at m·T_train
(last quarter of the swaps, own held-out stream) until that settles: `follow_checks` consecutive checks ≥
`stop_accuracy`, or no gain above `follow_gain` in the best of the last `follow_checks` checks over the best
before them (stop_reason `followed`); without it a solved model stops, and what it reaches beyond T_train is
read at that moment, not where more training takes it. `follow_cap` (budgets, default 1) lets a model still
following at the step budget go on at the schedule's final rate until its accuracy there settles, up to
follow_cap·steps (`attncap.train.train_batched`'s continuation: the other models stop at the budget exactly as
without it); one that reaches its step limit still following is `max_steps`, whatever its loss.
`continue_cap` (budgets, default 1) certifies a failure to learn: a model that has not solved T_train by the
budget goes on at the final rate while its loss at its current length still falls (the plateau rule of
`stage_cap`), up to continue_cap·steps; its stop_reason is that decision (`plateau`: settled before the cap,
`max_steps`: still falling at the cap), and it is promoted or solves on the way as it would within the budget;
`continue_lr` (a fraction of the peak rate; default None, the schedule's final rate) is the rate of those steps.
With `stage_cap` (the last length may use the rest of the budget), a model still falling at its last length at the
budget is one the continuation extends, up to the same cap.
S4 is the paper's own protocol (T_train = 16, a 1-layer DeltaFormer beside 1/2/4-layer Transformers) and
the Transformer's in-distribution frontier (the curriculum's last length learned, per depth and n); S5 is
DeltaFormer's readout beyond T_train (`readouts`: no positions, a learned temperature; see READOUTS).
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time

import pandas as pd
import torch

from attncap.claims import DIVERGED, STILL_MOVING, learning_status
from attncap.experiments.context import RunContext
from attncap.models.lm import BatchedLM, masked_token_loss
from attncap.models.mixers import BETA_MAX, MIXERS
from attncap.tasks.swap_state_tracking import IGNORE, contents_after, query_offset, sample, step_positions, vocab_size
from attncap.train import (TrainSettings, final_loss, loss_curve, plateau_drop, plateau_settled, tail_lr_fraction,
                           train_batched)

MODEL_LABELS = {
    "softmax": "Transformer",
    "deltaformer_exp": "DeltaFormer (κ1=exp)",
    "deltaformer_linear": "DeltaFormer (κ1=linear)",
    "deltaformer_zero": "DeltaFormer (κ1=zero)",
    "deltaformer_round": "DeltaFormer (κ1=round)",
    "deltaformer_exp_01": "DeltaFormer (κ1=exp) β∈(0,1)",
    "deltaformer_linear_01": "DeltaFormer (κ1=linear) β∈(0,1)",
    "deltanet_01": "DeltaNet β∈(0,1)",
    "deltanet_02": "DeltaNet β∈(0,2)",
    "linear_identity": "linear attention",
    "linear_elu": "linear attention (elu)",
}
TRAIN_KEYS = ("T_train", "tokens_per_swap", "d_model", "layers", "heads", "mlp_ratio", "steps", "batch", "lr",
              "weight_decay", "warmup_steps", "final_lr_fraction", "clip", "eval_batches", "curriculum_start",
              "check_every", "promote_accuracy", "stop_accuracy", "stop_checks")
DEFAULTS = {"tokens_per_swap": 1, "adam_betas": [0.9, 0.999], "curriculum_start": None, "check_every": 50,
            "check_batches": 2, "promote_accuracy": 0.95, "stop_accuracy": 0.99, "stop_checks": 10,
            "mixed_lengths": False, "positional": "rotary", "schedule": "cosine", "stage_steps": None, "stage_cap": None,
            "readout_temperature": False, "follow_multiplier": None, "follow_checks": 10, "follow_gain": 0.01,
            "follow_cap": 1, "embed_std": None, "continue_cap": 1, "continue_lr": None, "confirm_batches": 16}
RECIPE_KEYS = ("mixed_lengths", "positional", "schedule", "stage_steps", "stage_cap", "readout_temperature",
               "follow_multiplier", "follow_cap", "embed_std", "continue_cap", "continue_lr", "confirm_batches")
EXPERIMENTS = ("S1", "S2", "S3", "S4", "S5")
READOUTS = {
    "rotary": {"positional": "rotary", "readout_temperature": False},
    "nope": {"positional": "none", "readout_temperature": False},
    "rotary_temp": {"positional": "rotary", "readout_temperature": True},
    "nope_temp": {"positional": "none", "readout_temperature": True},
}
"""Readout variants of the softmax mixers (issue 22 §4), an axis like `depths` (spec key `readouts`, a list or
{mixer: [names]}; part names gain "-R<name>"): rotary positions on q and k or none (NoPE), and a fixed 1/√d
scale or a learned inverse temperature per head (`attncap.models.lm.MixerBlock`). For a DeltaFormer, q and k
without positions make κ1(k_i, k_t) and the readout softmax(q_t·k_i) depend on content only, as the paper
writes them; the temperature is the paper's fixed τ unless learned."""


def with_defaults(spec: dict) -> dict:
    """The spec with optional keys filled (curriculum_start None = no curriculum, train at T_train)."""
    return {**DEFAULTS, **spec}


def depths_of(spec: dict, mixer: str) -> list[int] | None:
    """The depth axis of `mixer` (None: no axis, every model has `layers` layers)."""
    depths = spec.get("depths")
    if depths is None:
        return None
    return list(depths[mixer]) if isinstance(depths, dict) else list(depths)


def readouts_of(spec: dict, mixer: str) -> list[str] | None:
    """The readout axis of `mixer` (None: no axis, the spec's `positional` and `readout_temperature` hold)."""
    readouts = spec.get("readouts")
    if readouts is None or (isinstance(readouts, dict) and mixer not in readouts):
        return None
    return list(readouts[mixer]) if isinstance(readouts, dict) else list(readouts)


def parts(experiment: str, spec: dict) -> list[str]:
    """Job names of an experiment: one per (number of objects, mixer[, depth][, readout])."""
    out = []
    for n in spec["n_objects"]:
        for mixer in spec["models"]:
            depths, readouts = depths_of(spec, mixer), readouts_of(spec, mixer)
            names = [f"n{n}-{mixer}"] if depths is None else [f"n{n}-{mixer}-L{d}" for d in depths]
            out += names if readouts is None else [f"{p}-R{r}" for p in names for r in readouts]
    return out


def _suffixes(part: str) -> dict[str, str]:
    """{'L': depth, 'R': readout} from a part's '-L<depth>' / '-R<readout>' suffixes (mixer names have no '-')."""
    return {s[0]: s[1:] for s in part.split("-")[2:]}


def parse_part(part: str) -> tuple[int, str | None]:
    """'n5-softmax' → (5, 'softmax'); 'n5-softmax-L4' and 'n5-deltaformer_linear-Rnope' → the same without
    the suffix; 'n5' → (5, None) (every mixer of that n in one job). The depth is `part_layers`, the
    readout `part_readout`."""
    head, _, mixer = part.partition("-")
    mixer = mixer.partition("-")[0]
    return int(head.removeprefix("n")), (mixer or None)


def part_layers(part: str) -> int | None:
    """'n5-softmax-L4' → 4; None when the part has no depth."""
    depth = _suffixes(part).get("L")
    return int(depth) if depth is not None else None


def part_readout(part: str) -> str | None:
    """'n5-deltaformer_linear-Rnope' → 'nope'; None when the part has no readout variant."""
    return _suffixes(part).get("R")


def model_grid(experiment: str, spec: dict, n: int, mixer: str | None = None, layers: int | None = None,
               readout: str | None = None) -> list[dict]:
    """[{mixer, seed}] trained at n objects (one mixer, or all), ordered by mixer (the LM runs equal
    mixers together). `boundary_n` cells get `boundary_seeds`; a mixer in `seeds_by_mixer` gets its own seeds
    there instead (more seeds where only its seed spread is missing). With a depth (`layers`, from the part) or a
    readout variant the entries carry it, so the run tables' `layers` / `readout` columns tell them apart."""
    if experiment not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r} for swap_state_tracking; known: {', '.join(EXPERIMENTS)}")
    mixers = [mixer] if mixer is not None else list(spec["models"])
    seeds = spec["boundary_seeds"] if n in spec.get("boundary_n", []) else spec["seeds"]
    own = spec.get("seeds_by_mixer") or {}
    depth = {} if layers is None else {"layers": int(layers)}
    depth = depth if readout is None else {**depth, "readout": str(readout)}
    return [{"mixer": m, "seed": int(s), **depth} for m in mixers for s in own.get(m, seeds)]


def curriculum(spec: dict) -> list[int]:
    """Training lengths in order: curriculum_start, doubling, ending at T_train."""
    start, final = spec.get("curriculum_start"), spec["T_train"]
    if not start or start >= final:
        return [final]
    stages = []
    length = start
    while length < final:
        stages.append(length)
        length *= 2
    return stages + [final]


def expected_cells(section: dict) -> dict[str, list[dict]]:
    """Run table (file stem) -> the cells the config asks it to hold ({column: value} dicts some row
    must match); attncap.claims.evaluate refuses verdicts from tables that lack any of them.

    The swap grid is being redesigned (one-token swaps, curricula, ...): the cells are model_grid's
    entries (every key it returns must be a column of the rows) x test lengths, one table per
    (experiment, part); when the grid gains keys, model_grid and parts are the places to change.
    """
    out = {}
    for experiment in sorted(k for k in section if k.startswith("S")):
        spec = section[experiment]
        if not isinstance(spec, dict) or "n_objects" not in spec:
            continue
        for part in parts(experiment, spec):
            n, mixer = parse_part(part)
            lengths = [{"test_multiplier": m} for m in spec.get("test_multipliers", [])] or [{}]
            out[f"{experiment}_{part}"] = [{**g, "n_objects": n, **length} for g in
                                           model_grid(experiment, spec, n, mixer, part_layers(part), part_readout(part))
                                           for length in lengths]
    return out


STOP_REASONS = ("solved", "followed", "plateau", "max_steps", "diverged")
"""Why a run stopped (column `stop_reason`): `solved`, early stop after `stop_checks` consecutive held-out
passes at T_train; `followed`, solved T_train and then trained on until its accuracy at
`follow_multiplier`·T_train settled (`follow_settled`); `plateau`, the step limit with the loss settled at
its final curriculum length (that length reached before the last 20% of the run, and the loss fell ≤ PLATEAU_DROP per unit of learning rate
over the last 10%: `attncap.claims.learning_status`'s rule on `loss_drop` / `lr_last10`); `max_steps`, the
step limit while still improving (or promoted to a longer length too late to tell); `diverged`. A run stopped by
its length's budget under a `stage_cap` is labelled by the continuation's own decision instead (`settled`):
stopped before the cap because its loss at that length had settled, `plateau`; stopped at the cap (its loss
still falling at every check before), `max_steps`. One rule then decides both when to stop and what the stop
means (the run's last 10% and the length's last 10% are different windows and disagreed on a borderline run)."""


def stop_reason(stopped_early: bool, diverged: bool, steps_run: int, final_stage_step: int, loss: float,
                loss_drop: float, lr_last10: float, followed: bool = False, settled: bool | None = None) -> str:
    """One run's `stop_reason` (STOP_REASONS); `followed`: it had solved T_train and was following its accuracy
    beyond T_train (stopped early: that accuracy settled; not: the step limit came first, `max_steps` whatever the
    loss, since what the length checks read never settled); `settled`: the stage continuation's decision for a
    run it stopped (None: judge the run's last 10%)."""
    if diverged or not math.isfinite(loss):
        return "diverged"
    if stopped_early:
        return "followed" if followed else "solved"
    if followed:
        return "max_steps"
    if settled is not None:
        return "plateau" if settled else "max_steps"
    window = max(1, int(steps_run * 0.1))
    if final_stage_step > steps_run - 2 * window:  # the plateau window would straddle a curriculum promotion
        return "max_steps"
    moving = learning_status(loss, None, None, loss_drop=loss_drop, lr_fraction=lr_last10) == STILL_MOVING
    return "max_steps" if moving else "plateau"


def fresh_length(reached_at: int, now: int, check_every: int) -> bool:
    """Whether a model reached its current length too recently to judge its loss there: within the last 20% of its
    steps so far (`stop_reason`'s rule for a run's own last length), or one check. `continue_cap` lets such a model
    go on: an exp run promoted to 16 swaps at step 22150 had read 'settled' at 22300 (150 steps there), and at 22750
    with 20% of a 3000-step budget, where it had taken 22000 steps to learn 8 swaps."""
    return now - reached_at < max(check_every, 0.2 * now)


def follow_settled(accuracies: list[float], checks: int, gain: float, target: float) -> bool:
    """Whether a solved model's accuracy beyond T_train (one value per held-out check since it solved T_train)
    has settled: the last `checks` values all ≥ `target` (it generalizes), or, with at least 2·`checks` values,
    the best of the last `checks` is no more than `gain` above the best before them (it stopped improving)."""
    if len(accuracies) >= checks and min(accuracies[-checks:]) >= target:
        return True
    return len(accuracies) >= 2 * checks and max(accuracies[-checks:]) <= max(accuracies[:-checks]) + gain


def _generator(base_seed: int, seed: int, n: int, stream: int) -> torch.Generator:
    """Data stream of one (seed, n): 0 training, 1 final evaluation, 2 the curriculum's held-out checks, 3 the
    checks beyond T_train of a solved model (`follow_multiplier`), 4 the confirmations of a passed check
    (`confirm_batches`)."""
    return torch.Generator().manual_seed(((base_seed * 1_000 + seed) * 1_000 + n) * 10 + stream)


def padded_batch(batches, device, length: int | None = None):
    """Stack per-model batches of different lengths into (M, B, L) tokens and targets: padding goes at the
    end (token 0, target IGNORE), which the causal models never see from earlier positions. L: the longest
    batch, or `length` when given (at least that)."""
    length = max([b.tokens.shape[1] for b in batches] + ([length] if length else []))
    tokens = torch.zeros(len(batches), *batches[0].tokens.shape[:1], length, dtype=torch.long)
    targets = torch.full_like(tokens, IGNORE)
    for i, b in enumerate(batches):
        tokens[i, :, : b.tokens.shape[1]] = b.tokens
        targets[i, :, : b.targets.shape[1]] = b.targets
    return tokens.to(device), targets.to(device)


def mixed_lengths(batch, generator: torch.Generator, tokens_per_swap: int = 1):
    """The batch as sequences of uniformly random lengths 1..L (L its length): targets after each
    sequence's own length become IGNORE. For a causal model a sequence cut after ℓ swaps is exactly a
    sequence of ℓ swaps, so one batch mixes every length ≤ L (the word-problem recipe) at the cost of L."""
    steps = batch.step_targets.shape[1]
    lengths = torch.randint(1, steps + 1, (batch.step_targets.shape[0], 1), generator=generator)
    cut = torch.arange(batch.targets.shape[1]) >= lengths * tokens_per_swap
    return dataclasses.replace(batch, targets=batch.targets.masked_fill(cut, IGNORE))


def step_accuracy(model: BatchedLM, batches, tokens_per_swap: int, device, length: int | None = None) -> torch.Tensor:
    """(M, L) per-step accuracy of each model on its batch (no final query), L the longest sequence (padded
    to `length` tokens when given, as `padded_batch`)."""
    return step_correct(model, batches, tokens_per_swap, device, length).mean(1)


def step_correct(model: BatchedLM, batches, tokens_per_swap: int, device, length: int | None = None) -> torch.Tensor:
    """(M, B, L) 1.0 where each model's prediction after each swap of each sequence is right (`step_accuracy`
    before the mean over sequences)."""
    tokens, _ = padded_batch(batches, device, length)
    logits = model(tokens)[:, :, step_positions(tokens_per_swap)]
    # padded to `length`, the logits may cover more swaps than these batches hold (the longest batch was a
    # dropped model's); the truth is -1 there, which no prediction matches
    truth = torch.full(logits.shape[:3], -1, dtype=torch.long)
    for i, b in enumerate(batches):
        truth[i, :, : b.step_targets.shape[1]] = b.step_targets
    return (logits.argmax(-1).cpu() == truth).double()


def confirmation(per_sequence: torch.Tensor) -> tuple[float, float]:
    """(mean, standard error) of a confirmation: the last-quarter accuracies of its fresh sequences, one per
    sequence, so the error counts the positions of one sequence as one draw (they are correlated: a model
    that loses track at some swap gets the later ones wrong together)."""
    values = per_sequence.double()
    n = values.numel()
    return float(values.mean()), float(values.std(unbiased=True) / math.sqrt(n)) if n > 1 else math.inf


def last_quarter(curve: torch.Tensor, length: int) -> torch.Tensor:
    """Mean per-step accuracy over swaps (3L/4, L] (the verdicts' `acc`): (..., ≥L) → (...)."""
    return curve[..., (3 * length) // 4 : length].mean(-1)


def evaluate(model: BatchedLM, grid: list[dict], n: int, spec: dict, base_seed: int, device: str) -> list[dict]:
    """Per-step accuracy curve over 1..max(T_test) and final-query accuracy at each T_test, per model.

    The LM is causal, so the per-step accuracy at steps ≤ L is the same whether the sequence has L or
    4·T_train swaps: one long evaluation gives every test length's per-step numbers.
    """
    form = spec["tokens_per_swap"]
    lengths = [spec["T_train"] * m for m in spec["test_multipliers"]]
    longest = max(lengths)
    gens = [_generator(base_seed, g["seed"], n, 1) for g in grid]
    correct = torch.zeros(len(grid), longest, dtype=torch.float64)
    query_correct = {L: torch.zeros(len(grid), dtype=torch.float64) for L in lengths}
    total = 0
    value_norm = torch.zeros(len(grid))
    model.eval()
    with torch.no_grad():
        for _ in range(spec["eval_batches"]):
            batches = [sample(n, longest, spec["batch"], g, final_query=False, tokens_per_swap=form) for g in gens]
            correct += step_accuracy(model, batches, form, device) * spec["batch"]
            value_norm = torch.maximum(value_norm, model.value_norm().cpu())
            tokens, _ = padded_batch(batches, device)
            for L in lengths:
                # The final-query variant: the first L swaps of the same sequences, then one query.
                qs = torch.stack([torch.randint(0, n, (spec["batch"],), generator=g) for g in gens])
                tokens_q = torch.cat([tokens[:, :, : form * L], (query_offset(n, form) + qs).to(device)[:, :, None]], 2)
                answers = torch.stack([contents_after(b.a[:, :L], b.b[:, :L], n)[torch.arange(spec["batch"]), -1, q]
                                       for b, q in zip(batches, qs)])
                pred = model(tokens_q)[:, :, -1].argmax(-1).cpu()
                query_correct[L] += (pred == answers).double().sum(1)
            total += spec["batch"]
    model.train()
    curve = correct / total
    rows = []
    for i, g in enumerate(grid):
        for mult, L in zip(spec["test_multipliers"], lengths):
            rows.append({
                "T_test": L, "test_multiplier": mult,
                "acc": float(last_quarter(curve[i], L)),  # mean per-step accuracy over the last quarter of the steps
                "acc_mean": float(curve[i, :L].mean()),
                "acc_last": float(curve[i, L - 1]),
                "acc_final_query": float(query_correct[L][i] / total),
                "acc_by_position": " ".join(f"{x:.4f}" for x in curve[i, :L].tolist()),
                "max_value_norm": float(value_norm[i]),
            })
    return rows


def run(experiment: str, spec: dict, context: RunContext) -> pd.DataFrame:
    spec = with_defaults(spec)
    if context.part == "all":
        return pd.concat([run(experiment, spec, _with_part(context, p)) for p in parts(experiment, spec)],
                         ignore_index=True)
    n, mixer = parse_part(context.part)
    depth, readout = part_layers(context.part), part_readout(context.part)
    if n not in spec["n_objects"] or (mixer is not None and mixer not in spec["models"]) or (
            depth is not None and (mixer is None or depth not in (depths_of(spec, mixer) or []))) or (
            readout is not None and (mixer is None or readout not in (readouts_of(spec, mixer) or []))) or (
            readout is None and mixer is not None and readouts_of(spec, mixer) is not None):
        raise ValueError(f"part {context.part!r} is not in {experiment}: n_objects={spec['n_objects']}, "
                         f"models={spec['models']}, depths={spec.get('depths')}, readouts={spec.get('readouts')}")
    if depth is not None:
        spec = {**spec, "layers": depth}
    if readout is not None:
        spec = {**spec, **READOUTS[readout]}
    grid = model_grid(experiment, spec, n, mixer, depth, readout)
    device = context.device
    form = spec["tokens_per_swap"]
    init_seeds = [(context.seed * 1_000 + g["seed"]) * 1_000 + n for g in grid]
    model = BatchedLM(init_seeds, [g["mixer"] for g in grid], vocab=vocab_size(n, form), d_model=spec["d_model"],
                      n_layers=spec["layers"], n_heads=spec["heads"], mlp_ratio=spec["mlp_ratio"],
                      positional=spec["positional"], readout_temperature=bool(spec["readout_temperature"]),
                      embed_std=spec["embed_std"],
                      max_len=form * spec["T_train"] * max(spec["test_multipliers"]) + 1).to(device)
    gens = [_generator(context.seed, g["seed"], n, 0) for g in grid]
    check_gens = [_generator(context.seed, g["seed"], n, 2) for g in grid]
    follow_gens = [_generator(context.seed, g["seed"], n, 3) for g in grid]  # own stream: other checks unchanged
    confirm_gens = [_generator(context.seed, g["seed"], n, 4) for g in grid]  # drawn only at a model's own confirmations
    check_size = spec["batch"] * spec["check_batches"]  # sequences in one held-out check
    confirm_chunks = math.ceil(spec["confirm_batches"] / spec["check_batches"])  # a confirmation, in checks' sizes
    settings = TrainSettings(steps=spec["steps"], lr=spec["lr"], optimizer="adamw", betas=tuple(spec["adam_betas"]),
                             weight_decay=spec["weight_decay"], warmup_steps=spec["warmup_steps"],
                             schedule=spec["schedule"], final_lr_fraction=spec["final_lr_fraction"],
                             clip_norm=spec["clip"], continue_lr_fraction=spec["continue_lr"])
    stages = curriculum(spec)
    stage = [0] * len(grid)  # index into `stages`, per model
    reached = [{stages[0]: 0} for _ in grid]  # training length → step at which the model reached it
    done = torch.zeros(len(grid), dtype=torch.bool)
    diverged = torch.zeros(len(grid), dtype=torch.bool)
    checks: list[list[str]] = [[] for _ in grid]  # "step:T:acc" of every held-out check
    passes = [0] * len(grid)  # consecutive checks at T_train with accuracy ≥ stop_accuracy
    learned = [0] * len(grid)  # longest length with a held-out check ≥ promote_accuracy, confirmed (the frontier)
    learned_stats = [(math.nan, math.nan)] * len(grid)  # (accuracy, standard error) of the confirmation at `learned`
    confirmations = [0] * len(grid)  # confirmations drawn (passed or not): each a chance of a false pass
    following: list[list[float] | None] = [None] * len(grid)  # accuracy at follow·T_train per check, once solved
    far = spec["follow_multiplier"] * spec["T_train"] if spec["follow_multiplier"] else None  # followed length
    stalled = [False] * len(grid)  # stopped by `stage_steps` without learning its current length
    stage_settled: list[bool | None] = [None] * len(grid)  # the continuation's decision where `stage_cap` applied
    loss_log: list[torch.Tensor] = []  # every step's (M,) losses, kept on the device (no per-step sync)
    rows = list(range(len(grid)))  # the models on the axis: a stopped one is dropped (train_batched(narrow=...))
    stage_cap = max(spec["stage_cap"] or 0, spec["stage_steps"] or 0)
    continued_lengths = stage_cap > (spec["stage_steps"] or 0)  # a length still falling may go past its budget
    continue_steps = math.ceil(spec["continue_cap"] * spec["steps"])  # a run's step limit with `continue_cap`

    def length_cap(i: int, L: int) -> int:
        """How many steps model i may spend at length L while its loss there still falls: `stage_cap`, except
        that with a continuation (stage_cap > stage_steps) the last length may use the rest of the run's budget.
        The cap makes a run move on so that later lengths are reached; at the last there is no later one, so a
        run that reached it early may use the rest of the step budget, which is the same for every run (the
        protocol compares models at equal budgets). So every run still falling at the last length when the budget
        ends is a stage-budget stop (`max_steps`), however late it reached that length (once it had `stage_steps`
        there). With `continue_cap` the run's budget is the continuation's cap: a run still falling there at the
        budget goes on (`certified`) and this cap must not end it at the budget."""
        if L == stages[-1] and continued_lengths:
            return max(spec["steps"], continue_steps) - reached[i][L]
        return stage_cap
    extended = [False] * len(grid)  # kept training past the budget by `continue_cap` (its loss still fell there)
    train_norm = torch.zeros(len(grid))

    def next_batch(step):
        # Only the models on the axis get data. A stopped model still there (a loop that holds it) only needs
        # some: the shortest length any model still trains on (its own T_train would lengthen everyone's batch).
        active = [stages[s] for s, d in zip(stage, done.tolist()) if not d] or [stages[0]]
        batches = [sample(n, min(active) if done[i] else stages[stage[i]], spec["batch"], gens[i], tokens_per_swap=form)
                   for i in rows]
        if spec["mixed_lengths"]:
            batches = [mixed_lengths(b, gens[i], form) for b, i in zip(batches, rows)]
        return padded_batch(batches, device)

    def loss_fn(model, batch):
        tokens, targets = batch
        losses = masked_token_loss(model(tokens), targets)
        train_norm[rows] = torch.maximum(train_norm[rows], model.value_norm().detach().cpu())
        return losses

    def narrow(kept: torch.Tensor) -> None:
        rows[:] = kept.tolist()
        model.keep_models(kept)

    def still_falling(i, step, first_look: bool) -> bool:
        """The loss at model i's current length still falls: the plateau rule over its steps at this length,
        read once at the first look and twice at every later one (`plateau_settled`: these looks come every
        `check_every` steps, each a chance for one flat-looking window pair)."""
        start = reached[i][stages[stage[i]]]
        own = torch.stack(loss_log[start:])[:, i].tolist()
        if not math.isfinite(final_loss(own)):
            return False  # diverged: more steps cannot help
        # each window's rate, as stop_reason's lr_last10 for a whole run
        return not plateau_settled(own, lambda end, window: tail_lr_fraction(settings, start + end, window=window),
                                   reads=1 if first_look else 2)

    def confirmed(i: int, L: int, step: int) -> bool:
        """Whether model i, whose held-out check just passed length L (not yet learned), passes again on
        `confirm_batches` × batch fresh sequences of that length from its own stream (`confirmation`). A check
        of 2 × 64 sequences asked every `check_every` steps gives a model hovering below `promote_accuracy` many
        chances to pass once; the frontier (`learned_T`) is the longest length so confirmed, and the
        confirmation's accuracy and standard error are kept with the count of confirmations drawn, so that its
        error rate can be stated (`claims.swap_state_tracking`)."""
        if not spec["confirm_batches"]:
            return True
        confirmations[i] += 1
        values = []
        with torch.no_grad():
            for _ in range(confirm_chunks):
                own = sample(n, L, check_size, confirm_gens[i], final_query=False, tokens_per_swap=form)
                # the other models on the axis see the same sequences; only model i's predictions are read
                correct = step_correct(model, [own] * len(rows), form, device)[rows.index(i)]
                values.append(last_quarter(correct, L))  # per sequence
        acc, se = confirmation(torch.stack(values).flatten())
        checks[i].append(f"{step}:{L}:confirm={acc:.3f}±{se:.3f}")
        if acc >= spec["promote_accuracy"]:
            learned_stats[i] = (acc, se)
            return True
        return False

    def on_step(step, losses, batch):
        trained = torch.zeros(len(grid), dtype=torch.bool)
        trained[rows] = True  # a model off the axis has a NaN loss that is not its own
        diverged.logical_or_(~torch.isfinite(losses.cpu()) & trained)
        loss_log.append(losses)
        if (step + 1) % spec["check_every"] == 0:
            model.eval()
            with torch.no_grad():
                lengths = [stages[s] for s in stage]
                # every model's check sequences are drawn (its own stream) and padded to the longest, so a model
                # left on the axis is checked on the same tokens whichever of its batch mates were dropped
                batches = [sample(n, L, check_size, g, final_query=False,
                                  tokens_per_swap=form) for L, g in zip(lengths, check_gens)]
                longest = max(b.tokens.shape[1] for b in batches)
                curve = dict(zip(rows, step_accuracy(model, [batches[i] for i in rows], form, device, longest)))
                beyond = None
                if far and any(f is not None and not d for f, d in zip(following, done.tolist())):
                    followed = [sample(n, far, check_size, g, final_query=False,
                                       tokens_per_swap=form) for g in follow_gens]
                    beyond = dict(zip(rows, step_accuracy(model, [followed[i] for i in rows], form, device)))
            past_budget = step + 1 > spec["steps"]  # only following and continued models train on
            for i, L in enumerate(lengths):
                if done[i] or i not in curve or (past_budget and following[i] is None and not extended[i]):
                    continue  # (not in curve: diverged, off the axis)
                acc = float(last_quarter(curve[i], L))
                checks[i].append(f"{step + 1}:{L}:{acc:.3f}")
                at_length = step + 1 - reached[i][L]  # steps trained at the current length
                # a pass at a length not yet learned counts once confirmed on fresh sequences
                promoted = acc >= spec["promote_accuracy"] and (learned[i] >= L or confirmed(i, L, step + 1))
                if promoted:
                    learned[i] = max(learned[i], L)
                elif (spec["stage_steps"] and learned[i] < L and at_length >= spec["stage_steps"]
                      and (at_length >= length_cap(i, L) or not still_falling(
                          i, step, first_look=at_length < spec["stage_steps"] + spec["check_every"]))):
                    # Not learned within this length's budget (continued up to `length_cap` while its loss
                    # still fell): the frontier run stops here. With a continuation its stop_reason is that
                    # decision (stopped before the cap: settled; at the cap, still falling at every check
                    # before it: not shown settled); without one, the plateau rule over the run's last 10%.
                    done[i] = stalled[i] = True
                    if continued_lengths:
                        stage_settled[i] = at_length < length_cap(i, L)
                    continue
                if stage[i] == len(stages) - 1:
                    if following[i] is not None and beyond is not None:
                        far_acc = float(last_quarter(beyond[i], far))
                        following[i].append(far_acc)
                        checks[i].append(f"{step + 1}:{far}:{far_acc:.3f}")
                        if follow_settled(following[i], spec["follow_checks"], spec["follow_gain"],
                                          spec["stop_accuracy"]):
                            done[i] = True
                        continue
                    # Stop after `stop_checks` consecutive passing checks: one pass at 0.99 stops a model
                    # while its solution is still approximate (DeltaNet stopped at the first pass kept 0.99
                    # at T_train but fell to 0.56-0.80 at 4·T_train; after 5 passes 0.90-0.995); the extra
                    # checks (in distribution only) let it sharpen.
                    passes[i] = passes[i] + 1 if acc >= spec["stop_accuracy"] else 0
                    if passes[i] >= spec["stop_checks"]:
                        if far:
                            following[i] = []  # solved T_train: from the next check on, follow m·T_train
                        else:
                            done[i] = True
                elif promoted:
                    stage[i] += 1
                    reached[i][stages[stage[i]]] = step + 1
            model.train()
            print(f"step {step + 1}: " + ", ".join(f"{g['mixer']}/{g['seed']} T={stages[s]} {c.split(':')[-1] if c else ''}"
                                              f"{' done' if d else ''}" for g, s, c, d in
                                              zip(grid, stage, (c[-1] if c else "" for c in checks), done.tolist())),
                  file=sys.stderr, flush=True)
        # A diverged model can only stay non-finite: stop spending steps on it.
        return done | diverged

    # Past the budget only models still following their accuracy beyond T_train go on (`follow_cap`); every
    # other model counts as certified there, so it stops at the budget as it would without a continuation.
    # With `continue_cap`, a model that has not solved T_train goes on only while its loss at its length still falls,
    # and that decision is its stop_reason (`stage_settled`), made once per model.

    def fresh(i) -> bool:
        return fresh_length(reached[i][stages[stage[i]]], len(loss_log), spec["check_every"])

    def certified(history, model_steps):
        step = history.shape[0] - 1
        out = []
        for i in range(len(grid)):
            if done[i] or diverged[i] or (following[i] is None and continue_steps <= spec["steps"]):
                out.append(True)
            elif following[i] is not None:
                out.append(False)  # until its accuracy beyond T_train settles, up to the cap
            elif stage_settled[i] is not None:
                out.append(True)  # decided at an earlier chunk
            elif int(model_steps[i]) < continue_steps and (
                    fresh(i) or still_falling(i, step, first_look=int(model_steps[i]) <= spec["steps"])):
                extended[i] = True
                out.append(False)
            else:
                stage_settled[i] = int(model_steps[i]) < continue_steps
                out.append(True)
        return torch.tensor(out, device=done.device)

    continued = {}
    if (far and spec["follow_cap"] > 1) or continue_steps > spec["steps"]:
        follow_steps = math.ceil(spec["follow_cap"] * spec["steps"]) if far else spec["steps"]
        continued = dict(max_steps=max(follow_steps, continue_steps), check_every=spec["check_every"],
                         until_certified=certified)
    start = time.perf_counter()
    result = train_batched(model, next_batch, loss_fn, settings, desc=f"swap {experiment} {context.part}",
                           on_step=on_step, narrow=narrow, **continued)
    train_time = time.perf_counter() - start
    rows = evaluate(model, grid, n, spec, context.seed, device)
    wall = time.perf_counter() - start
    per_model = len(rows) // len(grid)
    history = result["model_loss_history"]
    out = []
    for i, g in enumerate(grid):
        own = history[: result["model_steps"][i], i].tolist()
        loss = final_loss(own)
        model_rows = rows[i * per_model : (i + 1) * per_model]
        at_train = next(r for r in model_rows if r["test_multiplier"] == 1)
        status = DIVERGED if bool(diverged[i]) else learning_status(loss, at_train["acc"])
        drop, lr_tail = plateau_drop(own), tail_lr_fraction(settings, result["model_steps"][i])
        reason = stop_reason(bool(done[i]) and not stalled[i], bool(diverged[i]), result["model_steps"][i],
                             reached[i][stages[stage[i]]], loss, drop, lr_tail, followed=following[i] is not None,
                             settled=stage_settled[i])
        if status == DIVERGED:  # a diverged run has no accuracy (never 0)
            loss = math.nan
            for row in model_rows:
                for key in ("acc", "acc_mean", "acc_last", "acc_final_query"):
                    row[key] = math.nan
        for row in model_rows:
            out.append({
                "n_objects": n, "mixer": g["mixer"], "model": MODEL_LABELS.get(g["mixer"], g["mixer"]),
                "kernel": g["mixer"].split("_")[1] if g["mixer"].startswith("deltaformer") else "",
                "readout": readout or "",
                "beta_max": BETA_MAX.get(g["mixer"], float("nan")), "seed": g["seed"],
                **{k: spec[k] for k in TRAIN_KEYS}, **{k: spec[k] for k in RECIPE_KEYS}, "adam_betas": " ".join(map(str, spec["adam_betas"])),
                "d_head": spec["d_model"] // spec["heads"], "models_in_job": len(grid),
                "final_train_loss": loss, "loss_curve": loss_curve(own),
                "train_accuracy": at_train["acc"] if status != DIVERGED else math.nan, "status": status,
                "steps_run": result["model_steps"][i], "max_steps": spec["steps"], "job_steps": result["steps_run"],
                "stopped_early": bool(done[i]), "stop_reason": reason, "loss_drop": drop, "lr_last10": lr_tail,
                "curriculum": " ".join(f"{L}@{s}" for L, s in reached[i].items()),
                "final_stage_T": stages[stage[i]], "learned_T": learned[i], "learned_T_acc": learned_stats[i][0],
                "learned_T_se": learned_stats[i][1], "confirmations": confirmations[i],
                "confirm_sequences": confirm_chunks * check_size,
                "stage_budget_stop": stalled[i],
                "checks": " ".join(checks[i][-40:]),
                "follow_checks_run": len(following[i]) if following[i] is not None else 0,
                "max_train_value_norm": float(train_norm[i]), **row,
                "train_time_s": train_time / len(grid), "wall_time_s": wall / len(grid),
            })
    return pd.DataFrame(out)


def _with_part(context: RunContext, part: str) -> RunContext:
    return dataclasses.replace(context, part=part)


def check_config(section: dict) -> list[str]:
    """Shape rules JSON Schema cannot express (the caller prefixes the claim name)."""
    problems = []
    for exp, spec in section.items():
        if not isinstance(spec, dict) or "d_model" not in spec:
            continue
        if spec["d_model"] % spec["heads"]:
            problems.append(f"{exp}.heads: d_model={spec['d_model']} is not divisible by heads={spec['heads']}")
        if spec["warmup_steps"] >= spec["steps"]:
            problems.append(f"{exp}.warmup_steps: warmup_steps={spec['warmup_steps']} must be < steps={spec['steps']}")
        if not {1, 2, 4} <= set(spec["test_multipliers"]):
            problems.append(f"{exp}.test_multipliers: {spec['test_multipliers']} must contain 1, 2 and 4 "
                            "(the verdicts read T_train, 2·T_train and 4·T_train)")
        for name in spec.get("models", []):
            if name not in MIXERS:
                problems.append(f"{exp}.models: unknown mixer {name!r}; known: {sorted(MIXERS)}")
            for readout in readouts_of(spec, name) or []:
                if readout not in READOUTS:
                    problems.append(f"{exp}.readouts: unknown readout {readout!r}; known: {sorted(READOUTS)}")
        for name in spec.get("seeds_by_mixer") or {}:
            if name not in spec.get("models", []):
                problems.append(f"{exp}.seeds_by_mixer: {name!r} is not in models={spec.get('models')}")
        missing = sorted(set(spec.get("boundary_n", [])) - set(spec["n_objects"]))
        if missing:
            problems.append(f"{exp}.boundary_n: {missing} not in n_objects={spec['n_objects']}")
        follow = spec.get("follow_multiplier")
        if follow and follow > max(spec["test_multipliers"]):
            problems.append(f"{exp}.follow_multiplier: {follow} must be ≤ max(test_multipliers)="
                            f"{max(spec['test_multipliers'])} (the model's positions end there)")
        start = spec.get("curriculum_start")
        if start is not None and start > spec["T_train"]:
            problems.append(f"{exp}.curriculum_start: {start} must be ≤ T_train={spec['T_train']}")
    return problems
