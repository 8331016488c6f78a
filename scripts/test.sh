#!/usr/bin/env bash
# Builds the project and runs the test suite (everything but the `gpu` label),
# then the sanitizer stage (scripts/sanitize.sh: ASan+UBSan and TSan on a subset
# of runtime/ and planes/, the fuzz targets' bounded replays, and every libFuzzer
# target for 15 s in a clang tree; docs/FUZZING.md; DYNAMO_SKIP_SANITIZE=1 skips
# the stage, DYNAMO_SKIP_FUZZ=1 only its libFuzzer part). Where nvcc exists, also builds the CUDA
# backend in build-cuda/ and runs the `gpu`-labelled tests there (they skip
# themselves when no GPU is present).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs="${DYNAMO_JOBS:-$(nproc)}"
# Both build trees compile the same sources with the same flags: let ccache share them.
export CCACHE_BASEDIR="$PWD"
export DYNAMO_BUILD_TYPE="${DYNAMO_BUILD_TYPE:-Release}"

echo "== build (CPU backend)"
DYNAMO_BUILD_DIR=build scripts/build.sh -DDYNAMO_WITH_CUDA=OFF
echo "== tests"
ctest --test-dir build -LE gpu --output-on-failure -j "$jobs"

if [ "${DYNAMO_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== sanitizers (scripts/sanitize.sh)"
  scripts/sanitize.sh
fi

if [ -x "${DYNAMO_CUDA_ROOT:-/usr/local/cuda}/bin/nvcc" ]; then
  echo "== build (CUDA backend)"
  DYNAMO_BUILD_DIR=build-cuda scripts/build.sh -DDYNAMO_WITH_CUDA=ON
  echo "== gpu tests (skipped without a device)"
  ctest --test-dir build-cuda -L gpu --output-on-failure --no-tests=ignore
fi
