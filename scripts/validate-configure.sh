#!/usr/bin/env bash
# Issue 16 item 4: dynamo-configure's prediction against a measured run.
# Profiles the mocker (dynamo-profile), searches (dynamo-configure), launches
# the winner (dynamo-launch) and drives it with dynamo-bench with the very
# requests the search simulated (dynamo-configure --write-trace, dynamo-bench
# --trace: the same arrivals, lengths and shared prefixes); prints predicted vs
# measured as one JSON object.
#   scripts/validate-configure.sh [BIN_DIR] -- [dynamo-configure options]
# Defaults: ISL 1024, OSL 128, 20 req/s, 400 requests, TTFT 300 / ITL 30 ms p90,
# 4 GPUs, the mocker. ISL and OSL take dynamo-configure's forms too
# (normal:1024,256, uniform:64,256; a bare number is fixed); SEED (1) seeds the
# traffic.
# POOL_YAML=file profiles that file's first pool instead (e.g. the CPU
# engine), PROFILE_ARGS adds dynamo-profile options; HANDOFF=0 skips
# dynamo-profile --handoff (no measured hand-off or step overhead: the
# simulator charges neither unless --transfer-ms is given); PROFILE_JSON=file
# uses that profile instead of measuring one. Needs python3.
# Uses port PORT (18571) and WORK (/tmp/dynamo-validate-configure); the JSON
# also gives the 1-minute load average before the load generator and after it.
set -euo pipefail
BIN=${1:-build/bin}
shift || true
[[ "${1:-}" == "--" ]] && shift
ISL=${ISL:-1024} OSL=${OSL:-128} RATE=${RATE:-20} N=${N:-400} PORT=${PORT:-18571}
WORK=${WORK:-/tmp/dynamo-validate-configure}
rm -rf "$WORK" && mkdir -p "$WORK"
if [[ -n "${POOL_YAML:-}" ]]; then
  cp "$POOL_YAML" "$WORK/profile-pool.yaml"
else
  cat > "$WORK/profile-pool.yaml" <<YAML
pools:
  - {name: backend, engine: mocker, model: mocker, mocker: {speedup_ratio: 1.0}}
YAML
fi
HANDOFF_ARGS=()
[[ "${HANDOFF:-1}" == 1 ]] && HANDOFF_ARGS=(--handoff --handoff-dir "$WORK/handoff")
if [[ -n "${PROFILE_JSON:-}" ]]; then # an earlier profile (its run's load average may differ)
  cp "$PROFILE_JSON" "$WORK/profile.json"
else
  # shellcheck disable=SC2086
  "$BIN/dynamo-profile" --config "$WORK/profile-pool.yaml" --out "$WORK/profile.json" --log-level warn \
    "${HANDOFF_ARGS[@]}" ${PROFILE_ARGS:-}
fi
"$BIN/dynamo-configure" --profile "$WORK/profile.json" --ttft-ms "${TTFT:-300}" --itl-ms "${ITL:-30}" \
  --isl "$ISL" --osl "$OSL" --rate "$RATE" --requests "$N" --gpu-budget "${GPUS:-4}" \
  --frontend-port "$PORT" --discovery-root "$WORK/discovery" --out "$WORK/winner.yaml" \
  --json "$WORK/configure.json" --front 10 --seed "${SEED:-1}" --write-trace "$WORK/traffic.jsonl" "$@" \
  2> "$WORK/configure.err" || { cat "$WORK/configure.err" >&2; exit 1; }
cat "$WORK/configure.err" >&2
BLOCK=$(sed -n 's/.*--trace-block-size \([0-9]*\).*/\1/p' "$WORK/configure.err" | head -1)
"$BIN/dynamo-launch" --config "$WORK/winner.yaml" --log-level warn > "$WORK/launch.log" 2>&1 &
LAUNCH=$!
trap 'kill -TERM $LAUNCH 2>/dev/null; wait $LAUNCH 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$PORT/v1/models" | grep -q '"id"' && break
  sleep 0.2
done
sleep 2 # every worker registered (the frontend serves as soon as one has)
LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
"$BIN/dynamo-bench" --url "http://127.0.0.1:$PORT" --concurrency 2000 --trace "$WORK/traffic.jsonl" \
  --trace-block-size "${BLOCK:-64}" --num-requests 0 --output "$WORK/bench.json" > /dev/null
LOAD_AFTER=$(cut -d' ' -f1 /proc/loadavg)
python3 - "$WORK/configure.json" "$WORK/bench.json" "$WORK/profile.json" "$LOAD_BEFORE" "$LOAD_AFTER" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["winner"]
b = json.load(open(sys.argv[2]))
def err(p, m): return round((p - m) / m, 3) if m else None
m_tps = b.get("output_tokens_per_s") or b.get("output_throughput")
gaps = (b.get("output_tokens") or 0) - (b.get("completed") or 0)  # token gaps: each request's tokens after its first
per_token = round(b["itl_ms"]["mean"] * b["itl_ms"]["count"] / gaps, 4) if gaps > 0 and b["itl_ms"].get("count") else None
out = {
  "deployment": c["deployment"],
  "ttft_p90_ms": {"predicted": round(c["ttft_ms"], 1), "measured": b["ttft_ms"]["p90"], "rel_err": err(c["ttft_ms"], b["ttft_ms"]["p90"])},
  "itl_p90_ms": {"predicted": round(c["itl_ms"], 2), "measured": b["itl_ms"]["p90"], "rel_err": err(c["itl_ms"], b["itl_ms"]["p90"])},
  "ttft_mean_ms": {"predicted": round(c["mean_ttft_ms"], 1), "measured": b["ttft_ms"]["mean"], "rel_err": err(c["mean_ttft_ms"], b["ttft_ms"]["mean"])},
  "itl_mean_ms": {"predicted": round(c["mean_itl_ms"], 2), "measured": b["itl_ms"]["mean"], "rel_err": err(c["mean_itl_ms"], b["itl_ms"]["mean"])},
  # dynamo-bench's ITL is per SSE chunk; a chunk may carry several tokens (the detokenizer holds back
  # a token ending inside a UTF-8 character), the prediction is per token: the same time over every gap.
  "itl_mean_per_token_ms": {"predicted": round(c["mean_itl_ms"], 2), "measured": per_token,
                            "rel_err": err(c["mean_itl_ms"], per_token) if per_token else None},
  "output_tokens_per_s": {"predicted": round(c["output_tokens_per_s"], 1), "measured": m_tps, "rel_err": err(c["output_tokens_per_s"], m_tps) if m_tps else None},
  "failed": b.get("failed"),
  "load_average_1m": {"before": float(sys.argv[4]), "after": float(sys.argv[5])},
}
h = json.load(open(sys.argv[3])).get("handoff")
if h:
  out["profile_handoff"] = {"fixed_ms": round(h["fixed_ms"], 3), "per_block_ms": round(h["per_block_ms"], 4)}
print(json.dumps(out, indent=1))
PY
