#!/usr/bin/env bash
# Issue 16 item 5: a bursty, diurnal trace (rate 8x up and down within a minute,
# twice) replayed against a launched mocker cluster three times: with the SLA
# planner, and static deployments sized for the peak and for the mean. Prints
# one JSON object: SLA attainment (share of requests meeting both TTFT and ITL
# targets) and GPU-seconds per variant, and the planner's ratios to each.
#
#   scripts/sla-planner-bench.sh [--bin-dir build/bin] [--work-dir /tmp/dynamo-sla-bench] [--schedule t:rate,...] [--disagg]
#
# --disagg: a prefill pool and a decode pool (every prompt prefilled remotely,
# ISL 512 / OSL 128); the planner sizes both, and the static sizes are per pool
# (each pool's own peak in the SLA run, sampled from the planner's metrics).
# The static sizes come from the SLA run itself, so all three share one sizing
# model: peak = the most replicas the planner ran, mean = ceil(peak x mean rate
# / peak rate). Needs free ports 8123 (frontend) and nothing else.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=build/bin
work=/tmp/dynamo-sla-bench
# The workload: ISL 128 / OSL 200 completions; the trace (seconds:requests/s).
schedule="0:1.5,30:1.5,60:12,100:12,130:1.5,160:1.5,175:12,205:12,225:1.5,240:1.5"
disagg=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) bin=$2; shift 2 ;;
    --work-dir) work=$2; shift 2 ;;
    --schedule) schedule=$2; shift 2 ;;
    --disagg) disagg=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "sla-planner-bench: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
bin=$(cd "$bin" && pwd)

ttft_ms=1000
itl_ms=40
isl=128 osl=200
[ "$disagg" = 1 ] && isl=512 osl=128
port=8123
rm -rf "$work" && mkdir -p "$work"

config() { # name replicas planner-yaml [decode-replicas]
  cat > "$work/$1.yaml" <<EOF
namespace: sla-$1
discovery: {backend: file, root: $work/discovery-$1, lease_ttl_ms: 1000}
frontend: {host: 127.0.0.1, port: $port}
router: {mode: kv}
shutdown_grace_ms: 2000
$3
EOF
  if [ "$disagg" = 1 ] && [ "$1" != profile ]; then
    cat >> "$work/$1.yaml" <<EOF
disagg: {max_local_prefill_length: 64}
pools:
  - {name: prefill, role: prefill, engine: mocker, model: mocker, replicas: $2, mocker: {speedup_ratio: 0.25}}
  - {name: backend, role: decode, engine: mocker, model: mocker, replicas: ${4:-$2}, mocker: {speedup_ratio: 0.25}}
EOF
  else
    cat >> "$work/$1.yaml" <<EOF
pools:
  - name: backend
    engine: mocker
    model: mocker
    replicas: $2
    mocker: {speedup_ratio: 0.25}
EOF
  fi
}

echo "== profile the mocker engine" >&2
config profile 1 ""
"$bin/dynamo-profile" --config "$work/profile.yaml" --out "$work/profile.json" --isl 64,128,256,512 \
  --prefix-hit 0,0.5 --batch 1,2,4,8,16,32,64 --context 128,256,512,1024 --log-level warn

# Runs one variant: launches the cluster, waits until it serves, replays the
# trace, stops the cluster. $1 name, $2 replicas, $3 dynamo-bench's GPU flags.
run() {
  local name=$1 replicas=$2
  shift 2
  echo "== $name: launch ($replicas replicas to start)" >&2
  "$bin/dynamo-launch" --config "$work/$name.yaml" --log-level info > "$work/$name.log" 2>&1 &
  local launch=$!
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/v1/models" | grep -q mocker && break
    sleep 0.2
  done
  sleep 2 # every replica registered
  local gpu_flags=("$@")
  if [ "${gpu_flags[0]}" = "--replicas-url" ]; then # the planner's system server, from its log
    local url
    for _ in $(seq 1 50); do
      url=$(grep -o 'dynamo-planner: metrics on http://[0-9.:]*' "$work/$name.log" | head -1 | sed 's/.* on //')
      [ -n "$url" ] && break
      sleep 0.2
    done
    [ -n "$url" ] || { echo "sla-planner-bench: no planner metrics URL in $work/$name.log" >&2; kill "$launch"; exit 1; }
    gpu_flags=(--replicas-url "$url/metrics")
    # Each pool's replicas once a second, for the per-pool static sizes.
    (while kill -0 "$launch" 2>/dev/null; do
       curl -sf "$url/metrics" | grep '^dynamo_planner_observed_replicas' >> "$work/$name.replicas" || true
       sleep 1
     done) &
  fi
  echo "== $name: replay $schedule" >&2
  "$bin/dynamo-bench" --url "http://127.0.0.1:$port" --model mocker --rate-schedule "$schedule" \
    --concurrency 4096 --io-threads 2 --isl $isl --osl $osl --sla-ttft-ms $ttft_ms --sla-itl-ms $itl_ms \
    --label "$name" --output "$work/$name.json" "${gpu_flags[@]}" > /dev/null
  kill -TERM "$launch"
  wait "$launch" || true
}

config sla 1 "planner: {enabled: true, mode: sla, ttft_ms: $ttft_ms, itl_ms: $itl_ms, profile: $work/profile.json,
  interval_ms: 2500, min_replicas: 1, max_replicas: 8, predictor: moving_average, predictor_window: 2}"
run sla 1 --replicas-url
# Static sizes per pool: its most replicas in the SLA run (peak), and that
# scaled by mean rate / peak rate, rounded up (mean).
read -r peak mean_size peak_d mean_d < <(python3 - "$work/sla.replicas" "$schedule" <<'EOF'
import math, re, sys
pts = [tuple(map(float, p.split(":"))) for p in sys.argv[2].split(",")]
area = sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(pts, pts[1:]))
ratio = (area / pts[-1][0]) / max(p[1] for p in pts)
most = {}
for line in open(sys.argv[1]):
    m = re.match(r'dynamo_planner_observed_replicas\{.*pool="([^"]*)".*\}\s+(\S+)', line)
    if m:
        most[m.group(1)] = max(most.get(m.group(1), 0), float(m.group(2)))
first = max(1, round(most.get("prefill", most.get("backend", 1))))
decode = max(1, round(most.get("backend", 1)))
print(first, max(1, math.ceil(first * ratio)), decode, max(1, math.ceil(decode * ratio)))
EOF
)
if [ "$disagg" = 1 ]; then
  total_peak=$((peak + peak_d)) total_mean=$((mean_size + mean_d))
  config peak "$peak" "" "$peak_d"
  config mean "$mean_size" "" "$mean_d"
else
  peak_d=0 mean_d=0 total_peak=$peak total_mean=$mean_size
  config peak "$peak" ""
  config mean "$mean_size" ""
fi
run peak "$total_peak" --static-gpus "$total_peak"
run mean "$total_mean" --static-gpus "$total_mean"

python3 - "$work" "$schedule" "$peak,$peak_d" "$mean_size,$mean_d" "$disagg" <<'EOF'
import json, sys
work, schedule, disagg = sys.argv[1], sys.argv[2], sys.argv[5] == "1"
peak, mean = ([int(x) for x in a.split(",")] for a in (sys.argv[3], sys.argv[4]))
if not disagg:
    peak, mean = peak[0], mean[0]
runs = {n: json.load(open(f"{work}/{n}.json")) for n in ("sla", "peak", "mean")}
def row(r):
    s = r["sla"]
    return {"requests": r["completed"] + r["failed"], "failed": r["failed"], "attainment": round(s["attainment"], 4),
            "gpu_seconds": round(s["gpu_seconds"], 1), "ttft_ms_p99": r["ttft_ms"].get("p99"),
            "itl_ms_p99": r["itl_ms"].get("p99"), "duration_s": round(r["duration_s"], 1)}
out = {"bench": "sla-planner-bench", "disagg": disagg, "schedule": schedule, "ttft_ms": runs["sla"]["sla"]["ttft_ms"],
       "itl_ms": runs["sla"]["sla"]["itl_ms"], "peak_replicas": peak, "mean_replicas": mean,
       "variants": {n: row(r) for n, r in runs.items()},
       "planner_gpu_seconds_over_peak": round(runs["sla"]["sla"]["gpu_seconds"] / runs["peak"]["sla"]["gpu_seconds"], 3),
       "planner_timeline": [{k: w[k] for k in ("t_s", "rate", "replicas", "attainment")} for w in runs["sla"]["sla"]["timeline"]]}
print(json.dumps(out, indent=1))
EOF
