#!/usr/bin/env bash
# Configures and builds the project into build/ (CUDA backend when nvcc is found).
# Arguments starting with "-" go to cmake's configure step (e.g. -DDYNAMO_WITH_CUDA=OFF);
# the others name targets to build (e.g. dynamo-run: only what serving needs, about
# half of the tree); no target builds everything (tests, benchmarks, examples).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir="${DYNAMO_BUILD_DIR:-build}"
configure=()
targets=()
for arg in "$@"; do
  if [[ "$arg" == -* ]]; then configure+=("$arg"); else targets+=(--target "$arg"); fi
done
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${DYNAMO_BUILD_TYPE:-RelWithDebInfo}" "${configure[@]}"
cmake --build "$build_dir" --parallel "${DYNAMO_JOBS:-$(nproc)}" "${targets[@]}"
