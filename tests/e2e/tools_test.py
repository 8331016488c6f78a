#!/usr/bin/env python3
"""End-to-end test of tool calls and reasoning (issue 14 parts 1 and 3) through the official
`openai` SDK with _strict_response_validation=True, every body and chunk also validated
against the OpenAI OpenAPI document's schemas (data/openai_response_schemas.json).

Run by CTest through with_server.py against dynamo-run with the mocker and
--tool-call-parser hermes --reasoning-parser think. The mocker's output is scripted: a prompt
holding <mock_reply>TEXT</mock_reply> makes it emit TEXT, then EOS (runtime/mocker
token_stream.hpp). So this checks the server's side exactly: tools and tool history accepted
and rendered, the output parsed into tool_calls / reasoning_content (whole, streamed, with
the SDK's stream helper, n > 1, logprobs, usage), finish_reason, and the 400s. What it does
NOT check: that a real model emits calls, nor that tool_choice required / named constrains
decoding (the mocker ignores guided decoding; see docs/TOOLS.md).
"""
import argparse
import json
import os
import sys
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import jsonschema  # noqa: F401  (sampling_test's validators need it)
    import openai
except ImportError as e:  # CTest reads 77 as "skipped"
    print(f"SKIP: {e.name} is not installed (scripts/setup.sh installs it)")
    sys.exit(77)

import sampling_test  # noqa: E402  (the schema validators and the raw POST helper)
from sampling_test import check_schema  # noqa: E402

ARGS = None

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                        "unit": {"type": "string", "enum": ["c", "f"]}},
                       "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}},
]

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n</tool_call>'
TWO_CALLS = ('Checking.\n' + CALL + '\n<tool_call>\n{"name": "search", "arguments": {"q": "Paris news"}}'
             '\n</tool_call>')


def nonce():
    """A unique prompt start: the mocker finds a script only in the prefill chunk it computes,
    so no block of the prompt may come from the prefix cache."""
    return uuid.uuid4().hex


def ask(script):
    return [{"role": "user", "content": f"{nonce()} Weather in Paris? <mock_reply>{script}</mock_reply>"}]


class ToolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = openai.OpenAI(base_url=ARGS.base_url, api_key="not-needed", max_retries=0,
                                   timeout=120, _strict_response_validation=True)
        cls.model = cls.client.models.list().data[0].id

    def raw(self, stream=False, **kw):
        body = {"model": self.model, "max_tokens": 400, **kw}
        if stream:
            body["stream"] = True
        status, out = sampling_test.post("/chat/completions", body, stream)
        self.assertEqual(status, 200, out)
        for c in (out if stream else [out]):
            check_schema(self, "chat_chunk" if stream else "chat", c)
        return out

    def test_a_call_is_parsed_out_of_the_reply(self):
        r = self.client.chat.completions.create(model=self.model, messages=ask(CALL), tools=TOOLS,
                                                max_tokens=400)
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls")
        self.assertIsNone(choice.message.content)
        self.assertEqual(len(choice.message.tool_calls), 1)
        call = choice.message.tool_calls[0]
        self.assertTrue(call.id.startswith("call_"))
        self.assertEqual(call.type, "function")
        self.assertEqual(call.function.name, "get_weather")
        self.assertEqual(json.loads(call.function.arguments), {"city": "Paris", "unit": "c"})
        self.assertEqual(r.usage.completion_tokens, len(CALL) + 1)  # + EOS
        check_schema(self, "chat", r.model_dump(exclude_unset=True))

    def test_two_calls_and_text_whole_and_streamed_agree(self):
        whole = self.raw(messages=ask(TWO_CALLS), tools=TOOLS)
        msg = whole["choices"][0]["message"]
        self.assertEqual(msg["content"], "Checking.")
        self.assertEqual([c["function"]["name"] for c in msg["tool_calls"]], ["get_weather", "search"])
        self.assertEqual(json.loads(msg["tool_calls"][1]["function"]["arguments"]), {"q": "Paris news"})
        self.assertEqual(whole["choices"][0]["finish_reason"], "tool_calls")

        chunks = self.raw(stream=True, messages=ask(TWO_CALLS), tools=TOOLS)
        content, calls, finish = "", {}, None
        for c in chunks:
            for ch in c["choices"]:
                d = ch["delta"]
                content += d.get("content") or ""
                for t in d.get("tool_calls") or []:
                    if "id" in t:  # a call's first delta: id, type, name, empty arguments
                        self.assertNotIn(t["index"], calls)
                        self.assertEqual(t["type"], "function")
                        self.assertEqual(t["function"]["arguments"], "")
                        calls[t["index"]] = {"name": t["function"]["name"], "arguments": ""}
                    else:
                        self.assertNotIn("name", t["function"])
                        calls[t["index"]]["arguments"] += t["function"]["arguments"]
                finish = ch["finish_reason"] or finish
        self.assertEqual(content, msg["content"])
        self.assertEqual([calls[i]["name"] for i in sorted(calls)], ["get_weather", "search"])
        self.assertEqual([calls[i]["arguments"] for i in sorted(calls)],
                         [c["function"]["arguments"] for c in msg["tool_calls"]])
        self.assertEqual(finish, "tool_calls")

    def test_the_sdk_stream_helper_assembles_the_calls(self):
        with self.client.chat.completions.stream(model=self.model, messages=ask(TWO_CALLS), tools=TOOLS,
                                                 max_tokens=400) as stream:
            for _ in stream:
                pass
            final = stream.get_final_completion()
        msg = final.choices[0].message
        self.assertEqual(final.choices[0].finish_reason, "tool_calls")
        self.assertEqual([c.function.name for c in msg.tool_calls], ["get_weather", "search"])
        self.assertEqual(json.loads(msg.tool_calls[0].function.arguments), {"city": "Paris", "unit": "c"})

    def test_text_that_is_not_a_call_stays_content(self):
        bad = '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call> done'
        r = self.raw(messages=ask(bad), tools=TOOLS)
        self.assertEqual(r["choices"][0]["message"]["content"], bad)
        self.assertNotIn("tool_calls", r["choices"][0]["message"])
        self.assertEqual(r["choices"][0]["finish_reason"], "stop")

    def test_tool_choice_none_leaves_calls_as_content(self):
        r = self.raw(messages=ask(CALL), tools=TOOLS, tool_choice="none")
        self.assertEqual(r["choices"][0]["message"]["content"], CALL)
        self.assertEqual(r["choices"][0]["finish_reason"], "stop")

    def test_named_and_required_are_accepted_and_parsed(self):
        # The mocker ignores the guided-decoding constraint: this checks the request path
        # and the parsing of the (scripted) forced call, not the constraint.
        for choice in ({"type": "function", "function": {"name": "get_weather"}}, "required"):
            r = self.raw(messages=ask(CALL), tools=TOOLS, tool_choice=choice, parallel_tool_calls=False)
            self.assertEqual(r["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "get_weather")

    def test_n_choices_with_logprobs_are_parsed_separately(self):
        r = self.raw(messages=ask(CALL), tools=TOOLS, n=2, logprobs=True, top_logprobs=1)
        self.assertEqual(len(r["choices"]), 2)
        for c in r["choices"]:
            self.assertEqual(c["message"]["tool_calls"][0]["function"]["name"], "get_weather")
            self.assertEqual(c["finish_reason"], "tool_calls")
            self.assertEqual("".join(t["token"] for t in c["logprobs"]["content"]), CALL)
        self.assertEqual(r["usage"]["completion_tokens"], 2 * (len(CALL) + 1))

    def test_reasoning_is_split_out(self):
        script = "<think>The user wants weather.</think>\n\nIt is sunny."
        r = self.raw(messages=ask(script))
        msg = r["choices"][0]["message"]
        self.assertEqual(msg["reasoning_content"], "The user wants weather.")
        self.assertEqual(msg["content"], "It is sunny.")
        chunks = self.raw(stream=True, messages=ask(script), stream_options={"include_usage": True})
        reasoning = "".join(ch["delta"].get("reasoning_content") or "" for c in chunks for ch in c["choices"])
        content = "".join(ch["delta"].get("content") or "" for c in chunks for ch in c["choices"])
        self.assertEqual((reasoning, content), ("The user wants weather.", "It is sunny."))
        self.assertEqual(chunks[-1]["usage"]["completion_tokens"], len(script) + 1)
        # chat_template_kwargs are accepted (the mocker's plain template has no use for them).
        sdk = self.client.chat.completions.create(
            model=self.model, messages=ask(script), max_tokens=400,
            extra_body={"chat_template_kwargs": {"enable_thinking": False}})
        self.assertEqual(sdk.choices[0].message.content, "It is sunny.")
        self.assertEqual(sdk.choices[0].message.reasoning_content, "The user wants weather.")

    def test_tool_history_is_accepted(self):
        messages = [
            {"role": "user", "content": f"{nonce()} Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "21C, clear"},
            {"role": "user", "content": "<mock_reply>It is 21C.</mock_reply>"},
        ]
        r = self.client.chat.completions.create(model=self.model, messages=messages, tools=TOOLS,
                                                max_tokens=100)
        self.assertEqual(r.choices[0].message.content, "It is 21C.")
        self.assertEqual(r.choices[0].finish_reason, "stop")

    def test_bad_tool_requests_are_400_with_the_field(self):
        cases = [
            (dict(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}}),
             "tool_choice.function.name"),
            (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": {
                "type": "object", "properties": {"x": {"type": "text"}}}}}]),
             "tools[0].function.parameters.properties.x.type"),
            (dict(tool_choice="required"), "tool_choice"),
            (dict(tools=TOOLS, messages=[{"role": "tool", "content": "x"}]), "messages[0].tool_call_id"),
        ]
        for kw, param in cases:
            kw.setdefault("messages", ask("x"))
            with self.assertRaises(openai.BadRequestError) as e:
                self.client.chat.completions.create(model=self.model, max_tokens=10, **kw)
            self.assertEqual(e.exception.status_code, 400)
            self.assertEqual(e.exception.body["param"], param)


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", default=os.environ.get("DYNAMO_BASE_URL"), help="http://HOST:PORT/v1")
    ARGS, rest = p.parse_known_args()
    if not ARGS.base_url:
        p.error("give --base-url or set DYNAMO_BASE_URL")
    ARGS.base_url = ARGS.base_url.rstrip("/")
    if not ARGS.base_url.endswith("/v1"):
        ARGS.base_url += "/v1"
    sampling_test.ARGS = ARGS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
