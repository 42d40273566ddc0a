"""A fork server for the command-line tools the lit suite runs (`rlx-opt`, `filecheck`, `lit`).

Why: the lit suite starts ~330 `rlx-opt`, ~280 `filecheck` and ~100 `lit` processes, and
each fresh interpreter spends most of its CPU time importing (xDSL and rlx for `rlx-opt`:
~0.2-0.4 s each). This server imports the tools once; every request is served by a
forked copy of it that runs the tool's console-script entry point exactly as the
installed script does (`sys.exit(main())`, with the client's argv, cwd, environment and
standard streams), then exits as an ordinary interpreter does. What a test checks
(output, diagnostics, exit code) is the tool's own behaviour: only the import is shared.

    python tests/tool_server.py SOCKET_PATH

It prints `ready` on stdout once it listens, and exits when its stdin reaches end of file
(its parent closed it or died), after reaping its children, so their CPU time is
accounted to the parent like the processes it replaces. Clients are the small scripts
`write_client` makes (tests/test_lit.py puts them first on lit's PATH): each sends its
argv, cwd, environment and file descriptors 0-2 (SCM_RIGHTS) and exits with the status of
the forked run; if the server is not reachable, the client executes the real tool.

Each request is served by one fork of the server (the run), which the server waits for;
if the client goes away first (lit's timeout killed it), the server kills the run.
"""

from __future__ import annotations

import importlib
import io
import os
import select
import signal
import socket
import sys
from typing import NoReturn

TOOLS = {
    "rlx-opt": ("rlx.tools.rlx_opt", "main"),
    "filecheck": ("filecheck.main", "main"),
    "lit": ("lit.main", "main"),
}
"""Tool name -> (module, function) of its console-script entry point (pyproject.toml and
the tools' own packages)."""

PRELOAD = (
    "rlx.tools.rlx_opt",
    "rlx.tools.opt_main",
    "rlx.tools.opt_listings",
    "rlx.tools.pass_index",
    "rlx.tools.targets",
    "rlx.tools.op_graph",
    "rlx.tools.graph_reports",
    "rlx.tools.pass_index_data",
    "rlx.plugins",
    "xdsl.syntax_printer",
    "xdsl.targets.mlir",
    "xdsl.utils.color_printer",
    "xdsl.transforms",
    "xdsl.frontend",
    "llvmlite.binding",
    "filecheck.main",
    "lit.main",
    "lit.formats",
    "lit.run",
    "lit.TestRunner",
    "lit.ShUtil",
    "multiprocessing.pool",
)
"""Modules the tools' runs import (beyond their entry points): what a run of `rlx-opt`
on each lit file adds to `sys.modules` is imported here (each run would import it again)."""

BUILTIN_TYPES = (list, tuple, dict, set, frozenset, str, bytes, int, float, bool, type(None))
"""Types that runs test against xDSL's abstract base classes (`isinstance(x, Operation)`
with `x` a list, ...); see `_warm_abc_caches`."""

PRELOAD_PACKAGES = ("rlx.dialects", "rlx.transforms", "rlx.lowering")
"""Packages imported with all their submodules (the passes and dialects of `rlx-opt`)."""


def _preload() -> None:
    """Import what the runs would import again and again: the tools, every rlx dialect,
    pass and lowering module, xDSL's dialects and passes, plugins' universes. Nothing is
    run or cached beyond module import and `abc`'s subclass caches (a run's results
    cannot depend on the preload); a module that fails to import is left to the runs
    (which report it as usual)."""
    import importlib.metadata
    import pkgutil

    def attempt(load: object, *args: object) -> None:
        try:
            load(*args)  # type: ignore[operator]
        except Exception as e:  # noqa: BLE001 - the run that needs it reports it
            sys.stderr.write(f"tool_server: preload: {type(e).__name__}: {e}\n")

    for name in (*PRELOAD, *(module for module, _ in TOOLS.values())):
        attempt(importlib.import_module, name)
    for package in PRELOAD_PACKAGES:
        path = importlib.import_module(package).__path__
        for info in pkgutil.walk_packages(path, package + "."):
            attempt(importlib.import_module, info.name)
    from xdsl.transforms import get_all_passes

    from rlx.dialects import get_all_dialects

    for factory in (*get_all_dialects().values(), *get_all_passes().values()):
        attempt(factory)
    for entry_point in importlib.metadata.entry_points(group="xdsl.universe"):
        attempt(entry_point.load)
    attempt(_warm_abc_caches)


def _warm_abc_caches() -> None:
    """Fill the negative subclass caches of xDSL's IR base classes for builtin types.

    `isinstance([], Operation)` is False, but the first such check walks every subclass
    of `Operation` (~1000 op classes) before `abc` caches the answer; each forked run
    paid that again (~20 ms of an `rlx-opt` run on a small file). The caches are `abc`'s
    own (invalidated by `ABCMeta.register`): a check answers the same with or without
    them, so a run's results still cannot depend on the preload."""
    from abc import ABCMeta

    from xdsl.ir import core

    bases = [
        c for c in vars(core).values() if isinstance(c, ABCMeta) and c.__module__ == core.__name__
    ]
    for base in bases:
        for typ in BUILTIN_TYPES:
            issubclass(typ, base)


EXIT, SIGNAL = 0, 1
"""Reply kinds: the run exited with a code / was killed by a signal."""

REQUEST_TIMEOUT_S = 30.0
"""A client sends its request at once; one that stalls is dropped, not waited for."""


def _recv_exact(conn: socket.socket, n: int, fds: list[int]) -> bytes:
    """`n` bytes from `conn`; file descriptors that come with them are added to `fds`."""
    data = b""
    while len(data) < n:
        chunk, new_fds, _, _ = socket.recv_fds(conn, n - len(data), 8)
        fds.extend(new_fds)
        if not chunk:
            raise ConnectionError("client closed the connection mid-request")
        data += chunk
    return data


def _read_request(conn: socket.socket, fds: list[int]) -> list[str]:
    """The request's fields (tool, cwd, argc, args..., env entries...); its file
    descriptors are added to `fds`."""
    size = int.from_bytes(_recv_exact(conn, 8, fds), "little")
    payload = _recv_exact(conn, size, fds)
    return [os.fsdecode(p) for p in payload.split(b"\0")]


def _std_stream(fd: int, template: io.TextIOWrapper) -> io.TextIOWrapper:
    """A text stream on `fd` set up as the interpreter sets up its standard streams
    (encoding and errors as the server's own; line-buffered if a tty, stderr always)."""
    if fd == 0:
        buffer: io.BufferedIOBase = io.BufferedReader(io.FileIO(0, "r", closefd=False))
    else:
        buffer = io.BufferedWriter(io.FileIO(fd, "w", closefd=False))
    return io.TextIOWrapper(
        buffer,
        encoding=template.encoding,
        errors=template.errors,
        newline="\n",
        line_buffering=fd == 2 or os.isatty(fd),
    )


def _become_run(fields: list[str], fds: list[int]) -> str:
    """In the forked run: take over the client's streams, cwd, environment and argv."""
    tool, cwd, argc = fields[0], fields[1], int(fields[2])
    args, env = fields[3 : 3 + argc], fields[3 + argc :]
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    templates = (sys.__stdin__, sys.__stdout__, sys.__stderr__)
    sys.stdin, sys.stdout, sys.stderr = (
        _std_stream(fd, t)
        for fd, t in enumerate(templates)  # type: ignore[arg-type]
    )
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(entry.split("=", 1) for entry in env)  # type: ignore[arg-type]
    sys.argv = [tool, *args]
    return tool


def _reply(conn: socket.socket, status: int) -> None:
    if os.WIFSIGNALED(status):
        kind, value = SIGNAL, os.WTERMSIG(status)
    else:
        kind, value = EXIT, os.waitstatus_to_exitcode(status)
    try:
        conn.sendall(kind.to_bytes(4, "little") + value.to_bytes(4, "little", signed=True))
    except OSError:
        pass  # the client is gone


def _fork_run(conn: socket.socket, others: list[socket.socket], wake: tuple[int, int]) -> int | str:
    """Read one request from `conn` and fork its run. Returns the run's pid (in the
    server; -1 for a bad request, which is logged and dropped) or, in the forked run, the
    tool name to run."""
    fds: list[int] = []
    try:
        conn.settimeout(REQUEST_TIMEOUT_S)
        fields = _read_request(conn, fds)
        conn.settimeout(None)  # blocking again (a timeout would make `_hung_up` wait)
        if fields[0] not in TOOLS:
            raise ValueError(f"unknown tool {fields[0]!r}")
    except (OSError, ValueError, IndexError) as e:
        sys.stderr.write(f"tool_server: bad request: {e}\n")
        for fd in fds:
            os.close(fd)
        return -1
    pid = os.fork()
    if pid == 0:  # the run: none of the server's descriptors or signal settings
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in wake:
            os.close(fd)
        for other in (conn, *others):
            other.close()
        return _become_run(fields, fds)
    for fd in fds:
        os.close(fd)  # a pipe's reader must see end of file once the run exits
    return pid


def _hung_up(conn: socket.socket) -> bool:
    """The client closed its end (a client sends nothing after its request)."""
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def serve(path: str) -> str:
    """Preload, listen on `path` and fork a run per request until stdin closes.

    The server itself waits for its runs (one fork per request): when a run exits (a
    SIGCHLD wakes the poll) its status goes to its client; when a client goes away
    first (lit's timeout killed it: its connection hangs up) its run is killed. Returns
    only in a forked run (the tool name to run); the server process exits here."""
    _preload()
    import gc

    gc.collect()
    gc.freeze()  # shared with every fork, never walked again
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)
    wake = os.pipe()
    for fd in wake:
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake[1])
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes the poll
    poller = select.poll()
    for fd in (listener.fileno(), sys.stdin.fileno(), wake[0]):
        poller.register(fd, select.POLLIN)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    runs: dict[int, socket.socket | None] = {}  # pid -> its client (None: client gone)
    by_fd: dict[int, int] = {}  # client connection fd -> pid of its run

    def drop(conn: socket.socket) -> None:
        poller.unregister(conn.fileno())
        del by_fd[conn.fileno()]
        conn.close()

    def reap(block: bool) -> None:
        while runs:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = runs.pop(pid, None)
            if conn is not None:
                _reply(conn, status)
                drop(conn)

    while True:
        for fd, _ in poller.poll():
            if fd == wake[0]:
                while True:
                    try:
                        if not os.read(wake[0], 512):
                            break
                    except BlockingIOError:
                        break
                reap(block=False)
            elif fd == listener.fileno():
                conn, _ = listener.accept()
                pid = _fork_run(conn, [listener, *(c for c in runs.values() if c)], wake)
                if isinstance(pid, str):
                    return pid
                if pid < 0:
                    conn.close()
                    continue
                runs[pid] = conn
                by_fd[conn.fileno()] = pid
                poller.register(conn.fileno(), select.POLLIN | select.POLLHUP)
            elif fd in by_fd:  # a client hung up before its run ended: stop the run
                pid = by_fd[fd]
                if not _hung_up(runs[pid]):  # type: ignore[arg-type]
                    continue  # a stale event of a reused descriptor
                drop(runs[pid])  # type: ignore[arg-type]
                runs[pid] = None
                os.kill(pid, signal.SIGKILL)
            elif fd == sys.stdin.fileno():  # parent closed our stdin (or died): shut down
                listener.close()
                reap(block=True)
                sys.exit(0)


def _exit_code(e: SystemExit) -> int:
    """The process exit code for `SystemExit(e.code)`, as the interpreter computes it
    (None 0, an int itself, anything else is printed to stderr and gives 1)."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    sys.stderr.write(f"{e.code}\n")
    return 1


def run_tool(tool: str) -> NoReturn:
    """In a forked run: `sys.exit(main())` of the tool, then the interpreter's exit steps
    that a program can observe (non-daemon threads joined, `atexit` functions, standard
    streams flushed: 120 if that fails, as the interpreter does) and `os._exit`.

    The rest of interpreter finalization (tearing down every module of the preloaded
    server: ~0.06 s of CPU, most of it copy-on-write page faults) is skipped."""
    import atexit
    import threading

    module_name, function = TOOLS[tool]
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        try:
            sys.exit(getattr(importlib.import_module(module_name), function)())
        except SystemExit as e:
            code = _exit_code(e)
        except BaseException as e:  # noqa: BLE001 - reported as an uncaught exception is
            sys.excepthook(type(e), e, e.__traceback__)
            code = 128 + signal.SIGINT if isinstance(e, KeyboardInterrupt) else 1
        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - e.g. a closed pipe
                code = 120
    finally:
        os._exit(code if 0 <= code < 256 else code & 0xFF)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C is the test session's to handle
    run_tool(serve(sys.argv[1]))
