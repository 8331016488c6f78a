#!/usr/bin/env python3
"""dynamo-launch with ZeroMQ CURVE on (docs/CLUSTER.md "Security"), as an
operator runs it: keys from `dynamo-launch --gen-curve-keys`, the secret in the
environment. Checks that
  - a launch whose secret variable is unset fails at once, naming the key;
  - requests succeed and KV events reach the frontend's router (a repeated
    prompt reports cached tokens);
  - the workers' request and event ports close the connection of a plain
    (NULL mechanism) ZMTP 3 peer and of a ZMTP 1.0 peer;
  - a fake worker started with other keys, registered in the same discovery,
    receives no request while every request still succeeds.

usage: curve_cluster_test.py --launch PATH [--keep-logs]
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import MOCKER_POOLS, chat, chats_ok, check, die_with_parent, finish, free_port, log_text, wait_for  # noqa: E402


def gen_keys(launch):
    out = subprocess.run([launch, "--gen-curve-keys"], check=True, capture_output=True, text=True).stdout
    secret = re.search(r"DYNAMO_CURVE_SECRET_KEY='([^']+)'", out).group(1)
    public = re.search(r"public_key: '([^']+)'", out).group(1)
    return public, secret


def write_config(path, root, port, public):
    with open(path, "w") as f:
        f.write(f"""namespace: curvetest
discovery: {{backend: file, root: {root}, lease_ttl_ms: 1000}}
frontend: {{host: 127.0.0.1, port: {port}}}
router: {{mode: kv}}
shutdown_grace_ms: 1000
security:
  curve:
    public_key: '{public}'
    secret_key: env:DYNAMO_CURVE_SECRET_KEY
""" + MOCKER_POOLS)


def greeting_of(address, payload):
    """Sends `payload` to tcp://host:port and reads until the peer closes (10 s
    bound). Returns the bytes received, or None when the peer kept the connection."""
    host, port = address[len("tcp://"):].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(payload)
        got = b""
        try:
            while True:
                b = s.recv(4096)
                if not b:
                    return got
                got += b
        except (socket.timeout, TimeoutError):
            return None
        except ConnectionResetError:
            return got


def zmtp3_null_greeting():
    g = bytearray(64)
    g[0], g[9], g[10] = 0xFF, 0x7F, 3
    g[12:16] = b"NULL"
    return bytes(g)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launch", required=True)
    ap.add_argument("--keep-logs", action="store_true")
    args = ap.parse_args()
    bin_dir = os.path.dirname(os.path.abspath(args.launch))
    work = tempfile.mkdtemp(prefix="dynamo-curve-")
    procs = []
    try:
        public, secret = gen_keys(args.launch)
        port = free_port()
        config = os.path.join(work, "cluster.yaml")
        write_config(config, os.path.join(work, "discovery"), port, public)

        env = {k: v for k, v in os.environ.items() if k != "DYNAMO_CURVE_SECRET_KEY"}
        r = subprocess.run([args.launch, "--config", config], env=env, capture_output=True, text=True,
                           timeout=30)
        check(r.returncode != 0 and "security.curve.secret_key" in r.stderr + r.stdout,
              "a launch without the secret fails at once, naming security.curve.secret_key")

        env["DYNAMO_CURVE_SECRET_KEY"] = secret
        log = os.path.join(work, "launch.log")
        with open(log, "w") as out:
            procs.append(subprocess.Popen([args.launch, "--config", config], env=env, stdout=out,
                                          stderr=subprocess.STDOUT, preexec_fn=die_with_parent))
        check(wait_for(lambda: log_text(log).count(" joined") >= 2 and chat(port, "hi"), 60),
              "the cluster serves a request with CURVE on")
        prompt = "the quick brown fox jumps over the lazy dog " * 12
        chat(port, prompt)
        second = chat(port, prompt)
        cached = second["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)
        check(cached > 0, f"KV events reach the router over CURVE (cached_tokens {cached})")

        text = log_text(log)
        events = re.findall(r"\(events (tcp://[0-9.:]+)\)", text)
        requests = re.findall(r"serving \S+ at (tcp://[0-9.:]+)", text)
        check(len(events) >= 1 and len(requests) >= 1, "worker addresses in the launcher's log")
        for name, address in (("event", events[0]), ("request", requests[0])):
            got = greeting_of(address, zmtp3_null_greeting())
            # A NULL-mechanism port would answer with its greeting and READY and keep the peer.
            check(got is not None and len(got) <= 64,
                  f"the {name} port closes on a plain (NULL mechanism) ZMTP 3 peer")
            got = greeting_of(address, b"\x05\x00abcd\x03\x00xyz")
            check(got is not None and len(got) <= 64, f"the {name} port closes on a ZMTP 1.0 peer")

        # A fake worker: same namespace and discovery, other keys.
        fake_public, fake_secret = gen_keys(args.launch)
        fake_config = os.path.join(work, "fake.yaml")
        write_config(fake_config, os.path.join(work, "discovery"), port, fake_public)
        fake_log = os.path.join(work, "fake.log")
        fake_env = dict(env, DYNAMO_CURVE_SECRET_KEY=fake_secret)
        with open(fake_log, "w") as out:
            procs.append(subprocess.Popen([os.path.join(bin_dir, "dynamo-worker"), "--config", fake_config,
                                           "--pool", "backend"], env=fake_env, stdout=out,
                                          stderr=subprocess.STDOUT, preexec_fn=die_with_parent))
        check(wait_for(lambda: log_text(log).count(" joined") >= 3, 30),
              "the fake worker registers and the frontend's router adds it")
        ok = chats_ok(port, 12)
        check(ok == 12, f"every request succeeds with the fake worker registered ({ok}/12)")
        system = re.search(r"metrics and health on (http://[0-9.:]+)/metrics", log_text(fake_log))
        check(system is not None, "the fake worker's system server")
        if system:
            with urllib.request.urlopen(system.group(1) + "/metrics", timeout=10) as r:
                metrics = r.read().decode()
            served = sum(float(l.split()[-1]) for l in metrics.splitlines()
                         if l.startswith("dynamo_component_requests_total"))
            check(served == 0, f"the fake worker received no request ({served:g})")
        check("handshake with" in log_text(log), "the frontend logs the failed handshakes")
    finally:
        status = finish(procs, work, args.keep_logs)
    return status


if __name__ == "__main__":
    sys.exit(main())
