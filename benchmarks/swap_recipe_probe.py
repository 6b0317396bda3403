"""Probe the Transformer's recipe on the swap task: run S4 jobs under changed settings, side by side, and
report the frontier each variant reached (the longest length learned, per seed) within a wall-clock limit.

    python benchmarks/swap_recipe_probe.py --device cuda --limit 420 \
        --variant 'd64-2x:config/config.yaml:n5-softmax-L4:{"steps": 72000, "stage_cap": 32000}' \
        --variant 'p256-whole:config/paper.yaml:n5-softmax-L4:{"mixed_lengths": false, "seeds": [0, 1]}'

A variant is `name:tier file:S4 part:JSON overrides of the tier's S4 section`. Each runs as the Snakefile runs a
job (`scripts/run_experiment.py`), all at once, and is stopped at `--limit` seconds if it has not ended; its
progress lines (one per held-out check: each model's current length and accuracy on the last quarter of its
swaps) are what the table reads, so a stopped variant still reports how far it got. Logs and finished run tables
go to `--out` (default results/probe/). This answers "would more steps or another recipe change the frontier",
which the tiers' fixed budgets cannot; it decides nothing by itself.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CHECK = re.compile(r"step (\d+): (.+)$")
PROGRESS = re.compile(r"(\w+)/(\d+) T=(\d+) ([0-9.]+)?")


def frontier(log: str, promote: float) -> dict[str, dict]:
    """Per model ('mixer/seed'): last step, longest length with a check ≥ promote, current length, last accuracy."""
    out: dict[str, dict] = {}
    for segment in re.split(r"[\r\n]", log):  # progress bars share lines with the check lines
        found = CHECK.search(segment)
        if not found:
            continue
        step = int(found.group(1))
        for mixer, seed, length, acc in PROGRESS.findall(found.group(2)):
            model = out.setdefault(f"{mixer}/{seed}", {"learned_T": 0, "T": int(length)})
            # a line shows the length after this check's promotion: the accuracy is the previous line's length's
            checked = model["T"]
            model.update(step=step, T=int(length), acc=float(acc) if acc else None)
            if acc:
                model.setdefault("best", {})[checked] = max(model.get("best", {}).get(checked, 0.0), float(acc))
            if acc and float(acc) >= promote:
                model["learned_T"] = max(model["learned_T"], checked)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", action="append", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--limit", type=float, default=600, help="seconds before unfinished variants are stopped")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "probe")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    running = []
    for text in args.variant:
        name, tier, part, overrides = text.split(":", 3)
        config = yaml.safe_load((ROOT / tier).read_text())
        spec = {**config["swap_state_tracking"]["S4"], **json.loads(overrides)}
        log = args.out / f"{name}.log"
        command = [sys.executable, str(ROOT / "scripts" / "run_experiment.py"), "swap_state_tracking", "S4",
                   "--part", part, "--spec", json.dumps(spec), "--seed", str(config["seed"]), "--device", args.device,
                   "--threads", "1", "--tier", f"probe-{name}", "--out", str(args.out / f"{name}.csv")]
        running.append((name, part, spec, log, subprocess.Popen(command, stdout=log.open("w"),
                                                                stderr=subprocess.STDOUT, env=env)))
    start = time.monotonic()
    while any(p.poll() is None for *_, p in running) and time.monotonic() - start < args.limit:
        time.sleep(2)
    wall = time.monotonic() - start
    print(f"| variant | part | d_model | batch | lr | mixed lengths | model | steps | learned T | last T: acc (best there) | ended |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, part, spec, log, process in running:
        ended = process.poll() is not None
        if not ended:
            process.kill()
            process.wait()
        for model, state in frontier(log.read_text(), spec["promote_accuracy"]).items():
            print(f"| {name} | {part} | {spec['d_model']} | {spec['batch']} | {spec['lr']} | {spec['mixed_lengths']} | "
                  f"{model} | {state['step']} | {state['learned_T']} | {state['T']}: {state['acc']} ({state.get('best', {}).get(state['T'])}) | "
                  f"{'exit ' + str(process.returncode) if ended else f'stopped at {wall:.0f} s'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
