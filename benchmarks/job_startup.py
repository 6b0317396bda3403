"""What a job pays before and after its own work: importing what every training job imports, and exiting.

    python benchmarks/job_startup.py [--repeats 8]

Each repeat starts fresh interpreters that import torch, pandas and scipy.stats, build and step a torch Adam
optimizer (which imports torch._dynamo), print a timestamp and exit; the exit cost is the time from that
timestamp to the process's end. Variants: a plain exit, the exit `import attncap` arranges (objects frozen
before the final collection), and os._exit (no clean-up at all, the floor). Alternated, medians reported,
with the machine's matmul rate beside them, since a loaded machine moves every number. The last variant runs the
same script the way a smoke-tier job runs it, through `attncap.jobrun`, forked from the run's warm interpreter
(`attncap.warmstart`, config `warm_start`), so its start-up includes the wrapper's own.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

WORK = ("import torch, pandas, scipy.stats, time\n"
        "p = torch.nn.Parameter(torch.zeros(8)); o = torch.optim.Adam([p]); p.sum().backward(); o.step()\n")
VARIANTS = {
    "plain exit": ("", ""),
    "attncap's exit (frozen objects)": ("import attncap\n", ""),
    "os._exit (floor)": ("", "import os; os._exit(0)\n"),
}


WARM = "forked by attncap.jobrun from the warm interpreter"


def one(prefix: str, suffix: str, warm: bool = False) -> tuple[float, float]:
    code = prefix + WORK + "print(time.time(), flush=True)\n" + suffix
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-c", code]
        if warm:  # the server runs scripts (as the jobs' commands are), not -c
            script = os.path.join(scratch, "job.py")
            with open(script, "w") as handle:
                handle.write(code)
            command = [sys.executable, "-m", "attncap.jobrun", "--log", os.path.join(scratch, "log"), "--",
                       "python", script]
        start = time.time()
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        end = time.time()
    mark = float(out.split()[-1])
    return mark - start, end - mark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args()
    from attncap.warmstart import JOB_THREAD_VARIABLES, Server

    os.environ.update({name: "1" for name in JOB_THREAD_VARIABLES})  # as Snakemake sets them for a 1-thread job
    times = {name: ([], []) for name in [*VARIANTS, WARM]}
    server = Server.start()
    try:
        Server.wait_ready(server)
        for _ in range(args.repeats):
            for name, (prefix, suffix) in [*VARIANTS.items(), (WARM, ("import attncap\n", ""))]:
                before, after = one(prefix, suffix, warm=name == WARM)
                times[name][0].append(before)
                times[name][1].append(after)
    finally:
        Server.stop(server)
    print(f"{'variant':50s} {'start-up + work s':>18s} {'exit s':>8s}   (median of {args.repeats})")
    for name, (before, after) in times.items():
        print(f"{name:50s} {statistics.median(before):18.2f} {statistics.median(after):8.2f}")
    from attncap.runtime import machine_rates_line

    print(machine_rates_line())


if __name__ == "__main__":
    main()
