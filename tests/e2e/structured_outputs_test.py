#!/usr/bin/env python3
"""End-to-end test of structured outputs (issue 14 part 2) through the official `openai` SDK
(_strict_response_validation=True): response_format json_schema (validated with `jsonschema`)
and json_object, guided_choice and guided_regex (top level and under nvext, as extra_body),
for chat and completions, whole and streamed, greedy and at temperature > 0, n = 2; and the
400s of invalid or unsupported schemas, regexes and grammars.

Run by CTest through with_server.py (DYNAMO_BASE_URL) against dynamo-run with the mocker
(--engine mocker: its tokens are bytes, picked under the grammar mask) or the real SmolLM2
model (--engine real).
"""
import argparse
import json
import os
import re
import sys
import unittest

try:
    import jsonschema
    import openai
except ImportError as e:  # CTest reads 77 as "skipped"
    print(f"SKIP: {e.name} is not installed (scripts/setup.sh installs it)")
    sys.exit(77)

ARGS = None

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "city": {"type": "string", "enum": ["Paris", "London", "Tokyo"]},
        "languages": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
    },
    "required": ["name", "age", "city"],
    "additionalProperties": False,
}

# More shapes: nesting, anyOf, formats, $ref, numbers with bounds, booleans and null.
SCHEMAS = [
    PERSON,
    {"type": "object", "properties": {"ok": {"type": "boolean"}, "score": {"type": "number", "minimum": 0, "maximum": 10},
                                      "note": {"anyOf": [{"type": "null"}, {"type": "string", "maxLength": 16}]}},
     "required": ["ok", "score", "note"]},
    {"type": "object", "$defs": {"pt": {"type": "object", "properties": {"x": {"type": "integer", "minimum": -50, "maximum": 50},
                                                                         "y": {"type": "integer", "minimum": -50, "maximum": 50}},
                                        "required": ["x", "y"]}},
     "properties": {"points": {"type": "array", "items": {"$ref": "#/$defs/pt"}, "minItems": 1, "maxItems": 3}},
     "required": ["points"]},
    {"type": "object", "properties": {"day": {"type": "string", "format": "date"}, "id": {"type": "string", "format": "uuid"}},
     "required": ["day", "id"]},
    {"type": "array", "items": {"type": "string", "enum": ["red", "green", "blue"]}, "minItems": 2, "maxItems": 4},
]


class StructuredOutputsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = openai.OpenAI(base_url=ARGS.base_url, api_key="not-needed", max_retries=0,
                                   timeout=600, _strict_response_validation=True)
        # Streamed /v1/completions chunks carry "finish_reason": null until the end, as
        # OpenAI's API does, which the SDK's strict Completion type rejects (see
        # sampling_test.py): those streams are read leniently.
        cls.lenient = openai.OpenAI(base_url=ARGS.base_url, api_key="not-needed", max_retries=0, timeout=600)
        cls.model = cls.client.models.list().data[0].id
        cls.real = ARGS.engine == "real"
        cls.messages = [{"role": "user", "content": "Describe a person who lives in Paris as JSON."}]

    def chat(self, stream=False, **kw):
        kw.setdefault("messages", self.messages)
        kw.setdefault("max_tokens", 300)
        if not stream:
            return self.client.chat.completions.create(model=self.model, **kw)
        text, finish = {}, {}
        for chunk in self.client.chat.completions.create(model=self.model, stream=True, **kw):
            for c in chunk.choices:
                text[c.index] = text.get(c.index, "") + (c.delta.content or "")
                if c.finish_reason:
                    finish[c.index] = c.finish_reason
        return text, finish

    def completion(self, stream=False, **kw):
        kw.setdefault("prompt", "A person, as JSON:")
        kw.setdefault("max_tokens", 300)
        if not stream:
            return self.client.completions.create(model=self.model, **kw)
        text, finish = {}, {}
        for chunk in self.lenient.completions.create(model=self.model, stream=True, **kw):
            for c in chunk.choices:
                text[c.index] = text.get(c.index, "") + c.text
                if c.finish_reason:
                    finish[c.index] = c.finish_reason
        return text, finish

    def check_valid(self, text, schema, finish):
        self.assertEqual(finish, "stop", text)
        value = json.loads(text)
        jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(value)
        return value

    @staticmethod
    def schema_format(schema, name="out"):
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}

    # -- response_format ------------------------------------------------------

    def test_json_schema_whole_greedy_and_sampled(self):
        for temperature in (0.0, 1.0):
            r = self.chat(response_format=self.schema_format(PERSON, "person"), temperature=temperature, seed=3)
            with self.subTest(temperature=temperature, text=r.choices[0].message.content):
                self.check_valid(r.choices[0].message.content, PERSON, r.choices[0].finish_reason)

    def test_json_schema_stream_n2(self):
        text, finish = self.chat(stream=True, response_format=self.schema_format(PERSON), n=2, temperature=0.9, seed=7)
        self.assertEqual(sorted(text), [0, 1])
        for i in (0, 1):
            with self.subTest(choice=i, text=text[i]):
                self.check_valid(text[i], PERSON, finish[i])

    def test_many_schemas_at_temperature(self):
        for k, schema in enumerate(SCHEMAS):
            for seed in (1, 2):
                r = self.chat(response_format=self.schema_format(schema), temperature=1.0, top_p=0.95, seed=seed)
                with self.subTest(schema=k, seed=seed, text=r.choices[0].message.content):
                    self.check_valid(r.choices[0].message.content, schema, r.choices[0].finish_reason)

    def test_json_object(self):
        r = self.chat(response_format={"type": "json_object"}, temperature=0.7, seed=1, max_tokens=400)
        c = r.choices[0]
        if c.finish_reason == "stop":  # any object may also run into max_tokens
            self.assertIsInstance(json.loads(c.message.content), dict)
        else:
            self.assertTrue(c.message.content.startswith("{"))
        text, finish = self.chat(stream=True, response_format={"type": "json_object"}, temperature=0.0, max_tokens=400)
        if finish[0] == "stop":
            self.assertIsInstance(json.loads(text[0]), dict)

    def test_completions_json_schema(self):
        # The SDK's completions.create has no response_format parameter: vLLM-style, as extra_body.
        fmt = {"response_format": self.schema_format(PERSON)}
        r = self.completion(extra_body=fmt, temperature=0.8, seed=2)
        self.check_valid(r.choices[0].text, PERSON, r.choices[0].finish_reason)
        text, finish = self.completion(stream=True, extra_body=fmt, temperature=0.0)
        self.check_valid(text[0], PERSON, finish[0])

    # -- guided_* extensions ----------------------------------------------------

    def test_guided_choice(self):
        choices = ["positive", "negative", "neutral"]
        for extra in ({"guided_choice": choices}, {"nvext": {"guided_choice": choices}}):
            r = self.chat(messages=[{"role": "user", "content": "Sentiment of 'I love it'?"}], extra_body=extra,
                          temperature=1.0, seed=4)
            self.assertIn(r.choices[0].message.content, choices)
            self.assertEqual(r.choices[0].finish_reason, "stop")
        text, finish = self.completion(stream=True, prompt="The sentiment is", extra_body={"nvext": {"guided_choice": choices}})
        self.assertIn(text[0], choices)
        self.assertEqual(finish[0], "stop")

    def test_guided_regex(self):
        pattern = r"[A-Z][a-z]{2,8}, [0-9]{2}"
        for extra in ({"guided_regex": pattern}, {"nvext": {"guided_regex": pattern}}):
            r = self.chat(extra_body=extra, temperature=0.9, seed=5)
            self.assertRegex(r.choices[0].message.content, "^" + pattern + "$")
            self.assertEqual(r.choices[0].finish_reason, "stop")
        text, finish = self.chat(stream=True, extra_body={"nvext": {"guided_regex": pattern}})
        self.assertTrue(re.fullmatch(pattern, text[0]), text[0])
        r = self.completion(extra_body={"guided_regex": r"\d{3}-\d{4}"}, temperature=1.0, seed=9)
        self.assertTrue(re.fullmatch(r"\d{3}-\d{4}", r.choices[0].text), r.choices[0].text)

    # -- errors -------------------------------------------------------------------

    def check_400(self, param, needle, **kw):
        with self.assertRaises(openai.BadRequestError) as ctx:
            self.chat(**kw)
        body = ctx.exception.body
        self.assertEqual(body["param"], param, body)
        self.assertIn(needle, body["message"])

    def test_invalid_specs_are_400(self):
        self.check_400("response_format.json_schema.schema", "uniqueItems",
                       response_format=self.schema_format({"type": "array", "uniqueItems": True}))
        self.check_400("nvext.guided_regex", "regex", extra_body={"nvext": {"guided_regex": "a(b"}})
        self.check_400("guided_regex", "lookaround", extra_body={"guided_regex": "a(?=b)"})
        self.check_400("guided_grammar", "undefined_rule", extra_body={"guided_grammar": "root ::= undefined_rule"})
        self.check_400("response_format.type", "json_schema", response_format={"type": "yaml"})


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", default=os.environ.get("DYNAMO_BASE_URL"), help="http://HOST:PORT/v1")
    p.add_argument("--engine", choices=["mocker", "real"], required=True)
    ARGS, rest = p.parse_known_args()
    if not ARGS.base_url:
        p.error("give --base-url or set DYNAMO_BASE_URL")
    ARGS.base_url = ARGS.base_url.rstrip("/")
    if not ARGS.base_url.endswith("/v1"):
        ARGS.base_url += "/v1"
    result = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
