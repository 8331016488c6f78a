#!/usr/bin/env python3
"""The SLA planner reading its traffic from a real Prometheus (issue 16).

Profiles the mocker engine (dynamo-profile), starts Prometheus (Debian's 2.42)
on a free loopback port scraping the frontend's /metrics every 500 ms, launches
a mocker cluster whose planner has `planner.prometheus_url` set, and drives it
at a steady 10 req/s with dynamo-bench, then lets it idle. Checks:
  - Prometheus scraped the frontend (its query API returns the request counter);
  - the planner says it reads the Prometheus query API;
  - under load the planner's target for the pool rises above min_replicas: in
    SLA mode the target follows the traffic, and here the traffic reaches the
    planner only through Prometheus;
  - once the load stops, the target comes back to min_replicas.
Waits are bounded (the test fails when a wait runs out); no time is asserted.

usage: planner_prometheus_test.py --bin-dir DIR [--prometheus PATH] [--keep-logs]
Exits 77 (skipped) when no prometheus binary is installed (apt-get install prometheus).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import check, die_with_parent, failures, free_port  # noqa: E402


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_for(what, fn, seconds):
    """Polls fn() every 0.25 s until it returns a true value; None when the wait runs out."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            v = fn()
            if v:
                return v
        except (OSError, ValueError):
            pass
        time.sleep(0.25)
    print(f"     (gave up waiting for {what} after {seconds} s)", flush=True)
    return None


def gauge(text, name, labels):
    """The value of `name{labels}` in Prometheus exposition text, or None."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin-dir", required=True, help="the build's bin/ (dynamo-launch, -profile, -bench)")
    p.add_argument("--prometheus", default=shutil.which("prometheus") or "/usr/bin/prometheus")
    p.add_argument("--keep-logs", action="store_true", help="keep the work directory")
    args = p.parse_args()
    if not os.access(args.prometheus, os.X_OK):
        print(f"SKIP: no prometheus binary at {args.prometheus} (apt-get install prometheus)")
        return 77
    bins = {n: os.path.join(args.bin_dir, n) for n in ("dynamo-launch", "dynamo-profile", "dynamo-bench")}
    work = tempfile.mkdtemp(prefix="dynamo-prom-")
    procs = []
    try:
        run(args, bins, work, procs)
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if failures or args.keep_logs:
            print(f"logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"test": "planner_prometheus", "failures": failures}))
    return 1 if failures else 0


def cluster_yaml(work, name, port, extra):
    path = os.path.join(work, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"""namespace: prom-{name}
discovery: {{backend: file, root: {work}/discovery-{name}, lease_ttl_ms: 1000}}
frontend: {{host: 127.0.0.1, port: {port}}}
router: {{mode: kv}}
shutdown_grace_ms: 2000
{extra}
pools:
  - name: backend
    engine: mocker
    model: mocker
    replicas: 1
    mocker: {{speedup_ratio: 0.25}}
""")
    return path


def run(args, bins, work, procs):
    port, prom_port = free_port(), free_port()
    profile = os.path.join(work, "profile.json")
    subprocess.run([bins["dynamo-profile"], "--config", cluster_yaml(work, "profile", port, ""), "--out", profile,
                    "--isl", "64,128,256", "--prefix-hit", "0", "--batch", "1,2,4,8,16,32,64",
                    "--context", "128,256,512", "--log-level", "warn"], check=True, stdout=subprocess.DEVNULL)

    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write(f"""global: {{scrape_interval: 500ms, scrape_timeout: 400ms}}
scrape_configs:
  - job_name: frontend
    static_configs: [{{targets: ["127.0.0.1:{port}"]}}]
""")
    prom_log = open(os.path.join(work, "prometheus.log"), "w")
    procs.append(subprocess.Popen([args.prometheus, "--config.file", os.path.join(work, "prometheus.yml"),
                                   "--storage.tsdb.path", os.path.join(work, "tsdb"),
                                   "--web.listen-address", f"127.0.0.1:{prom_port}", "--log.level", "warn"],
                                  stdout=prom_log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent))
    prom = f"http://127.0.0.1:{prom_port}"
    check(wait_for("Prometheus ready", lambda: "Ready" in get(prom + "/-/ready"), 60) is not None,
          "Prometheus is ready")

    planner = (f"planner: {{enabled: true, mode: sla, ttft_ms: 1000, itl_ms: 40, profile: {profile},\n"
               f"  interval_ms: 2000, min_replicas: 1, max_replicas: 4, predictor: moving_average,\n"
               f"  predictor_window: 2, prometheus_url: '{prom}'}}")
    launch_log_path = os.path.join(work, "launch.log")
    launch_log = open(launch_log_path, "w")
    procs.append(subprocess.Popen([bins["dynamo-launch"], "--config", cluster_yaml(work, "sla", port, planner),
                                   "--log-level", "info"], stdout=launch_log, stderr=subprocess.STDOUT,
                                  preexec_fn=die_with_parent))
    front = f"http://127.0.0.1:{port}"
    check(wait_for("the model", lambda: "mocker" in get(front + "/v1/models"), 60) is not None,
          "the frontend serves the mocker model")

    def log():
        with open(launch_log_path) as f:
            return f.read()

    m = wait_for("the planner's metrics URL",
                 lambda: re.search(r"dynamo-planner: metrics on (http://[0-9.:]+)", log()), 30)
    check(m is not None, "the planner serves its metrics")
    if m is None:
        return
    planner_metrics = m.group(1) + "/metrics"
    check("Prometheus query API" in log(), "the planner reads the Prometheus query API")

    def target():
        return gauge(get(planner_metrics), "dynamo_planner_target_replicas", {"pool": "backend"})

    bench = subprocess.Popen([bins["dynamo-bench"], "--url", front, "--model", "mocker",
                              "--rate-schedule", "0:10,20:10", "--concurrency", "1024", "--io-threads", "1",
                              "--isl", "128", "--osl", "200", "--output", os.path.join(work, "bench.json")],
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "bench.log"), "w"),
                             preexec_fn=die_with_parent)
    procs.append(bench)
    up = wait_for("a target above 1", lambda: (target() or 0) >= 2, 60)
    check(up is not None, "under 10 req/s the planner's target rises above min_replicas")

    bench.wait(timeout=120)
    check(bench.returncode == 0, "dynamo-bench completed")
    with open(os.path.join(work, "bench.json")) as f:
        b = json.load(f)
    check(b["failed"] == 0 and b["completed"] > 0, f"no request failed ({b['completed']} completed)")

    def prom_requests():
        query = urllib.parse.quote('sum(dynamo_frontend_requests_total{model="mocker"})')
        res = json.loads(get(f"{prom}/api/v1/query?query={query}"))
        seen = res.get("data", {}).get("result", [])
        return res.get("status") == "success" and seen and float(seen[0]["value"][1]) >= b["completed"]

    check(wait_for("Prometheus' count", prom_requests, 10) is not None,
          "Prometheus counted every request the frontend served")
    down = wait_for("the target back at 1", lambda: target() == 1, 60)
    check(down is not None, "idle again, the planner's target returns to min_replicas")


if __name__ == "__main__":
    sys.exit(main())
