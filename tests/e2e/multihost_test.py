#!/usr/bin/env python3
"""A cluster across hosts (issue 17 item 2): etcd, dynamo-frontend, a prefill
dynamo-worker and two decode dynamo-workers, each in its own network namespace
with its own address (veth pairs on a bridge in the root namespace, an unused
private /24), so nothing can reach anything else on loopback. Every process
binds 0.0.0.0 (plane_host) and advertises its own address (--advertise-host).
The CPU engine serves the default model, so real KV bytes cross "hosts".

Checks, from the root namespace (the client is a sixth host):
  0. every discovery record (read from etcd) publishes the worker's own address
     for its request and event planes and its system server, and the system
     server's /health answers from another host;
  1. requests through the frontend succeed and equal an aggregated dynamo-run's
     greedy answers (run first, on this host's loopback);
  2. KV events cross hosts: the frontend's router index grows, and a repeated
     long prompt reports usage.prompt_tokens_details.cached_tokens;
  3. long prompts are prefilled on the prefill host and handed to a decode host
     (dynamo_frontend_disagg_requests_total{prefill="remote"} grows, none falls
     back), with the aggregated answers, once with disagg.transfer tcp and once
     with ucx (UCX_TLS=tcp: UCX over TCP between the namespaces; its shared
     memory transports would otherwise work across network namespaces);
  4. a decode worker is SIGKILLed while streams run: every stream completes
     with all its tokens (ignore_eos), the migration counter grows, and the
     worker's record leaves etcd (its lease expires).
Prints a JSON summary of what was measured.

usage: multihost_test.py --frontend PATH --worker PATH --run PATH [--etcd PATH]
                         [--transfers tcp,ucx] [--ucx-tls tcp] [--streams N] [--keep-logs]
(--ucx-tls '' leaves UCX its default transports: across network namespaces of one
machine it picks shared memory, whose wake-ups do not cross them; see docs/CLUSTER.md)
Exits 77 (skipped) when not root, when network namespaces cannot be created,
or when etcd or the default model is missing.
"""
import argparse
import base64
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from with_server import free_port  # noqa: E402

failures = []
# Never through a proxy: every address here is local.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
PREFIX = "dmh"  # names: dmh<pid>-<host> (namespaces), dmh<pid>br (bridge), dmh<pid>v<i> (veths)
HOSTS = ["etcd", "fe", "pre", "dec1", "dec2"]
THRESHOLD = 48       # disagg.max_local_prefill_length
TEMPLATE_SLACK = 64  # tokens two chat prompts can share (template, user turn opening)
LONG_TOKENS = 131    # the long prompts' length in SmolLM2's chat template
SHORT = ["What is the capital of France?", "Hi!"]
LONG = ["Explain in two sentences why the sky is blue, and then say what colour the sea is "
        "on a cloudy day and why it looks different from a sunny day. " * 3,
        "Write a short story about a robot who learns to paint. " * 8]


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def sh(*cmd, check_rc=True):
    r = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def die_with_parent():
    """preexec_fn: SIGKILL the child when this script dies (survives the exec of ip netns exec)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def kill_netns_pids(ns):
    for p in sh("ip", "netns", "pids", ns, check_rc=False).stdout.split():
        try:
            os.kill(int(p), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def remove_leftovers():
    """Namespaces and links of earlier runs whose script is gone (a crash, a CTest timeout)."""
    removed = []
    for line in sh("ip", "netns", "list", check_rc=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(PREFIX + r"(\d+)-\w+", name)
        if m and not pid_alive(int(m.group(1))):
            kill_netns_pids(name)
            sh("ip", "netns", "del", name, check_rc=False)
            removed.append(name)
    for line in sh("ip", "-o", "link", "show", check_rc=False).stdout.splitlines():
        m = re.match(r"\d+: (" + PREFIX + r"(\d+)(?:br|v\d+))[@:]", line)
        if m and not pid_alive(int(m.group(2))):
            sh("ip", "link", "del", m.group(1), check_rc=False)
            removed.append(m.group(1))
    if removed:
        print("removed leftovers of an earlier run: " + ", ".join(removed), flush=True)


class Network:
    """A bridge in the root namespace (x.1) and one namespace per host (x.2, x.3, ...)."""

    def __init__(self):
        self.tag = f"{PREFIX}{os.getpid()}"
        self.bridge = self.tag + "br"
        self.namespaces = []
        self.links = []
        self.subnet = self.pick_subnet()
        self.addr = {h: f"{self.subnet}.{i + 2}" for i, h in enumerate(HOSTS)}
        self.gateway = f"{self.subnet}.1"

    @staticmethod
    def pick_subnet():
        used = sh("ip", "-4", "-o", "addr", "show").stdout + sh("ip", "-4", "route", "show").stdout
        for n in [(os.getpid() + i) % 200 + 40 for i in range(200)]:
            s = f"10.213.{n}"
            if s + "." not in used:
                return s
        raise RuntimeError("no unused 10.213.x.0/24")

    def sent_bytes(self, host):
        """Bytes the host sent: what its veth's root end received."""
        with open(f"/sys/class/net/{self.tag}v{HOSTS.index(host)}/statistics/rx_bytes") as f:
            return int(f.read())

    def ns(self, host):
        return f"{self.tag}-{host}"

    def create(self):
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        self.links.append(self.bridge)
        sh("ip", "addr", "add", self.gateway + "/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        for i, host in enumerate(HOSTS):
            ns, veth = self.ns(host), f"{self.tag}v{i}"
            sh("ip", "netns", "add", ns)
            self.namespaces.append(ns)
            sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            self.links.append(veth)
            sh("ip", "link", "set", veth, "master", self.bridge, "up")
            sh("ip", "-n", ns, "addr", "add", self.addr[host] + "/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")

    def destroy(self):
        for ns in self.namespaces:
            kill_netns_pids(ns)
        for ns in self.namespaces:
            sh("ip", "netns", "del", ns, check_rc=False)
        for link in reversed(self.links):  # veths went with their namespaces
            if sh("ip", "link", "show", link, check_rc=False).returncode == 0:
                sh("ip", "link", "del", link, check_rc=False)
        self.namespaces, self.links = [], []


class Proc:
    """A process started in a host's namespace (ip netns exec execs it: same pid)."""

    def __init__(self, net, host, name, cmd, workdir, env=None):
        self.name = name
        self.log_path = os.path.join(workdir, name + ".log")
        self.log = open(self.log_path, "w")
        full = ["ip", "netns", "exec", net.ns(host)] + cmd
        print(f"{name} @ {host} {net.addr[host]}: {' '.join(cmd)}", flush=True)
        self.proc = subprocess.Popen(full, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, **(env or {})), preexec_fn=die_with_parent)

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def listeners(net, host):
    """[(address, port, process)] of the TCP sockets listening in a host's namespace."""
    out = []
    for line in sh("ip", "netns", "exec", net.ns(host), "ss", "-ltnpH", check_rc=False).stdout.splitlines():
        cols = line.split()
        if len(cols) < 4:
            continue
        addr, _, port = cols[3].rpartition(":")
        m = re.search(r'users:\(\("([^"]+)"', line)
        out.append((addr, int(port), m.group(1) if m else "?"))
    return out


def http_get(url, timeout=10):
    with OPENER.open(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def http_post(url, body, timeout=300):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with OPENER.open(req, timeout=timeout) as r:
        return r.read().decode()


def metric(base, name, **labels):
    _, text = http_get(base + "/metrics")
    total = 0.0
    for line in text.splitlines():
        if (line.startswith(name + "{") or line.startswith(name + " ")) and \
                all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def chat(base, model, text, max_tokens=24, stream=False, ignore_eos=False, on_token=None):
    """One greedy chat request: (content, usage)."""
    body = {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": max_tokens,
            "temperature": 0, "stream": stream}
    if ignore_eos:
        body["ignore_eos"] = True
    if not stream:
        j = json.loads(http_post(base + "/v1/chat/completions", body))
        return j["choices"][0]["message"]["content"], j["usage"]
    body["stream_options"] = {"include_usage": True}
    req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    pieces, usage, finish = [], None, None
    with OPENER.open(req, timeout=300) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            j = json.loads(line[6:])
            if "error" in j:
                raise RuntimeError(f"stream error: {j['error']}")
            if j.get("usage"):
                usage = j["usage"]
            for c in j.get("choices", []):
                if c.get("delta", {}).get("content"):
                    pieces.append(c["delta"]["content"])
                    if on_token:
                        on_token()
                finish = c.get("finish_reason") or finish
    usage = dict(usage or {}, finish_reason=finish)
    return "".join(pieces), usage


def b64(s):
    return base64.b64encode(s.encode()).decode()


def etcd_records(etcd_url, prefix):
    """{key: decoded msgpack record} under prefix, read over etcd's v3 JSON gateway."""
    import msgpack
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    req = urllib.request.Request(etcd_url + "/v3/kv/range", data=json.dumps(
        {"key": b64(prefix), "range_end": b64(end)}).encode(), headers={"Content-Type": "application/json"})
    with OPENER.open(req, timeout=5) as r:
        listed = json.loads(r.read())
    out = {}
    for kv in listed.get("kvs", []):
        key = base64.b64decode(kv["key"]).decode()
        out[key] = msgpack.unpackb(base64.b64decode(kv.get("value", "")), raw=False, strict_map_key=False)
    return out


def wait_for(pred, timeout, every=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            got = pred()
            if got:
                return got
        except Exception:
            pass
        time.sleep(every)
    return None


def model_path():
    return os.environ.get("DYNAMO_MODEL_PATH") or os.path.expanduser(
        "~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf")


def cluster_config(net, transfer, port):
    pool = (f"    engine: cpu\n    model: SmolLM2-135M-Instruct.Q4_1\n    model_path: {model_path()}\n"
            "    replicas: 1\n    engine_args: {threads: 1, kv_blocks: 512}\n")
    return (f"namespace: multihost\nplane_host: 0.0.0.0\n"
            f"discovery:\n  backend: etcd\n  endpoints: [http://{net.addr['etcd']}:2379]\n"
            f"  key_prefix: /dynamo\n  lease_ttl_ms: 1000\n"
            f"frontend:\n  host: 0.0.0.0\n  port: {port}\n"
            f"router:\n  mode: kv\n  migration_limit: 3\n"
            f"disagg:\n  max_local_prefill_length: {THRESHOLD}\n  transfer: {transfer}\n"
            f"shutdown_grace_ms: 2000\npools:\n"
            f"  - name: prefill\n    role: prefill\n{pool}"
            f"  - name: decode\n    role: decode\n{pool}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("--run", required=True, help="dynamo-run: the aggregated reference answers")
    ap.add_argument("--etcd")
    ap.add_argument("--transfers", default="tcp,ucx")
    ap.add_argument("--ucx-tls", default="tcp", help="UCX_TLS of the ucx phase ('': UCX's default)")
    ap.add_argument("--streams", type=int, default=6)
    ap.add_argument("--stream-tokens", type=int, default=48)
    ap.add_argument("--keep-logs", action="store_true")
    args = ap.parse_args()

    if os.geteuid() != 0:
        print("SKIP: network namespaces need root")
        return 77
    if not shutil.which("ip"):
        print("SKIP: no ip (iproute2)")
        return 77
    etcd = next((c for c in (args.etcd, os.environ.get("DYNAMO_ETCD_BIN"), shutil.which("etcd"), "/usr/bin/etcd")
                 if c and os.access(c, os.X_OK)), None)
    if not etcd:
        print("SKIP: no etcd binary (apt-get install etcd-server, or set DYNAMO_ETCD_BIN)")
        return 77
    if not os.path.exists(model_path()):
        print(f"SKIP: default model not found at {model_path()} (run scripts/setup.sh)")
        return 77
    try:
        import msgpack  # noqa: F401
    except ImportError:
        print("SKIP: the Python msgpack module is missing (reads discovery records)")
        return 77
    remove_leftovers()
    probe = f"{PREFIX}{os.getpid()}-probe"
    r = sh("ip", "netns", "add", probe, check_rc=False)
    if r.returncode != 0:
        print(f"SKIP: cannot create a network namespace: {r.stderr.strip()}")
        return 77
    sh("ip", "netns", "del", probe, check_rc=False)

    def on_signal(sig, _frame):
        raise KeyboardInterrupt(f"signal {sig}")
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)

    started = time.time()
    work = tempfile.mkdtemp(prefix="dynamo-multihost-")
    net = Network()
    procs = []
    summary = {"subnet": net.subnet + ".0/24", "hosts": dict(net.addr), "requests": 0, "failed_requests": 0}
    try:
        net.create()
        reference = reference_answers(args, work, summary)
        if reference is None:
            return 1
        # etcd, on its own host
        etcd_url = f"http://{net.addr['etcd']}:2379"
        procs.append(Proc(net, "etcd", "etcd", [
            etcd, "--name", "mh", "--data-dir", os.path.join(work, "etcd-data"),
            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
            "--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
            "--initial-cluster", "mh=http://127.0.0.1:2380", "--election-timeout", "500",
            "--heartbeat-interval", "50"], work))
        if not check(wait_for(lambda: etcd_records(etcd_url, "/ready") is not None, 20), f"etcd answers at {etcd_url}"):
            return 1
        port = 8000
        base = f"http://{net.addr['fe']}:{port}"
        frontend = None
        for phase, transfer in enumerate(args.transfers.split(",")):
            config = os.path.join(work, f"cluster-{transfer}.yaml")
            with open(config, "w") as f:
                f.write(cluster_config(net, transfer, port))
            if frontend is None:
                frontend = Proc(net, "fe", "frontend", [args.frontend, "--config", config], work)
                procs.append(frontend)
            # UCX over TCP: its shared-memory transports (posix, sysv, cma) reach across
            # network namespaces of one machine, and would carry the bytes instead.
            env = {"UCX_LOG_LEVEL": "info"} if transfer == "ucx" else {}  # info: the lanes it picked
            if transfer == "ucx" and args.ucx_tls:
                env["UCX_TLS"] = args.ucx_tls
            workers = {}
            for host, pool in (("pre", "prefill"), ("dec1", "decode"), ("dec2", "decode")):
                workers[host] = Proc(net, host, f"{host}-{transfer}", [
                    args.worker, "--config", config, "--pool", pool, "--advertise-host", net.addr[host],
                    "--kv-cache-mib", "64"], work, env)
                procs.append(workers[host])
            ok = run_phase(net, etcd_url, base, workers, transfer, reference, summary, kill=(phase == 0),
                           streams=args.streams, stream_tokens=args.stream_tokens)
            for w in workers.values():
                rc = w.stop()
                if w.proc.returncode not in (0, -signal.SIGKILL):
                    check(False, f"{w.name} exited cleanly ({rc})")
                bad = [l for l in w.text().splitlines() if re.search(r"prefilling locally|KV push .* failed|KV pull", l)]
                check(not bad, f"{w.name}: no failed KV hand-off in its log" + (": " + bad[0] if bad else ""))
            if transfer == "ucx":
                # UCX_LOG_LEVEL=info: the lanes of each endpoint the prefill worker opened
                # (UCX logs to stdout, flushed when the worker exits)
                lanes = sorted(set(re.findall(r"ep_cfg\[\d+\]: (.*)", workers["pre"].text())))
                summary["phases"]["ucx"]["ucx_lanes"] = lanes
                check(lanes and all("tcp/eth0" in l and "memory" not in l for l in lanes),
                      f"ucx: the prefill worker's UCX endpoints ran over tcp/eth0: {lanes}")
            if not ok:
                break
        if frontend:
            rc = frontend.stop()
            check(rc == 0, f"the frontend exited cleanly ({rc})")
    except KeyboardInterrupt as e:
        check(False, f"interrupted ({e})")
    finally:
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # a second signal must not cut the cleanup
            signal.signal(s, signal.SIG_IGN)
        for p in procs:
            if p.proc.poll() is None:
                p.proc.kill()
                p.proc.wait()
        net.destroy()
        summary["seconds"] = round(time.time() - started, 1)
        summary["failures"] = len(failures)
        print("SUMMARY " + json.dumps(summary), flush=True)
        if failures or args.keep_logs:
            print(f"logs kept in {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    print("all multi-host checks passed")
    return 0


def prompt_set():
    """(name, text, max_tokens, ignore_eos): every prompt a phase sends, unique per name."""
    out = [(f"short{i}", f"({i}) {t}", 24, False) for i, t in enumerate(SHORT)]
    out += [(f"long{i}", f"({10 + i}) {t}", 24, False) for i, t in enumerate(LONG)]
    return out


def concurrent_prompts():
    return [(f"conc{i}", f"({200 + i}) {LONG[i % 2]}", 24, False) for i in range(4)]


def stream_prompts(n):
    return [(f"stream{i}", f"({100 + i}) Count slowly from one to one hundred, in words.", None, True)
            for i in range(n)]


def reference_answers(args, work, summary):
    """The aggregated answers, from dynamo-run on this host's loopback (one worker, 1 thread)."""
    port = free_port()
    log = open(os.path.join(work, "reference.log"), "w")
    proc = subprocess.Popen([args.run, "in=http", "--http-host", "127.0.0.1", "--http-port", str(port),
                             "--threads", "1", "--kv-cache-mib", "64", "--num-workers", "1"],
                            stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    base = f"http://127.0.0.1:{port}"
    try:
        if not check(wait_for(lambda: http_get(base + "/v1/models")[1].count('"id"') > 0, 120),
                     "the aggregated reference server is up"):
            return None
        model = json.loads(http_get(base + "/v1/models")[1])["data"][0]["id"]
        ref = {"model": model}
        for name, text, max_tokens, eos in prompt_set() + concurrent_prompts() + stream_prompts(args.streams):
            ref[name] = chat(base, model, text, max_tokens or args.stream_tokens, ignore_eos=eos)
        return ref
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def count(summary, ok):
    summary["requests"] += 1
    if not ok:
        summary["failed_requests"] += 1


def run_phase(net, etcd_url, base, workers, transfer, reference, summary, kill, streams, stream_tokens):
    t0 = time.time()
    out = summary.setdefault("phases", {}).setdefault(transfer, {})
    model = reference["model"]
    # 0. discovery records publish each worker's own address; its system server answers from here
    prefix = "/dynamo/instances/multihost/"
    pids = {str(w.proc.pid) for w in workers.values()}
    def worker_records():  # the frontend's own <ns>/frontend/process record is no worker's
        return {k: v for k, v in etcd_records(etcd_url, prefix).items() if "/process/" not in k}
    recs = wait_for(lambda: (lambda r: r if {v.get("metadata", {}).get("pid") for v in r.values()} == pids
                             else None)(worker_records()), 120)
    if not check(recs is not None, f"{transfer}: the prefill and both decode workers (only they) registered in etcd"):
        for w in workers.values():
            print(w.text()[-3000:], file=sys.stderr)
        return False
    own = {str(w.proc.pid): net.addr[h] for h, w in workers.items()}
    for key, rec in sorted(recs.items()):
        host = own[rec["metadata"]["pid"]]
        addrs = [rec.get("request_address", ""), rec.get("event_address", "")]
        system = rec.get("metadata", {}).get("system", "")
        check(all(a.startswith(f"tcp://{host}:") for a in addrs) and system.startswith(f"http://{host}:"),
              f"{transfer}: {key.split('/', 4)[-1]} advertises its own address {host}: {addrs + [system]}")
        if "/generate/" in key and system:
            status = wait_for(lambda: http_get(system + "/health", 2)[0] == 200, 60)
            check(status, f"{transfer}: its system server {system}/health is ready, seen from the root namespace")
    # the frontend serves the model once it saw the workers
    check(wait_for(lambda: model in http_get(base + "/v1/models")[1], 60), f"{transfer}: the frontend at {base} lists {model}")
    # processes register in any order: wait until the prefill pool takes long prompts
    deadline = time.time() + 90
    probe0 = metric(base, "dynamo_frontend_disagg_requests_total", prefill="remote")
    while metric(base, "dynamo_frontend_disagg_requests_total", prefill="remote") == probe0 and \
            time.time() < deadline:
        chat(base, model, f"(probe {time.time()}) " + LONG[1], 1)
        time.sleep(0.2)

    remote0 = metric(base, "dynamo_frontend_disagg_requests_total", prefill="remote")
    fallback0 = metric(base, "dynamo_frontend_disagg_requests_total", prefill="local_fallback")
    applied0 = metric(base, "dynamo_router_kv_events_applied_total", status="ok")
    expected_remote = 0
    sent0 = net.sent_bytes("pre")
    # 1 + 3. short prompts prefilled on a decode host, long ones on the prefill host
    for name, text, max_tokens, _ in prompt_set():
        try:
            got, usage = chat(base, model, text, max_tokens)
            n = usage["prompt_tokens"]
            ok = check(got == reference[name][0], f"{transfer}: {name} ({n} prompt tokens) equals the aggregated answer")
        except Exception as e:
            ok = check(False, f"{transfer}: {name}: {e}")
            n = 0
        count(summary, ok)
        if THRESHOLD <= n < THRESHOLD + TEMPLATE_SLACK:
            check(False, f"{transfer}: {name} of {n} tokens is too close to the threshold to predict")
        expected_remote += int(n >= THRESHOLD + TEMPLATE_SLACK)
    # several hand-offs at once
    conc = concurrent_prompts()
    with concurrent.futures.ThreadPoolExecutor(len(conc)) as pool:
        got = list(pool.map(lambda p: chat(base, model, p[1], p[2])[0], conc))
    for g, (name, _, _, _) in zip(got, conc):
        count(summary, g == reference[name][0])
    expected_remote += len(conc)
    check(all(g == reference[name][0] for g, (name, _, _, _) in zip(got, conc)),
          f"{transfer}: {len(conc)} concurrent prefill-first requests equal the aggregated answers")
    # every listener binds where told (plane_host 0.0.0.0), none on the host's own loopback;
    # after the hand-offs, so the decode workers' KV receivers listen too (UCX's tcp
    # transport picks its own addresses: the ucx phase only reports them)
    for host in list(workers) + ["fe"]:
        socks = listeners(net, host)
        out.setdefault("listeners", {})[host] = sorted(f"{a}:{p}" for a, p, _ in socks)
        if transfer != "ucx":
            check(socks and all(a in ("0.0.0.0", "*", "[::]") for a, _, _ in socks),
                  f"{transfer}: every socket listening on {host} binds 0.0.0.0: {sorted(set(a for a, _, _ in socks))}")
    # the KV left the prefill host over its veth (not through shared memory)
    out["prefill_host_sent_mib"] = round((net.sent_bytes("pre") - sent0) / 2**20, 1)
    remote = metric(base, "dynamo_frontend_disagg_requests_total", prefill="remote") - remote0
    fallback = metric(base, "dynamo_frontend_disagg_requests_total", prefill="local_fallback") - fallback0
    out["remote_prefills"] = int(remote)
    out["local_fallbacks"] = int(fallback)
    check(remote == expected_remote, f"{transfer}: prefilled on the prefill host: {remote:.0f} (expected {expected_remote})")
    check(fallback == 0, f"{transfer}: no remote prefill fell back to a local one ({fallback:.0f})")
    check(out["prefill_host_sent_mib"] >= remote,
          f"{transfer}: the prefill host sent {out['prefill_host_sent_mib']} MiB over its link for {remote:.0f} "
          f"hand-offs (KV of a {LONG_TOKENS}-token prompt is several MiB; tokens alone would be KiB)")

    # 2. KV events cross hosts: the router index grows; a repeated long prompt hits the cache
    entries = metric(base, "dynamo_router_kv_index_entries")
    applied = metric(base, "dynamo_router_kv_events_applied_total", status="ok")
    out["kv_index_entries"] = int(entries)
    out["kv_events_applied_ok"] = int(applied - applied0)
    check(entries > 0 and applied > applied0,
          f"{transfer}: the frontend's router applied {applied - applied0:.0f} KV events from the other hosts "
          f"({entries:.0f} index entries)")
    text = f"(300) {LONG[0]}"
    cached = []
    for attempt in range(4):
        time.sleep(0.3 * attempt)
        before = metric(base, "dynamo_frontend_disagg_requests_total", prefill="remote")
        got, usage = chat(base, model, text, 24)
        count(summary, bool(got))
        cached.append((usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
        if attempt > 0 and cached[-1] > 0:
            break
        after = metric(base, "dynamo_frontend_disagg_requests_total", prefill="remote")
        expected_remote += int(after - before)
    out["cached_tokens"] = cached
    out["prompt_tokens"] = usage["prompt_tokens"]
    check(len(cached) > 1 and cached[-1] > 0,
          f"{transfer}: a repeated long prompt reports cached tokens {cached} of {usage['prompt_tokens']}")

    # 4. SIGKILL a decode worker under streaming load: nothing lost
    if kill:
        kill_check(net, etcd_url, base, workers, model, reference, summary, out, streams, stream_tokens)
    out["seconds"] = round(time.time() - t0, 1)
    return True


def inflight(system_url):
    return metric(system_url, "dynamo_component_inflight_requests", dynamo_endpoint="generate")


def kill_check(net, etcd_url, base, workers, model, reference, summary, out, streams, stream_tokens):
    migrations0 = metric(base, "dynamo_frontend_model_migration_total")
    system = {}
    for host in ("dec1", "dec2"):
        m = re.search(r"metrics and health on (http://\S+)/metrics", workers[host].text())
        system[host] = m.group(1) if m else None
    tokens = [0] * streams
    lock = threading.Lock()

    def run(i):
        name, text, _, _ = stream_prompts(streams)[i]

        def on_token():
            with lock:
                tokens[i] += 1
        try:
            return chat(base, model, text, stream_tokens, stream=True, ignore_eos=True, on_token=on_token)
        except Exception as e:
            return None, {"error": str(e)}

    with concurrent.futures.ThreadPoolExecutor(streams) as pool:
        futures = [pool.submit(run, i) for i in range(streams)]
        # every stream has started decoding somewhere
        started = wait_for(lambda: all(t >= 3 for t in tokens), 120, every=0.05)
        check(started, f"all {streams} streams are decoding before the kill")
        load = {h: inflight(u) if u else 0 for h, u in system.items()}
        victim = max(load, key=load.get)
        killed_at = time.time()
        with lock:
            at_kill = list(tokens)
        workers[victim].proc.send_signal(signal.SIGKILL)
        workers[victim].proc.wait()
        # its lease expires in etcd, on another host
        pid = str(workers[victim].proc.pid)
        gone = wait_for(lambda: all(r.get("metadata", {}).get("pid") != pid
                                    for r in etcd_records(etcd_url, "/dynamo/instances/multihost/").values()),
                        10, every=0.02)
        record_removed_ms = round((time.time() - killed_at) * 1000) if gone else None
        results = [f.result() for f in futures]
    check(record_removed_ms is not None, f"the killed worker's record left etcd ({record_removed_ms} ms after the kill)")
    out["kill"] = {"victim": victim, "victim_addr": net.addr[victim], "inflight_at_kill": load,
                   "record_removed_ms": record_removed_ms,
                   "tokens_at_kill": at_kill, "seconds_after_kill": round(time.time() - killed_at, 1)}
    lost, equal = 0, 0
    for i, (text, usage) in enumerate(results):
        name = stream_prompts(streams)[i][0]
        ok = text is not None and usage.get("completion_tokens") == stream_tokens and \
            usage.get("finish_reason") == "length"
        lost += int(not ok)
        equal += int(text == reference[name][0])
        count(summary, ok)
        check(ok, f"stream {i}: completed with {usage.get('completion_tokens')} of {stream_tokens} tokens "
                  f"({usage.get('finish_reason') or usage.get('error')})")
    migrations = metric(base, "dynamo_frontend_model_migration_total") - migrations0
    out["kill"].update(streams=streams, tokens_per_stream=stream_tokens, lost=lost, migrations=int(migrations),
                       streams_equal_to_aggregated=equal)
    check(lost == 0, f"0 lost streams across the SIGKILL of {victim} ({lost} lost)")
    check(migrations > 0, f"the frontend migrated {migrations:.0f} stream(s) off the killed worker")


if __name__ == "__main__":
    sys.exit(main())
