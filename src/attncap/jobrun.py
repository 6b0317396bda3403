"""Run one Snakemake job's command with its output in the job's log, and say how it ended.

    python -m attncap.jobrun --log results/logs/x.log [--merge-stdout] -- python scripts/... args

The command's stderr (and stdout with --merge-stdout) goes to the log, as a shell redirection would.
When the command is ended by a signal, a shell only gives Snakemake an exit status of 128 + N and
leaves the log as the killed process left it (often empty). This wrapper writes one line to the log
and to stderr naming the signal, the run time and the peak memory, and for SIGKILL points at the
kernel's out-of-memory killer, the usual sender when nobody stopped the run. The exit status stays
128 + N, so Snakemake still sees the job fail.

When the run has a warm interpreter (`attncap.warmstart`, the config's `warm_start`), a `python SCRIPT` command
is forked from it instead of started from nothing; everything above holds the same way.
"""
from __future__ import annotations

import argparse
import resource
import signal
import subprocess
import sys
import time

from attncap import warmstart

_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def describe_signal(signum: int, seconds: float, peak_mb: float | None) -> str:
    """One line for the log: which signal ended the job and what that usually means."""
    memory = f", peak memory {peak_mb:.0f} MB" if peak_mb else ""
    head = f"attncap: the job was killed by signal {signum} ({signal_name(signum)}) after {seconds:.1f} s{memory}."
    if signum == signal.SIGKILL:
        return (head + " SIGKILL while nobody stopped the run is almost always the kernel's out-of-memory (OOM) "
                "killer: the job needed more memory than was free. Check `dmesg` or `journalctl -k` for "
                "'Out of memory', then run fewer jobs at once (--cores, --resources mem_mb=...), raise the rule's "
                "mem_mb on a cluster, or shrink the grid in the config.")
    if signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        return head + " The run was stopped (Ctrl-C, a cancelled run, or a scheduler's time or memory limit)."
    if signum == signal.SIGSEGV or signum == signal.SIGBUS:
        return head + " The process crashed (a native library fault, or memory exhausted inside a native call)."
    return head


def _peak_child_mb() -> float | None:
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    return peak / 1024 if peak else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", required=True, help="the job's log file (overwritten)")
    parser.add_argument("--merge-stdout", action="store_true", help="send stdout to the log as well")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (put it after --)")
    started = time.perf_counter()
    with open(args.log, "w") as sink:
        stdout = sink if args.merge_stdout else None
        child = warmstart.start(command, stdout=stdout, stderr=sink) or subprocess.Popen(command, stdout=stdout,
                                                                                         stderr=sink)
        previous = {s: signal.signal(s, lambda signum, _frame: child.send_signal(signum)) for s in _FORWARDED}
        try:
            status = child.wait()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
    if status >= 0:
        return status
    signum = -status
    peak = child.peak_mb if isinstance(child, warmstart.WarmJob) else _peak_child_mb()
    message = describe_signal(signum, time.perf_counter() - started, peak)
    with open(args.log, "a") as sink:
        sink.write("\n" + message + "\n")
    print(message, file=sys.stderr, flush=True)
    return 128 + signum


if __name__ == "__main__":
    sys.exit(main())
