#!/usr/bin/env python3
"""Disaggregated serving end to end (issue 7): starts dynamo-run twice, once
aggregated and once with --disagg (prefill and decode workers, KV handed over
the transfer plane), sends the same greedy requests to both and checks:
  - every answer is identical (streamed and not), short and long prompts alike;
  - prompts at or above --max-local-prefill-length went prefill-first
    (dynamo_frontend_disagg_requests_total{prefill="remote"}), shorter ones
    did not, and none fell back to a local prefill;
  - a long prompt whose KV a decode worker already caches is prefilled there
    (conditional disaggregation after prefix hits);
  - the disaggregated server logged no failed KV pull.

With --launch PATH the disaggregated side is a multi-process cluster instead
(dynamo-launch over a generated cluster config: frontend, prefill and decode
dynamo-worker processes, KV between processes).

usage: disagg_test.py --dynamo-run PATH [--launch PATH] [--engine mocker|engine] [--threshold N]
exit 77 (skip) when --engine engine and the default model is absent."""
import argparse
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from with_server import free_port, wait_healthy  # noqa: E402

failures = []
# Tokens that different chat prompts can share: the template's system prompt
# and the user turn's opening, rounded up to whole 16-token blocks.
TEMPLATE_SLACK = 64


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


class Server:
    def __init__(self, binary, args, name, port=None):
        self.port = port or free_port()
        self.log = tempfile.NamedTemporaryFile(prefix=f"dynamo-{name}-", suffix=".log", delete=False)
        if port:  # a launcher: its config names the port
            cmd = [binary] + args
        else:
            cmd = [binary, "in=http", "--http-host", "127.0.0.1", "--http-port", str(self.port)] + args
        print(f"{name}: {' '.join(cmd)}", flush=True)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def post(self, path, body):
        req = urllib.request.Request(self.url(path), data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.read().decode()

    def metric(self, name, **labels):
        with urllib.request.urlopen(self.url("/metrics"), timeout=10) as r:
            text = r.read().decode()
        total = 0.0
        for line in text.splitlines():
            if not line.startswith(name + "{"):
                continue
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def log_text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_models(server, timeout):
    """A cluster's frontend is healthy before its workers register."""
    import time
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(server.url("/v1/models"), timeout=2) as r:
                if json.loads(r.read())["data"]:
                    return True
        except Exception:
            pass
        time.sleep(0.1)
    return False


def request_body(model, engine, text, stream):
    body = {"model": model, "max_tokens": 24, "temperature": 0, "stream": stream}
    if engine == "engine":
        body["messages"] = [{"role": "user", "content": text}]
    else:
        body["prompt"] = text
    return body


def answer(server, model, engine, text, stream=False):
    """(text, prompt_tokens) of one greedy request."""
    path = "/v1/chat/completions" if engine == "engine" else "/v1/completions"
    body = request_body(model, engine, text, stream)
    if stream:
        body["stream_options"] = {"include_usage": True}
    raw = server.post(path, body)
    if not stream:
        j = json.loads(raw)
        c = j["choices"][0]
        return (c["message"]["content"] if engine == "engine" else c["text"]), j["usage"]["prompt_tokens"]
    pieces, prompt_tokens = [], None
    for line in raw.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        j = json.loads(line[6:])
        if j.get("usage"):
            prompt_tokens = j["usage"]["prompt_tokens"]
        for c in j.get("choices", []):
            piece = c["delta"].get("content") if engine == "engine" else c.get("text")
            if piece:
                pieces.append(piece)
    return "".join(pieces), prompt_tokens


def prompts(engine):
    if engine == "engine":
        return ["What is the capital of France?",
                "Hi!",
                "Explain in two sentences why the sky is blue, and then say what colour the sea is "
                "on a cloudy day and why it looks different from a sunny day. " * 3,
                "Write a short story about a robot who learns to paint. " * 8]
    words = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "market"]
    return ["hi", " ".join(words), " ".join(words * 8), " ".join(words[i % 7] for i in range(200))]


def cluster_config(engine, threshold, port, root):
    if engine == "engine":
        path = os.environ.get("DYNAMO_MODEL_PATH") or os.path.expanduser(
            "~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf")
        pool = (f"    engine: cpu\n    model: SmolLM2-135M-Instruct.Q4_1\n    model_path: {path}\n"
                "    engine_args: {threads: 1, kv_blocks: 512}\n")
    else:
        pool = "    engine: mocker\n    model: mocker\n    mocker: {speedup_ratio: 5}\n"
    return (f"namespace: disagg-test\ndiscovery:\n  backend: file\n  root: {root}\n"
            f"frontend:\n  host: 127.0.0.1\n  port: {port}\nrouter:\n  mode: kv\n"
            f"disagg:\n  max_local_prefill_length: {threshold}\nshutdown_grace_ms: 2000\npools:\n"
            f"  - name: prefill\n    role: prefill\n    replicas: 1\n{pool}"
            f"  - name: decode\n    role: decode\n    replicas: 2\n{pool}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dynamo-run", required=True)
    ap.add_argument("--engine", default="mocker", choices=["mocker", "engine"])
    ap.add_argument("--threshold", type=int, default=48)
    ap.add_argument("--launch", help="dynamo-launch: the disaggregated side as a multi-process cluster")
    args = ap.parse_args()

    common = []
    if args.engine == "engine":
        path = os.environ.get("DYNAMO_MODEL_PATH") or os.path.expanduser(
            "~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf")
        if not os.path.exists(path):
            print(f"SKIP: default model not found at {path} (run scripts/setup.sh)")
            return 77
        common = ["--threads", "1", "--kv-cache-mib", "64"]
    else:
        common = ["out=mocker", "--speedup-ratio", "5"]
    agg = Server(args.dynamo_run, common + ["--num-workers", "1"], "aggregated")
    if args.launch:
        workdir = tempfile.mkdtemp(prefix="dynamo-disagg-cluster-")
        config = os.path.join(workdir, "cluster.yaml")
        port = free_port()
        with open(config, "w") as f:
            f.write(cluster_config(args.engine, args.threshold, port, os.path.join(workdir, "discovery")))
        dis = Server(args.launch, ["--config", config], "cluster", port=port)
    else:
        dis = Server(args.dynamo_run, common + ["--disagg", "--prefill-workers", "1", "--decode-workers", "2",
                                                 "--max-local-prefill-length", str(args.threshold)],
                     "disaggregated")
    try:
        for s in (agg, dis):
            if not wait_healthy(s.port, s.proc, 120) or not wait_models(s, 60):
                print(s.log_text(), file=sys.stderr)
                print("server did not become healthy", file=sys.stderr)
                return 1
        with urllib.request.urlopen(agg.url("/v1/models"), timeout=10) as r:
            model = json.loads(r.read())["data"][0]["id"]
        print("model:", model)

        if args.launch:
            # Processes register in any order: wait until the prefill pool is
            # in use (a long probe goes prefill-first), then count from there.
            import time
            deadline = time.time() + 60
            while dis.metric("dynamo_frontend_disagg_requests_total", prefill="remote") == 0:
                if time.time() > deadline:
                    check(False, "the cluster's prefill workers joined within 60 s")
                    return 1
                answer(dis, model, args.engine, f"(probe {time.time()}) " + prompts(args.engine)[-1])
                time.sleep(0.2)
        # Every request gets its own nonce first, so no two share more than the
        # chat template's opening blocks (at most TEMPLATE_SLACK tokens): a
        # prompt of n tokens then goes prefill-first iff n >= threshold (+ slack).
        slack = TEMPLATE_SLACK if args.engine == "engine" else 0
        nonce = iter(range(1, 1_000_000))
        base_remote = dis.metric("dynamo_frontend_disagg_requests_total", prefill="remote")
        expected_remote = 0
        for text in prompts(args.engine):
            unique = [f"({next(nonce)}) {text}" for _ in range(2)]
            want, n = answer(agg, model, args.engine, unique[0])
            want_s, _ = answer(agg, model, args.engine, unique[1])
            got, n2 = answer(dis, model, args.engine, unique[0])
            streamed, n3 = answer(dis, model, args.engine, unique[1], stream=True)
            if args.threshold <= n < args.threshold + slack:
                check(False, f"test prompt of {n} tokens is too close to the threshold to predict")
                continue
            long_prompt = n >= args.threshold
            expected_remote += 2 if long_prompt else 0
            what = f"{n}-token prompt ({'prefill-first' if long_prompt else 'local prefill'})"
            print(f"     {what}: {want!r}")
            check(len(want) > 0, f"{what}: the aggregated answer is not empty")
            check(got == want, f"{what}: disaggregated answer equals the aggregated one")
            check(streamed == want_s, f"{what}: streamed disaggregated answer equals the aggregated one")
            check(n == n2 == n3, f"{what}: same prompt token counts")

        # Concurrent long prompts: several hand-offs in flight at once.
        texts = [f"({next(nonce)}) {prompts(args.engine)[-1]}" for _ in range(8)]
        wants = [answer(agg, model, args.engine, t)[0] for t in texts]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda t: answer(dis, model, args.engine, t)[0], texts))
        expected_remote += 8
        check(got == wants, "8 concurrent prefill-first requests all give the aggregated answers")

        # Conditional disaggregation counts the decode workers' cached prefix:
        # the same long prompt again is prefilled where its KV already is.
        # The decode worker's KV events reach the router within milliseconds;
        # under heavy load a repeat may still go remote, so allow a few tries.
        import time
        local_repeat = False
        for attempt in range(5):
            time.sleep(0.3 * (attempt + 1))
            before = dis.metric("dynamo_frontend_disagg_requests_total", prefill="remote")
            again = answer(dis, model, args.engine, texts[0])[0]
            after = dis.metric("dynamo_frontend_disagg_requests_total", prefill="remote")
            check(again == wants[0], f"repeat {attempt + 1} of a long prompt gives the same answer")
            expected_remote += int(after - before)
            if after == before:
                local_repeat = True
                break
        check(local_repeat, "a repeated long prompt is prefilled locally from the decode worker's cache")

        remote = dis.metric("dynamo_frontend_disagg_requests_total", prefill="remote") - base_remote
        fallback = dis.metric("dynamo_frontend_disagg_requests_total", prefill="local_fallback")
        check(expected_remote > 0, "some prompts are long enough for prefill-first")
        check(remote == expected_remote, f"prefill-first requests: {remote:.0f} (expected {expected_remote})")
        check(fallback == 0, f"no remote prefill fell back to a local one ({fallback:.0f})")
        check(agg.metric("dynamo_frontend_disagg_requests_total") == 0,
              "the aggregated server sent nothing prefill-first")
    finally:
        agg.stop()
        dis.stop()
    log = dis.log_text()
    bad = [l for l in log.splitlines() if re.search(r"prefilling locally|KV push .* failed|KV pull", l)]
    check(not bad, "no failed KV hand-off in the disaggregated server's log" + (": " + bad[0] if bad else ""))
    check(dis.proc.returncode in (0, -signal.SIGTERM), f"disaggregated server exited cleanly ({dis.proc.returncode})")
    if failures:
        print(f"{len(failures)} check(s) failed; server log: {dis.log.name}", file=sys.stderr)
        return 1
    print("all disaggregation checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
