#!/usr/bin/env bash
# Packs what a GPU machine without our Debian packages needs into .gpu/ (ignored
# by git): the CUDA build's test and bench binaries, stripped, the shared
# libraries they load from this machine (CAF, ZeroMQ, UCX, spdlog, ...; not
# glibc, libstdc++ or CUDA, which the GPU image has), and env.sh. On the GPU
# machine, from the repository root:  . .gpu/env.sh && kernels_cuda_tests
# The device tool carries it with carry [".gpu"]; docs/CUDA.md has the commands.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
targets=(kernels_cuda_tests runtime_model_cuda_tests planes_transfer_gpu_tests transfer_test_peer
         cuda_executor_bench dynamo-gguf-random dynamo-run dynamo-bench dynamo-transfer-bench
         dynamo-router-bench)
export CCACHE_BASEDIR="$PWD"
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DDYNAMO_WITH_CUDA=ON >/dev/null
cmake --build build-cuda --parallel "${DYNAMO_JOBS:-$(nproc)}" --target "${targets[@]}"
rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib
for t in "${targets[@]}"; do cp "build-cuda/bin/$t" .gpu/bin/; done
strip .gpu/bin/*
for b in .gpu/bin/*; do ldd "$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|libresolv|libgcc_s|libstdc\+\+)\.so|ld-linux|/usr/local/cuda' |
  xargs -r -I{} cp -L {} .gpu/lib/
cat > .gpu/env.sh <<'ENV'
# Sourced on the GPU machine from the repository root.
G=$PWD/.gpu
CUDA_LIBS=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib 2>/dev/null | tr '\n' ':')
export LD_LIBRARY_PATH=$G/lib:$CUDA_LIBS${LD_LIBRARY_PATH:-}
export PATH=$G/bin:$PATH
# Tests name their helper binaries by build-tree path (TRANSFER_TEST_PEER).
mkdir -p build-cuda && ln -sfn "$G/bin" build-cuda/bin
ENV
du -sh .gpu
