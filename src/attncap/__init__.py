"""attncap: re-deriving published claims about attention memorization capacity by computation."""
import atexit
import gc

__version__ = "0.1.0"

# At exit an interpreter that imported torch, pandas and scipy spends 1–1.6 s collecting their objects, which the
# operating system reclaims anyway: 0.2–0.4 s with them frozen first (benchmarks/job_startup.py; every Snakemake
# job and notebook kernel imports attncap). Exit handlers registered later (logging's flush among them) still run
# before this one; outputs are closed by then.
atexit.register(gc.freeze)
