#!/usr/bin/env bash
# Opt-in hostile-input checks (NOT run by scripts/test.sh; docs/FUZZING.md has
# the measured cost): 1. every libFuzzer target for DYNAMO_FUZZ_SECONDS (default
# 10) on its corpus (scripts/fuzz.sh, clang); 2. the unit tests built with g++
# under ASan+UBSan in build-asan/; 3. the runtime/ and planes/ tests under TSan
# in build-tsan/ (not actors/: libcaf is not instrumented, its mailbox reports
# races TSan cannot see the other half of). Arguments select phases: fuzz asan tsan (default all three).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs="${DYNAMO_JOBS:-$(nproc)}"
export CCACHE_BASEDIR="$PWD"
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(fuzz asan tsan)
# Unit tests under sanitizers; the model-running ones are the slow part.
asan_tests=(runtime_core_tests runtime_protocol_tests runtime_gguf_tests runtime_tokenizer_tests
  runtime_openai_tests runtime_config_tests runtime_route_tests runtime_kv_tests runtime_bench_tests
  runtime_metrics_tests runtime_engine_tests runtime_mocker_tests runtime_grammar_tests
  runtime_plan_tests runtime_model_tests kernels_ref_tests planes_codec_tests)
tsan_tests=(runtime_core_tests runtime_protocol_tests runtime_route_tests runtime_kv_tests
  runtime_engine_tests runtime_metrics_tests planes_codec_tests planes_event_tests
  planes_request_tests planes_discovery_tests)

stamp() { date +%s; }
report=()
for phase in "${phases[@]}"; do
  t0=$(stamp)
  case "$phase" in
  fuzz)
    scripts/fuzz.sh ;;
  asan)
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDYNAMO_WITH_CUDA=OFF \
      -DDYNAMO_SANITIZE=address,undefined >/dev/null
    cmake --build build-asan --parallel "$jobs" --target "${asan_tests[@]}"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir build-asan --output-on-failure -j "$jobs" \
      -R "^($(IFS='|'; echo "${asan_tests[*]}"))\$" ;;
  tsan)
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDYNAMO_WITH_CUDA=OFF \
      -DDYNAMO_SANITIZE=thread >/dev/null
    cmake --build build-tsan --parallel "$jobs" --target "${tsan_tests[@]}"
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
      ctest --test-dir build-tsan --output-on-failure -j "$jobs" \
      -R "^($(IFS='|'; echo "${tsan_tests[*]}"))\$" ;;
  *)
    echo "test-hostile: unknown phase '$phase' (fuzz, asan, tsan)" >&2
    exit 2 ;;
  esac
  report+=("$phase: $(( $(stamp) - t0 )) s")
done
printf 'test-hostile: %s\n' "${report[@]}"
