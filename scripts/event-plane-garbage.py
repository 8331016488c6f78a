#!/usr/bin/env python3
"""Throws short-lived peers at a running process's ZeroMQ event-plane (PUB) port
and prints its RSS before and after (issue 18, item 4). Two kinds of peer:
  garbage: a TCP connection that sends random bytes and closes;
  sub:     a ZeroMQ SUB socket that subscribes to N topics and closes (pyzmq).
Usage: event-plane-garbage.py PID HOST:PORT [--garbage N] [--subs N] [--topics N] [--settle S]
Prints one JSON line: rss_kb before, after each phase, and after settling."""
import argparse, json, os, socket, time


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def garbage(host, port, n):
    for i in range(n):
        s = socket.create_connection((host, port))
        s.sendall(os.urandom(64 + i % 512))
        s.close()


def subs(host, port, n, topics):
    import zmq
    ctx = zmq.Context()
    for _ in range(n):
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.LINGER, 1000)
        s.connect(f"tcp://{host}:{port}")
        for t in range(topics):
            s.setsockopt(zmq.SUBSCRIBE, f"kv-events/topic-{t:06d}".encode())
        time.sleep(0.2)  # let the subscriptions reach the publisher
        s.close()
    ctx.term()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pid", type=int)
    ap.add_argument("address")
    ap.add_argument("--garbage", type=int, default=500)
    ap.add_argument("--subs", type=int, default=0)
    ap.add_argument("--topics", type=int, default=2000)
    ap.add_argument("--settle", type=float, default=5.0)
    a = ap.parse_args()
    host, port = a.address.replace("tcp://", "").rsplit(":", 1)
    port = int(port)
    out = {"rss_kb_before": rss_kb(a.pid), "fds_before": fds(a.pid)}
    if a.garbage:
        garbage(host, port, a.garbage)
        out["rss_kb_after_garbage"] = rss_kb(a.pid)
    if a.subs:
        subs(host, port, a.subs, a.topics)
        out["rss_kb_after_subs"] = rss_kb(a.pid)
    time.sleep(a.settle)
    out["rss_kb_settled"] = rss_kb(a.pid)
    out["fds_settled"] = fds(a.pid)
    out["kb_per_peer"] = round((out["rss_kb_settled"] - out["rss_kb_before"]) / max(1, a.garbage + a.subs), 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
