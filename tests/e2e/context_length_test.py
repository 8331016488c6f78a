#!/usr/bin/env python3
"""End-to-end: a prompt longer than what the model's workers hold is refused with an HTTP
400 `context_length_exceeded` in OpenAI's error envelope, streamed or not, chat or text
completions, through the official `openai` SDK (_strict_response_validation=True) and raw
HTTP; never a 200 without tokens. A prompt that fits is served.

Run by CTest through with_server.py (DYNAMO_BASE_URL) against dynamo-run with the mocker
and a KV cache of --kv-blocks 16 x --block-size 4 = 64 tokens: the workers' context is 64
(the mocker's own is 8192), and the frontend's length check must know it.
"""
import json
import os
import sys
import unittest
import urllib.error
import urllib.request

try:
    import openai
except ImportError:  # CTest reads 77 as "skipped"
    print("SKIP: the `openai` Python package is not installed (pip install openai)")
    sys.exit(77)

BASE = os.environ.get("DYNAMO_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
BASE = BASE[: -len("/v1")] if BASE.endswith("/v1") else BASE  # with_server.py gives .../v1
MODEL = "mocker"
CONTEXT = 64
LONG = "word " * 40  # 200 bytes: 200 byte-tokenizer tokens


def post(path, body):
    req = urllib.request.Request(BASE + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


class ContextLengthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = openai.OpenAI(base_url=BASE + "/v1", api_key="none", max_retries=0,
                                   _strict_response_validation=True)

    def create(self, kind, prompt, stream, **kw):
        if kind == "chat":
            return self.client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": prompt}], stream=stream, **kw)
        return self.client.completions.create(model=MODEL, prompt=prompt, stream=stream, **kw)

    def test_a_prompt_past_the_context_is_a_400_streamed_or_not(self):
        for kind, param in (("chat", "messages"), ("completions", "prompt")):
            for stream in (False, True):
                with self.subTest(kind=kind, stream=stream):
                    with self.assertRaises(openai.BadRequestError) as ctx:
                        r = self.create(kind, LONG, stream, max_tokens=3)
                        if stream:
                            list(r)
                    e = ctx.exception
                    self.assertEqual(e.status_code, 400)
                    self.assertEqual(e.body["code"], "context_length_exceeded")
                    self.assertEqual(e.body["type"], "invalid_request_error")
                    self.assertEqual(e.body["param"], param)
                    self.assertIn(f"maximum context length is {CONTEXT} tokens", e.body["message"])

    def test_a_stream_refused_sends_no_event_stream(self):
        for path, body in (("/v1/chat/completions",
                            {"messages": [{"role": "user", "content": LONG}]}),
                           ("/v1/completions", {"prompt": LONG})):
            with self.subTest(path=path):
                status, ctype, text = post(path, dict(body, model=MODEL, stream=True, max_tokens=3))
                self.assertEqual(status, 400)
                self.assertEqual(ctype, "application/json")
                self.assertEqual(json.loads(text)["error"]["code"], "context_length_exceeded")

    def test_a_prompt_that_fits_is_served(self):
        for kind in ("chat", "completions"):
            with self.subTest(kind=kind):
                r = self.create(kind, "Hi", False, max_tokens=3, extra_body={"ignore_eos": True})
                self.assertEqual(r.usage.completion_tokens, 3)
                self.assertEqual(r.choices[0].finish_reason, "length")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
