#!/usr/bin/env python3
"""Starts a server binary on a free port, waits until it is healthy, runs a test
command against it with DYNAMO_BASE_URL set, then stops the server with SIGTERM
and checks it exits cleanly. Used by CTest for end-to-end tests.

usage: with_server.py [--health-timeout S] [--needs-default-model] -- SERVER ARGS... --- TEST ARGS...
--needs-default-model skips (exit 77) when the default model file is absent
($DYNAMO_MODEL_PATH, else ~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf).
The literal {port} in server arguments is replaced by the chosen port, and
{url} in test arguments by http://127.0.0.1:PORT.
"""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port: int, proc: subprocess.Popen, timeout: float) -> bool:
    deadline = time.time() + timeout
    url = f"http://127.0.0.1:{port}/health"
    while time.time() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return True
        except Exception:
            pass
        time.sleep(0.1)
    return False


def main() -> int:
    args = sys.argv[1:]
    timeout = 120.0
    while args and args[0] != "--":
        if args[0] == "--health-timeout":
            timeout = float(args[1])
            args = args[2:]
        elif args[0] == "--needs-default-model":
            path = os.environ.get("DYNAMO_MODEL_PATH") or os.path.expanduser(
                "~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf")
            if not os.path.exists(path):
                print(f"SKIP: default model not found at {path} (run scripts/setup.sh)")
                return 77
            args = args[1:]
        else:
            print(__doc__, file=sys.stderr)
            return 2
    if not args or args[0] != "--" or "---" not in args:
        print(__doc__, file=sys.stderr)
        return 2
    sep = args.index("---")
    port = free_port()
    server = [a.replace("{port}", str(port)) for a in args[1:sep]]
    test = [a.replace("{url}", f"http://127.0.0.1:{port}") for a in args[sep + 1:]]
    print("server:", " ".join(server), flush=True)
    proc = subprocess.Popen(server)
    try:
        if not wait_healthy(port, proc, timeout):
            print(f"server did not become healthy within {timeout} s (exit code {proc.poll()})",
                  file=sys.stderr)
            return 1
        env = dict(os.environ, DYNAMO_BASE_URL=f"http://127.0.0.1:{port}/v1")
        print("test:", " ".join(test), flush=True)
        rc = subprocess.call(test, env=env)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                print("server did not stop within 30 s of SIGTERM", file=sys.stderr)
                return 1
    if proc.returncode not in (0, -signal.SIGTERM):
        print(f"server exited with {proc.returncode}", file=sys.stderr)
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
