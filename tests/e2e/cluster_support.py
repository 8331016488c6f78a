"""Helpers shared by the e2e scripts that launch whole clusters (etcd_cluster_test,
curve_cluster_test, admin_cluster_test, planner_prometheus_test): ok/FAIL lines with a
failure list, free loopback ports, children that die with the script, polling, a chat
request to the mocker, and the teardown."""
import json
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

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


# The pools section of a cluster config: two mocker workers serving model "mocker".
MOCKER_POOLS = """pools:
  - name: backend
    engine: mocker
    model: mocker
    replicas: 2
    mocker: {speedup_ratio: 10.0}
"""


def wait_for(pred, seconds):
    """Polls `pred` (exceptions count as false) every 0.1 s; False after `seconds`."""
    end = time.time() + seconds
    while time.time() < end:
        try:
            if pred():
                return True
        except Exception:
            pass
        time.sleep(0.1)
    return False


def log_text(path):
    with open(path, errors="replace") as f:
        return f.read()


def chat(port, content, max_tokens=4):
    """One chat completion for model "mocker" on the frontend at 127.0.0.1:`port`."""
    body = json.dumps({"model": "mocker", "messages": [{"role": "user", "content": content}],
                       "max_tokens": max_tokens}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def chats_ok(port, n):
    """Sends `n` 4-token chats ("request <i>") and returns how many came back whole
    (failures are printed)."""
    ok = 0
    for i in range(n):
        try:
            ok += 1 if chat(port, f"request {i}")["usage"]["completion_tokens"] == 4 else 0
        except Exception as e:
            print(f"request {i}: {e}", flush=True)
    return ok


def finish(procs, work, keep_logs):
    """SIGTERMs the children (SIGKILL after 15 s), keeps `work` when asked or on a
    failure, prints the verdict and returns the exit status."""
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
    if keep_logs or failures:
        print("logs in " + work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    print("FAILED: " + "; ".join(failures) if failures else "all checks passed")
    return 1 if failures else 0
