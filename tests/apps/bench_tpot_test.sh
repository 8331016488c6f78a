#!/usr/bin/env bash
# dynamo-bench against a mocker dynamo-run: every completed request reports a
# TPOT (time per output token after the first), and its mean is exactly
# (mean e2e - mean TTFT) / (OSL - 1) when every request generates OSL tokens.
#   bench_tpot_test.sh DYNAMO_RUN DYNAMO_BENCH
set -euo pipefail
run=$1 bench=$2
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$run" in=http out=mocker --http-host 127.0.0.1 --http-port "$port" > "$work/run.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 150); do
  curl -sf "http://127.0.0.1:$port/v1/models" | grep -q '"id"' && break
  sleep 0.2
done
"$bench" --url "http://127.0.0.1:$port" --num-requests 6 --concurrency 3 --isl 16 --osl 8 \
  --output "$work/bench.json" > /dev/null
python3 - "$work/bench.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
assert b["completed"] == 6 and b["failed"] == 0, b
assert b["output_tokens"] == 48, b["output_tokens"]
t = b["tpot_ms"]
assert t["count"] == 6, t
assert 0 < t["min"] <= t["p50"] <= t["max"], t
want = (b["e2e_ms"]["mean"] - b["ttft_ms"]["mean"]) / 7
assert abs(t["mean"] - want) <= 1e-3 * max(want, 1e-9) + 1e-6, (t["mean"], want)
for name, c in b["classes"].items():
    assert c["tpot_ms"]["count"] == c["completed"], (name, c)
print("tpot ok:", t["mean"], "ms")
PY
