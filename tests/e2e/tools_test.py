#!/usr/bin/env python3
"""End-to-end test of tool calls and reasoning (issue 14 parts 1 and 3) through the official
`openai` SDK with _strict_response_validation=True, every body and chunk also validated
against the OpenAI OpenAPI document's schemas (data/openai_response_schemas.json).

Run by CTest through with_server.py against dynamo-run with the mocker and
--tool-call-parser hermes --reasoning-parser think (all of it), and with
--tool-call-parser llama3_json / mistral (FormatStreamTest only: --tool-format names it). The mocker's output is scripted: a prompt
holding <mock_reply>TEXT</mock_reply> makes it emit TEXT, then EOS (runtime/mocker
token_stream.hpp). So this checks the server's side exactly: tools and tool history accepted
and rendered, the output parsed into tool_calls / reasoning_content (whole, streamed, with
the SDK's stream helper, n > 1, logprobs, usage), finish_reason, and the 400s. The mocker
applies the guided-decoding mask to its script, so tool_choice required / named turn any script
into a call. What it does NOT check: that a real model emits calls (see docs/TOOLS.md).
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

try:
    import anthropic
except ImportError:
    anthropic = None

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


# Two calls as each format writes them (FormatStreamTest), arguments with spaces between tokens.
SCRIPTS = {
    "hermes": [TWO_CALLS],
    "llama3_json": ['<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}; '
                    '{"name": "search", "parameters": {"q": "Paris news"}}'],
    "mistral": ['[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}, '
                '{"name": "search", "arguments": {"q": "Paris news"}}]',
                'Sure. [TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "c"}'
                '[TOOL_CALLS]search[ARGS]{"q": "Paris news"}'],
}
WANT = [("get_weather", {"city": "Paris", "unit": "c"}), ("search", {"q": "Paris news"})]


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
        content, calls, finish = collect_chat_stream(self, chunks)
        self.assertEqual(content, msg["content"])
        self.assertEqual([(n, a) for n, a, _ in calls],
                         [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]])
        # The arguments stream as the model writes them, not one fragment per call.
        for name, args, fragments in calls:
            self.assertGreater(fragments, 1, (name, args))
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
        bad = '<tool_call>{"name": get_weather, "arguments": {"city": "Paris"}}</tool_call> done'
        r = self.raw(messages=ask(bad), tools=TOOLS)
        self.assertEqual(r["choices"][0]["message"]["content"], bad)
        self.assertNotIn("tool_calls", r["choices"][0]["message"])
        self.assertEqual(r["choices"][0]["finish_reason"], "stop")

    def test_a_call_broken_after_its_arguments_opened_keeps_what_was_written(self):
        # Its header has streamed by then; the end marker does not join the arguments.
        bad = '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call> done'
        r = self.raw(messages=ask(bad), tools=TOOLS)
        msg = r["choices"][0]["message"]
        self.assertEqual(msg["content"], "done")
        self.assertEqual([(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]],
                         [("get_weather", '{"city":')])
        self.assertEqual(r["choices"][0]["finish_reason"], "tool_calls")

    def test_tool_choice_none_leaves_calls_as_content(self):
        r = self.raw(messages=ask(CALL), tools=TOOLS, tool_choice="none")
        self.assertEqual(r["choices"][0]["message"]["content"], CALL)
        self.assertEqual(r["choices"][0]["finish_reason"], "stop")

    def test_named_and_required_are_accepted_and_parsed(self):
        for choice in ({"type": "function", "function": {"name": "get_weather"}}, "required"):
            r = self.raw(messages=ask(CALL), tools=TOOLS, tool_choice=choice, parallel_tool_calls=False)
            self.assertEqual(r["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "get_weather")

    def test_required_constrains_the_reply_to_calls(self):
        # The mocker takes the grammar's next allowed token where its script's is not: plain text
        # becomes a call whose arguments match the schema; with parallel_tool_calls false, a
        # two-call script gives one call.
        r = self.raw(messages=ask("Sure, no tools needed!"), tools=TOOLS, tool_choice="required")
        msg = r["choices"][0]["message"]
        self.assertIsNone(msg["content"])
        self.assertEqual(r["choices"][0]["finish_reason"], "tool_calls")
        for c in msg["tool_calls"]:
            args = json.loads(c["function"]["arguments"])
            if c["function"]["name"] == "get_weather":
                self.assertIsInstance(args["city"], str)
        two = CALL + "\n" + CALL
        r = self.raw(messages=ask(two), tools=TOOLS, tool_choice="required", parallel_tool_calls=False)
        self.assertEqual(len(r["choices"][0]["message"]["tool_calls"]), 1)
        self.assertEqual(json.loads(r["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]),
                         {"city": "Paris", "unit": "c"})

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

    def test_responses_api_has_a_reasoning_item(self):
        from endpoints_test import RESP, check  # the Responses API's schemas
        script = "<think>The user wants weather.</think>\n\nIt is sunny."
        body = {"model": self.model, "input": ask(script)[0]["content"], "max_output_tokens": 400}
        status, whole = sampling_test.post("/responses", body)
        self.assertEqual(status, 200, whole)
        check(self, RESP["Response"], whole)
        self.assertEqual([o["type"] for o in whole["output"]], ["reasoning", "message"])
        self.assertEqual(whole["output"][0]["content"], [{"type": "reasoning_text", "text": "The user wants weather."}])
        self.assertEqual(whole["output"][1]["content"][0]["text"], "It is sunny.")
        body["input"] = ask(script)[0]["content"]
        status, events = sampling_test.post("/responses", {**body, "stream": True}, stream=True)
        self.assertEqual(status, 200, events)
        reasoning, text = "", ""
        for ev in events:
            check(self, RESP["ResponseStreamEvent"], ev)
            if ev["type"] == "response.reasoning_text.delta":
                self.assertEqual(ev["output_index"], 0)
                reasoning += ev["delta"]
            elif ev["type"] == "response.output_text.delta":
                self.assertEqual(ev["output_index"], 1)
                text += ev["delta"]
        self.assertEqual((reasoning, text), ("The user wants weather.", "It is sunny."))
        final = events[-1]["response"]["output"]
        self.assertEqual([(o["type"], o["content"][0].get("text")) for o in final],
                         [(o["type"], o["content"][0].get("text")) for o in whole["output"]])
        # The SDK (strict) parses the reasoning item and its stream helper the events.
        r = self.client.responses.create(model=self.model, input=ask(script)[0]["content"], max_output_tokens=400)
        self.assertEqual(r.output[0].type, "reasoning")
        self.assertEqual(r.output[0].content[0].text, "The user wants weather.")
        self.assertEqual(r.output_text, "It is sunny.")
        with self.client.responses.stream(model=self.model, input=ask(script)[0]["content"],
                                          max_output_tokens=400) as stream:
            final = stream.get_final_response()
        self.assertEqual([o.type for o in final.output], ["reasoning", "message"])
        self.assertEqual(final.output_text, "It is sunny.")

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


def collect_chat_stream(test, chunks):
    """A chat stream's content, calls (name, arguments, fragment count) and finish_reason, checking
    that each call opens with OpenAI's first delta (index, id, type, name, arguments "")."""
    content, calls, finish = "", {}, None
    for c in chunks:
        for ch in c["choices"]:
            d = ch["delta"]
            content += d.get("content") or ""
            for t in d.get("tool_calls") or []:
                if "id" in t:
                    test.assertNotIn(t["index"], calls)
                    test.assertEqual(t["index"], len(calls))
                    test.assertEqual(t["type"], "function")
                    test.assertEqual(t["function"]["arguments"], "")
                    calls[t["index"]] = [t["function"]["name"], "", 0]
                else:
                    test.assertEqual(set(t), {"index", "function"})
                    test.assertEqual(set(t["function"]), {"arguments"})
                    calls[t["index"]][1] += t["function"]["arguments"]
                    calls[t["index"]][2] += 1
            finish = ch["finish_reason"] or finish
    return content, [calls[i] for i in sorted(calls)], finish


class FormatStreamTest(unittest.TestCase):
    """Each format's calls streamed as fragments, through chat (raw, the SDK's stream helper),
    the Responses API and Anthropic's Messages API; parallel_tool_calls false."""

    @classmethod
    def setUpClass(cls):
        ToolsTest.setUpClass.__func__(cls)
        root = ARGS.base_url[:-len("/v1")]
        cls.anth = anthropic.Anthropic(base_url=root, api_key="not-needed", max_retries=0, timeout=120,
                                       _strict_response_validation=True) if anthropic else None
        cls.scripts = SCRIPTS[ARGS.tool_format]

    raw = ToolsTest.raw

    def test_chat_streams_argument_fragments_that_add_up(self):
        for script in self.scripts:
            with self.subTest(script=script):
                whole = self.raw(messages=ask(script), tools=TOOLS)["choices"][0]
                got = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                       for c in whole["message"]["tool_calls"]]
                self.assertEqual(got, WANT)
                self.assertEqual(whole["finish_reason"], "tool_calls")
                content, calls, finish = collect_chat_stream(self, self.raw(stream=True, messages=ask(script),
                                                                             tools=TOOLS))
                self.assertEqual(content, whole["message"]["content"] or "")
                self.assertEqual([(n, a) for n, a, _ in calls],
                                 [(c["function"]["name"], c["function"]["arguments"])
                                  for c in whole["message"]["tool_calls"]])
                for name, args, fragments in calls:  # one byte token per step: many fragments
                    self.assertGreater(fragments, 1, (name, args))
                self.assertEqual(finish, "tool_calls")

    def test_the_sdk_stream_helper_sees_argument_deltas(self):
        for script in self.scripts:
            deltas, done = {}, {}
            with self.client.chat.completions.stream(model=self.model, messages=ask(script), tools=TOOLS,
                                                     max_tokens=400) as stream:
                for ev in stream:
                    if ev.type == "tool_calls.function.arguments.delta":
                        deltas.setdefault(ev.index, []).append(ev.arguments_delta)
                        self.assertTrue(ev.arguments.endswith(ev.arguments_delta))
                    elif ev.type == "tool_calls.function.arguments.done":
                        done[ev.index] = (ev.name, ev.arguments)
                final = stream.get_final_completion()
            calls = final.choices[0].message.tool_calls
            self.assertEqual([(c.function.name, json.loads(c.function.arguments)) for c in calls], WANT)
            self.assertEqual([done[i] for i in sorted(done)],
                             [(c.function.name, c.function.arguments) for c in calls])
            for i, (name, args) in done.items():
                self.assertGreater(len(deltas[i]), 1)
                self.assertEqual("".join(deltas[i]), args)

    def test_parallel_tool_calls_false_ends_the_reply_after_one_call(self):
        script = self.scripts[0]
        for stream in (False, True):
            out = self.raw(stream=stream, messages=ask(script), tools=TOOLS, parallel_tool_calls=False,
                           **({"stream_options": {"include_usage": True}} if stream else {}))
            if stream:
                _, calls, finish = collect_chat_stream(self, out)
                calls = [(n, json.loads(a)) for n, a, _ in calls]
                usage = out[-1]["usage"]
            else:
                calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                         for c in out["choices"][0]["message"]["tool_calls"]]
                finish, usage = out["choices"][0]["finish_reason"], out["usage"]
            self.assertEqual(calls, WANT[:1])
            self.assertEqual(finish, "tool_calls")
            # The generation stopped at the first call's end, far before the script's.
            self.assertLess(usage["completion_tokens"], script.index("search"))

    def test_responses_api_streams_function_call_argument_deltas(self):
        tools = [{"type": "function", "name": t["function"]["name"], "parameters": t["function"]["parameters"]}
                 for t in TOOLS]
        deltas, done = {}, {}
        stream = self.client.responses.create(model=self.model, input=ask(self.scripts[0])[0]["content"],
                                              tools=tools, max_output_tokens=400, stream=True)
        for ev in stream:
            if ev.type == "response.function_call_arguments.delta":
                deltas.setdefault(ev.output_index, []).append(ev.delta)
            elif ev.type == "response.function_call_arguments.done":
                done[ev.output_index] = ev.arguments
            elif ev.type == "response.completed":
                final = ev.response
        calls = [o for o in final.output if o.type == "function_call"]
        self.assertEqual([(c.name, json.loads(c.arguments)) for c in calls], WANT)
        self.assertEqual(sorted(done.values()), sorted(c.arguments for c in calls))
        for i, args in done.items():
            self.assertGreater(len(deltas[i]), 1)
            self.assertEqual("".join(deltas[i]), args)

    def test_anthropic_messages_stream_input_json_deltas(self):
        if self.anth is None:
            self.skipTest("the anthropic SDK is not installed")
        tools = [{"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in TOOLS]
        partial = {}
        with self.anth.messages.stream(model=self.model, max_tokens=400, tools=tools,
                                       messages=ask(self.scripts[0])) as stream:
            for ev in stream:
                if ev.type == "content_block_delta" and ev.delta.type == "input_json_delta":
                    partial.setdefault(ev.index, []).append(ev.delta.partial_json)
            final = stream.get_final_message()
        uses = [b for b in final.content if b.type == "tool_use"]
        self.assertEqual([(u.name, u.input) for u in uses], WANT)
        self.assertEqual(final.stop_reason, "tool_use")
        for parts in partial.values():
            self.assertGreater(len(parts), 1)
        self.assertEqual([json.loads("".join(partial[i])) for i in sorted(partial)],
                         [args for _, args in WANT])


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", default=os.environ.get("DYNAMO_BASE_URL"), help="http://HOST:PORT/v1")
    p.add_argument("--tool-format", default="hermes", choices=sorted(SCRIPTS),
                   help="the server's --tool-call-parser (the scripts FormatStreamTest sends)")
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
