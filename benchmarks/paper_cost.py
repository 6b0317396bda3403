"""Estimate the training cost of the paper tier by counting FLOPs, calibrated against the default tier.

For every trained experiment of every claim, this script walks the training jobs/groups a config
defines (using the experiments' own helpers: `aot_memorization.stacks`, `mha_memorization.trained_groups`,
`rgr_capacity.cells/parts/Search`, `swap_state_tracking.model_grid`, and `retrieval_capacity.mqar_parts/mqar_grid/mqar_model`),
builds the same batched model the experiment builds, moves it and one batch to the `meta` device (so
nothing is computed), and counts the FLOPs of ONE training step (forward + backward of the summed
per-model losses) with `torch.utils.flop_counter.FlopCounterMode`. Each step is counted at two batch
(or example-count) sizes, 1 and 2, and extrapolated affinely to the configured size (FLOPs are affine in
the batch: linear per example plus a batch-independent part, e.g. a shared context's projections in
claim 3). That is multiplied by the maximum number of steps.

What is counted: matmul-type ops only (mm, bmm, addmm, baddbmm, SDPA, convolutions: FlopCounterMode's
registry) plus the triangular solve of DeltaNet/DeltaFormer (`linalg_solve_triangular`, registered here
as T²·k FLOPs per (T×T, T×k) solve; its backward is again a solve plus matmuls). Not counted: elementwise
ops, softmax, layer norms, the optimizer update, clipping, data sampling, the periodic evaluations and
the final evaluation passes. So these are lower-bound-ish step costs and UPPER bounds on steps:
  * steps are the configured maxima; early stopping (claim 3 stops when every model of a group fits,
    claim 4 at target F1 / patience) can only reduce them;
  * claim 4's D_K* search runs a data-dependent number of rounds; we take the worst case over all
    pass/fail outcome sequences of the experiment's own `Search` (memoised over its states), with
    every round running the full `train.steps`;
  * Monte Carlo experiments (claim 1 E1–E4, claim 3 M1/M8) and claim 4's constructed references are not
    counted (no training; they are a small part of the default-tier time as well: see the note printed).

Measured (`--measure cuda`): the paper tier's jobs of claims 1, 3 and 5 (> 99.8% of its FLOPs) are counted, and
the `--top` costliest of each experiment are built on the device and timed: real training steps (forward,
backward of the summed per-model losses, Adam) at float32, the tiers' precision, and on CUDA again with TF32
matmuls allowed, read against the device's own float32 / TF32 matmul rate and with the peak memory. Each
experiment's hours are its FLOPs at the rate its costliest job achieved. The experiments' own training loop adds
evaluations and per-model stopping, not counted; the steps are maxima. This replaces the assumed rate with a
measured one; docs/performance.md gives the numbers and the card.

Usage (fast, < 1 min, CPU only, no training is run):
    python benchmarks/paper_cost.py
    python benchmarks/paper_cost.py --default-core-minutes retrieval_capacity=30 aot_memorization=55 \\
        mha_memorization=40 rgr_capacity=80 swap_state_tracking=25 --gpu-tflops 50
    python benchmarks/paper_cost.py --measure cuda --top 1 --claims retrieval_capacity mha_memorization \\
        swap_state_tracking --csv paper_gpu.csv      # a few minutes on one GPU
Options: --default/--paper pick the config files (default config/config.yaml and config/paper.yaml),
--claims restricts the claims, --verbose prints every experiment.
Projection: paper core-time ≈ (paper FLOPs / default FLOPs) × default core-time — this assumes the
same achieved FLOP rate at both scales, which is pessimistic for the paper tier (bigger matrices run
closer to peak) and ignores per-step overheads, which matter at the small default sizes. The GPU-hours
column assumes a sustained rate of --gpu-tflops TFLOP/s (an ASSUMPTION, not a measurement).
"""
from __future__ import annotations

import argparse
import functools
import math
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import yaml
from torch.utils.flop_counter import FlopCounterMode

from attncap.experiments import aot_memorization as aot_exp
from attncap.experiments import mha_memorization as mha_exp
from attncap.experiments import retrieval_capacity as rc_exp
from attncap.experiments import rgr_capacity as rgr_exp
from attncap.experiments import swap_state_tracking as swap_exp
from attncap.models.aot_memorization import AoTStack, per_model_cross_entropy
from attncap.models.lm import BatchedLM, masked_token_loss
from attncap.models.mha_memorization import BatchedMHAMemorizer
from attncap.models.rgr_capacity import BalancedLogisticLoss, ScorerBank
from attncap.tasks import mha_memorization as mha_tasks
from attncap.tasks.retrieval_capacity import mqar_batch, mqar_curriculum_batch
from attncap.tasks.swap_state_tracking import sample as swap_sample
from attncap.tasks.swap_state_tracking import vocab_size as swap_vocab

ROOT = Path(__file__).resolve().parents[1]
META = torch.device("meta")
CLAIMS = ("retrieval_capacity", "aot_memorization", "mha_memorization", "rgr_capacity", "swap_state_tracking")
NOT_COUNTED = {
    "retrieval_capacity": "E1-E4 Monte Carlo not counted",
    "mha_memorization": "M1/M8 closed-form/Monte Carlo not counted; M7 reads the trained models",
    "rgr_capacity": "constructed references not counted; search rounds = worst case",
}


# ---- counting ---------------------------------------------------------------------------------------

def _solve_triangular_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """Forward substitution with a (…, T, T) triangle on a (…, T, k) right-hand side: T² k FLOPs."""
    *batch, t, _ = a_shape
    k = b_shape[-1]
    return math.prod(batch) * t * t * k


CUSTOM = {torch.ops.aten.linalg_solve_triangular: _solve_triangular_flop}


def step_flops(model: torch.nn.Module, loss_fn, batch) -> int:
    """FLOPs of one forward + backward of `loss_fn(model, batch).sum()` (model and batch on meta)."""
    with FlopCounterMode(display=False, custom_mapping=CUSTOM) as counter:
        loss_fn(model, batch).sum().backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def affine(model, loss_fn, make_batch, size: int) -> int:
    """Step FLOPs at batch `size`, from counts at sizes 1 and 2 (exact when FLOPs are affine in size)."""
    f1 = step_flops(model, loss_fn, make_batch(1))
    if size == 1:
        return f1
    f2 = step_flops(model, loss_fn, make_batch(2))
    return f1 + (f2 - f1) * (size - 1)


def to_device(x, device=META):
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, dict):
        return {k: to_device(v, device) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(v, device) for v in x)
    return x



def on_device(factory, loss_fn, make_batch, size: int):
    """What `--measure` times: a function of a device giving (model, loss, batch of `size`) there, from the same
    factory and batch maker the count used (each binds its own job's values, as the counters' loops rebind)."""
    return lambda device: (factory().to(device), loss_fn, make_batch(size, device))


def build(factory) -> torch.nn.Module:
    """The model on meta: built directly there when its init allows it, else on CPU and moved."""
    try:
        with torch.device(META):
            model = factory()
        if all(p.is_meta for p in model.parameters()):
            return model
    except Exception:  # noqa: BLE001 - some inits draw from CPU generators
        pass
    return factory().to(META)


# ---- claim 1: E5 (MQAR LMs) -------------------------------------------------------------------------

def retrieval_capacity(section: dict) -> list[tuple[str, str, float]]:
    spec = section["E5"]
    sampler = mqar_curriculum_batch if spec["curriculum"] else mqar_batch
    out = []

    def loss_fn(m, b):
        return masked_token_loss(m(b[0], b[1]), b[2])

    for part in rc_exp.mqar_parts(spec):  # one training job per (width, mixer, arm)
        configs, model_seeds = rc_exp.mqar_grid(spec, part)

        def factory(configs=configs, model_seeds=model_seeds):
            return rc_exp.mqar_model(spec, configs, model_seeds)

        def make_batch(b, device=META, configs=configs, model_seeds=model_seeds):
            gens = [torch.Generator().manual_seed(s) for s in model_seeds]
            return to_device(rc_exp.mqar_batch_stack(spec, configs, gens, b, sampler), device)

        per_step = affine(build(factory), loss_fn, make_batch, spec["batch"])
        out.append(("E5", f"{part} ({len(configs)} models)", per_step * spec["steps"],
                    (on_device(factory, loss_fn, make_batch, spec["batch"]), spec["steps"])))
    return out


# ---- claim 2: AoT stacks ----------------------------------------------------------------------------

def aot_memorization(section: dict) -> list[tuple[str, str, float]]:
    out = []
    for exp, spec in section.items():
        if exp not in aot_exp.EXPERIMENTS:
            continue
        steps = aot_exp.steps_of(spec)
        for stack in aot_exp.stacks(exp, spec):
            model = build(lambda: AoTStack(stack.seeds, stack.heads, n_tokens=spec["N"], d=stack.d,
                                           d_head=stack.d_head, layout=stack.layout, mlp_widths=stack.widths))
            m = len(stack.seeds)

            def make_batch(b):
                gen = torch.Generator().manual_seed(0)
                return torch.randint(0, spec["N"], (m, b, 3), generator=gen).to(META)

            per_step = affine(model, lambda net, b: per_model_cross_entropy(net(b), b[..., 2]), make_batch,
                              spec["batch"])
            label = (f"{stack.kind} d={stack.d} dh={stack.d_head} {stack.layout} H={sorted(set(stack.heads))}"
                     f" w={sorted(set(stack.widths))} x{m}")
            out.append((exp, label, per_step * steps))
    return out


# ---- claim 3: trained MHA memorizers (full batch of T examples) -------------------------------------

def mha_memorization(section: dict) -> list[tuple[str, str, float]]:
    out = []
    for exp in ("M2", "M3", "M4", "M5", "M6"):
        spec = section.get(exp)
        if spec is None:
            continue
        classes = spec["labels"] == "classes"
        loss_fn = _mha_loss(classes)
        cache: dict = {}
        for g in mha_exp.trained_groups(spec):
            seeds, n, heads, d_head, T = g["seeds"], g["n"], g["heads"], g["d_head"], g["T"]

            def factory(spec=spec, classes=classes, seeds=seeds, n=n, heads=heads, d_head=d_head):
                return BatchedMHAMemorizer(
                    list(range(len(seeds))), d_in=spec["d"], d=spec["d"], heads=heads, d_head=d_head, n=n,
                    out_dim=spec.get("n_classes", 100) if classes else 1, positional=spec["positional"])

            def make_batch(t, device=META, spec=spec, seeds=seeds, n=n):
                return to_device(mha_tasks.stack_datasets([mha_tasks.make_dataset(
                    t, n, spec["d"], torch.Generator().manual_seed(s), shared=spec["context"] == "shared",
                    labels=spec["labels"], n_classes=spec.get("n_classes", 100),
                    distribution=spec["distribution"]) for s in seeds]), device)

            key = (n, heads, d_head, len(seeds))
            if key not in cache:
                model = build(factory)
                f1 = step_flops(model, loss_fn, make_batch(1))
                f2 = step_flops(model, loss_fn, make_batch(2))
                cache[key] = (f1, f2 - f1)
            f1, slope = cache[key]
            steps = mha_exp.group_recipe(spec, g)["steps"]  # a cell at the bound may train on the authors' budget
            out.append((exp, f"n={n} H={heads} dh={d_head} T={T} x{len(seeds)}", (f1 + slope * (T - 1)) * steps,
                        (on_device(factory, loss_fn, make_batch, T), steps)))
    return out


def _mha_loss(classes: bool):
    """Claim 3's per-model training loss: cross-entropy over classes, or squared error on scalar labels."""
    def loss_fn(model, batch):
        o = model(batch["query"], batch["context"])
        y = batch["labels"]
        if classes:
            return F.cross_entropy(o.flatten(0, 1), y.flatten(), reduction="none").view(y.shape).mean(1)
        return ((o.squeeze(-1) - y) ** 2).mean(1)
    return loss_fn


# ---- claim 4: scorer banks (full batch over all m×m pairs) ------------------------------------------

@functools.lru_cache(maxsize=None)
def scorer_flops(m: int, d_model: int, h: int, d_k_total: int) -> int:
    """One training step of ONE scorer (h heads, D_K total) on m items (FLOPs add up across a bank)."""
    bank = build(lambda: ScorerBank([h], [d_k_total // h], [17], d_model))
    x = torch.empty(1, m, d_model, device=META)
    adj = torch.empty(1, m, m, dtype=torch.bool, device=META)
    loss = BalancedLogisticLoss(adj, adj, 1.0)
    return step_flops(bank, lambda model, _: loss(model(x, None), model.tau), None)


def worst_search_flops(cell: dict, spec: dict, h: int) -> tuple[int, int]:
    """(max FLOPs-per-step sum, max rounds) over every pass/fail sequence of the experiment's Search."""
    m, d = cell["m"], cell["d_model"]
    search_cfg = spec["search"]

    @functools.lru_cache(maxsize=None)
    def worst(lo, hi, nxt):
        if nxt is None:
            return 0, 0
        own = scorer_flops(m, d, h, nxt)
        best = (0, 0)
        for passed in (True, False):
            s = rgr_exp.Search(h, 0, search_cfg["start_d_k_total"], h * d, search_cfg["rel_tol"])
            s.lo, s.hi, s.next = lo, hi, nxt
            s.record(nxt, passed)
            f, r = worst(s.lo, s.hi, s.next)
            best = (max(best[0], f), max(best[1], r))
        return own + best[0], 1 + best[1]

    s0 = rgr_exp.Search(h, 0, search_cfg["start_d_k_total"], h * d, search_cfg["rel_tol"])
    return worst(s0.lo, s0.hi, s0.next)


def rgr_capacity(section: dict) -> list[tuple[str, str, float]]:
    out = []
    spec = section.get("R1")
    if spec is not None:
        cell = rgr_exp.cells("R1", spec)[0]
        for dk in spec["d_k_total"]:
            per_step = sum(scorer_flops(cell["m"], cell["d_model"], h, dk) for h in spec["heads"]) * len(spec["seeds"])
            out.append(("R1", f"{rgr_exp.cell_name(cell)} D_K={dk}", per_step * spec["train"]["steps"]))
    for exp in rgr_exp.SEARCH_EXPERIMENTS:
        spec = section.get(exp)
        if spec is None:
            continue
        names = set(rgr_exp.parts(exp, spec, section))  # cells an earlier search already covers are skipped
        for cell in rgr_exp.cells(exp, spec):
            if rgr_exp.cell_name(cell) not in names:
                continue
            total, rounds = 0, 0
            for h in spec["heads"]:
                f, r = worst_search_flops(cell, spec, h)
                total += f * len(spec["seeds"])
                rounds = max(rounds, r)
            out.append((exp, f"{rgr_exp.cell_name(cell)} (<= {rounds} rounds)", total * spec["train"]["steps"]))
    return out


# ---- claim 5: swap-task LMs -------------------------------------------------------------------------

def swap_state_tracking(section: dict) -> list[tuple[str, str, float]]:
    """One row per training job (the experiment's own `parts`: n × mixer × depth × readout), each at its maximum
    steps and at T_train: an upper bound (the curriculum trains shorter sequences first, early stopping and
    the per-length budget stop runs sooner)."""
    out = []

    def loss_fn(m, b):
        return masked_token_loss(m(b[0]), b[1])

    for exp in sorted(k for k in section if k.startswith("S")):
        spec = swap_exp.with_defaults(section[exp])
        for part in swap_exp.parts(exp, spec):
            n, mixer = swap_exp.parse_part(part)
            depth, readout = swap_exp.part_layers(part), swap_exp.part_readout(part)
            job = {**spec, **({"layers": depth} if depth is not None else {}),
                   **(swap_exp.READOUTS[readout] if readout is not None else {})}
            grid = swap_exp.model_grid(exp, job, n, mixer, depth, readout)
            seeds = [g["seed"] * 1_000 + n for g in grid]

            def factory(job=job, grid=grid, seeds=seeds, n=n):
                return BatchedLM(seeds, [g["mixer"] for g in grid], vocab=swap_vocab(n), d_model=job["d_model"],
                                 n_layers=job["layers"], n_heads=job["heads"], mlp_ratio=job["mlp_ratio"],
                                 positional=job["positional"], readout_temperature=bool(job["readout_temperature"]),
                                 max_len=2 * job["T_train"] + 2)

            def make_batch(b, device=META, job=job, seeds=seeds, n=n):
                batches = [swap_sample(n, job["T_train"], b, torch.Generator().manual_seed(s)) for s in seeds]
                return to_device((torch.stack([x.tokens for x in batches]), torch.stack([x.targets for x in batches])),
                                 device)

            per_step = affine(build(factory), loss_fn, make_batch, job["batch"])
            out.append((exp, f"{part} ({len(grid)} models)", per_step * job["steps"],
                        (on_device(factory, loss_fn, make_batch, job["batch"]), job["steps"])))
    return out


COUNTERS = {"retrieval_capacity": retrieval_capacity, "aot_memorization": aot_memorization,
            "mha_memorization": mha_memorization, "rgr_capacity": rgr_capacity,
            "swap_state_tracking": swap_state_tracking}


# ---- measuring on a device --------------------------------------------------------------------------

def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_rate(device: torch.device, n: int = 4096, repeats: int = 10) -> float:
    """The device's float32 matmul rate (FLOP/s) at the current precision setting: the reference a step's
    achieved rate is read against."""
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    a @ b
    _sync(device)
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    _sync(device)
    return 2 * n ** 3 * repeats / (time.perf_counter() - started)


def step_seconds(make, device: torch.device, warmup: int = 2, repeats: int = 5, budget_s: float = 10.0,
                 compile: bool = False) -> float:
    """Seconds of one real training step (zero_grad, forward, backward of the summed per-model losses, Adam)
    of the job `make` builds on `device`: the median of up to `repeats` steps after `warmup`, fewer when a
    step is slow (at most about `budget_s` seconds of timed steps). With `compile`, the model's forward is
    `torch.compile`d (the warm-up steps compile it)."""
    model, loss_fn, batch = make(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    if compile:
        model = torch.compile(model)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model, batch).sum().backward()
        optimizer.step()

    for _ in range(warmup):
        step()
    _sync(device)
    times: list[float] = []
    while len(times) < repeats and sum(times) < budget_s:
        started = time.perf_counter()
        step()
        _sync(device)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(rows, device: torch.device, top: int, compile: bool = False, csv: str | None = None) -> list[dict]:
    """Time the `top` costliest measurable jobs of each experiment on `device` (float32, the tier's
    precision; on CUDA also with TF32 matmuls allowed) and project each experiment's hours at the rate its
    costliest job achieved (`*_experiment_hours`, on the rank-0 row only). With `csv`, the table is rewritten
    there after every job, so a run cut short keeps what it measured."""
    import pandas as pd

    by_exp: dict[str, list] = {}
    for row in rows:
        if len(row) == 4:
            by_exp.setdefault(row[0], []).append(row)
    settings = [("fp32", False)] + ([("tf32", True)] if device.type == "cuda" else [])
    caller_tf32 = torch.backends.cuda.matmul.allow_tf32
    out = []
    try:
        peaks = {}
        for name, tf32 in settings:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            peaks[name] = matmul_rate(device, n=4096 if device.type == "cuda" else 1024)
        for exp, exp_rows in by_exp.items():
            total = sum(r[2] for r in exp_rows)
            for rank, (_, label, flops, (make, steps)) in enumerate(sorted(exp_rows, key=lambda r: -r[2])[:top]):
                record = {"experiment": exp, "job": label, "rank": rank, "compiled": compile,
                          "step_gflop": flops / steps / 1e9, "max_steps": steps, "experiment_flop": total}
                for name, tf32 in settings:
                    torch.backends.cuda.matmul.allow_tf32 = tf32
                    if device.type == "cuda":
                        torch.cuda.reset_peak_memory_stats(device)
                    try:
                        seconds = step_seconds(make, device, compile=compile)
                    except (torch.OutOfMemoryError, RuntimeError) as error:
                        if "out of memory" not in str(error).lower():
                            raise
                        record[f"{name}_error"] = "out of memory"
                        seconds = math.nan
                    finally:
                        if device.type == "cuda":
                            record[f"{name}_peak_gib"] = torch.cuda.max_memory_allocated(device) / 2 ** 30
                            torch.cuda.empty_cache()
                    rate = flops / steps / seconds
                    record.update({f"{name}_ms_per_step": 1e3 * seconds, f"{name}_tflops": rate / 1e12,
                                   f"{name}_of_matmul": rate / peaks[name],
                                   f"{name}_matmul_tflops": peaks[name] / 1e12,
                                   f"{name}_experiment_hours": total / rate / 3600 if rank == 0 else math.nan})
                out.append(record)
                print(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in record.items()),
                      flush=True)
                if csv:
                    pd.DataFrame(out).to_csv(csv, index=False)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = caller_tf32
    return out


# ---- report -----------------------------------------------------------------------------------------

def by_experiment(rows) -> dict[str, float]:
    totals: dict[str, float] = {}
    for exp, _, flops, *_ in rows:
        totals[exp] = totals.get(exp, 0.0) + flops
    return totals


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--default", default=str(ROOT / "config" / "config.yaml"))
    parser.add_argument("--paper", default=str(ROOT / "config" / "paper.yaml"))
    parser.add_argument("--claims", nargs="*", default=list(CLAIMS))
    parser.add_argument("--default-core-minutes", nargs="*", default=[], metavar="CLAIM=MINUTES",
                        help="measured default-tier core-minutes per claim, to project paper-tier time")
    parser.add_argument("--gpu-tflops", type=float, default=50.0,
                        help="ASSUMED sustained GPU rate (TFLOP/s) for the GPU-hours column (default 50)")
    parser.add_argument("--verbose", action="store_true", help="print every job/group")
    parser.add_argument("--measure", metavar="DEVICE",
                        help="time real training steps of the paper tier's costliest jobs on DEVICE (cpu, cuda) "
                             "and project GPU-hours at the measured rates (counts the paper tier only)")
    parser.add_argument("--top", type=int, default=1, help="with --measure: jobs timed per experiment")
    parser.add_argument("--csv", help="with --measure: write the measured table here")
    parser.add_argument("--experiments", nargs="*", help="with --measure: time only these experiments (e.g. M5)")
    parser.add_argument("--compile", action="store_true", help="with --measure: torch.compile each model first")
    args = parser.parse_args(argv)
    if args.measure:
        return measured(args)
    core_minutes = {}
    for item in args.default_core_minutes:
        claim, _, minutes = item.partition("=")
        core_minutes[claim] = float(minutes)

    torch.set_num_threads(1)
    tiers = {"default": yaml.safe_load(Path(args.default).read_text()),
             "paper": yaml.safe_load(Path(args.paper).read_text())}
    started = time.perf_counter()
    results = {}
    for claim in args.claims:
        for tier, cfg in tiers.items():
            t0 = time.perf_counter()
            rows = COUNTERS[claim](cfg[claim]) if claim in cfg else []
            results[(claim, tier)] = rows
            if args.verbose:
                print(f"\n[{claim} / {tier}] {len(rows)} jobs, counted in {time.perf_counter() - t0:.1f}s")
                for exp, label, flops, *_ in rows:
                    print(f"  {exp:3s} {label:60s} {flops:10.3e}")

    print("\nTraining FLOPs (matmul-type ops, forward+backward, max steps; see module docstring)")
    header = f"{'claim':22s} {'default FLOPs':>14s} {'paper FLOPs':>14s} {'ratio':>10s}  dominant (paper share | default share)"
    print(header)
    print("-" * len(header))
    ratios = {}
    for claim in args.claims:
        d_rows, p_rows = results[(claim, "default")], results[(claim, "paper")]
        d_tot, p_tot = sum(r[2] for r in d_rows), sum(r[2] for r in p_rows)
        ratio = p_tot / d_tot if d_tot else float("nan")
        ratios[claim] = (ratio, p_tot)
        p_exp, d_exp = by_experiment(p_rows), by_experiment(d_rows)
        top_p = max(p_exp, key=p_exp.get) if p_exp else "-"
        top_d = max(d_exp, key=d_exp.get) if d_exp else "-"
        split = ", ".join(f"{e} {v / p_tot:.0%}" for e, v in sorted(p_exp.items(), key=lambda kv: -kv[1]) if p_tot)
        print(f"{claim:22s} {d_tot:14.3e} {p_tot:14.3e} {ratio:10.1f}  {top_p} {p_exp.get(top_p, 0) / max(p_tot, 1):.0%}"
              f" | {top_d} {d_exp.get(top_d, 0) / max(d_tot, 1):.0%}   [paper: {split}]")
        if claim in NOT_COUNTED:
            print(f"{'':22s} note: {NOT_COUNTED[claim]}")
    d_all = sum(sum(r[2] for r in results[(c, 'default')]) for c in args.claims)
    p_all = sum(v[1] for v in ratios.values())
    print(f"{'all':22s} {d_all:14.3e} {p_all:14.3e} {p_all / d_all if d_all else float('nan'):10.1f}")
    print("\npaper core-time ≈ ratio × default core-time (same achieved FLOP rate assumed; early stopping only lowers it)")
    print(f"GPU-hours = paper FLOPs / ({args.gpu_tflops:g} TFLOP/s)  <- ASSUMED sustained rate, not measured")
    print(f"{'claim':22s} {'ratio':>10s} {'default core-min':>17s} {'paper core-h (proj.)':>21s} {'GPU-h @ assumed':>16s}")
    for claim, (ratio, p_tot) in ratios.items():
        gpu_h = p_tot / (args.gpu_tflops * 1e12) / 3600
        if claim in core_minutes:
            cm = f"{core_minutes[claim]:17.1f}"
            ch = f"{ratio * core_minutes[claim] / 60:21.1f}"
        else:
            cm, ch = f"{'-':>17s}", f"{'(give --default-core-minutes)':>21s}"
        print(f"{claim:22s} {ratio:10.1f} {cm} {ch} {gpu_h:16.2f}")
    print(f"\n(counted in {time.perf_counter() - started:.1f}s)")
    return 0


def measured(args) -> int:
    """--measure: the paper tier's measurable jobs (claims 1, 3 and 5: the trained LMs and memorizers,
    > 99% of its FLOPs) counted, their costliest timed on the device, and the GPU-hours projected."""
    import pandas as pd

    device = torch.device(args.measure)
    paper = yaml.safe_load(Path(args.paper).read_text())
    started = time.perf_counter()
    rows = [row for claim in args.claims if claim in paper for row in COUNTERS[claim](paper[claim])]
    print(f"counted {len(rows)} paper-tier jobs in {time.perf_counter() - started:.0f}s", flush=True)
    if args.experiments:
        rows = [row for row in rows if row[0] in args.experiments]
    table = pd.DataFrame(measure(rows, device, args.top, compile=args.compile, csv=args.csv))
    if table.empty:
        print("no measurable job matched (claims 1, 3 and 5 have them; see --claims and --experiments)")
        return 1
    head = table[table["rank"] == 0]
    hours = [c for c in head if c.endswith("_experiment_hours")]
    print(f"\nHours on {device} at each experiment's costliest job's measured rate: estimates, not bounds (the "
          f"steps are maxima, most runs stop sooner; smaller jobs may run faster or slower):")
    shown = [c for c in head if c.endswith(("_tflops", "_peak_gib"))]
    print(head[["experiment", "job", "step_gflop"] + shown + hours]
          .to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    missing = sorted(head.loc[head[hours].isna().any(axis=1), "experiment"])
    print("total: " + ", ".join(f"{c.split('_')[0]} {head[c].sum():.3g} h" for c in hours)
          + (f", without {', '.join(missing)} (not measured: see the error columns)" if missing else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
