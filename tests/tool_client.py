"""Clients of the lit tool server (tests/tool_server.py): the `rlx-opt`, `filecheck` and
`lit` that tests/test_lit.py puts first on lit's PATH.

A client sends its argv, cwd, environment and file descriptors 0-2 (SCM_RIGHTS) to the
server, waits for the 8-byte reply (kind, value: the forked run exited with a code or was
killed by a signal) and exits the same way; if the server is not reachable it executes
the real tool. The lit suite starts ~700 of them, so their start-up counts: a C client
(compiled once per session with the host's `cc`, ~1 ms a start) where a compiler is
there, else a Python one (`python -IS`, ~10-15 ms of CPU a start). Both speak the same
protocol (`tool_server._read_request`, `_reply`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tool_server import SIGNAL

PY_CLIENT = """\
#!{python} -IS
# Client of tests/tool_server.py for {tool!r} (generated: tests/tool_client.py). Start-up is most of
# its cost, so it imports only C modules: _socket, not socket (which imports enum).
import os, sys
from _socket import AF_UNIX, SCM_RIGHTS, SOCK_STREAM, SOL_SOCKET, socket
from array import array

def main():
    s = socket(AF_UNIX, SOCK_STREAM)
    try:
        s.connect({socket!r})
    except OSError:
        os.execv({real!r}, [{real!r}, *sys.argv[1:]])
    fields = [{tool!r}, os.getcwd(), str(len(sys.argv) - 1), *sys.argv[1:]]
    fields += [k + "=" + v for k, v in os.environ.items()]
    payload = b"\\0".join(os.fsencode(f) for f in fields)
    message = len(payload).to_bytes(8, "little") + payload
    sent = s.sendmsg([message], [(SOL_SOCKET, SCM_RIGHTS, array("i", [0, 1, 2]).tobytes())])
    s.sendall(message[sent:])
    reply = b""
    while len(reply) < 8:
        chunk = s.recv(8 - len(reply))
        if not chunk:
            sys.stderr.write("{tool}: the tool server ended without a reply\\n")
            os._exit(125)
        reply += chunk
    kind = int.from_bytes(reply[:4], "little")
    value = int.from_bytes(reply[4:], "little", signed=True)
    if kind == {signal_kind}:
        import signal
        signal.signal(value, signal.SIG_DFL)
        os.kill(os.getpid(), value)
        os._exit(128 + value)
    os._exit(value)

main()
"""

C_CLIENT = r"""
/* Client of tests/tool_server.py (generated: tests/tool_client.py). One binary for
   every tool: the tool is the basename of argv[0]. */
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;
static const char *const SOCKET_PATH = @SOCKET@;
static const char *const TOOLS[] = {@TOOLS@};
static const char *const REALS[] = {@REALS@};
#define NTOOLS ((int)(sizeof TOOLS / sizeof TOOLS[0]))

static void put(char **p, const char *s) {
  size_t n = strlen(s);
  memcpy(*p, s, n);
  (*p)[n] = '\0';
  *p += n + 1;
}

int main(int argc, char **argv) {
  const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  int t = 0;
  while (t < NTOOLS && strcmp(TOOLS[t], name) != 0) t++;
  if (t == NTOOLS) {
    fprintf(stderr, "tool client: unknown tool %s\n", name);
    return 127;
  }
  char cwd[PATH_MAX + 1], nargs[16];
  struct sockaddr_un addr;
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, SOCKET_PATH, sizeof addr.sun_path - 1);
  if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      getcwd(cwd, sizeof cwd) == NULL) {
    argv[0] = (char *)REALS[t];
    execv(REALS[t], argv);
    perror(REALS[t]);
    return 127;
  }
  snprintf(nargs, sizeof nargs, "%d", argc - 1);
  size_t size = strlen(TOOLS[t]) + strlen(cwd) + strlen(nargs) + 3;
  for (int i = 1; i < argc; i++) size += strlen(argv[i]) + 1;
  for (char **e = environ; *e; e++)
    if (strchr(*e, '=')) size += strlen(*e) + 1;
  char *message = malloc(8 + size), *p = message + 8;
  if (message == NULL) return 125;
  uint64_t payload = size - 1; /* fields joined by NUL: no NUL after the last */
  for (int i = 0; i < 8; i++) message[i] = (char)(payload >> (8 * i));
  put(&p, TOOLS[t]);
  put(&p, cwd);
  put(&p, nargs);
  for (int i = 1; i < argc; i++) put(&p, argv[i]);
  for (char **e = environ; *e; e++)
    if (strchr(*e, '=')) put(&p, *e);
  int fds[3] = {0, 1, 2};
  union {
    char bytes[CMSG_SPACE(sizeof fds)];
    struct cmsghdr align;
  } control;
  struct iovec iov = {message, 8 + (size_t)payload};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  memset(&control, 0, sizeof control);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.bytes;
  msg.msg_controllen = sizeof control.bytes;
  struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(cmsg), fds, sizeof fds);
  ssize_t sent = sendmsg(s, &msg, 0);
  if (sent < 0) {
    perror("tool client: sendmsg");
    return 125;
  }
  for (size_t done = (size_t)sent; done < iov.iov_len;) {
    ssize_t n = send(s, message + done, iov.iov_len - done, 0);
    if (n <= 0) {
      perror("tool client: send");
      return 125;
    }
    done += (size_t)n;
  }
  unsigned char reply[8];
  for (size_t got = 0; got < sizeof reply;) {
    ssize_t n = recv(s, reply + got, sizeof reply - got, 0);
    if (n <= 0) {
      fprintf(stderr, "%s: the tool server ended without a reply\n", TOOLS[t]);
      return 125;
    }
    got += (size_t)n;
  }
  uint32_t kind = 0, value = 0;
  for (int i = 0; i < 4; i++) {
    kind |= (uint32_t)reply[i] << (8 * i);
    value |= (uint32_t)reply[4 + i] << (8 * i);
  }
  if (kind == @SIGNAL@) {
    signal((int)value, SIG_DFL);
    kill(getpid(), (int)value);
    _exit(128 + (int)value);
  }
  _exit((int)(int32_t)value);
}
"""


def _c_string(text: str) -> str:
    """`text` as a C string literal (every byte but ASCII letters and digits
    octal-escaped)."""
    body = "".join(
        chr(b) if chr(b).isascii() and chr(b).isalnum() else f"\\{b:03o}" for b in os.fsencode(text)
    )
    return f'"{body}"'


def _write_c_clients(directory: str, socket_path: str, reals: dict[str, str]) -> bool:
    """Compile the C client into `directory` and link it as every tool; False if there
    is no working C compiler or the client does not work (no tool is left then).
    The server must be listening already (the check runs one served `--version`)."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        return False
    source = (
        C_CLIENT.replace("@SOCKET@", _c_string(socket_path))
        .replace("@TOOLS@", ", ".join(_c_string(t) for t in reals))
        .replace("@REALS@", ", ".join(_c_string(r) for r in reals.values()))
        .replace("@SIGNAL@", str(SIGNAL))
    )
    src, exe = os.path.join(directory, "client.c"), os.path.join(directory, "client")
    with open(src, "w") as f:
        f.write(source)
    try:
        done = subprocess.run(
            [cc, "-O1", "-o", exe, src], capture_output=True, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return False
    if done.returncode != 0 or not os.path.exists(exe):
        return False
    for tool in reals:
        try:
            os.link(exe, os.path.join(directory, tool))
        except OSError:  # a file system without hard links
            shutil.copy2(exe, os.path.join(directory, tool))
    tool = next(iter(reals))
    try:  # the served `--version` of one tool: the client works here
        check = subprocess.run(
            [os.path.join(directory, tool), "--version"],
            capture_output=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        works = check.returncode == 0
    except (OSError, subprocess.SubprocessError):
        works = False
    if not works:
        for tool in reals:
            os.remove(os.path.join(directory, tool))
    return works


def _write_py_client(directory: str, tool: str, socket_path: str, real: str) -> None:
    path = os.path.join(directory, tool)
    text = PY_CLIENT.format(
        python=sys.executable, tool=tool, socket=socket_path, real=real, signal_kind=SIGNAL
    )
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def write_clients(directory: str, socket_path: str, reals: dict[str, str]) -> str:
    """Write a client for each tool (name -> real executable) into `directory`, C where a
    compiler works, else Python; returns which ("c" or "python")."""
    if os.environ.get("RLX_LIT_C_CLIENT", "1").strip() != "0" and _write_c_clients(
        directory, socket_path, reals
    ):
        return "c"
    for tool, real in reals.items():
        _write_py_client(directory, tool, socket_path, real)
    return "python"
