"""Helpers shared by the e2e scripts that launch whole clusters (etcd_cluster_test,
curve_cluster_test, planner_prometheus_test): ok/FAIL lines with a failure list,
free loopback ports, and children that die with the script."""
import signal
import socket

failures = []


def check(cond, what):
    """Prints ok / FAIL and remembers a failure (the script exits 1 when any)."""
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    """preexec_fn: SIGKILL the child (etcd, the launcher, ...) when the script dies."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass
