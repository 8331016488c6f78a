#!/usr/bin/env python3
"""dynamo-launch with discovery on a real etcd (issue 17): starts etcd on free
loopback ports (election timeout 500 ms, so leases of 1 s), launches the mocker
cluster of examples/configs/mocker-cluster-etcd.yaml against it, sends requests
through the frontend, then SIGKILLs workers one at a time (the launcher
restarts them). Prints the times as JSON:
  record_removed_ms: SIGKILL -> the record's delete, seen by an etcd watch of
                     this script's own (the lease expired);
  left_routing_ms:   SIGKILL -> the frontend's router logs "worker <id> left";
  joined_routing_ms: the launcher logs the new worker's start -> the frontend's
                     router logs "worker <id> at ... joined".
Targets (issue 17): left <= 2000 ms, joined <= 1000 ms; reported, not asserted.
Then etcd is killed for two TTLs: requests must keep succeeding, no worker may
leave the router, and after etcd restarts (same data) the same workers must be
registered and a worker killed then must leave again.
Fails when a record never goes or comes, the router never drops or adds a
worker, or a request fails.

usage: etcd_cluster_test.py --launch PATH [--etcd PATH] [--config FILE] [--kills N] [--keep-logs]
Exits 77 (skipped) when no etcd binary is installed (apt-get install etcd-server).
"""
import argparse
import base64
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import check, die_with_parent, failures, free_port  # noqa: E402


def b64(s):
    return base64.b64encode(s.encode()).decode()


def etcd_binary(arg):
    for c in (arg, os.environ.get("DYNAMO_ETCD_BIN"), shutil.which("etcd"), "/usr/bin/etcd"):
        if c and os.access(c, os.X_OK):
            return c
    return None


def etcd_call(url, path, body, timeout=2):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


class Watch(threading.Thread):
    """Follows a prefix in etcd: live keys -> (value, wall time of the put), plus every
    event. Lists the prefix and watches from there, again after etcd comes back."""

    def __init__(self, url, prefix):
        super().__init__(daemon=True)
        self.url, self.prefix = url, prefix
        self.port = int(url.rsplit(":", 1)[1])
        self.lock = threading.Lock()
        self.live = {}
        self.events = []  # (wall time, "PUT"|"DELETE", key)
        self.ready = threading.Event()

    def run(self):
        while True:
            try:
                self.follow()
            except Exception:
                pass
            time.sleep(0.05)

    def follow(self):
        end = self.prefix[:-1] + chr(ord(self.prefix[-1]) + 1)
        listed = etcd_call(self.url, "/v3/kv/range", {"key": b64(self.prefix), "range_end": b64(end)})
        now = time.time()
        with self.lock:
            self.live = {base64.b64decode(kv["key"]).decode(): (base64.b64decode(kv.get("value", "")), now)
                         for kv in listed.get("kvs", [])}
        rev = int(listed["header"]["revision"]) + 1
        conn = http.client.HTTPConnection("127.0.0.1", self.port)
        conn.request("POST", "/v3/watch", json.dumps(
            {"create_request": {"key": b64(self.prefix), "range_end": b64(end), "start_revision": str(rev)}}))
        resp = conn.getresponse()
        while True:
            line = resp.readline()
            if not line:
                return
            now = time.time()
            msg = json.loads(line).get("result", {})
            if msg.get("created"):
                self.ready.set()
            for ev in msg.get("events", []):
                key = base64.b64decode(ev["kv"]["key"]).decode()
                kind = ev.get("type", "PUT")
                with self.lock:
                    self.events.append((now, kind, key))
                    if kind == "DELETE":
                        self.live.pop(key, None)
                    else:
                        self.live[key] = (base64.b64decode(ev["kv"].get("value", "")), now)

    def snapshot(self):
        with self.lock:
            return dict(self.live)

    def wait(self, pred, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                got = pred(self.live, self.events)
            if got:
                return got
            time.sleep(0.005)
        return None


def record_pid(value):
    """The worker's pid from its msgpack record: metadata {"pid": "<digits>"}."""
    at = value.find(b"\xa3pid")
    if at < 0:
        return None
    n = value[at + 4] - 0xa0
    return int(value[at + 5:at + 5 + n])


def log_time(log_path, pattern, timeout=10):
    """Wall time of the first launcher-log line containing `pattern` (the
    processes log "YYYY-MM-DDTHH:MM:SS.mmm level [name] ..."), waiting for it."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(log_path, errors="replace") as f:
            for line in f:
                if pattern in line:
                    stamp, frac = line.split(" ", 1)[0].split(".")
                    return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S")) + int(frac) / 1000
        time.sleep(0.02)
    return None


def completion(port):
    body = {"model": "mocker", "prompt": "hello etcd", "max_tokens": 8}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status == 200 and json.loads(r.read())["choices"][0]["text"] != ""
    except Exception as e:
        print(f"request failed: {e}", flush=True)
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launch", required=True)
    ap.add_argument("--etcd")
    ap.add_argument("--config", default=os.path.join(SOURCE, "examples/configs/mocker-cluster-etcd.yaml"))
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--keep-logs", action="store_true", help="keep etcd's and the launcher's logs")
    args = ap.parse_args()
    etcd = etcd_binary(args.etcd)
    if not etcd:
        print("SKIP: no etcd binary (apt-get install etcd-server, or set DYNAMO_ETCD_BIN)")
        return 77

    work = tempfile.mkdtemp(prefix="dynamo-etcd-e2e-")
    cport, pport, http_port = free_port(), free_port(), free_port()
    curl, purl = f"http://127.0.0.1:{cport}", f"http://127.0.0.1:{pport}"
    etcd_log = open(os.path.join(work, "etcd.log"), "w")

    def start_etcd():
        proc = subprocess.Popen([etcd, "--name", "e2e", "--data-dir", os.path.join(work, "data"),
                                 "--listen-client-urls", curl, "--advertise-client-urls", curl,
                                 "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
                                 "--initial-cluster", "e2e=" + purl, "--election-timeout", "500",
                                 "--heartbeat-interval", "50"], stdout=etcd_log, stderr=subprocess.STDOUT,
                                preexec_fn=die_with_parent)
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                etcd_call(curl, "/v3/kv/range", {"key": b64("ready")}, timeout=1)
                return proc
            except Exception:
                time.sleep(0.05)
        check(False, "etcd answers")
        return proc

    etcd_proc = start_etcd()
    launch = None
    try:
        with open(args.config) as f:
            text = f.read()
        for old, new in (("http://127.0.0.1:2379", curl), ("port: 8000", f"port: {http_port}"),
                         ("replicas: 4", f"replicas: {args.replicas}"), ("speedup_ratio: 1.0", "speedup_ratio: 0")):
            check(old in text, f"the example config has '{old}'")
            text = text.replace(old, new)
        config = os.path.join(work, "cluster.yaml")
        with open(config, "w") as f:
            f.write(text)

        watch = Watch(curl, "/dynamo/instances/dynamo/backend/generate/")
        watch.start()
        check(watch.ready.wait(10), "own etcd watch created")
        log = open(os.path.join(work, "launch.log"), "w")
        launch = subprocess.Popen([args.launch, "--config", config], stdout=log, stderr=subprocess.STDOUT,
                                  preexec_fn=die_with_parent)
        check(watch.wait(lambda live, _: len(live) >= args.replicas, timeout=30) is not None,
              f"{args.replicas} workers registered in etcd")
        deadline = time.time() + 30
        while time.time() < deadline and not completion(http_port):
            time.sleep(0.2)
        check(completion(http_port), "a completion through the frontend")

        removal, routed_out, join = [], [], []
        for i in range(args.kills):
            live = watch.snapshot()
            key, (value, _) = sorted(live.items())[0]
            pid, instance = record_pid(value), key.rsplit("/", 1)[1]
            check(pid is not None, f"kill {i}: worker pid {pid} read from its record")
            if pid is None:
                break
            before = set(live)
            killed_at = time.time()
            os.kill(pid, signal.SIGKILL)
            gone = watch.wait(lambda l, ev: next((t for t, k, kk in ev if k == "DELETE" and kk == key
                                                  and t >= killed_at), None))
            check(gone is not None, f"kill {i}: the killed worker's record was deleted")
            if gone:
                removal.append(round((gone - killed_at) * 1000))
            left = log_time(log.name, f"worker {instance} left")
            check(left is not None, f"kill {i}: the frontend's router dropped worker {instance}")
            if left:
                routed_out.append(round((left - killed_at) * 1000))
            fresh = watch.wait(lambda l, _: next(((k, v) for k, v in l.items() if k not in before), None), timeout=20)
            check(fresh is not None, f"kill {i}: the restarted worker registered")
            if fresh:
                new_pid, new_instance = record_pid(fresh[1][0]), fresh[0].rsplit("/", 1)[1]
                started = log_time(log.name, f"(pid {new_pid})")
                joined = log_time(log.name, f"worker {new_instance} at ")
                check(started is not None and joined is not None, f"kill {i}: the new worker joined the router")
                if started and joined:
                    join.append(round((joined - started) * 1000))
            check(completion(http_port), f"kill {i}: a completion after the kill")
        print(json.dumps({"lease_ttl_ms": 1000, "record_removed_ms": removal, "left_routing_ms": routed_out,
                          "joined_routing_ms": join, "max_left_routing_ms": max(routed_out, default=None),
                          "max_joined_routing_ms": max(join, default=None)}), flush=True)
        check(len(removal) == args.kills, "every kill was seen")

        # etcd goes away for two TTLs: the cluster keeps serving with its last view, and
        # afterwards the same workers are still registered (their leases live on in etcd).
        check(watch.wait(lambda l, _: len(l) == args.replicas) is not None, "all workers registered")
        before = set(watch.snapshot())
        with open(log.name, errors="replace") as f:
            left_before = f.read().count(" left")
        etcd_proc.kill()
        etcd_proc.wait()
        down_at = time.time()
        check(all(completion(http_port) for _ in range(3)), "outage: requests succeed while etcd is down")
        time.sleep(max(0.0, down_at + 2.0 - time.time()))
        check(completion(http_port), "outage: requests still succeed after two TTLs without etcd")
        etcd_proc = start_etcd()
        back = watch.wait(lambda l, _: set(l) == before and len(l) == args.replicas, timeout=15)
        check(back is not None, "outage: every worker is registered again after etcd returns")
        time.sleep(1.5)  # more than a TTL: nothing expires now that etcd is back
        check(set(watch.snapshot()) == before, "outage: the same workers stay registered")
        with open(log.name, errors="replace") as f:
            check(f.read().count(" left") == left_before, "outage: the frontend's router dropped no worker")
        check(completion(http_port), "outage: a completion after etcd returned")
        key, (value, _) = sorted(watch.snapshot().items())[0]
        killed_at = time.time()
        os.kill(record_pid(value), signal.SIGKILL)
        gone = watch.wait(lambda l, ev: next((t for t, k, kk in ev if k == "DELETE" and kk == key
                                              and t >= killed_at), None))
        check(gone is not None, "outage: a worker killed after etcd returned leaves")
        if gone:
            print(json.dumps({"after_outage_record_removed_ms": round((gone - killed_at) * 1000)}), flush=True)
    finally:
        if launch and launch.poll() is None:
            launch.send_signal(signal.SIGTERM)
            try:
                launch.wait(timeout=30)
            except subprocess.TimeoutExpired:
                launch.kill()
                launch.wait()
        etcd_proc.kill()
        etcd_proc.wait()
        if failures or args.keep_logs:
            print(f"logs kept in {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
