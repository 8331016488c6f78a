#!/usr/bin/env bash
# The sanitizer stage (docs/FUZZING.md, "Sanitizers"): builds test targets with
# g++ and -fsanitize into their own trees and runs them, then runs the libFuzzer
# targets for a bounded time. Phases (arguments, default: asan replay tsan fuzz;
# DYNAMO_SKIP_FUZZ=1 drops fuzz from the default):
#   asan    ASan+UBSan (build-asan/): the test executables of $asan_tests
#   replay  the fuzz targets, linked with fuzz/replay_main.cpp in build-asan/,
#           each on its seed corpus plus DYNAMO_FUZZ_SECONDS (default 10) of
#           random mutations
#   tsan    TSan (build-tsan/): the test executables of $tsan_tests
#   fuzz    coverage-guided libFuzzer with clang (scripts/fuzz.sh: its own tree
#           build-fuzz/, every fuzz target, DYNAMO_FUZZ_SECONDS each, default 15
#           here; a crash, leak, hang or OOM fails it, the input is left in
#           build-fuzz/artifacts/)
# DYNAMO_SANITIZE_SCOPE=ci (default; what scripts/test.sh runs, sized for CI's
# budget) or full (every runtime/ and planes/ unit and integration test that
# needs no GPU, etcd or model file; every fuzz target). Build trees:
# DYNAMO_ASAN_BUILD_DIR (build-asan), DYNAMO_TSAN_BUILD_DIR (build-tsan).
# Prints seconds per phase.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs="${DYNAMO_JOBS:-$(nproc)}"
scope="${DYNAMO_SANITIZE_SCOPE:-ci}"
seconds="${DYNAMO_FUZZ_SECONDS:-10}"
asan_dir="${DYNAMO_ASAN_BUILD_DIR:-build-asan}"
tsan_dir="${DYNAMO_TSAN_BUILD_DIR:-build-tsan}"
export CCACHE_BASEDIR="$PWD"
phases=("$@")
if [ ${#phases[@]} -eq 0 ]; then
  phases=(asan replay tsan)
  [ "${DYNAMO_SKIP_FUZZ:-0}" = 1 ] || phases+=(fuzz)
fi

case "$scope" in
ci)
  asan_tests=(runtime_core_tests runtime_protocol_tests runtime_kv_tests
    planes_codec_tests planes_event_tests planes_request_tests)
  fuzzers=(fuzz_protocol fuzz_vllm fuzz_etcd fuzz_transfer fuzz_admin fuzz_http fuzz_kvbm)
  tsan_tests=(runtime_core_tests runtime_protocol_tests runtime_kv_tests
    planes_codec_tests planes_event_tests planes_request_tests planes_http_tests) ;;
full)
  asan_tests=(runtime_core_tests runtime_protocol_tests runtime_kv_tests runtime_route_tests
    runtime_gguf_tests runtime_tokenizer_tests runtime_openai_tests runtime_config_tests
    runtime_metrics_tests runtime_bench_tests runtime_disagg_tests runtime_kvbm_tests
    runtime_engine_tests runtime_mocker_tests runtime_grammar_tests runtime_plan_tests
    runtime_model_tests runtime_model_cuda_plan_tests
    planes_codec_tests planes_event_tests planes_request_tests planes_discovery_tests
    planes_http_tests planes_transfer_tests)
  fuzzers=(fuzz_protocol fuzz_vllm fuzz_etcd fuzz_gguf fuzz_jinja fuzz_tokenizer fuzz_openai
    fuzz_sse fuzz_cluster_config fuzz_transfer fuzz_admin fuzz_http fuzz_kvbm)
  tsan_tests=(runtime_core_tests runtime_protocol_tests runtime_kv_tests runtime_route_tests
    runtime_engine_tests runtime_metrics_tests runtime_mocker_tests
    planes_codec_tests planes_event_tests planes_request_tests planes_discovery_tests
    planes_http_tests) ;;
*)
  echo "sanitize: DYNAMO_SANITIZE_SCOPE must be ci or full, not '$scope'" >&2
  exit 2 ;;
esac

# g++'s "undefined" leaves out float-cast-overflow (clang's, in the fuzz stage,
# has it): a float -> integer conversion out of range is UB that only it sees
# (msgpack-c's pack_float, docs/FUZZING.md Findings, 2026-11-29).
asan_sanitizers=address,undefined,float-cast-overflow
# -O1 with line tables: fast enough to run, cheap to build, symbolized stacks;
# asserts stay on. Sanitize is no CMake build type: only these flags apply.
configure() { # <dir> <sanitizers>
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1" \
    -DDYNAMO_WITH_CUDA=OFF -DDYNAMO_BUILD_EXAMPLES=OFF -DDYNAMO_SANITIZE="$2" >/dev/null
}
run_tests() { # <dir> <targets...>
  local dir="$1"; shift
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" -R "^($(IFS='|'; echo "$*"))\$"
}

# detect_leaks: CAF and ZeroMQ free their globals at exit; a leak is ours.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp"

stamp() { date +%s; }
report=()
for phase in "${phases[@]}"; do
  t0=$(stamp)
  case "$phase" in
  asan)
    echo "== ASan+UBSan: ${asan_tests[*]}"
    configure "$asan_dir" "$asan_sanitizers"
    cmake --build "$asan_dir" --parallel "$jobs" --target "${asan_tests[@]}"
    run_tests "$asan_dir" "${asan_tests[@]}" ;;
  replay)
    echo "== fuzz targets under ASan+UBSan (corpus replay + ${seconds} s of mutations): ${fuzzers[*]}"
    configure "$asan_dir" "$asan_sanitizers"
    cmake --build "$asan_dir" --parallel "$jobs" --target "${fuzzers[@]}" fuzz_make_seeds
    corpus="$asan_dir/corpus"
    "$asan_dir/bin/fuzz_make_seeds" "$corpus" >/dev/null
    python3 fuzz/make_corpus.py "$corpus" >/dev/null
    mkdir -p "$asan_dir/artifacts"
    for t in "${fuzzers[@]}"; do
      mkdir -p "$corpus/$t"
      "$asan_dir/bin/$t" -seconds="$seconds" -artifact="$asan_dir/artifacts/$t-crash.bin" "$corpus/$t"
    done ;;
  tsan)
    echo "== TSan: ${tsan_tests[*]}"
    configure "$tsan_dir" thread
    cmake --build "$tsan_dir" --parallel "$jobs" --target "${tsan_tests[@]}"
    run_tests "$tsan_dir" "${tsan_tests[@]}" ;;
  fuzz)
    DYNAMO_FUZZ_SECONDS="${DYNAMO_FUZZ_SECONDS:-15}" scripts/fuzz.sh ;;
  *)
    echo "sanitize: unknown phase '$phase' (asan, replay, tsan, fuzz)" >&2
    exit 2 ;;
  esac
  report+=("$phase: $(( $(stamp) - t0 )) s")
done
printf 'sanitize: %s\n' "${report[@]}"
