"""A warm interpreter that starts a run's Python jobs by forking instead of from nothing.

A smoke-tier job imports torch (about 2.4 s on a 2-core machine) and, at its optimizer's first step,
torch._dynamo (about 2.2 s), then computes for a second or two: most of its time is start-up. With
`warm_start: true` in the config, Snakemake's `onstart` starts one server per run (`Server`) that imports
those libraries once; `attncap.jobrun` hands it each `python SCRIPT ARGS` command with the job's standard
streams (`start`), and the server forks a child that runs the script as `python SCRIPT ARGS` would. The
child is a forked copy, so its memory and CPU time are not the job's process tree's: a `benchmark:` file
then holds the job's wall time only, which is why the default and paper tiers leave this off.

The server is an optimisation only. Whatever cannot be served warm (no server, another interpreter, an
environment that differs in a variable read at start-up, a refused connection) runs in a fresh
interpreter, and a command gives the same output either way (tests/test_warmstart.py).
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import struct
import sys
import tempfile
import time
import traceback

SOCKET_VARIABLE = "ATTNCAP_WARM_SOCKET"
"""The environment variable naming the run's server socket (set by `Server.start` in Snakemake's process, so
every job's shell inherits it)."""

PRELOAD = ("torch", "torch._dynamo", "torch.optim", "numpy", "pandas", "scipy.optimize", "scipy.special",
           "scipy.stats", "papermill", "nbconvert", "jupytext")
"""Third-party modules the jobs import (the training jobs, the verdicts, the notebooks' runner) and nothing changes
during a run; the project's own modules are left to each child, so a job always runs the code on disk."""

STARTUP_PREFIXES = ("PYTHON", "TORCH", "CUDA", "LD_", "MALLOC_", "KMP_", "GOMP_", "OMP_", "MKL_", "OPENBLAS_",
                    "GOTO_", "VECLIB_", "NUMEXPR_")
"""Environment variables read when an interpreter or a library starts: a job whose values differ from the
server's cannot be served by a copy of it and runs fresh."""

JOB_THREAD_VARIABLES = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                        "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
"""What Snakemake sets to a job's `threads` in its shell: the server starts with them at 1, the value of every
rule here (a job granted more threads runs fresh)."""


def startup_environment(env) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES)}


def _send(conn: socket.socket, message: dict, fds=()) -> None:
    data = (json.dumps(message) + "\n").encode()
    if fds:
        socket.send_fds(conn, [data], list(fds))
    else:
        conn.sendall(data)


def _receive(conn: socket.socket, with_fds: int = 0):
    """One newline-ended JSON message (and up to `with_fds` file descriptors sent with its first bytes)."""
    data, fds = b"", []
    while not data.endswith(b"\n"):
        if with_fds and not fds:
            chunk, fds, _, _ = socket.recv_fds(conn, 1 << 16, with_fds)
        else:
            chunk = conn.recv(1 << 16)
        if not chunk:
            raise ConnectionError("connection closed mid-message")
        data += chunk
    return json.loads(data), fds


# ----------------------------------------------------------------------------------------------- client side


class WarmJob:
    """A job forked by the server: `send_signal`, `wait` and `returncode` as on a `subprocess.Popen`, and the
    child's peak memory, which the server reads when it reaps it."""

    def __init__(self, conn: socket.socket, pid: int, stderr=None):
        self.conn, self.pid, self.stderr = conn, pid, stderr
        self.returncode: int | None = None
        self.peak_mb: float | None = None

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def wait(self) -> int:
        if self.returncode is None:
            try:
                status, _ = _receive(self.conn)  # a forwarded signal interrupts nothing here (PEP 475)
            except (OSError, ConnectionError, ValueError):
                # the server was killed: the child cannot be reaped from here, so wait for it to go and fail the job
                while _alive(self.pid):
                    time.sleep(0.1)
                print("attncap: the warm interpreter went away during the job; its exit status is unknown",
                      file=self.stderr or sys.stderr, flush=True)
                status = {"returncode": 1}
            self.conn.close()
            self.returncode = int(status["returncode"])
            self.peak_mb = status.get("peak_mb")
        return self.returncode


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def start(command: list[str], stdout=None, stderr=None) -> WarmJob | None:
    """Hand `command` to the run's server, with this process's stdin and the given stdout/stderr (open files;
    None: this process's own); None when it cannot be served warm (the caller runs it fresh)."""
    path = os.environ.get(SOCKET_VARIABLE)
    if not path or len(command) < 2 or not command[1].endswith(".py"):
        return None
    interpreter = shutil.which(command[0])
    if interpreter is None or os.path.realpath(interpreter) != os.path.realpath(sys.executable):
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        fds = [0, (stdout or sys.stdout).fileno(), (stderr or sys.stderr).fileno()]
        _send(conn, {"argv": command[1:], "cwd": os.getcwd(), "env": dict(os.environ)}, fds)
        reply, _ = _receive(conn)
    except (OSError, ConnectionError, ValueError):
        conn.close()
        return None
    pid = reply.get("pid")
    if pid is None:  # refused (see Server.handle): run fresh, saying why
        conn.close()
        print(f"attncap: started in a fresh interpreter: {reply.get('refused')}", file=stderr or sys.stderr, flush=True)
        return None
    return WarmJob(conn, int(pid), stderr)


# ----------------------------------------------------------------------------------------------- server side


class Server:
    """The run's warm interpreter: started from Snakemake's process (`start`), it preloads `PRELOAD`, then forks
    one child per request; it exits when told to (`stop`) or when the process that started it is gone, after
    its running children have finished and been reported."""

    def __init__(self, path: str, parent: int):
        self.path, self.parent = path, parent
        self.children: dict[int, socket.socket] = {}

    @staticmethod
    def start() -> subprocess.Popen:
        """Start a server for this process's run and point this process's environment (inherited by its jobs) at it."""
        # a private directory (mode 0700) holds the socket: only this user can hand the server a command
        path = os.path.join(tempfile.mkdtemp(prefix="attncap-warm-"), "socket")
        env = {**os.environ, **{name: "1" for name in JOB_THREAD_VARIABLES}}
        # its own session: a Ctrl-C in the terminal reaches the jobs through attncap.jobrun, not twice
        server = subprocess.Popen([sys.executable, "-m", "attncap.warmstart", path, str(os.getpid())],
                                  stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        os.environ[SOCKET_VARIABLE] = path
        return server

    @staticmethod
    def wait_ready(server: subprocess.Popen, timeout: float = 120) -> bool:
        """Wait until the server started by `start` accepts jobs (its socket appears once it has preloaded);
        False if it exited or the time ran out. Snakemake does not wait: jobs before then run fresh."""
        deadline = time.monotonic() + timeout
        while server.poll() is None and time.monotonic() < deadline:
            if os.path.exists(os.environ.get(SOCKET_VARIABLE, "")):
                return True
            time.sleep(0.05)
        return False

    @staticmethod
    def stop(server: subprocess.Popen | None) -> None:
        os.environ.pop(SOCKET_VARIABLE, None)
        if server is not None and server.poll() is None:
            server.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=30)

    def serve(self) -> None:
        before = dict(os.environ)
        for name in PRELOAD:
            __import__(name)
        # what the imports themselves set (torch._inductor's cache directory): a fresh job's imports would set it too
        self.set_by_imports = {k: v for k, v in os.environ.items() if before.get(k) != v}
        startup = startup_environment(before)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path + ".tmp")
        os.replace(self.path + ".tmp", self.path)  # a client never connects to a server still preloading
        listener.listen(16)
        stopping = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ)
        try:
            while True:
                if stopping or os.getppid() != self.parent:  # told to stop, or Snakemake is gone: take no new jobs
                    if not self.children:
                        break
                    with contextlib.suppress(KeyError, ValueError):
                        selector.unregister(listener)
                for _ in selector.select(timeout=0.05):
                    conn, _ = listener.accept()
                    self.handle(conn, listener, startup)
                self.reap()
        finally:
            listener.close()
            with contextlib.suppress(OSError):
                os.unlink(self.path)
                os.rmdir(os.path.dirname(self.path))

    def handle(self, conn: socket.socket, listener: socket.socket, startup: dict) -> None:
        _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        try:
            if uid != os.getuid():
                raise ConnectionError("another user")
            conn.settimeout(10)
            request, fds = _receive(conn, with_fds=3)
            conn.settimeout(None)
        except (OSError, ConnectionError, ValueError):
            conn.close()
            return
        differ = sorted(k for k in set(startup) | set(startup_environment(request["env"]))
                        if startup.get(k) != request["env"].get(k))
        if len(fds) != 3 or differ:
            for fd in fds:
                os.close(fd)
            with contextlib.suppress(OSError):
                _send(conn, {"refused": f"the job's {', '.join(differ)} differ from the warm interpreter's"})
            conn.close()
            return
        pid = os.fork()
        if pid == 0:
            listener.close()
            for other in self.children.values():
                other.close()
            _run_child({**request, "env": {**request["env"], **self.set_by_imports}}, fds, conn)  # never returns
        for fd in fds:
            os.close(fd)
        self.children[pid] = conn
        with contextlib.suppress(OSError):
            _send(conn, {"pid": pid})

    def reap(self) -> None:
        while self.children:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    _send(conn, {"returncode": os.waitstatus_to_exitcode(status), "peak_mb": usage.ru_maxrss / 1024})
                conn.close()


def _run_child(request: dict, fds: list[int], conn: socket.socket) -> None:
    """In the forked child: become `python ARGV` in the job's directory, environment and streams, and exit as
    that interpreter would. If the job's client goes away (killed without forwarding a signal), so does the child."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _watch_client(conn)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False, buffering=1 if os.isatty(1) else -1)
        sys.stderr = open(2, "w", closefd=False, buffering=1, errors="backslashreplace")
        tempfile.tempdir = None  # read again from the job's TMPDIR
        _fresh_random_state()
        script = os.path.abspath(request["argv"][0])
        sys.argv = list(request["argv"])
        sys.path[0] = os.path.dirname(script)
        import runpy

        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as end:
            code = _exit_code(end.code)
        except BaseException:  # noqa: BLE001 - printed and exited with as `python` would
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _watch_client(conn: socket.socket) -> None:
    import threading

    def watch():
        with contextlib.suppress(OSError):
            while conn.recv(1024):
                pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True, name="attncap-warm-client").start()


def _fresh_random_state() -> None:
    """Seed the global generators from the system, as a fresh interpreter does: a forked copy would otherwise
    share the server's draws with every other job (jobs seed what they use; this only keeps unseeded draws
    independent)."""
    import random

    random.seed()
    with contextlib.suppress(ImportError):
        import numpy

        numpy.random.seed()
    with contextlib.suppress(ImportError):
        import torch

        torch.seed()


if __name__ == "__main__":
    Server(sys.argv[1], int(sys.argv[2])).serve()
