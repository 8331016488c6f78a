#!/usr/bin/env python3
"""End-to-end test of the endpoints of issue 14 part 5 against dynamo-run started with
--enable-anthropic-api (mocker or the real default model):

- /tokenize and /detokenize (vLLM's shapes): round trips, the chat template's count equals
  the prompt_tokens a chat request reports, 4xx envelopes;
- /v1/responses through the official `openai` SDK (responses.create, stream=True and the
  responses.stream() helper) with _strict_response_validation=True, raw bodies and every
  stream event validated against the OpenAI OpenAPI document's Response and
  ResponseStreamEvent schemas (data/openai_responses_api_schemas.json); streamed text
  equals the whole response's;
- /v1/messages and /v1/messages/count_tokens through the official `anthropic` SDK
  (messages.create, messages.stream(), count_tokens), raw bodies and events validated
  against Anthropic's OpenAPI schemas (data/anthropic_messages_schemas.json), Anthropic's
  error envelope;
- each endpoint counted in /metrics.

Greedy (temperature 0) output is deterministic on both engines, so streams are compared
with whole responses.
"""
import argparse
import json
import os
import sys
import unittest
import urllib.error
import urllib.request

try:
    import anthropic
    import jsonschema
    import openai
except ImportError as e:  # CTest reads 77 as "skipped"
    print(f"SKIP: {e.name} is not installed (scripts/setup.sh installs it)")
    sys.exit(77)

ARGS = None
HERE = os.path.dirname(os.path.abspath(__file__))


def validators(file, roots):
    with open(os.path.join(HERE, "data", file)) as f:
        components = json.load(f)["components"]
    return {name: jsonschema.Draft202012Validator({"$ref": f"#/components/schemas/{name}",
                                                   "components": components})
            for name in roots}


RESP = validators("openai_responses_api_schemas.json", ["Response", "ResponseStreamEvent"])
ANTH = validators("anthropic_messages_schemas.json",
                  ["Message", "MessageStreamEvent", "CountMessageTokensResponse", "ErrorResponse"])


def check(test, validator, body):
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
    test.assertFalse(errors, "\n".join(f"{list(e.path)}: {e.message[:300]}" for e in errors[:5])
                     + "\nbody: " + json.dumps(body)[:2000])


def request(path, body, stream=False, headers=None, raw_body=None):
    """POST to the server root: (status, JSON body) or (status, [(event, data)]) for SSE."""
    data = raw_body if raw_body is not None else json.dumps(body).encode()
    req = urllib.request.Request(ARGS.root + path, data=data,
                                 headers=headers or {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            text = r.read().decode()
            status = r.status
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode())
    if not stream:
        return status, json.loads(text)
    events, name = [], None
    for line in text.split("\n"):
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            events.append((name, line[len("data: "):]))
            name = None
    return status, events


def metrics_text():
    with urllib.request.urlopen(ARGS.root + "/metrics", timeout=30) as r:
        return r.read().decode()


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = ARGS.model
        cls.client = openai.OpenAI(base_url=ARGS.root + "/v1", api_key="not-needed", max_retries=0,
                                   timeout=300, _strict_response_validation=True)
        cls.anth = anthropic.Anthropic(base_url=ARGS.root, api_key="not-needed", max_retries=0,
                                       timeout=300, _strict_response_validation=True)

    def chat_prompt_tokens(self, messages):
        status, body = request("/v1/chat/completions",
                               {"model": self.model, "messages": messages, "max_tokens": 1})
        self.assertEqual(status, 200, body)
        return body["usage"]["prompt_tokens"]


class Tokenize(Base):
    def test_round_trip(self):
        status, body = request("/tokenize", {"model": self.model, "prompt": "Hello world",
                                             "add_special_tokens": False})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["count"], len(body["tokens"]))
        self.assertGreater(body["max_model_len"], 0)
        self.assertTrue(all(isinstance(t, int) for t in body["tokens"]))
        status, back = request("/detokenize", {"model": self.model, "tokens": body["tokens"]})
        self.assertEqual(status, 200, back)
        self.assertEqual(back["prompt"], "Hello world")

    def test_messages_count_equals_the_chat_prompt(self):
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]
        status, body = request("/tokenize", {"model": self.model, "messages": messages})
        self.assertEqual(status, 200, body)
        # The chat path adds the model's BOS (if any) to the rendered template; /tokenize
        # with messages does not unless asked (vLLM's default), so ask.
        status, with_bos = request("/tokenize", {"model": self.model, "messages": messages,
                                                 "add_special_tokens": True})
        self.assertEqual(status, 200, with_bos)
        self.assertIn(with_bos["count"] - body["count"], (0, 1))
        self.assertEqual(with_bos["count"], self.chat_prompt_tokens(messages))

    def test_errors(self):
        status, err = request("/tokenize", {"model": "nope", "prompt": "x"})
        self.assertEqual(status, 404)
        self.assertEqual(err["error"]["code"], "model_not_found")
        status, err = request("/tokenize", {"model": self.model})
        self.assertEqual((status, err["error"]["param"]), (400, "prompt"))
        status, err = request("/detokenize", {"model": self.model, "tokens": [10**9]})
        self.assertEqual((status, err["error"]["param"]), (400, "tokens[0]"))
        status, err = request("/detokenize", {"model": self.model, "tokens": "x"})
        self.assertEqual((status, err["error"]["code"]), (400, "invalid_type"))
        status, err = request("/tokenize", None, headers={"Content-Type": "text/plain"},
                              raw_body=b'{"model":"x","prompt":"y"}')
        self.assertEqual(status, 415)
        self.assertIn("error", err)


class Responses(Base):
    def create_raw(self, **kw):
        body = {"model": self.model, "temperature": 0, **kw}
        status, out = request("/v1/responses", body, stream=kw.get("stream", False))
        self.assertEqual(status, 200, out)
        return out

    def test_create_matches_schema_and_usage(self):
        body = self.create_raw(input="Say hello.", instructions="Be brief.", max_output_tokens=6,
                               metadata={"k": "v"})
        check(self, RESP["Response"], body)
        self.assertTrue(body["id"].startswith("resp_"))
        self.assertEqual(body["object"], "response")
        self.assertIn(body["status"], ("completed", "incomplete"))
        self.assertEqual(body["metadata"], {"k": "v"})
        self.assertEqual(body["instructions"], "Be brief.")
        self.assertEqual(body["output"][0]["type"], "message")
        self.assertLessEqual(body["usage"]["output_tokens"], 6)
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]
        self.assertEqual(body["usage"]["input_tokens"], self.chat_prompt_tokens(messages))

    def test_sdk_create_and_stream_agree(self):
        kw = dict(model=self.model, input=[{"role": "user", "content": [{"type": "input_text", "text": "Count: 1 2 3"}]}],
                  max_output_tokens=8, temperature=0)
        whole = self.client.responses.create(**kw)
        self.assertEqual(whole.object, "response")
        self.assertGreater(whole.usage.output_tokens, 0)
        types, text = [], ""
        for event in self.client.responses.create(stream=True, **kw):
            types.append(event.type)
            if event.type == "response.output_text.delta":
                text += event.delta
            if event.type in ("response.completed", "response.incomplete"):
                final = event.response
        self.assertEqual(types[:2], ["response.created", "response.in_progress"])
        self.assertIn(types[-1], ("response.completed", "response.incomplete"))
        self.assertEqual(text, whole.output_text)
        self.assertEqual(final.output_text, whole.output_text)
        self.assertEqual(final.usage.output_tokens, whole.usage.output_tokens)
        # The SDK's stream helper accumulates a snapshot by output_index / content_index:
        # its text equals the whole response's. (Its get_final_response() wants
        # response.completed, and an answer cut by max_output_tokens ends with
        # response.incomplete, as OpenAI's does.)
        snapshot = None
        with self.client.responses.stream(**kw) as stream:
            for event in stream:
                if event.type == "response.output_text.delta":
                    snapshot = event.snapshot
                last = event
        self.assertEqual(snapshot, whole.output_text)
        self.assertEqual(last.response.output_text, whole.output_text)

    def test_stream_events_match_schema(self):
        events = self.create_raw(input="Hi", max_output_tokens=5, stream=True)
        self.assertTrue(events)
        seqs = []
        for name, data in events:
            ev = json.loads(data)
            check(self, RESP["ResponseStreamEvent"], ev)
            self.assertEqual(ev["type"], name)
            seqs.append(ev["sequence_number"])
        self.assertEqual(seqs, list(range(len(seqs))))
        names = [n for n, _ in events]
        for want in ("response.created", "response.output_item.added", "response.content_part.added",
                     "response.output_text.done", "response.content_part.done", "response.output_item.done"):
            self.assertIn(want, names)
        self.assertNotIn("[DONE]", [d for _, d in events])

    def test_logprobs_whole_and_streamed(self):
        kw = dict(input="Hi", max_output_tokens=5, include=["message.output_text.logprobs"], top_logprobs=2)
        body = self.create_raw(**kw)
        check(self, RESP["Response"], body)
        part = body["output"][0]["content"][0]
        lps = part["logprobs"]
        self.assertEqual(len(lps), body["usage"]["output_tokens"])
        self.assertEqual(b"".join(bytes(lp["bytes"]) for lp in lps).decode("utf-8", "replace"), part["text"])
        for lp in lps:
            self.assertLessEqual(lp["logprob"], 1e-6)
            self.assertIn(len(lp["top_logprobs"]), (1, 2))  # the mocker's distribution is a point mass
        self.assertEqual(body["top_logprobs"], 2)
        events = self.create_raw(stream=True, **kw)
        streamed, done = [], None
        for name, data in events:
            ev = json.loads(data)
            check(self, RESP["ResponseStreamEvent"], ev)
            if name == "response.output_text.delta":
                streamed += [lp["token"] for lp in ev["logprobs"]]
            if name == "response.output_text.done":
                done = ev["logprobs"]
        self.assertEqual(streamed, [lp["token"] for lp in lps])
        self.assertEqual(done, lps)
        # The SDK parses it (strict validation) and sees the same tokens.
        whole = self.client.responses.create(model=self.model, temperature=0, **kw)
        self.assertEqual([lp.token for lp in whole.output[0].content[0].logprobs], [lp["token"] for lp in lps])
        # Without include: no logprobs, as OpenAI's.
        plain = self.create_raw(input="Hi", max_output_tokens=5, top_logprobs=2)
        self.assertEqual(plain["output"][0]["content"][0]["logprobs"], [])

    def test_function_call_history_is_accepted_or_refused_by_chat(self):
        # Translation of function_call / function_call_output items: served once chat
        # completions accepts tool calls in history; until then chat refuses them (400).
        status, body = request("/v1/responses", {
            "model": self.model, "max_output_tokens": 4, "temperature": 0,
            "input": [{"role": "user", "content": "weather?"},
                      {"type": "function_call", "call_id": "call_1", "name": "w", "arguments": "{}"},
                      {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}]})
        if status == 400:
            self.assertIn("tool", body["error"]["message"].lower() + body["error"]["param"])
        else:
            self.assertEqual(status, 200, body)
            check(self, RESP["Response"], body)

    def test_tools_when_chat_has_them(self):
        tools = [{"type": "function", "name": "get_weather", "description": "weather of a city",
                  "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                 "required": ["city"]}}]
        status, body = request("/v1/responses", {"model": self.model, "input": "Weather in Paris?",
                                                 "tools": tools, "tool_choice": "required",
                                                 # the mocker's vocabulary is bytes: room for a whole call
                                                 "max_output_tokens": 200, "temperature": 0})
        if status == 400 and body["error"]["param"] in ("tools", "tool_choice"):
            self.skipTest("chat completions has no tools on this branch: " + body["error"]["message"])
        self.assertEqual(status, 200, body)
        check(self, RESP["Response"], body)
        calls = [o for o in body["output"] if o["type"] == "function_call"]
        self.assertTrue(calls, body)
        self.assertEqual(calls[0]["name"], "get_weather")
        self.assertIsInstance(json.loads(calls[0]["arguments"]), dict)

    def test_errors(self):
        with self.assertRaises(openai.BadRequestError) as ctx:
            self.client.responses.create(model=self.model, input="x", previous_response_id="resp_1")
        self.assertEqual(ctx.exception.body["param"], "previous_response_id")
        with self.assertRaises(openai.NotFoundError):
            self.client.responses.create(model="nope", input="x")
        status, err = request("/v1/responses", {"model": self.model})
        self.assertEqual((status, err["error"]["param"]), (400, "input"))
        status, err = request("/v1/responses", {"model": self.model, "input": "x",
                                                "tools": [{"type": "web_search"}]})
        self.assertEqual((status, err["error"]["code"]), (400, "unsupported_value"))
        status, err = request("/v1/responses", {"model": self.model, "input": "x",
                                                "include": ["reasoning.encrypted_content"]})
        self.assertEqual((status, err["error"]["param"]), (400, "include[0]"))


class Messages(Base):
    MESSAGES = [{"role": "user", "content": "Name three colours."}]

    def test_create_and_stream_agree(self):
        # temperature through extra_body: this SDK version's create() has no such argument.
        kw = dict(model=self.model, max_tokens=8, system="Be brief.", messages=self.MESSAGES,
                  extra_body={"temperature": 0})
        whole = self.anth.messages.create(**kw)
        self.assertEqual(whole.type, "message")
        self.assertEqual(whole.role, "assistant")
        self.assertIn(whole.stop_reason, ("end_turn", "max_tokens"))
        self.assertLessEqual(whole.usage.output_tokens, 8)
        text = "".join(b.text for b in whole.content if b.type == "text")
        with self.anth.messages.stream(**kw) as stream:
            streamed = "".join(stream.text_stream)
            final = stream.get_final_message()
        self.assertEqual(streamed, text)
        self.assertEqual(final.usage.output_tokens, whole.usage.output_tokens)
        self.assertEqual(final.stop_reason, whole.stop_reason)
        count = self.anth.messages.count_tokens(model=self.model, system="Be brief.", messages=self.MESSAGES)
        self.assertGreater(count.input_tokens, 0)
        self.assertEqual(count.input_tokens, whole.usage.input_tokens)

    def test_raw_bodies_and_events_match_schema(self):
        body = {"model": self.model, "max_tokens": 5, "temperature": 0, "messages": self.MESSAGES}
        status, whole = request("/v1/messages", body)
        self.assertEqual(status, 200, whole)
        check(self, ANTH["Message"], whole)
        status, events = request("/v1/messages", {**body, "stream": True}, stream=True)
        self.assertEqual(status, 200)
        names = []
        for name, data in events:
            ev = json.loads(data)
            if name == "ping":  # sent by Anthropic's API, but not in its document's event union
                self.assertEqual(ev, {"type": "ping"})
            else:
                check(self, ANTH["MessageStreamEvent"], ev)
            self.assertEqual(ev["type"], name)
            names.append(name)
        self.assertEqual(names[:2], ["message_start", "ping"])
        self.assertEqual(names[-2:], ["message_delta", "message_stop"])
        status, count = request("/v1/messages/count_tokens", {"model": self.model, "messages": self.MESSAGES})
        self.assertEqual(status, 200, count)
        check(self, ANTH["CountMessageTokensResponse"], count)
        self.assertEqual(count["input_tokens"], whole["usage"]["input_tokens"])

    def test_errors_use_anthropic_envelope(self):
        cases = [({"model": self.model, "messages": self.MESSAGES}, 400, "invalid_request_error"),
                 ({"model": "nope", "max_tokens": 2, "messages": self.MESSAGES}, 404, "not_found_error"),
                 ({"model": self.model, "max_tokens": 2,
                   "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]},
                  400, "invalid_request_error")]
        for body, code, kind in cases:
            with self.subTest(body=body):
                status, err = request("/v1/messages", body)
                self.assertEqual(status, code)
                check(self, ANTH["ErrorResponse"], err)
                self.assertEqual(err["error"]["type"], kind)
        with self.assertRaises(anthropic.BadRequestError):
            self.anth.messages.create(model=self.model, max_tokens=0, messages=self.MESSAGES)
        status, err = request("/v1/messages/count_tokens", {"model": self.model})
        self.assertEqual(status, 400)
        check(self, ANTH["ErrorResponse"], err)


class Metrics(Base):
    def test_endpoints_are_counted(self):
        request("/tokenize", {"model": self.model, "prompt": "x"})
        request("/detokenize", {"model": self.model, "tokens": [1]})
        request("/v1/responses", {"model": self.model, "input": "x", "max_output_tokens": 1})
        request("/v1/messages", {"model": self.model, "max_tokens": 1, "messages": Messages.MESSAGES})
        request("/v1/messages/count_tokens", {"model": self.model, "messages": Messages.MESSAGES})
        text = metrics_text()
        for ep in ("tokenize", "detokenize", "responses", "anthropic_messages", "anthropic_count_tokens"):
            with self.subTest(endpoint=ep):
                self.assertIn(f'endpoint="{ep}"', text)


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", default=os.environ.get("DYNAMO_BASE_URL"), help="http://HOST:PORT[/v1]")
    p.add_argument("--model", default=None, help="served model name (default: the first of /v1/models)")
    ARGS, rest = p.parse_known_args()
    if not ARGS.base_url:
        p.error("give --base-url or set DYNAMO_BASE_URL")
    root = ARGS.base_url.rstrip("/")
    ARGS.root = root[:-3] if root.endswith("/v1") else root
    if ARGS.model is None:
        with urllib.request.urlopen(ARGS.root + "/v1/models", timeout=30) as r:
            ARGS.model = json.loads(r.read())["data"][0]["id"]
    result = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
