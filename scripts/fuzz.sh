#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with ASan+UBSan) into build-fuzz/
# and runs each for DYNAMO_FUZZ_SECONDS (default 10; 0: no time limit) or
# DYNAMO_FUZZ_RUNS executions, whichever ends first, on its corpus, seeded by
# fuzz/make_seeds.cpp and fuzz/make_corpus.py. DYNAMO_FUZZ_TIMEOUT: seconds one
# input may take (default 10; on a loaded machine ASan runs 10x slower, and
# never pause a fuzzer with SIGSTOP: libFuzzer counts wall time, so a pause
# reads as a slow input). Arguments: target names (default all). Any crash,
# leak, timeout or OOM fails the script; its input lands in
# $build_dir/artifacts/. Long campaigns: docs/FUZZING.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir="${DYNAMO_FUZZ_BUILD_DIR:-build-fuzz}"
seconds="${DYNAMO_FUZZ_SECONDS:-10}"
runs="${DYNAMO_FUZZ_RUNS:--1}"
timeout="${DYNAMO_FUZZ_TIMEOUT:-10}"
corpus="${DYNAMO_FUZZ_CORPUS:-$build_dir/corpus}"
jobs="${DYNAMO_JOBS:-$(nproc)}"
all=(fuzz_gguf fuzz_jinja fuzz_tokenizer fuzz_openai fuzz_sse fuzz_protocol fuzz_vllm
  fuzz_cluster_config fuzz_etcd fuzz_transfer fuzz_admin fuzz_http fuzz_kvbm)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
export CCACHE_BASEDIR="$PWD"

echo "== build ($build_dir: clang, libFuzzer, ASan+UBSan)"
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja \
  -DDYNAMO_WITH_CUDA=OFF -DDYNAMO_FUZZ=ON -DDYNAMO_BUILD_TESTS=OFF -DDYNAMO_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build_dir" --parallel "$jobs" --target "${targets[@]}" fuzz_make_seeds

echo "== seeds ($corpus)"
"$build_dir/bin/fuzz_make_seeds" "$corpus"
python3 fuzz/make_corpus.py "$corpus"

mkdir -p "$build_dir/artifacts" "$build_dir/logs"
failed=()
for t in "${targets[@]}"; do
  mkdir -p "$corpus/$t"
  log="$build_dir/logs/$t.log"
  # -timeout: one input may take $timeout s (a hang otherwise); -rss_limit_mb: an OOM.
  started=$SECONDS
  if "$build_dir/bin/$t" -max_total_time="$seconds" -runs="$runs" -timeout="$timeout" -rss_limit_mb=2048 \
       -max_len=65536 -print_final_stats=1 -artifact_prefix="$build_dir/artifacts/$t-" "$corpus/$t" >"$log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    echo "$t: ok, ${execs:-?} executions in $((SECONDS - started)) s, coverage ${cov:-?} edges, corpus $(ls "$corpus/$t" | wc -l)"
  else
    echo "$t: FAILED (log: $log)"
    grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -5 || true
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}"
  exit 1
fi
