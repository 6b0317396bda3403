"""Atomic outputs and provenance."""
import pandas as pd
import pytest

from attncap.runtime import atomic_path, provenance, write_csv


def test_atomic_path_leaves_nothing_when_the_writer_fails(tmp_path):
    target = tmp_path / "out.csv"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("partial")
            raise RuntimeError("killed")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_replaces_on_success(tmp_path):
    target = tmp_path / "sub" / "out.csv"
    write_csv(pd.DataFrame({"a": [1, 2]}), target)
    assert pd.read_csv(target)["a"].tolist() == [1, 2]
    assert [p.name for p in target.parent.iterdir()] == ["out.csv"]


def test_provenance_names_revision_versions_and_device():
    stamp = provenance("cpu", "smoke")
    assert stamp["device"] == "cpu" and stamp["tier"] == "smoke"
    assert stamp["version_torch"].startswith("2.13")
    assert stamp["git_revision"]


def test_jobs_flush_subnormal_floats_to_zero():
    """configure_torch (every job's set-up) reads and writes subnormal floats as zero on x86 and leaves normal
    floats alone: a sharpening softmax's subnormal weights cost some Intel cores 2x in microcode."""
    import torch

    from attncap.runtime import FLUSH_DENORMAL, configure_torch

    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU has no flush-to-zero mode (torch.set_flush_denormal returns False)")
    threads = torch.get_num_threads()
    try:
        subnormal = torch.tensor([1e-40], dtype=torch.float32)
        assert subnormal.item() != 0.0  # IEEE: representable
        configure_torch(threads)
        assert FLUSH_DENORMAL
        assert (subnormal * 1.0).item() == 0.0
        assert torch.tensor([1e-40], dtype=torch.float32).item() == 0.0
        assert torch.tensor([1e-30], dtype=torch.float32).item() == pytest.approx(1e-30, rel=1e-6)
    finally:
        torch.set_flush_denormal(False)
        torch.set_num_threads(threads)


def test_jobs_compute_deterministically_without_loading_the_compiler():
    """configure_torch turns on torch's deterministic algorithms (warn only) without importing torch._inductor,
    which `use_deterministic_algorithms` would load (a second of every job's start-up for a compiler it never uses)."""
    import subprocess
    import sys

    probe = ("import sys, torch; from attncap.runtime import configure_torch; configure_torch(1, 0); "
             "print(torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(), "
             "'torch._inductor' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "False"]


def test_importing_attncap_freezes_objects_before_the_final_collection():
    """A job's exit skips collecting torch's objects (benchmarks/job_startup.py measures what that saves): after
    the exit handlers have run, every object is in the frozen generation, and the handlers registered after it
    (here one that writes a file) still run first."""
    import subprocess
    import sys

    code = ("import atexit, gc, sys\n"
            "import attncap\n"
            "atexit.register(lambda: sys.stdout.write(f'frozen before: {gc.get_freeze_count()}\\n'))\n"
            "atexit._run_exitfuncs()\n"
            "print(f'frozen after: {gc.get_freeze_count()}')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "frozen before: 0"
    assert int(out[1].split(": ")[1]) > 1000
