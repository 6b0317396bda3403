"""What a job pays before and after its own work: importing what every training job imports, and exiting.

    python benchmarks/job_startup.py [--repeats 8]

Each repeat starts fresh interpreters that import torch, pandas and scipy.stats, build and step a torch Adam
optimizer (which imports torch._dynamo), print a timestamp and exit; the exit cost is the time from that
timestamp to the process's end. Variants: a plain exit, the exit `import attncap` arranges (objects frozen
before the final collection), and os._exit (no clean-up at all, the floor). Alternated, medians reported,
with the machine's matmul rate beside them, since a loaded machine moves every number.
"""
import argparse
import statistics
import subprocess
import sys
import time

WORK = ("import torch, pandas, scipy.stats, time\n"
        "p = torch.nn.Parameter(torch.zeros(8)); o = torch.optim.Adam([p]); p.sum().backward(); o.step()\n")
VARIANTS = {
    "plain exit": ("", ""),
    "attncap's exit (frozen objects)": ("import attncap\n", ""),
    "os._exit (floor)": ("", "import os; os._exit(0)\n"),
}


def one(prefix: str, suffix: str) -> tuple[float, float]:
    start = time.time()
    code = prefix + WORK + "print(time.time(), flush=True)\n" + suffix
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    end = time.time()
    mark = float(out.split()[-1])
    return mark - start, end - mark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args()
    times = {name: ([], []) for name in VARIANTS}
    for _ in range(args.repeats):
        for name, (prefix, suffix) in VARIANTS.items():
            before, after = one(prefix, suffix)
            times[name][0].append(before)
            times[name][1].append(after)
    print(f"{'variant':34s} {'start-up + work s':>18s} {'exit s':>8s}   (median of {args.repeats})")
    for name, (before, after) in times.items():
        print(f"{name:34s} {statistics.median(before):18.2f} {statistics.median(after):8.2f}")
    from attncap.runtime import machine_rates_line

    print(machine_rates_line())


if __name__ == "__main__":
    main()
