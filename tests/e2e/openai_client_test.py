#!/usr/bin/env python3
"""End-to-end test of the OpenAI-compatible frontend with the official `openai` client.

Point it at a running server:
    openai_client_test.py --base-url http://127.0.0.1:8000 --model SmolLM2-135M-Instruct
or let it start one (it must print "listening on PORT" and stop on SIGTERM):
    openai_client_test.py --server build/bin/fake_frontend_server --model fake

Checks chat and text completions (whole and streamed, with usage), max_tokens, stop
strings, model listing, error mapping (NotFoundError, BadRequestError, 415 for a body
that is not sent as JSON), /health, /metrics (and their types) and that a client leaving
a stream is noticed. Works with any model:
text is only required to be non-empty unless --expect-text gives the exact reply.
"""

import argparse
import json
import re
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

try:
    import openai
except ImportError:  # CTest reads 77 as "skipped" (SKIP_RETURN_CODE)
    print("SKIP: the `openai` Python package is not installed (pip install openai)")
    sys.exit(77)

ARGS = None


def start_server(command):
    """Starts `command --port 0`; returns (process, port) once it prints its port."""
    proc = subprocess.Popen([command, "--port", "0"], stdout=subprocess.PIPE, text=True)
    found = {}

    def read():
        for line in proc.stdout:
            m = re.search(r"listening on (\d+)", line)
            if m:
                found["port"] = int(m.group(1))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=30)
    if "port" not in found:
        proc.kill()
        raise RuntimeError(f"{command} did not report a port")
    return proc, found["port"]


def server_root():
    root = ARGS.base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def http_get(path):
    try:
        with urllib.request.urlopen(server_root() + path, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def http_post(path, body, content_type):
    req = urllib.request.Request(server_root() + path, data=body.encode(),
                                 headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class OpenAIClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        base = ARGS.base_url.rstrip("/")
        if not base.endswith("/v1"):
            base += "/v1"
        cls.client = openai.OpenAI(base_url=base, api_key="not-needed", max_retries=0, timeout=120)
        cls.model = ARGS.model

    def chat(self, **kw):
        kw.setdefault("messages", [{"role": "user", "content": "Say hello."}])
        kw.setdefault("max_tokens", 16)
        return self.client.chat.completions.create(model=kw.pop("model", self.model), **kw)

    def check_text(self, text):
        self.assertTrue(text, "the reply is empty")
        if ARGS.expect_text is not None:
            self.assertEqual(text, ARGS.expect_text[: len(text)])

    # -- models ---------------------------------------------------------------

    def test_models_lists_the_model(self):
        ids = [m.id for m in self.client.models.list().data]
        self.assertIn(self.model, ids)
        self.assertEqual(self.client.models.retrieve(self.model).id, self.model)

    # -- chat -----------------------------------------------------------------

    def test_chat_returns_text_and_usage(self):
        r = self.chat(max_tokens=64)
        self.assertEqual(r.object, "chat.completion")
        self.assertEqual(r.model, self.model)
        choice = r.choices[0]
        self.assertEqual(choice.message.role, "assistant")
        self.check_text(choice.message.content)
        self.assertIn(choice.finish_reason, ("stop", "length"))
        u = r.usage
        self.assertGreater(u.prompt_tokens, 0)
        self.assertGreater(u.completion_tokens, 0)
        self.assertEqual(u.total_tokens, u.prompt_tokens + u.completion_tokens)

    def test_chat_stream_with_usage(self):
        stream = self.chat(stream=True, stream_options={"include_usage": True}, max_tokens=64)
        text, finish, usage, roles = "", None, None, []
        for chunk in stream:
            self.assertEqual(chunk.object, "chat.completion.chunk")
            if chunk.usage is not None:
                usage = chunk.usage
                self.assertEqual(chunk.choices, [])
                continue
            delta = chunk.choices[0].delta
            if delta.role:
                roles.append(delta.role)
            text += delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        self.check_text(text)
        self.assertEqual(roles, ["assistant"])
        self.assertIn(finish, ("stop", "length"))
        self.assertIsNotNone(usage)
        self.assertGreater(usage.completion_tokens, 0)

    def test_max_tokens_limits_the_reply(self):
        r = self.chat(max_tokens=3, extra_body={"ignore_eos": True})
        self.assertEqual(r.usage.completion_tokens, 3)
        self.assertEqual(r.choices[0].finish_reason, "length")

    def test_stop_string_cuts_the_reply(self):
        full = self.chat(max_tokens=24, temperature=0).choices[0].message.content
        if len(full) < 6:
            self.skipTest("reply too short to pick a stop string")
        stop = full[3:6]
        cut = self.chat(max_tokens=24, temperature=0, stop=[stop])
        self.assertEqual(cut.choices[0].message.content, full[: full.index(stop)])
        self.assertEqual(cut.choices[0].finish_reason, "stop")

    # -- completions ----------------------------------------------------------

    def test_completion_returns_text(self):
        r = self.client.completions.create(model=self.model, prompt="Once upon a time", max_tokens=16)
        self.assertEqual(r.object, "text_completion")
        self.check_text(r.choices[0].text)
        self.assertGreater(r.usage.prompt_tokens, 0)

    def test_completion_stream(self):
        stream = self.client.completions.create(
            model=self.model, prompt="Once upon a time", max_tokens=16, stream=True)
        text, finish = "", None
        for chunk in stream:
            text += chunk.choices[0].text
            finish = chunk.choices[0].finish_reason or finish
        self.check_text(text)
        self.assertIn(finish, ("stop", "length"))

    # -- errors ---------------------------------------------------------------

    def test_unknown_model_is_not_found(self):
        with self.assertRaises(openai.NotFoundError) as ctx:
            self.chat(model="no-such-model")
        self.assertEqual(ctx.exception.status_code, 404)
        self.assertEqual(ctx.exception.body["param"], "model")
        with self.assertRaises(openai.NotFoundError):
            self.client.completions.create(model="no-such-model", prompt="x", max_tokens=1)

    def test_invalid_parameters_are_bad_requests(self):
        for kw, param in [({"temperature": 5}, "temperature"), ({"top_p": 2}, "top_p"),
                          ({"n": 0}, "n"), ({"messages": []}, "messages"),
                          ({"max_tokens": 0}, "max_tokens")]:
            with self.subTest(param=param):
                with self.assertRaises(openai.BadRequestError) as ctx:
                    self.chat(**kw)
                self.assertEqual(ctx.exception.body["param"], param)
                self.assertTrue(ctx.exception.body["message"])

    def test_prompt_longer_than_the_context_is_a_bad_request(self):
        with self.assertRaises(openai.BadRequestError) as ctx:
            self.client.completions.create(model=self.model, prompt="word " * 200000, max_tokens=1)
        self.assertEqual(ctx.exception.body["code"], "context_length_exceeded")

    def test_a_body_not_sent_as_json_is_415(self):
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": "Hi"}],
                           "max_tokens": 2})
        for path in ("/v1/chat/completions", "/v1/completions"):
            for ctype in ("application/x-www-form-urlencoded", "text/plain"):
                with self.subTest(path=path, content_type=ctype):
                    status, text = http_post(path, body, ctype)
                    self.assertEqual(status, 415)
                    err = json.loads(text)["error"]
                    self.assertEqual(err["type"], "invalid_request_error")
                    self.assertIn("application/json", err["message"])
                    self.assertIn("param", err)
                    self.assertIn("code", err)
        status, text = http_post("/v1/chat/completions", body, "application/json; charset=utf-8")
        self.assertEqual(status, 200, text)
        self.assertEqual(json.loads(text)["object"], "chat.completion")

    # -- service endpoints ----------------------------------------------------

    def test_health_and_metrics(self):
        status, body = http_get("/health")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["status"], "healthy")
        self.chat(max_tokens=2)
        status, text = http_get("/metrics")
        self.assertEqual(status, 200)
        self.assertIn('dynamo_frontend_requests_total{model="%s"' % self.model, text)
        self.assertIn("dynamo_frontend_time_to_first_token_seconds_bucket", text)
        # Counts up only: a counter (Dynamo's name, without _total).
        self.assertRegex(text, r"(?m)^# TYPE dynamo_frontend_disconnected_clients counter$")
        self.assertRegex(text, r"(?m)^# TYPE dynamo_frontend_requests_total counter$")
        self.assertRegex(text, r"(?m)^# TYPE dynamo_frontend_inflight_requests gauge$")
        if ARGS.router_metrics:
            # dynamo-run: the in-process workers' dynamo_component_* families share /metrics.
            m = re.search(r'(?m)^dynamo_component_requests_total\{dynamo_namespace="dynamo",'
                          r'dynamo_component="backend",dynamo_endpoint="generate"\} (\S+)$', text)
            self.assertTrue(m and float(m.group(1)) >= 1, "no worker request in dynamo_component_requests_total")
            # Workers report their load at least once a second.
            kvstats = r'(?m)^dynamo_component_kvstats_total_blocks\{.*worker_id="[0-9a-f]{16}"\} [1-9]'
            deadline = time.time() + 5
            while not re.search(kvstats, text) and time.time() < deadline:
                time.sleep(0.2)
                text = http_get("/metrics")[1]
            self.assertRegex(text, kvstats)
            # The router publishes its KV index about once a second.
            pattern = (r'^dynamo_router_kv_events_applied_total\{router="router\[%s\]",'
                       r'event_type="stored",status="ok"\} (\S+)$' % re.escape(self.model))
            deadline = time.time() + 10
            applied = 0.0
            while applied <= 0 and time.time() < deadline:
                m = re.search(pattern, http_get("/metrics")[1], re.M)
                applied = float(m.group(1)) if m else 0.0
                time.sleep(0.2)
            self.assertGreater(applied, 0, "no stored KV event reached the router's index")

    def test_client_leaving_a_stream_is_noticed(self):
        def disconnected():
            _, text = http_get("/metrics")
            m = re.search(r"^dynamo_frontend_disconnected_clients (\S+)$", text, re.M)
            return float(m.group(1)) if m else 0.0

        before = disconnected()
        stream = self.chat(model=ARGS.slow_model or self.model, stream=True, max_tokens=4000,
                           extra_body={"ignore_eos": True})
        for i, _ in enumerate(stream):
            if i == 2:
                break
        stream.close()
        deadline = time.time() + 10
        while disconnected() <= before and time.time() < deadline:
            time.sleep(0.05)
        self.assertGreater(disconnected(), before)


class FakeBackendTest(unittest.TestCase):
    """Only with the fake server's failing models (--fake-failures)."""

    @classmethod
    def setUpClass(cls):
        OpenAIClientTest.setUpClass.__func__(cls)

    def test_stream_headers_and_role_chunk_come_before_the_first_token(self):
        # fake-silent never produces a token: create() returning and the role
        # chunk arriving prove both were sent when the request was accepted.
        client = self.client.with_options(timeout=10)
        stream = client.chat.completions.create(
            model="fake-silent", messages=[{"role": "user", "content": "x"}], stream=True)
        try:
            first = next(iter(stream))
            self.assertEqual(first.choices[0].delta.role, "assistant")
            self.assertEqual(first.choices[0].delta.content, "")
            self.assertIsNone(first.choices[0].finish_reason)
        finally:
            stream.close()

    def test_backend_failure_before_the_first_token(self):
        # Unary: an HTTP error status.
        with self.assertRaises(openai.InternalServerError) as ctx:
            self.client.chat.completions.create(
                model="fake-fail-first", messages=[{"role": "user", "content": "x"}])
        self.assertEqual(ctx.exception.status_code, 503)
        # Streamed: the headers are already out, so the error is an SSE error event.
        stream = self.client.chat.completions.create(
            model="fake-fail-first", messages=[{"role": "user", "content": "x"}], stream=True)
        roles = []
        with self.assertRaises(openai.APIError) as ctx:
            for chunk in stream:
                roles.append(chunk.choices[0].delta.role)
        self.assertEqual(roles, ["assistant"])
        self.assertIn("no worker", str(ctx.exception))

    def test_backend_failure_mid_stream_raises_an_api_error(self):
        stream = self.client.chat.completions.create(
            model="fake-fail-mid", messages=[{"role": "user", "content": "x"}], stream=True)
        with self.assertRaises(openai.APIError):
            for _ in stream:
                pass


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", help="server root, e.g. http://127.0.0.1:8000")
    p.add_argument("--server", help="start this server binary (with --port 0) instead")
    p.add_argument("--model", required=True, help="served model name")
    p.add_argument("--slow-model", help="model for the disconnect test (default: --model)")
    p.add_argument("--expect-text", help="the exact reply every request must be a prefix of")
    p.add_argument("--router-metrics", action="store_true",
                   help="the server routes with KV events: its router's index must show on /metrics")
    p.add_argument("--fake-failures", action="store_true",
                   help="also test the fake server's fake-fail-first / fake-fail-mid models")
    ARGS, rest = p.parse_known_args()
    proc = None
    if ARGS.server:
        proc, port = start_server(ARGS.server)
        ARGS.base_url = f"http://127.0.0.1:{port}"
    if not ARGS.base_url:
        p.error("give --base-url or --server")
    try:
        suite = unittest.TestSuite()
        loader = unittest.TestLoader()
        suite.addTests(loader.loadTestsFromTestCase(OpenAIClientTest))
        if ARGS.fake_failures:
            suite.addTests(loader.loadTestsFromTestCase(FakeBackendTest))
        result = unittest.TextTestRunner(verbosity=2).run(suite)
        return 0 if result.wasSuccessful() else 1
    finally:
        if proc:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    sys.exit(main())
