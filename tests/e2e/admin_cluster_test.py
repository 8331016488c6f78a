#!/usr/bin/env python3
"""The admin API across a dynamo-launch cluster (docs/CLUSTER.md "Admin API"):
two mocker workers and a planner held at two replicas, the admin API on every
process with a bearer token. Checks that
  - the frontend's GET /admin/instances shows each worker's admin URL, and a
    record of the frontend and of the planner (neither hosts a worker) with
    theirs; the planner's admin API, found there, lists the same processes;
  - POST /admin/workers/<id>/drain on the FRONTEND's admin API (which hosts no
    worker) is forwarded to the worker's process: the worker becomes draining
    and every request still succeeds, on the other worker;
  - undrain the same way makes it ready again;
  - an unknown instance is 404 and a request without the token 401; a drain of
    the frontend's own id is 404 saying it is no worker.

usage: admin_cluster_test.py --launch PATH [--keep-logs]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import MOCKER_POOLS, chat, chats_ok, check, die_with_parent, finish, free_port, log_text, wait_for  # noqa: E402

TOKEN = "e2e-admin-token"


def write_config(path, root, port):
    with open(path, "w") as f:
        f.write(f"""namespace: admintest
discovery: {{backend: file, root: {root}, lease_ttl_ms: 1000}}
frontend: {{host: 127.0.0.1, port: {port}}}
admin: {{enabled: true, host: 127.0.0.1, port: 0, token: {TOKEN}}}
planner: {{enabled: true, interval_ms: 1000, min_replicas: 2, max_replicas: 2}}
shutdown_grace_ms: 1000
""" + MOCKER_POOLS)


def http(method, url, token=TOKEN):
    """(status, parsed JSON body) of one request; errors are answers too."""
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def served(system_url):
    with urllib.request.urlopen(system_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(float(l.split()[-1]) for l in text.splitlines()
               if l.startswith("dynamo_component_requests_total"))


def run(args, work, procs):
    port = free_port()
    config = os.path.join(work, "cluster.yaml")
    write_config(config, os.path.join(work, "discovery"), port)
    log = os.path.join(work, "launch.log")
    with open(log, "w") as out:
        procs.append(subprocess.Popen([args.launch, "--config", config], stdout=out,
                                      stderr=subprocess.STDOUT, preexec_fn=die_with_parent))
    check(wait_for(lambda: log_text(log).count(" joined") >= 2 and chat(port, "hi"), 60),
          "the cluster serves a request")
    m = re.search(r"admin: frontend API on (?:https?://)?127\.0\.0\.1:(\d+)", log_text(log))
    check(m is not None, "the frontend's admin port in the log")
    if not m:
        return
    admin = f"http://127.0.0.1:{m.group(1)}/admin"

    def workers():
        status, body = http("GET", admin + "/instances")
        return [i for i in body.get("instances", []) if i["key"].startswith("admintest/backend/")]

    def processes(url):
        status, body = http("GET", url + "/instances")
        return {i["key"].split("/")[1]: i for i in body.get("instances", [])
                if i["key"].split("/")[2] == "process"}

    check(wait_for(lambda: set(processes(admin)) == {"frontend", "planner"}, 20),
          f"/admin/instances lists the frontend's and the planner's process records ({sorted(processes(admin))})")
    procs_seen = processes(admin)
    if set(procs_seen) == {"frontend", "planner"}:
        fe, pl = procs_seen["frontend"], procs_seen["planner"]
        check(fe["admin_url"] + "/admin" == admin and fe["metadata"].get("role") == "frontend"
              and fe["address"] == "",
              f"the frontend's record names its admin URL and no request address ({fe})")
        check(pl["admin_url"].startswith("http://127.0.0.1:") and pl["metadata"].get("role") == "planner",
              f"the planner's record names its admin URL ({pl})")
        status, body = http("GET", pl["admin_url"] + "/admin/health")
        check(status == 200 and body.get("process") == "planner",
              f"the planner's admin API answers at its published URL ({status} {body})")
        check(set(processes(pl["admin_url"] + "/admin")) == {"frontend", "planner"},
              "the planner's admin API lists the same process records")
        # Asked of the planner, a drain of the frontend's id is refused there
        # (no forward to a process that hosts no worker), with the reason once.
        status, body = http("POST", f"{pl['admin_url']}/admin/workers/{fe['instance_id']}/drain")
        msg = body.get("error", {}).get("message", "")
        check(status == 404 and "frontend process" in msg and msg.count("not hosted") <= 1,
              f"a drain of the frontend's id is 404 saying it is no worker ({status} {msg})")

    rows = workers()
    check(len(rows) == 2 and all(r["admin_url"].startswith("http://127.0.0.1:") for r in rows),
          f"/admin/instances shows both workers with an admin URL ({[r['admin_url'] for r in rows]})")
    if len(rows) != 2:
        return
    target, other = rows[0], rows[1]
    wid = target["instance_id"]
    check(http("POST", f"{admin}/workers/{wid}/drain", token=None)[0] == 401,
          "a drain without the token is 401")

    def set_draining(on, health):
        verb = "drain" if on else "undrain"
        status, body = http("POST", f"{admin}/workers/{wid}/{verb}")
        check(status == 200 and body == {"instance_id": wid, "draining": on},
              f"{verb} through the frontend's admin API is forwarded and answered ({status} {body})")
        check(wait_for(lambda: next(r for r in workers() if r["instance_id"] == wid)["health"] == health, 10),
              f"the worker shows {health} in /admin/instances")

    set_draining(True, "draining")
    ok = chats_ok(port, 8)
    check(ok == 8, f"every request succeeds while one worker drains ({ok}/8)")
    # The frontend's router learns of the drain through its discovery watch, so
    # a request sent at once may still go there; the second batch may not.
    before, other_before = served(target["metadata"]["system"]), served(other["metadata"]["system"])
    for i in range(4):
        chat(port, f"later request {i}")
    check(served(target["metadata"]["system"]) == before and
          served(other["metadata"]["system"]) == other_before + 4,
          "the other worker serves every later request, the drained one none")
    set_draining(False, "ready")
    status, body = http("POST", f"{admin}/workers/00000000000000ff/drain")
    check(status == 404 and body.get("error", {}).get("code") == "not_found",
          f"an unknown instance is 404 ({status} {body})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launch", required=True)
    ap.add_argument("--keep-logs", action="store_true")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dynamo-admin-")
    procs = []
    try:
        run(args, work, procs)
    finally:
        status = finish(procs, work, args.keep_logs)
    return status


if __name__ == "__main__":
    sys.exit(main())
