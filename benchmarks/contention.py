"""Why a job's time varies between machines: is it bound by arithmetic or by memory traffic?

Times the costliest training group of a claim (claim 3 by default: `mha.group_cost`'s largest group, trained
through `train_group` as a pipeline job does) on one thread, in four conditions on an otherwise idle machine:

- alone, with subnormal floats flushed to zero as the pipeline's jobs run (`attncap.runtime.FLUSH_DENORMAL`), and
  alone with IEEE subnormals (does this CPU pay for them?);
- beside a *copy* hog: another process copying a 256 MB tensor in a loop (memory traffic, no arithmetic);
- beside a *matmul* hog: another process multiplying 256×256 float32 matrices in a loop (arithmetic that
  stays in cache);
- beside itself: a second copy of the same training, as two pipeline jobs on 2 cores run.

A job bound by arithmetic slows beside the matmul hog only as much as the two cores share a clock; a job
bound by memory traffic slows beside the copy hog (and beside itself) because the cores share the memory
bus. Printed with the machine's own rates (`attncap.runtime.machine_rates`), so timings taken elsewhere can
be read against them.

    python benchmarks/contention.py [--claim mha_memorization|aot_memorization] [--exp M2] [--steps 300] [--repeats 2]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing as mp
import time

import torch
import yaml


def _hog(kind: str, stop) -> None:
    torch.set_num_threads(1)
    if kind == "copy":
        source = torch.ones(64 * 2**20)
        target = torch.empty_like(source)
        while not stop.is_set():
            target.copy_(source)
    else:
        a = torch.randn(256, 256)
        while not stop.is_set():
            for _ in range(50):
                a = torch.tanh(a @ a * 0.01)


def _group(claim: str, steps: int, exp: str | None = None):
    """(label, function training the costliest group of `claim` (of experiment `exp`) for `steps` steps)."""
    from attncap.experiments.context import RunContext

    config = yaml.safe_load(open("config/config.yaml"))[claim]
    if claim == "mha_memorization":
        from attncap.experiments import mha_memorization as mha

        candidates = []
        for name in [exp] if exp else mha.TRAINED:
            spec = {**config[name], "steps": steps, "continue_cap": 1}  # exactly `steps`: no continuation
            candidates += [(mha.group_cost(spec, g), name, spec, g) for g in mha.trained_groups(spec)]
        _, name, spec, group = max(candidates, key=lambda c: c[0])
        context = RunContext.create(claim=claim, experiment=name, threads=1)
        return (f"{name} H={group['heads']} n={group['n']} d_h={group['d_head']} T={group['T']} "
                f"({len(group['seeds'])} seeds)", lambda: mha.train_group(spec, name, group, context))
    if claim == "aot_memorization":
        from attncap.experiments import aot_memorization as aot
        from attncap.tasks.aot_memorization import make_block

        spec = {**config["A5"], "continue_cap": 1}
        stack = max(aot.stacks("A5", spec), key=lambda s: s.cost(spec))
        spec["epochs"] = max(1, steps // -(-spec["n_sequences"] // spec["batch"]))
        table, sample = make_block(spec["N"], spec["n_sequences"], 0, 0)
        RunContext.create(claim=claim, experiment="A5", threads=1)
        return (f"A5 {stack.kind} d={stack.d} ({len(stack.seeds)} models, {aot.steps_of(spec)} steps: whole epochs)",
                lambda: aot.train_stack(stack, spec, table, sample))
    raise ValueError(f"no benchmark group for {claim!r}")


def _timed(claim: str, steps: int, repeats: int, exp=None, ready=None, out=None, flush: bool | None = None) -> float:
    """Best of `repeats` trainings of the group; `flush` overrides the jobs' subnormal setting
    (`attncap.runtime.FLUSH_DENORMAL`, which the group's RunContext applies)."""
    torch.set_num_threads(1)
    label, train = _group(claim, steps, exp)
    if flush is not None:
        torch.set_flush_denormal(flush)
    with contextlib.redirect_stderr(io.StringIO()):
        train()  # warm-up
        if ready is not None:
            ready.wait()
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            train()
            best = min(best, time.perf_counter() - started)
    if out is not None:
        out.put(best)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claim", default="mha_memorization", choices=["mha_memorization", "aot_memorization"])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--exp", help="claim 3: the costliest group of this experiment (e.g. M2) instead of all")
    args = parser.parse_args()
    from attncap.runtime import FLUSH_DENORMAL, machine_rates

    ctx = mp.get_context("spawn")
    print(f"machine: {machine_rates()}")
    # two "cores" that are hyperthreads of one physical core halve each other's arithmetic: the one-thread
    # matmul rate beside a second matmul process tells real cores (ratio ≈ 1) from shared ones (≈ 0.5-0.6)
    from attncap.runtime import matmul_gflops

    torch.set_num_threads(1)
    alone_rate = matmul_gflops(dtype=torch.float32)
    stop = ctx.Event()
    hog = ctx.Process(target=_hog, args=("matmul", stop))
    hog.start()
    time.sleep(1.0)
    shared_rate = matmul_gflops(dtype=torch.float32)
    stop.set()
    hog.join()
    print(f"float32 matmul, one thread: {alone_rate:.1f} GFLOP/s alone, {shared_rate:.1f} beside a second matmul "
          f"process ({shared_rate / alone_rate:.2f}x)")
    label, _ = _group(args.claim, args.steps, args.exp)
    # the jobs read and write subnormal floats as zero (attncap.runtime.FLUSH_DENORMAL); with IEEE subnormals
    # a CPU that handles them in slow microcode loses here: the ratio says what the setting buys on this machine
    alone = _timed(args.claim, args.steps, args.repeats, args.exp)
    setting = "flush-to-zero, as the jobs" if FLUSH_DENORMAL else "IEEE subnormals, as the jobs"
    print(f"{label}, --steps {args.steps}, 1 thread")
    print(f"  alone ({setting})  {alone:7.2f} s")
    # the return value says whether this CPU can flush at all; the call leaves the jobs' own setting
    if torch.set_flush_denormal(FLUSH_DENORMAL):
        other = _timed(args.claim, args.steps, args.repeats, args.exp, flush=not FLUSH_DENORMAL)
        print(f"  alone, {'IEEE subnormals' if FLUSH_DENORMAL else 'flush-to-zero'}   {other:7.2f} s  "
              f"({other / alone:.2f}x)")
    for kind in ("copy", "matmul"):
        stop = ctx.Event()
        hog = ctx.Process(target=_hog, args=(kind, stop))
        hog.start()
        time.sleep(1.0)
        t = _timed(args.claim, args.steps, args.repeats, args.exp)
        stop.set()
        hog.join()
        print(f"  beside a {kind:6s} hog     {t:7.2f} s  ({t / alone:.2f}x)")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    twins = [ctx.Process(target=_timed, args=(args.claim, args.steps, args.repeats, args.exp, barrier, results)) for _ in range(2)]
    for p in twins:
        p.start()
    times = [results.get() for _ in twins]
    for p in twins:
        p.join()
    t = max(times)
    print(f"  beside itself           {t:7.2f} s  ({t / alone:.2f}x)")


if __name__ == "__main__":
    main()
