"""Claim 5 experiments: train small LMs (Transformer, DeltaFormer, DeltaNet) on the swap task and test
length generalization. S1 is the model × n grid, S2 the DeltaFormer κ1-kernel ablation.

One job trains every model of one n (`context.part` = "n<n>") on a shared model axis; models with the
same seed see the same data and start from the same initial weights, so comparisons are paired.
"""
from __future__ import annotations

import dataclasses
import time

import pandas as pd
import torch

from attncap.experiments.context import RunContext
from attncap.models.lm import BatchedLM, masked_token_loss
from attncap.models.mixers import BETA_MAX, MIXERS
from attncap.tasks.swap_state_tracking import contents_after, sample, vocab_size
from attncap.train import TrainSettings, train_batched

MODEL_LABELS = {
    "softmax": "Transformer",
    "deltaformer_exp": "DeltaFormer (κ1=exp)",
    "deltaformer_linear": "DeltaFormer (κ1=linear)",
    "deltaformer_zero": "DeltaFormer (κ1=zero)",
    "deltanet_01": "DeltaNet β∈(0,1)",
    "deltanet_02": "DeltaNet β∈(0,2)",
    "linear_identity": "linear attention",
    "linear_elu": "linear attention (elu)",
}
KERNEL_MIXER = {"exp": "deltaformer_exp", "linear": "deltaformer_linear", "zero": "deltaformer_zero"}
TRAIN_KEYS = ("T_train", "d_model", "layers", "heads", "mlp_ratio", "steps", "batch", "lr", "weight_decay",
              "warmup_steps", "final_lr_fraction", "clip", "eval_batches", "test_multipliers")


def parts(experiment: str, spec: dict) -> list[str]:
    """Job names of an experiment: one per number of objects."""
    return [f"n{n}" for n in spec["n_objects"]]


def model_grid(experiment: str, spec: dict, n: int) -> list[dict]:
    """[{mixer, seed}] trained at n objects, ordered by mixer (the LM runs equal mixers together)."""
    if experiment == "S1":
        mixers = list(spec["models"])
        seeds = spec["boundary_seeds"] if n in spec.get("boundary_n", []) else spec["seeds"]
    elif experiment == "S2":
        mixers = [KERNEL_MIXER[k] for k in spec["kernels"]]
        seeds = spec["seeds"]
    else:
        raise ValueError(f"unknown experiment {experiment!r} for swap_state_tracking; known: S1, S2")
    return [{"mixer": m, "seed": int(s)} for m in mixers for s in seeds]


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
            n = int(part.removeprefix("n"))
            lengths = [{"test_multiplier": m} for m in spec.get("test_multipliers", [])] or [{}]
            out[f"{experiment}_{part}"] = [{**g, "n_objects": n, **length}
                                           for g in model_grid(experiment, spec, n) for length in lengths]
    return out


def _generator(base_seed: int, seed: int, n: int, stream: int) -> torch.Generator:
    """Data stream of one (seed, n); the same for every mixer so comparisons are paired."""
    return torch.Generator().manual_seed(((base_seed * 1_000 + seed) * 1_000 + n) * 10 + stream)


def _stack(batches, device):
    return (torch.stack([b.tokens for b in batches]).to(device), torch.stack([b.targets for b in batches]).to(device))


def evaluate(model: BatchedLM, grid: list[dict], n: int, spec: dict, base_seed: int, device: str) -> list[dict]:
    """Per-step accuracy curve over 1..max(T_test) and final-query accuracy at each T_test, per model.

    The LM is causal, so the per-step accuracy at steps ≤ L is the same whether the sequence has L or
    4·T_train swaps: one long evaluation gives every test length's per-step numbers.
    """
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
            batches = [sample(n, longest, spec["batch"], g, final_query=False) for g in gens]
            tokens, _ = _stack(batches, device)
            steps = torch.stack([b.step_targets for b in batches]).to(device)
            logits = model(tokens)[:, :, 1::2]
            value_norm = torch.maximum(value_norm, model.value_norm().cpu())
            correct += (logits.argmax(-1) == steps).double().sum(1).cpu()
            for L in lengths:
                # The final-query variant: the first L swaps of the same sequences, then one query.
                qs = [torch.randint(0, n, (spec["batch"],), generator=g) for g in gens]
                tokens_q = torch.cat([tokens[:, :, : 2 * L], (2 * n + torch.stack(qs).to(device))[:, :, None]], 2)
                answers = torch.stack([contents_after(b.tokens[:, 0 : 2 * L : 2], b.tokens[:, 1 : 2 * L : 2] - n, n)
                                       [torch.arange(spec["batch"]), -1, q] for b, q in zip(batches, qs)]).to(device)
                pred = model(tokens_q)[:, :, -1].argmax(-1)
                query_correct[L] += (pred == answers).double().sum(1).cpu()
            total += spec["batch"]
    model.train()
    curve = correct / total
    rows = []
    for i, g in enumerate(grid):
        for mult, L in zip(spec["test_multipliers"], lengths):
            tail = curve[i, (3 * L) // 4 : L]
            rows.append({
                "T_test": L, "test_multiplier": mult,
                "acc": float(tail.mean()),  # mean per-step accuracy over the last quarter of the steps
                "acc_mean": float(curve[i, :L].mean()),
                "acc_last": float(curve[i, L - 1]),
                "acc_final_query": float(query_correct[L][i] / total),
                "acc_by_position": " ".join(f"{x:.4f}" for x in curve[i, :L].tolist()),
                "max_value_norm": float(value_norm[i]),
            })
    return rows


def run(experiment: str, spec: dict, context: RunContext) -> pd.DataFrame:
    if context.part == "all":
        return pd.concat([run(experiment, spec, _with_part(context, p)) for p in parts(experiment, spec)],
                         ignore_index=True)
    n = int(context.part.removeprefix("n"))
    if n not in spec["n_objects"]:
        raise ValueError(f"part {context.part!r} is not in {experiment}.n_objects={spec['n_objects']}")
    grid = model_grid(experiment, spec, n)
    device = context.device
    init_seeds = [(context.seed * 1_000 + g["seed"]) * 1_000 + n for g in grid]
    model = BatchedLM(init_seeds, [g["mixer"] for g in grid], vocab=vocab_size(n), d_model=spec["d_model"],
                      n_layers=spec["layers"], n_heads=spec["heads"], mlp_ratio=spec["mlp_ratio"],
                      positional="rotary").to(device)
    gens = [_generator(context.seed, g["seed"], n, 0) for g in grid]
    settings = TrainSettings(steps=spec["steps"], lr=spec["lr"], optimizer="adamw",
                             weight_decay=spec["weight_decay"], warmup_steps=spec["warmup_steps"],
                             schedule="cosine", final_lr_fraction=spec["final_lr_fraction"], clip_norm=spec["clip"])
    train_norm = torch.zeros(len(grid))

    def next_batch(step):
        return _stack([sample(n, spec["T_train"], spec["batch"], g) for g in gens], device)

    def loss_fn(model, batch):
        nonlocal train_norm
        tokens, targets = batch
        losses = masked_token_loss(model(tokens), targets)
        train_norm = torch.maximum(train_norm, model.value_norm().detach().cpu())
        return losses

    last_losses = {}

    def on_step(step, losses, batch):
        last_losses["loss"] = losses.cpu()

    start = time.perf_counter()
    result = train_batched(model, next_batch, loss_fn, settings, desc=f"swap {experiment} n={n}", on_step=on_step)
    train_time = time.perf_counter() - start
    rows = evaluate(model, grid, n, spec, context.seed, device)
    wall = time.perf_counter() - start
    per_model = len(rows) // len(grid)
    out = []
    for i, g in enumerate(grid):
        for row in rows[i * per_model : (i + 1) * per_model]:
            out.append({
                "n_objects": n, "mixer": g["mixer"], "model": MODEL_LABELS.get(g["mixer"], g["mixer"]),
                "kernel": g["mixer"].split("_")[1] if g["mixer"].startswith("deltaformer") else "",
                "beta_max": BETA_MAX.get(g["mixer"], float("nan")), "seed": g["seed"],
                **{k: spec[k] for k in TRAIN_KEYS if k != "test_multipliers"},
                "d_head": spec["d_model"] // spec["heads"], "models_in_job": len(grid),
                "final_train_loss": float(last_losses["loss"][i]), "steps_run": result["steps_run"],
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
        missing = sorted(set(spec.get("boundary_n", [])) - set(spec["n_objects"]))
        if missing:
            problems.append(f"{exp}.boundary_n: {missing} not in n_objects={spec['n_objects']}")
    return problems
