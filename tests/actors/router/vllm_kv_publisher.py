#!/usr/bin/env python3
"""A stand-in for vLLM's ZmqEventPublisher (vllm/distributed/kv_events.py),
driven line by line from stdin by tests/actors/router/vllm_relay_test.cpp.

Wire, as vLLM sends it: multipart [topic, sequence u64 BE, msgpack batch] on a
PUB socket (an XPUB here, which is the same on the wire and lets `wait_subscriber`
see the subscription arrive); a ROUTER replay socket answering [identity, "",
start u64 BE] with [identity, "", seq, batch] per buffered batch from `start`,
then [identity, "", -1 as i64 BE, ""]. Batches are msgspec structs packed
array_like ([ts, events, data_parallel_rank], every field present) or as maps
({"ts", "events", "data_parallel_rank"}, None defaults omitted).

Usage: vllm_kv_publisher.py [--encoding array|map] [--replay] [--topic T]
Prints "ready <pub endpoint> <replay endpoint or ->", then one reply line per
command (JSON objects, one per line):
  {"op": "wait_subscriber"}                       -> "ok"
  {"op": "store", "hashes": [..], "parent": h|null, "tokens": [..],
   "block_size": n, "send": true}                 -> "ok <seq>"
  {"op": "remove", "hashes": [..], "send": true}   -> "ok <seq>"
  {"op": "clear", "send": true}                    -> "ok <seq>"
  {"op": "quit"}
"send": false uses up the sequence number and keeps the batch for replay
without sending it: a message lost on the way, i.e. a sequence gap.
Exits 77 when pyzmq or msgpack is missing.
"""
import argparse
import json
import os
import sys
import time

try:
    import msgpack
    import zmq
except ImportError as e:  # pragma: no cover
    print(f"skip: {e}", file=sys.stderr)
    sys.exit(77)

END_SEQ = (-1).to_bytes(8, "big", signed=True)


def event(encoding, cmd):
    op = cmd["op"]
    if op == "store":
        fields = [("block_hashes", cmd["hashes"]), ("parent_block_hash", cmd.get("parent")),
                  ("token_ids", cmd["tokens"]), ("block_size", cmd["block_size"]),
                  ("lora_id", None), ("medium", "GPU"), ("lora_name", None)]
        defaults = [("extra_keys", None), ("group_idx", None), ("kv_cache_spec_kind", None),
                    ("kv_cache_spec_sliding_window", None)]
        tag = "BlockStored"
    elif op == "remove":
        fields = [("block_hashes", cmd["hashes"]), ("medium", "GPU")]
        defaults = [("group_idx", None)]
        tag = "BlockRemoved"
    else:
        fields, defaults, tag = [], [], "AllBlocksCleared"
    if encoding == "array":  # msgspec writes every field of an array_like struct
        return [tag] + [v for _, v in fields + defaults]
    out = {"type": tag}
    out.update(fields)  # required fields even when None; defaults omitted
    return out


def batch(encoding, ev):
    ts = time.time()
    if encoding == "array":
        return msgpack.packb([ts, [ev], 0])
    return msgpack.packb({"ts": ts, "events": [ev], "data_parallel_rank": 0})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoding", choices=["array", "map"], default="array")
    ap.add_argument("--replay", action="store_true")
    ap.add_argument("--topic", default="")
    args = ap.parse_args()

    ctx = zmq.Context.instance()
    pub = ctx.socket(zmq.XPUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.bind("tcp://127.0.0.1:*")
    replay = None
    if args.replay:
        replay = ctx.socket(zmq.ROUTER)
        replay.setsockopt(zmq.LINGER, 0)
        replay.bind("tcp://127.0.0.1:*")
    topic = args.topic.encode()
    buffer = []  # (seq, payload), as vLLM's deque
    seq = 0
    print("ready", pub.getsockopt_string(zmq.LAST_ENDPOINT),
          replay.getsockopt_string(zmq.LAST_ENDPOINT) if replay else "-", flush=True)

    poller = zmq.Poller()
    poller.register(sys.stdin.fileno(), zmq.POLLIN)
    poller.register(pub, zmq.POLLIN)
    if replay is not None:
        poller.register(replay, zmq.POLLIN)
    subscribed = False
    waiting = False
    pending = b""  # stdin bytes not yet split into lines (several may come at once)
    while True:
        ready = dict(poller.poll(100))
        if pub in ready:
            msg = pub.recv()
            if msg[:1] == b"\x01":
                subscribed = True
        if replay is not None and replay in ready:
            serve_replay(replay, buffer)
        if waiting and subscribed:
            waiting = False
            print("ok", flush=True)
        if sys.stdin.fileno() not in ready:
            continue
        chunk = os.read(sys.stdin.fileno(), 65536)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            cmd = json.loads(line)
            if cmd["op"] == "quit":
                return
            if cmd["op"] == "wait_subscriber":
                waiting = not subscribed
                if subscribed:
                    print("ok", flush=True)
                continue
            payload = batch(args.encoding, event(args.encoding, cmd))
            buffer.append((seq, payload))
            if cmd.get("send", True):
                pub.send_multipart([topic, seq.to_bytes(8, "big"), payload])
            print("ok", seq, flush=True)
            seq += 1


def serve_replay(replay, buffer):
    frames = replay.recv_multipart()
    if len(frames) != 3:
        return
    client, _, start = frames
    start = int.from_bytes(start, "big")
    for s, payload in buffer:
        if s >= start:
            replay.send_multipart([client, b"", s.to_bytes(8, "big"), payload])
    replay.send_multipart([client, b"", END_SEQ, b""])

if __name__ == "__main__":
    main()
