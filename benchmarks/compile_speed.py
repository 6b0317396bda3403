"""Eager vs torch.compile'd training steps, one representative job per trained claim.

    python benchmarks/compile_speed.py [--config config/config.yaml] [--claims swap_state_tracking ...]
                                       [--steps 200] [--skip 10] [--threads 1] [--cold-cache]
                                       [--swap-experiment S1|S4]

For each claim it runs one job of the config through the real `module.run` path twice, eagerly and with
`RunContext.create(..., compile=True)` (attncap.train.compile_steps), with the step budget cut to
`--steps`, warm-up cut below it and every early-stopping / held-out-check setting moved out of reach, so
both runs train exactly `--steps` steps on the same data. `train_batched` is wrapped in the experiment
module's namespace: the timed call's `on_step` records `time.perf_counter()` each step. A job that runs
several training loops (a part of several stacks/groups, a D_K* search of several rounds) times the one
loop named in the job line (the costliest of the job); the others run one eager step each, so the job
still completes.

Per claim it prints the steady-state median step time (the first `--skip` steps left out), steps/s eager
and compiled, the speed-up, and the compile overhead: the compiled run's first `--skip` steps above
`skip × median` minus the eager run's (the same setup without compilation), plus any later compiled step
above 5 × median (a recompile; graphs, graph breaks and cache hits are printed). The matmul FLOPs of one training
step (forward + backward of the eager model on its first batch, torch's FlopCounterMode; the gradients
are put back, nothing else changes) give the achieved GFLOP/s as a fraction of the float32 matmul rate
measured in this process. "pays?" compares the time saved over the job's configured step budget
((eager − compiled step) × steps; early stopping may end a job sooner) with the compile overhead plus the
per-process start-up of torch.compile (measured once on a tiny module: every job is its own process).

Inductor caches compiled graphs on disk (TORCHINDUCTOR_CACHE_DIR, default /tmp/torchinductor_<user>):
by default the compile overhead is measured with the cache as found (warm once this benchmark or a
compiled pipeline job has compiled the same graphs; the cache hits/misses are printed); `--cold-cache`
compiles each claim into a fresh empty cache directory. Inductor's compile workers are limited to
`--threads` (as a one-core pipeline job). Dynamo is reset before every compiled run.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import io
import math
import os
import statistics
import tempfile
import time
from typing import Callable

import torch
import yaml
from attncap.runtime import matmul_gflops
from torch.utils.flop_counter import FlopCounterMode

from attncap.experiments import aot_memorization as aot
from attncap.experiments import mha_memorization as mha
from attncap.experiments import retrieval_capacity as retrieval
from attncap.experiments import rgr_capacity as rgr
from attncap.experiments import swap_state_tracking as swap
from attncap.experiments.context import RunContext

CLAIMS = ("retrieval_capacity", "aot_memorization", "mha_memorization", "rgr_capacity", "swap_state_tracking")
MODULES = {"retrieval_capacity": retrieval, "aot_memorization": aot, "mha_memorization": mha,
           "rgr_capacity": rgr, "swap_state_tracking": swap}
FALLBACK = "torch.compile unavailable"  # attncap.train's one log line when it trains eagerly instead


@dataclasses.dataclass
class Job:
    """One job of a claim, its spec cut to the benchmark's steps, and which training loop to time."""
    claim: str
    experiment: str
    part: str
    spec: dict
    what: str  # the timed loop, in words
    steps_at_default: int  # the timed loop's configured step budget
    target: int = 0  # index of the timed train_batched call within the job


# ---- one job per claim -----------------------------------------------------------------------------

def _warmup(spec: dict, steps: int) -> int:
    return min(spec.get("warmup_steps", 0), steps // 4)


def retrieval_job(section: dict, steps: int) -> Job:
    spec = section["E5"]
    d = max(spec["d_model"])
    cut = spec | {"steps": steps, "warmup_steps": _warmup(spec, steps), "eval_every": steps + 1,
                  "target_accuracy": 2.0, "plateau_steps": 10 * (steps + 1), "eval_batches": 1, "check_batches": 1}
    models = len(retrieval.mqar_grid(spec, f"d{d}")[0])
    return Job("retrieval_capacity", "E5", f"d{d}", cut,
               f"E5 MQAR at the largest d_model={d}: {models} models (every mixer, arm, kv and seed) on one axis",
               spec["steps"])


def aot_job(section: dict, steps: int) -> Job:
    candidates = [(s.cost(section[e]), e, s) for e in aot.EXPERIMENTS if e in section for s in aot.stacks(e, section[e])]
    _, experiment, stack = max(candidates, key=lambda c: c[0])
    spec = section[experiment]
    # one epoch of `steps` batches (the schedule steps per epoch: constant lr here; same cost per step)
    cut = spec | {"n_sequences": spec["batch"] * steps, "epochs": 1, "last_batches": min(spec["last_batches"], steps)}
    part, stacks = next((p, s) for p, s in aot.job_parts(experiment, cut).items() if stack in s)
    return Job("aot_memorization", experiment, part, cut,
               f"costliest stack: {stack.kind} d={stack.d} d_h={stack.d_head} H={stack.heads[0]} × {len(stack.seeds)} "
               f"seeds, batch {spec['batch']} (the part's {len(stacks) - 1} other stacks run 1 step)",
               aot.steps_of(spec), target=stacks.index(stack))


def mha_job(section: dict, steps: int) -> Job:
    candidates = [(mha.group_cost(section[e], g), e, g) for e in mha.TRAINED if e in section
                  for g in mha.trained_groups(section[e])]
    _, experiment, group = max(candidates, key=lambda c: c[0])
    spec = section[experiment]
    cut = spec | {"steps": steps, "warmup_steps": _warmup(spec, steps)}
    part = next(p for p in mha.part_names(cut) if group in mha.part_groups(cut, p))
    groups = mha.part_groups(cut, part)
    return Job("mha_memorization", experiment, part, cut,
               f"costliest group: {spec['context']} H={group['heads']} n={group['n']} d_h={group['d_head']} "
               f"T={group['T']} × {len(group['seeds'])} seeds (the part's {len(groups) - 1} other groups run 1 step)",
               spec["steps"], target=groups.index(group))


def rgr_job(section: dict, steps: int) -> Job:
    candidates = [(c["m"] ** 2 * c["d_model"], e, c) for e in rgr.SEARCH_EXPERIMENTS if e in section
                  for c in rgr.cells(e, section[e]) if rgr.cell_name(c) in rgr.parts(e, section[e], section)]
    _, experiment, cell = max(candidates, key=lambda c: c[0])
    spec = section[experiment]
    train = spec["train"] | {"steps": steps, "patience": steps + 1, "target_f1": 2.0, "eval_every": steps,
                             "max_steps": None}  # a fixed number of steps: no continuation past them
    cut = spec | {"train": train, "construct": False}
    models = len(spec["heads"]) * len(spec["seeds"])
    return Job("rgr_capacity", experiment, rgr.cell_name(cell), cut,
               f"costliest search cell m={cell['m']} d_model={cell['d_model']}: first round, {models} scorers "
               f"(h × seeds) at D_K={spec['search']['start_d_k_total']} (later rounds run 1 step; no constructed search)",
               spec["train"]["steps"])


def swap_job(section: dict, steps: int, experiment: str = "S1") -> Job:
    """S1: the boundary n's DeltaFormer job; S4: the deepest Transformer's job at the largest n (S4's costliest
    jobs are its Transformers, which spend up to 16000 steps at a length they do not learn)."""
    spec = swap.with_defaults(section[experiment])
    boundary = [n for n in spec.get("boundary_n", []) if n in spec["n_objects"]]
    n = max(boundary or spec["n_objects"])
    if experiment == "S1":
        mixer, depth = next((m for m in spec["models"] if m.startswith("deltaformer")), spec["models"][0]), None
    else:
        mixer = "softmax" if "softmax" in spec["models"] else spec["models"][0]
        depth = max(swap.depths_of(spec, mixer) or [spec["layers"]])
    # train at T_train from the start (the curriculum's last, costliest stage); no checks, so no stopping
    cut = spec | {"steps": steps, "warmup_steps": _warmup(spec, steps), "check_every": steps + 1,
                  "eval_batches": 1, "curriculum_start": None, "stage_steps": None, "stage_cap": None}
    part = f"n{n}-{mixer}" + (f"-L{depth}" if depth is not None else "")
    seeds = len(swap.model_grid(experiment, spec, n, mixer, depth))
    layers = f"{depth}-layer " if depth is not None else ""
    return Job("swap_state_tracking", experiment, part, cut,
               f"{experiment} n={n}, {layers}{mixer} × {seeds} seeds at T_train={spec['T_train']} (the curriculum's "
               "last stage)", spec["steps"])


JOBS: dict[str, Callable[[dict, int], Job]] = {
    "retrieval_capacity": retrieval_job, "aot_memorization": aot_job, "mha_memorization": mha_job,
    "rgr_capacity": rgr_job, "swap_state_tracking": swap_job}


# ---- timing ----------------------------------------------------------------------------------------

class TimedLoop:
    """Stands in for `train_batched` in an experiment module: times call number `target` step by step
    (and counts its step's FLOPs if asked); every other call trains one eager step."""

    def __init__(self, real, target: int, count_flops: bool):
        self.real, self.target, self.count_flops = real, target, count_flops
        self.calls = 0
        self.start = math.nan
        self.times: list[float] = []
        self.flops = math.nan
        self.flop_seconds = 0.0
        self.steps_run = 0

    def __call__(self, model, next_batch, loss_fn, settings, *, desc="train", on_step=None, **_continuation):
        # checkpointing and the train-until-certified continuation (until_certified, max_steps, ...) are left
        # out: the timed loop trains exactly settings.steps, from scratch
        index, self.calls = self.calls, self.calls + 1
        if index != self.target:
            quick = dataclasses.replace(settings, steps=1, warmup_steps=0, compile=False)
            return self.real(model, next_batch, loss_fn, quick, desc=desc, on_step=on_step)

        def timed(step, losses, batch):
            verdict = on_step(step, losses, batch) if on_step is not None else None
            if step == 0 and self.count_flops:
                started = time.perf_counter()
                self.flops = step_flops(model, loss_fn, batch)
                self.flop_seconds = time.perf_counter() - started
            self.times.append(time.perf_counter())
            return verdict

        self.start = time.perf_counter()
        result = self.real(model, next_batch, loss_fn, settings, desc=desc, on_step=timed)
        self.steps_run = int(result["steps_run"])
        return result


def step_flops(model: torch.nn.Module, loss_fn, batch) -> float:
    """Matmul FLOPs of one forward + backward of the eager `model` on `batch`; the gradients are put back.
    Called from on_step after the loop's own step, so the loss_fn's side effects (a running maximum, the
    next step's metric slot) are overwritten or unchanged by the next step."""
    params = list(model.parameters())
    saved = [p.grad for p in params]
    for p in params:
        p.grad = None
    with FlopCounterMode(display=False) as counter:
        loss_fn(model, batch).sum().backward()
    for p, grad in zip(params, saved):
        p.grad = grad
    return float(counter.get_total_flops())


@dataclasses.dataclass
class Timing:
    steps: int
    median_s: float
    spread: str  # quartiles of the steady-state step times, ms
    first_s: float  # time of the first `skip` steps above `skip` × median (setup, compilation)
    late_s: float  # later steps far above the median (a recompile looks like that), above the median
    late_steps: int
    flops: float
    stderr: str


def timed_run(job: Job, compiled: bool, threads: int, tier: str, steps: int, skip: int) -> Timing:
    module = MODULES[job.claim]
    loop = TimedLoop(module.train_batched, job.target, count_flops=not compiled)
    context = RunContext.create(claim=job.claim, experiment=job.experiment, seed=0, device="cpu", threads=threads,
                                tier=tier, part=job.part, compile=compiled)
    captured = io.StringIO()
    module.train_batched = loop
    try:
        with contextlib.redirect_stderr(captured):  # progress bars, check lines, attncap.train's fallback line
            module.run(job.experiment, job.spec, context)
    finally:
        module.train_batched = loop.real
    if loop.steps_run != steps:
        print(f"  warning: the timed loop ran {loop.steps_run} of {steps} steps (stopped early)")
    stamps = [loop.start] + loop.times
    durations = [b - a for a, b in zip(stamps, stamps[1:])]
    median = statistics.median(durations[skip:])
    quartiles = statistics.quantiles(durations[skip:], n=4)
    spread = f"{quartiles[0] * 1e3:.2f}–{quartiles[2] * 1e3:.2f}"
    first = sum(durations[:skip]) - skip * median - loop.flop_seconds
    late = [d - median for d in durations[skip:] if d > max(5 * median, median + 0.5)]
    return Timing(len(durations), median, spread, first, sum(late), len(late), loop.flops, captured.getvalue())


def compile_startup() -> float:
    """Seconds to compile (forward and backward) a tiny module: torch.compile's per-process start-up."""
    started = time.perf_counter()
    net = torch.compile(torch.nn.Linear(8, 8))
    net(torch.randn(4, 8)).sum().backward()
    return time.perf_counter() - started


def compile_notes() -> str:
    """What Dynamo/Inductor did in the last compiled run: graphs, graph breaks, recompiles, cache use."""
    from torch._dynamo.utils import counters

    stats, inductor, autograd = counters["stats"], counters["inductor"], counters["aot_autograd"]
    breaks = dict(counters["graph_break"])
    text = (f"{stats.get('unique_graphs', 0)} graph(s), {sum(breaks.values())} graph break(s), "
            f"{counters['frames'].get('total', 0)} frame(s) compiled; FX cache hit/miss "
            f"{inductor.get('fxgraph_cache_hit', 0)}/{inductor.get('fxgraph_cache_miss', 0)}, AOTAutograd cache "
            f"hit/miss {autograd.get('autograd_cache_hit', 0)}/{autograd.get('autograd_cache_miss', 0)}")
    for reason, count in breaks.items():
        text += f"\n    graph break ×{count}: {str(reason).splitlines()[0][:300]}"
    return text


def _fmt_rate(seconds: float) -> str:
    return f"{1 / seconds:.1f}" if seconds > 0 else "–"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--claims", nargs="*", default=list(CLAIMS), choices=CLAIMS)
    parser.add_argument("--steps", type=int, default=200, help="training steps of each timed loop")
    parser.add_argument("--skip", type=int, default=10, help="first steps left out of the steady-state median")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--swap-experiment", default="S1", choices=("S1", "S4"),
                        help="claim 5's timed job: S1's boundary DeltaFormer, or S4's deepest Transformer")
    parser.add_argument("--cold-cache", action="store_true",
                        help="compile each claim into a fresh, empty TORCHINDUCTOR_CACHE_DIR")
    args = parser.parse_args(argv)
    if args.steps < args.skip + 5:
        parser.error(f"--steps must be at least --skip + 5 = {args.skip + 5}")
    import torch._dynamo
    import torch._inductor.config as inductor_config
    from torch._dynamo.utils import counters
    from torch._inductor.runtime.cache_dir_utils import cache_dir, temporary_cache_dir

    torch.set_num_threads(args.threads)
    inductor_config.compile_threads = args.threads
    config = yaml.safe_load(open(args.config))
    tier = config.get("tier", "unknown")
    cache = cache_dir()
    was_warm = any(os.scandir(cache))
    cold = tempfile.TemporaryDirectory(prefix="compile_speed_") if args.cold_cache else None
    fresh = (lambda name: temporary_cache_dir(os.path.join(cold.name, name))) if cold else contextlib.nullcontext
    with fresh("startup"):
        startup = compile_startup()
    peak = matmul_gflops(dtype=torch.float32)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {args.steps} steps per timed loop "
          f"(median over steps {args.skip + 1}..{args.steps}), config {args.config} (tier {tier})")
    print(f"float32 matmul rate: {peak:.1f} GFLOP/s; torch.compile per-process start-up (tiny module): {startup:.1f} s")
    print("inductor cache: " + (f"fresh empty directory per claim ({cold.name})" if cold else
                                f"{cache} as found ({'non-empty' if was_warm else 'empty'} at start)"))
    jobs = dict(JOBS, swap_state_tracking=functools.partial(swap_job, experiment=args.swap_experiment))
    rows = []
    for claim in args.claims:
        job = jobs[claim](config[claim], args.steps)
        print(f"\n{claim}: job {job.experiment}_{job.part}: {job.what}; configured steps {job.steps_at_default}")
        eager = timed_run(job, False, args.threads, tier, args.steps, args.skip)
        torch._dynamo.reset()
        counters.clear()
        try:
            with fresh(claim):
                compiled = timed_run(job, True, args.threads, tier, args.steps, args.skip)
        except Exception as error:  # noqa: BLE001 - report and go on with the next claim
            first = (str(error).strip().splitlines() or [""])[0][:300]
            print(f"  compiled run failed: {type(error).__name__}: {first}")
            rows.append((claim, f"{job.experiment}_{job.part}", _fmt_rate(eager.median_s), "failed", "–", "–",
                         f"{eager.flops / eager.median_s / 1e9:.2f}", f"{eager.flops / eager.median_s / 1e9 / peak:.0%}",
                         "–", "–"))
            continue
        print(f"  compile: {compile_notes()}")
        for line in compiled.stderr.splitlines():
            if FALLBACK in line:
                print(f"  FELL BACK TO EAGER: {line.strip()}")
        # the first steps' extra time beyond the eager run's (optimizer state, first allocations), plus
        # any later compiled step far above its median (a recompile; under load also a stall)
        overhead = compiled.first_s - eager.first_s + compiled.late_s
        if compiled.late_steps:
            print(f"  {compiled.late_steps} later compiled step(s) took {compiled.late_s:.1f} s above the median "
                  "(counted as compile time: recompiles, or stalls under load)")
        saved = (eager.median_s - compiled.median_s) * job.steps_at_default
        cost = overhead + startup
        even = cost / (eager.median_s - compiled.median_s) if eager.median_s > compiled.median_s else math.inf
        pays = (f"yes: saves {saved:.0f} s > {cost:.0f} s" if saved > cost else
                f"no: saves {saved:.0f} s < {cost:.0f} s" if saved > 0 else f"no: loses {-saved:.0f} s + {cost:.0f} s")
        gflops_e, gflops_c = eager.flops / eager.median_s / 1e9, eager.flops / compiled.median_s / 1e9
        print(f"  median step {eager.median_s * 1e3:.2f} ms eager (quartiles {eager.spread}), "
              f"{compiled.median_s * 1e3:.2f} ms compiled ({compiled.spread}); "
              f"{eager.flops / 1e6:.1f} MFLOP (matmul) per step; compile overhead {overhead:.1f} s; "
              + (f"break-even after {even:.0f} steps (configured {job.steps_at_default})" if math.isfinite(even)
                 else "compiled is not faster: never breaks even"))
        rows.append((claim, f"{job.experiment}_{job.part}", _fmt_rate(eager.median_s), _fmt_rate(compiled.median_s),
                     f"{eager.median_s / compiled.median_s:.2f}×", f"{overhead:.1f}", f"{gflops_e:.2f} / {gflops_c:.2f}",
                     f"{gflops_e / peak:.1%} / {gflops_c / peak:.1%}", f"{job.steps_at_default}", pays))
    print("\n| claim | job | steps/s eager | steps/s compiled | speed-up | compile s | GFLOP/s eager / compiled "
          "| % of matmul rate | steps at default | pays? |")
    print("|" + "---|" * 10)
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"\ncompile s: the compiled loop's first {args.skip} steps above {args.skip} × its median, minus the "
          f"eager loop's, plus later compiled steps above 5 × median (cache "
          f"{'cold' if cold else 'as found'}); pays?: (eager − compiled median) × steps at default vs compile s "
          f"+ {startup:.1f} s start-up")
    if cold:
        cold.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
