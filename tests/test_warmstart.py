"""The warm interpreter (attncap.warmstart): a job forked from it behaves as the same command started fresh,
and whatever it cannot serve runs fresh."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

from attncap.warmstart import JOB_THREAD_VARIABLES, SOCKET_VARIABLE, Server
from conftest import ROOT
from test_reliability import PROVENANCE, TINY_MQAR

JOB_ENV = {name: "1" for name in JOB_THREAD_VARIABLES}  # what Snakemake sets for a 1-thread job


@pytest.fixture(scope="module")
def warm():
    """The environment of a job whose run has a warm interpreter (the module shares one server)."""
    saved = {name: os.environ.get(name) for name in JOB_THREAD_VARIABLES}
    os.environ.update(JOB_ENV)
    server = Server.start()
    path = os.environ[SOCKET_VARIABLE]
    try:
        assert Server.wait_ready(server), "the warm interpreter did not come up"
        yield dict(os.environ)
    finally:
        Server.stop(server)
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)
    assert server.returncode == 0 and SOCKET_VARIABLE not in os.environ
    assert not os.path.exists(os.path.dirname(path)), "the server left its socket directory behind"


def fresh_env(env):
    return {k: v for k, v in env.items() if k != SOCKET_VARIABLE}


def script(tmp_path, body, name="job.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def jobrun(command, log, env, cwd, merge=True, **kwargs):
    merged = ["--merge-stdout"] if merge else []
    return subprocess.run([sys.executable, "-m", "attncap.jobrun", "--log", str(log), *merged, "--", *command],
                          capture_output=True, text=True, timeout=120, env=env, cwd=cwd, **kwargs)


PROBE = """
    import os, sys
    print("served warm" if "torch" in sys.modules else "started fresh", file=sys.stderr)
    print(sys.argv, os.path.basename(os.getcwd()), os.environ.get("ATTNCAP_PROBE"), os.path.basename(sys.path[0]),
          __name__)
    print("to stderr", file=sys.stderr)
    sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("status", [0, 3])
def test_a_script_runs_the_same_warm_and_fresh(tmp_path, warm, status):
    job = script(tmp_path, PROBE)
    (tmp_path / "work").mkdir()
    env = {**warm, "ATTNCAP_PROBE": "probe value"}
    logs = {}
    for name, job_env in (("warm", env), ("fresh", fresh_env(env))):
        result = jobrun(["python", str(job), str(status), "a b"], tmp_path / f"{name}.log", job_env, tmp_path / "work")
        assert result.returncode == status, result.stderr
        logs[name] = sorted((tmp_path / f"{name}.log").read_text().splitlines())
    assert "served warm" in logs["warm"] and "started fresh" in logs["fresh"]
    same = [[line for line in lines if "warm" not in line and "fresh" not in line] for lines in logs.values()]
    assert same[0] == same[1] and any("'a b'" in line and "probe value" in line and "__main__" in line
                                      for line in same[0])


def test_an_exception_exits_1_with_its_traceback(tmp_path, warm):
    job = script(tmp_path, "raise ValueError('broken job')\n")
    result = jobrun(["python", str(job)], tmp_path / "log", warm, tmp_path)
    assert result.returncode == 1
    text = (tmp_path / "log").read_text()
    assert "Traceback" in text and "ValueError: broken job" in text


def test_a_job_killed_by_a_signal_is_reported_as_such(tmp_path, warm):
    job = script(tmp_path, "import os, sys\nprint('working', file=sys.stderr, flush=True)\nos.kill(os.getpid(), 9)\n")
    result = jobrun(["python", str(job)], tmp_path / "log", warm, tmp_path)
    assert result.returncode == 128 + 9
    text = (tmp_path / "log").read_text()
    assert text.startswith("working") and "SIGKILL" in text and "peak memory" in text


def wait_for(predicate, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie waiting for the server to reap it is gone too
        return stat.read().split(")")[-1].split()[0] != "Z"


SLEEPER = """
    import os, sys, time
    print("served warm" if "torch" in sys.modules else "started fresh", os.getpid(), file=sys.stderr, flush=True)
    time.sleep(60)
"""


def start_sleeper(tmp_path, env):
    job = script(tmp_path, SLEEPER)
    log = tmp_path / "log"
    client = subprocess.Popen([sys.executable, "-m", "attncap.jobrun", "--log", str(log), "--", "python", str(job)],
                              env=env, stderr=subprocess.PIPE, text=True)
    assert wait_for(lambda: log.exists() and log.read_text().strip()), "the job never started"
    word, pid = log.read_text().split()[-2:]
    return client, int(pid), word


def test_a_stopped_job_stops_its_forked_child(tmp_path, warm):
    client, pid, word = start_sleeper(tmp_path, warm)
    assert word == "warm"
    client.send_signal(signal.SIGTERM)
    assert client.wait(timeout=30) == 128 + signal.SIGTERM
    assert wait_for(lambda: not alive(pid))
    assert "SIGTERM" in (tmp_path / "log").read_text()


def test_a_killed_client_takes_its_child_with_it(tmp_path, warm):
    """Killed without a chance to forward anything (SIGKILL), the client leaves no job running on its own."""
    client, pid, word = start_sleeper(tmp_path, warm)
    assert word == "warm"
    client.kill()
    client.wait(timeout=30)
    assert wait_for(lambda: not alive(pid)), "the forked child outlived its client"


def test_a_job_with_another_start_up_environment_runs_fresh_and_says_why(tmp_path, warm):
    job = script(tmp_path, PROBE)
    result = jobrun(["python", str(job), "0"], tmp_path / "log", {**warm, "OMP_NUM_THREADS": "2"}, tmp_path)
    text = (tmp_path / "log").read_text()
    assert result.returncode == 0 and "started fresh" in text
    assert "started in a fresh interpreter: the job's OMP_NUM_THREADS differ" in text


def test_commands_it_cannot_serve_run_fresh(tmp_path, warm):
    result = jobrun([sys.executable, "-c", "import sys; print('torch' in sys.modules)"], tmp_path / "log", warm,
                    tmp_path)
    assert result.returncode == 0 and (tmp_path / "log").read_text().split() == ["False"]


def test_the_server_outlives_its_parent_only_until_its_jobs_end(tmp_path):
    """Snakemake killed with SIGKILL cannot stop the server: it notices, lets its running jobs finish and report, and exits."""
    path = tmp_path / "socket"
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, subprocess, sys, time
        server = subprocess.Popen([sys.executable, "-m", "attncap.warmstart", {str(path)!r}, str(os.getpid())])
        print(server.pid, flush=True)
        time.sleep(120)
    """)], stdout=subprocess.PIPE, text=True, env={**os.environ, **JOB_ENV})
    server = int(parent.stdout.readline())
    assert wait_for(path.exists, 120), "the server did not come up"
    job = script(tmp_path, "import time; time.sleep(2); print('finished')\n")
    env = {**os.environ, **JOB_ENV, SOCKET_VARIABLE: str(path)}
    client = subprocess.Popen([sys.executable, "-m", "attncap.jobrun", "--log", str(tmp_path / "log"), "--merge-stdout",
                               "--", "python", str(job)], env=env)
    time.sleep(0.5)
    parent.kill()
    parent.wait()
    assert client.wait(timeout=60) == 0 and (tmp_path / "log").read_text().strip() == "finished"
    assert wait_for(lambda: not alive(server)), "the server outlived its parent"
    assert not path.exists()


def test_a_training_job_gives_the_same_numbers_warm_and_fresh(tmp_path, warm):
    frames = []
    for name, env in (("warm", warm), ("fresh", fresh_env(warm))):
        out = tmp_path / f"{name}.csv"
        result = jobrun(["python", str(ROOT / "scripts" / "run_experiment.py"), "retrieval_capacity", "E5", "--spec",
                         json.dumps(TINY_MQAR), "--part", "d16", "--threads", "1", "--device", "cpu", "--tier", "test",
                         "--out", str(out)], tmp_path / f"{name}.log", env, ROOT, merge=False)
        assert result.returncode == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
        frames.append(pd.read_csv(out))
    metrics = [c for c in frames[0].columns if c not in PROVENANCE and not c.endswith("per_s")]
    pd.testing.assert_frame_equal(frames[0][metrics], frames[1][metrics], check_exact=True)


def test_a_job_whose_server_is_killed_fails_instead_of_hanging(tmp_path, warm):
    """A server gone mid-job (killed from outside) cannot report the child's status: the job fails, saying so."""
    path = tmp_path / "socket"
    server = subprocess.Popen([sys.executable, "-m", "attncap.warmstart", str(path), str(os.getpid())],
                              env={**os.environ, **JOB_ENV})
    assert wait_for(path.exists, 120), "the server did not come up"
    job = script(tmp_path, "import time; time.sleep(1.5)\n")
    client = subprocess.Popen([sys.executable, "-m", "attncap.jobrun", "--log", str(tmp_path / "log"), "--", "python",
                               str(job)], env={**warm, SOCKET_VARIABLE: str(path)})
    time.sleep(0.5)
    server.kill()
    server.wait()
    assert client.wait(timeout=60) == 1
    assert "went away" in (tmp_path / "log").read_text()
