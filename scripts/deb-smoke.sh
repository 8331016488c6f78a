#!/usr/bin/env bash
# The CPU runtime image's steps without Docker (docs/DEPLOY.md): a minimal Debian 12 root
# (debootstrap --variant=minbase, close to debian:12-slim), the .deb installed with apt and the
# dynamo user added exactly as docker/Dockerfile's `runtime` stage does, then, as uid 10001 in a
# chroot: dynamo-run serves the default model (one chat completion) and dynamo-launch runs the
# installed mocker-cluster example (one completion through its frontend).
#
#   scripts/deb-smoke.sh build/dynamo-cpp_0.1.0_amd64.deb
#
# Needs root, debootstrap (apt-get install debootstrap), Debian's mirror and the default model
# ($DYNAMO_MODEL_PATH, else ~/.cache/dynamo/models; scripts/fetch-model.sh). The bootstrapped
# root is kept in $DYNAMO_SMOKE_CACHE (default /tmp/dynamo-deb-smoke-base, ~200 MB, ~1 min once);
# each run works on a fresh copy.
set -euo pipefail
deb="$(readlink -f "${1:?usage: deb-smoke.sh <dynamo-cpp_*.deb>}")"
base="${DYNAMO_SMOKE_CACHE:-/tmp/dynamo-deb-smoke-base}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
model="${DYNAMO_MODEL_PATH:-$HOME/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
[ "$(id -u)" = 0 ] || { echo "deb-smoke: needs root (debootstrap, chroot)"; exit 1; }
[ -s "$model" ] || { echo "deb-smoke: no model at $model (scripts/fetch-model.sh)"; exit 1; }
command -v debootstrap >/dev/null || { echo "deb-smoke: apt-get install debootstrap"; exit 1; }

if [ ! -f "$base/.complete" ]; then
  echo "deb-smoke: debootstrap bookworm (minbase) into $base"
  rm -rf "$base"
  debootstrap --variant=minbase bookworm "$base" "$mirror" >/dev/null
  touch "$base/.complete"
fi
root="$(mktemp -d /tmp/dynamo-deb-smoke.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  umount "$root/proc" 2>/dev/null || true
  rm -rf "$root" "$root.apt.log"
}
trap cleanup EXIT
cp -a "$base/." "$root/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/tmp/pkg" "$root/opt/dynamo/models"
cp "$deb" "$root/tmp/pkg/"
cp "$model" "$root/opt/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf"
mount -t proc proc "$root/proc"

echo "deb-smoke: the runtime stage's RUN (apt-get install of $(basename "$deb"), user dynamo)"
chroot "$root" /bin/sh -c 'apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/pkg/dynamo-cpp_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/pkg \
 && groupadd --gid 10001 dynamo \
 && useradd --uid 10001 --gid 10001 --create-home --home-dir /home/dynamo --shell /usr/sbin/nologin dynamo' \
  >"$root.apt.log" 2>&1 || { cat "$root.apt.log"; exit 1; }
echo "deb-smoke: $(grep -c '^Setting up' "$root.apt.log") packages set up"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
as_dynamo() {  # the image's USER, WORKDIR and ENV (exec: run it with &, $! is the process)
  exec env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/dynamo \
    DYNAMO_MODEL_PATH=/opt/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf \
    "$(command -v chroot)" --userspec=10001:10001 "$root" /bin/sh -c "cd /home/dynamo && exec $*"
}
wait_for() { for _ in $(seq 1 60); do curl -sf "$1" >/dev/null && return 0; sleep 0.5; done; return 1; }
chat() {
  curl -sf "localhost:$1/v1/chat/completions" -H 'content-type: application/json' \
    -d "{\"model\":\"$2\",\"temperature\":0,\"max_tokens\":16,\"messages\":[{\"role\":\"user\",\"content\":\"What is the capital of France?\"}]}"
}

port="$(free_port)"
as_dynamo dynamo-run in=http --http-port "$port" --threads 2 >"$root/tmp/run.log" 2>&1 &
pids+=($!)
wait_for "localhost:$port/health" || { cat "$root/tmp/run.log"; echo "deb-smoke: dynamo-run did not come up"; exit 1; }
out="$(chat "$port" SmolLM2-135M-Instruct.Q4_1)" || { cat "$root/tmp/run.log"; exit 1; }
grep -q 'Paris' <<<"$out" || { echo "deb-smoke: unexpected answer: $out"; exit 1; }
echo "deb-smoke: ok: dynamo-run served the default model: Paris"
kill "${pids[0]}"; wait "${pids[0]}" || true; pids=()

port="$(free_port)"
sed -e "s/port: 8000/port: $port/" -e "s|root: .*|root: /tmp/discovery|" \
  "$root/usr/share/dynamo/examples/mocker-cluster.yaml" >"$root/tmp/cluster.yaml"
as_dynamo dynamo-launch --config /tmp/cluster.yaml >"$root/tmp/launch.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 60); do curl -sf "localhost:$port/v1/models" | grep -q mocker && break; sleep 0.5; done
out="$(chat "$port" mocker)" || { cat "$root/tmp/launch.log"; echo "deb-smoke: no completion from the cluster"; exit 1; }
grep -q '"finish_reason"' <<<"$out" || { echo "deb-smoke: unexpected answer: $out"; exit 1; }
echo "deb-smoke: ok: dynamo-launch ran /usr/share/dynamo/examples/mocker-cluster.yaml ($(grep -c 'started worker' "$root/tmp/launch.log") workers)"
echo "deb-smoke: PASS"
