#!/usr/bin/env python3
"""deploy/k8s/examples/disagg run as processes, the way its pods would run them:
each Deployment replica's container args and env from the manifests (assembled
as in k8s_manifest_test.py), $(VAR) expanded as kubelet does, the ConfigMap's
cluster.yaml as the config, status.podIP -> 127.0.0.1. Then: every process's
liveness and readiness probe answers 200, a chat completion goes through the
frontend (standalone router, prefilled on the prefill pool, decoded on a
decode pod), the planner's Kubernetes connector checks both pool Deployments
on a fake API server with the Bearer token and, the decode pool being idle,
merge-PATCHes it from 2 to 1 replicas; then, as the ReplicaSet would, one
decode pod gets SIGTERM, drains and exits 0 while requests still succeed;
every process exits 0 on SIGTERM.

What a pod would do differently, and why: all share one host, so etcd is
127.0.0.1:<free port> instead of the etcd Service, the frontend port and each
process's DYN_SYSTEM_PORT are free ports instead of 8000/9090 (one network
namespace), the planner gets --kubernetes-api/--kubernetes-namespace/
--kubernetes-token-file (no service account here), and planner.interval_ms is
1 s (10 s in the example) to keep the test short.

usage: k8s_pods_test.py --bin-dir DIR [--etcd PATH]
Exits 77 (skipped) without an etcd binary.
"""
import argparse
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import k8s_manifest_test as manifests  # noqa: E402  (its assemble(): the examples as kustomize builds them)
import yaml  # noqa: E402

EXAMPLE = os.path.join(manifests.EXAMPLES, "disagg")
TOKEN = "sa-token-for-the-test"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


_next_port = [20000 + os.getpid() % 8000]


def free_port():
    """A free port below the kernel's ephemeral range (32768-60999), so that no
    process's ephemeral plane socket takes it between the pick and the bind."""
    while True:
        _next_port[0] += 1
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", _next_port[0]))
                return _next_port[0]
            except OSError:
                continue


def die_with_parent():
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def get(url, timeout=2):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except Exception:
        return None


class FakeApi(http.server.BaseHTTPRequestHandler):
    """The scale subresource of worker Deployments; records (method, path, auth, type, body)."""
    replicas, requests, lock = {}, [], threading.Lock()

    def log_message(self, *a):
        pass

    def answer(self, method):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        m = re.fullmatch(r"/apis/apps/v1/namespaces/dynamo/deployments/([a-z0-9-]+)/scale", self.path)
        with self.lock:
            self.requests.append((method, self.path, self.headers.get("Authorization"),
                                  self.headers.get("Content-Type"), body))
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                code, out = 401, {"kind": "Status", "reason": "Unauthorized", "code": 401}
            elif not m or m.group(1) not in self.replicas:
                code, out = 404, {"kind": "Status", "reason": "NotFound", "code": 404}
            else:
                if method == "PATCH":
                    self.replicas[m.group(1)] = json.loads(body)["spec"]["replicas"]
                n = self.replicas[m.group(1)]
                code, out = 200, {"kind": "Scale", "spec": {"replicas": n}, "status": {"replicas": n}}
        data = json.dumps(out).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer("GET")

    def do_PATCH(self):
        self.answer("PATCH")


def chat(port):
    body = {"model": "mocker", "max_tokens": 8, "messages": [{"role": "user", "content": "hello pods " * 200}]}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status == 200 and json.loads(r.read())["choices"][0]["message"]["content"] != ""
    except Exception as e:
        print(f"request failed: {e}", flush=True)
        return False


def metric(port, pattern):
    """The sum of the values of the /metrics lines matching `pattern` (None: no line)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        values = [int(float(v)) for v in re.findall(pattern, r.read().decode())]
    return sum(values) if values else None


def pod_commands(objs, bin_dir, config_path, api_url, token_file):
    """(name, argv, env, probe port) per replica of every dynamo Deployment."""
    out = []
    for dep in (o for o in objs if o["kind"] == "Deployment"):
        c = dep["spec"]["template"]["spec"]["containers"][0]
        if not c["image"].split(":")[0].endswith(manifests.IMAGE):
            continue  # etcd: started by this script
        for i in range(dep["spec"].get("replicas", 1)):
            env = dict(os.environ)
            for e in c.get("env", []):
                if "value" in e:
                    env[e["name"]] = e["value"]
                elif e["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP":
                    env[e["name"]] = "127.0.0.1"
            env["DYN_SYSTEM_PORT"] = str(free_port())  # one host: 9090 each would collide
            argv = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in c["args"]]
            argv[0] = os.path.join(bin_dir, argv[0])
            argv[argv.index("--config") + 1] = config_path
            if "dynamo-planner" in argv[0]:
                argv += ["--kubernetes-api", api_url, "--kubernetes-namespace", "dynamo",
                         "--kubernetes-token-file", token_file]
            port = None
            if c.get("readinessProbe"):
                port = manifests.probe_port(c, "readinessProbe")
                port = int(env["DYN_SYSTEM_PORT"]) if port == manifests.SYSTEM_PORT else None
            out.append((f"{dep['metadata']['name']}-{i}", argv, env, port, c))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--etcd")
    args = ap.parse_args()
    etcd = next((c for c in (args.etcd, shutil.which("etcd"), "/usr/bin/etcd") if c and os.access(c, os.X_OK)), None)
    if not etcd:
        print("SKIP: no etcd binary (apt-get install etcd-server)")
        return 77

    missing = [b for b in ("dynamo-frontend", "dynamo-router", "dynamo-worker", "dynamo-planner")
               if not os.access(os.path.join(args.bin_dir, b), os.X_OK)]
    if missing:
        print(f"FAIL: {missing} not built in {args.bin_dir} (cmake --build build --target dynamo-apps)")
        return 1
    objs = manifests.assemble(EXAMPLE)
    cm = next(o for o in objs if o["kind"] == "ConfigMap")
    cluster = yaml.safe_load(cm["data"]["cluster.yaml"])
    work = tempfile.mkdtemp(prefix="dynamo-k8s-pods-")
    cport, pport, fport = free_port(), free_port(), free_port()
    cluster["discovery"]["endpoints"] = [f"http://127.0.0.1:{cport}"]
    cluster["frontend"]["port"] = fport
    cluster["planner"]["interval_ms"] = 1000
    config_path = os.path.join(work, "cluster.yaml")
    with open(config_path, "w") as f:
        yaml.safe_dump(cluster, f)
    token_file = os.path.join(work, "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")

    for o in objs:
        if o["kind"] == "Deployment" and o["metadata"]["name"].startswith("worker-"):
            FakeApi.replicas[o["metadata"]["name"]] = o["spec"]["replicas"]
    api = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeApi)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    api_url = f"http://127.0.0.1:{api.server_address[1]}"

    procs = []
    try:
        procs.append(("etcd", subprocess.Popen(
            [etcd, "--data-dir", os.path.join(work, "etcd"), "--election-timeout", "500", "--heartbeat-interval", "50",
             "--listen-client-urls", f"http://127.0.0.1:{cport}", "--advertise-client-urls", f"http://127.0.0.1:{cport}",
             "--listen-peer-urls", f"http://127.0.0.1:{pport}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{pport}",
             "--initial-cluster", f"default=http://127.0.0.1:{pport}"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "etcd.log"), "w"), preexec_fn=die_with_parent), None))
        deadline = time.time() + 15
        while get(f"http://127.0.0.1:{cport}/health") != 200 and time.time() < deadline:
            time.sleep(0.1)
        pods = pod_commands(objs, args.bin_dir, config_path, api_url, token_file)
        for name, argv, env, port, c in pods:
            log = open(os.path.join(work, name + ".log"), "w")
            procs.append((name, subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                 preexec_fn=die_with_parent), (port, c)))
        check(len(pods) == 6, f"6 processes for the disagg example (frontend, router, planner, 1 prefill, 2 decode): {len(pods)}")

        # Probes: the manifests' paths on each process's system port (the frontend: its API port).
        for name, p, extra in procs[1:]:
            port, c = extra
            port = port or fport
            for probe in ("livenessProbe", "readinessProbe"):
                path = c[probe]["httpGet"]["path"]
                deadline = time.time() + 30
                while get(f"http://127.0.0.1:{port}{path}") != 200 and time.time() < deadline and p.poll() is None:
                    time.sleep(0.2)
                check(get(f"http://127.0.0.1:{port}{path}") == 200, f"{name}: {probe} GET {path} answers 200")

        # A prompt past disagg.max_local_prefill_length: prefilled on the prefill pod.
        check(chat(fport), "a chat completion through the frontend, the router, prefill and decode")
        prefill_port = next(x[2][0] for x in procs if x[0] == "worker-prefill-0")
        served = metric(prefill_port, r'dynamo_component_requests_total\{[^}]*dynamo_endpoint="generate"[^}]*\} (\d+)')
        check(served == 1, f"the prefill pod served it (its dynamo_component_requests_total = {served})")

        # The planner: startup GETs for both pools, then decode 2 -> 1 (idle) by merge-PATCH.
        deadline = time.time() + 60
        while FakeApi.replicas["worker-decode"] != 1 and time.time() < deadline:
            time.sleep(0.2)
        with FakeApi.lock:
            reqs = list(FakeApi.requests)
        base = "/apis/apps/v1/namespaces/dynamo/deployments/"
        check(all(r[2] == f"Bearer {TOKEN}" for r in reqs) and reqs, f"every API request carries the token ({len(reqs)})")
        for pool in ("worker-prefill", "worker-decode"):
            check(("GET", f"{base}{pool}/scale") in [(r[0], r[1]) for r in reqs], f"planner checked {pool} at start")
        patches = [r for r in reqs if r[0] == "PATCH"]
        check([(r[1], r[3], r[4]) for r in patches] ==
              [(f"{base}worker-decode/scale", "application/merge-patch+json", '{"spec":{"replicas":1}}')],
              f"the idle decode pool scaled 2 -> 1 by one merge-PATCH: {patches}")
        check(FakeApi.replicas["worker-prefill"] == 1, "the prefill pool (at its minimum) left alone")

        # What the ReplicaSet then does: SIGTERM one decode pod; it drains and exits 0,
        # and the cluster keeps serving on the other.
        name, victim, _ = next(x for x in procs if x[0] == "worker-decode-1")
        victim.send_signal(signal.SIGTERM)
        try:
            rc = victim.wait(timeout=cluster["shutdown_grace_ms"] / 1000 + 5)
        except subprocess.TimeoutExpired:
            rc = "timeout"
        check(rc == 0, f"{name}: SIGTERM (the scale-down) drains and exits 0 (got {rc})")
        check(chat(fport), "requests still succeed on the remaining decode worker")
    finally:
        for name, p, _ in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for name, p, _ in reversed(procs):
            if name == "worker-decode-1":
                continue  # stopped above
            try:
                rc = p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = "timeout"
            if name != "etcd":
                check(rc == 0, f"{name}: exits 0 on SIGTERM (got {rc})")
        api.shutdown()
    if failures:
        print(f"logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
