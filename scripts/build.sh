#!/usr/bin/env bash
# Configures and builds the project into build/ (CUDA backend when nvcc is found).
# Extra arguments go to cmake's configure step, e.g. -DDYNAMO_WITH_CUDA=OFF.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir="${DYNAMO_BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${DYNAMO_BUILD_TYPE:-RelWithDebInfo}" "$@"
cmake --build "$build_dir" --parallel "${DYNAMO_JOBS:-$(nproc)}"
