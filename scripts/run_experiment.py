"""Run one experiment job of one claim and write its tidy CSV (thin CLI over attncap.experiments)."""
import argparse
import importlib
import json
import sys
from pathlib import Path

from attncap.experiments.context import RunContext
from attncap.runtime import write_csv


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("claim")
    parser.add_argument("experiment", help="experiment id, e.g. E1")
    parser.add_argument("--spec", required=True, help="JSON of the experiment's config section")
    parser.add_argument("--part", default="all", help="which group of configs this job trains")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tier", default="unknown")
    parser.add_argument("--compile", action="store_true", help="torch.compile the training steps")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    module = importlib.import_module(f"attncap.experiments.{args.claim}")
    out = Path(args.out)
    # resumable state of a killed job (checkpoints, finished trainings) lives beside its output until it is written
    scratch = out.parent / ".resume" / out.stem
    context = RunContext.create(claim=args.claim, experiment=args.experiment, seed=args.seed,
                                device=args.device, threads=args.threads, tier=args.tier, part=args.part,
                                compile=args.compile, scratch=scratch)
    frame = module.run(args.experiment, json.loads(args.spec), context)
    write_csv(context.stamp(frame), args.out)
    context.clear_scratch()
    print(f"wrote {len(frame)} rows to {args.out} in {context.elapsed():.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
