#!/usr/bin/env python3
"""End-to-end test of sampling (issue 14 part 4) through the official `openai` SDK with
_strict_response_validation=True, every body and stream chunk also validated against the
OpenAI OpenAPI document's own schemas (data/openai_response_schemas.json, vendored by
data/vendor_openai_schemas.py): logprobs and top_logprobs (chat and completions, whole and
streamed), n > 1, seed, penalties, logit_bias, min_p, min_tokens, ignore_eos,
stop_token_ids, refusal, echo with prompt logprobs (loglikelihood scoring), and the 400s
of out-of-range values.

Run by CTest through with_server.py (DYNAMO_BASE_URL) against dynamo-run with the mocker
(--engine mocker) or the real SmolLM2 model (--engine real). The mocker has no logits: its
tokens follow (previous token, position, seed) and its logprobs are a point mass (0 for the
token, its only alternative); logit processing (bias, penalties, min_p) is checked on the
real model only.

One deviation from the schemas, on purpose: streamed /v1/completions chunks carry
"finish_reason": null until a choice ends, as OpenAI's own API does, while the document's
CreateCompletionResponse (and so the SDK's Completion type) has no null there
(openai/openai-openapi PR #100). Those chunks are validated with finish_reason made
nullable, and that one stream is read with the SDK's default (lenient) validation. The same
holds for echo with logprobs: the first prompt token's token_logprobs and top_logprobs entries
are null (OpenAI's legacy API and vLLM do so; lm-eval-harness skips them), which the document's
item types do not allow: those bodies are validated with null items allowed and read with the
lenient SDK client.
"""
import argparse
import copy
import json
import math
import os
import sys
import unittest
import urllib.error
import urllib.request

try:
    import jsonschema
    import openai
except ImportError as e:  # CTest reads 77 as "skipped"
    print(f"SKIP: {e.name} is not installed (scripts/setup.sh installs it)")
    sys.exit(77)

ARGS = None
HERE = os.path.dirname(os.path.abspath(__file__))


def openapi_to_json_schema(node):
    """OpenAPI 3.0's `nullable: true` (which the document still uses) as JSON Schema."""
    if isinstance(node, list):
        return [openapi_to_json_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: openapi_to_json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


def load_validators():
    with open(os.path.join(HERE, "data", "openai_response_schemas.json")) as f:
        doc = json.load(f)
    components = openapi_to_json_schema(doc["components"])

    def validator(name, patch=None):
        comps = copy.deepcopy(components)
        if patch:
            patch(comps["schemas"])
        schema = {"$ref": f"#/components/schemas/{name}", "components": comps}
        return jsonschema.Draft202012Validator(schema)

    def nullable_finish(schemas):  # see the module docstring
        choice = schemas["CreateCompletionResponse"]["properties"]["choices"]["items"]
        choice["properties"]["finish_reason"] = {"anyOf": [choice["properties"]["finish_reason"],
                                                           {"type": "null"}]}

    def nullable_logprob_items(schemas):  # echo: the first prompt token (see the module docstring)
        choice = schemas["CreateCompletionResponse"]["properties"]["choices"]["items"]
        lp = choice["properties"]["logprobs"]["anyOf"][0]["properties"]
        for key in ("token_logprobs", "top_logprobs"):
            lp[key]["items"] = {"anyOf": [lp[key]["items"], {"type": "null"}]}

    return {
        "chat": validator("CreateChatCompletionResponse"),
        "chat_chunk": validator("CreateChatCompletionStreamResponse"),
        "completion": validator("CreateCompletionResponse"),
        "completion_chunk": validator("CreateCompletionResponse", nullable_finish),
        "completion_echo": validator("CreateCompletionResponse", nullable_logprob_items),
        "completion_echo_chunk": validator(
            "CreateCompletionResponse", lambda s: (nullable_finish(s), nullable_logprob_items(s))),
    }


VALIDATORS = load_validators()


def vocabulary_ids():
    """Token string -> id of the served GGUF model (read with the PyPI `gguf` package)."""
    from gguf import GGUFReader
    path = os.environ.get("DYNAMO_MODEL_PATH") or os.path.expanduser(
        "~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    field = GGUFReader(path).fields["tokenizer.ggml.tokens"]
    return {bytes(field.parts[i]).decode("utf-8"): n for n, i in enumerate(field.data)}


def check_schema(test, kind, body):
    errors = sorted(VALIDATORS[kind].iter_errors(body), key=lambda e: list(e.path))
    test.assertFalse(errors, f"{kind} breaks the OpenAI schema: " +
                     "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:3]))


def post(path, body, stream=False):
    """Raw POST: (status, parsed JSON body) or (status, [chunks]) for SSE."""
    req = urllib.request.Request(ARGS.base_url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            text = r.read().decode()
            status = r.status
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode())
    if not stream:
        return status, json.loads(text)
    chunks = []
    for line in text.split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            chunks.append(json.loads(line[len("data: "):]))
    return status, chunks


class SamplingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = openai.OpenAI(base_url=ARGS.base_url, api_key="not-needed", max_retries=0,
                                   timeout=300, _strict_response_validation=True)
        cls.lenient = openai.OpenAI(base_url=ARGS.base_url, api_key="not-needed", max_retries=0,
                                    timeout=300)
        cls.model = cls.client.models.list().data[0].id
        cls.real = ARGS.engine == "real"
        cls.messages = [{"role": "user", "content": "Tell me about Paris in one sentence."}]

    # -- helpers --------------------------------------------------------------

    def chat_raw(self, stream=False, **kw):
        body = {"model": self.model, "messages": self.messages, "max_tokens": 8, **kw}
        if stream:
            body["stream"] = True
        status, out = post("/chat/completions", body, stream)
        self.assertEqual(status, 200, out)
        for c in (out if stream else [out]):
            check_schema(self, "chat_chunk" if stream else "chat", c)
        return out

    def completion_raw(self, stream=False, **kw):
        body = {"model": self.model, "prompt": "The capital of France is", "max_tokens": 8, **kw}
        if stream:
            body["stream"] = True
        status, out = post("/completions", body, stream)
        self.assertEqual(status, 200, out)
        kind = "completion_echo" if kw.get("echo") else "completion"
        for c in (out if stream else [out]):
            check_schema(self, kind + "_chunk" if stream else kind, c)
        return out

    def sdk_chat(self, **kw):
        kw.setdefault("messages", self.messages)
        kw.setdefault("max_tokens", 8)
        return self.client.chat.completions.create(model=self.model, **kw)

    def sdk_completion(self, **kw):
        kw.setdefault("prompt", "The capital of France is")
        kw.setdefault("max_tokens", 8)
        return self.client.completions.create(model=self.model, **kw)

    def check_chat_logprobs(self, content, lp, top):
        """Token bytes spell the content; logprobs are log-probabilities; alternatives
        are sorted and the chosen token is among them when its logprob is high enough."""
        self.assertEqual(b"".join(bytes(t.bytes) for t in lp.content).decode("utf-8"), content)
        for t in lp.content:
            self.assertLessEqual(t.logprob, 1e-6)
            if self.real:
                self.assertEqual(len(t.top_logprobs), top)
            else:
                self.assertEqual([a.logprob for a in t.top_logprobs], [0.0] * min(top, 1))
            alts = [a.logprob for a in t.top_logprobs]
            self.assertEqual(alts, sorted(alts, reverse=True))
            if alts and t.logprob >= alts[-1] - 1e-6 and self.real:
                self.assertIn(bytes(t.bytes), [bytes(a.bytes) for a in t.top_logprobs])
            if alts:
                self.assertLessEqual(t.logprob, alts[0] + 1e-6)
        self.assertIsNone(lp.refusal)

    # -- chat -----------------------------------------------------------------

    def test_chat_logprobs_n2_whole(self):
        r = self.sdk_chat(n=2, logprobs=True, top_logprobs=3, temperature=0.9, seed=11)
        self.assertEqual([c.index for c in r.choices], [0, 1])
        total = 0
        for c in r.choices:
            self.assertIsNone(c.message.refusal)
            self.check_chat_logprobs(c.message.content, c.logprobs, 3)
            total += len(c.logprobs.content) + (1 if c.finish_reason == "stop" else 0)
        self.assertEqual(r.usage.completion_tokens, total)
        raw = self.chat_raw(n=2, logprobs=True, top_logprobs=3, temperature=0.9, seed=11)
        self.assertIsNone(raw["choices"][0]["message"]["refusal"])
        self.assertEqual([c["message"]["content"] for c in raw["choices"]],
                         [c.message.content for c in r.choices], "a seeded request is reproducible")
        if self.real:
            # Both choices drew their first token from one distribution (the prompt computed once).
            first = [c.logprobs.content[0].top_logprobs for c in r.choices]
            self.assertEqual([(a.token, a.logprob) for a in first[0]], [(a.token, a.logprob) for a in first[1]])

    def test_chat_stream_n2_matches_the_whole_response(self):
        kw = dict(n=2, logprobs=True, top_logprobs=2, temperature=0.8, seed=5, max_tokens=10)
        whole = self.sdk_chat(**kw)
        chunks = self.chat_raw(stream=True, stream_options={"include_usage": True}, **kw)
        text, lps, finish, roles = {0: "", 1: ""}, {0: [], 1: []}, {}, []
        for ch in chunks:
            for c in ch["choices"]:
                i = c["index"]
                if c["delta"].get("role"):
                    roles.append(i)
                text[i] += c["delta"].get("content") or ""
                if c["logprobs"]:
                    lps[i] += c["logprobs"]["content"]
                if c["finish_reason"]:
                    self.assertNotIn(i, finish, "one finish per choice")
                    finish[i] = c["finish_reason"]
        self.assertEqual(sorted(roles), [0, 1])
        self.assertEqual(chunks[-1]["choices"], [])
        self.assertEqual(chunks[-1]["usage"]["completion_tokens"], whole.usage.completion_tokens)
        for c in whole.choices:
            self.assertEqual(text[c.index], c.message.content)
            self.assertEqual(finish[c.index], c.finish_reason)
            self.assertEqual([(t["token"], t["logprob"]) for t in lps[c.index]],
                             [(t.token, t.logprob) for t in c.logprobs.content])
        # The same stream through the SDK with strict validation.
        n_chunks = sum(1 for _ in self.sdk_chat(stream=True, stream_options={"include_usage": True}, **kw))
        self.assertEqual(n_chunks, len(chunks))

    def test_seed_choice0_equals_n1_and_seeds_differ(self):
        one = self.sdk_chat(temperature=1.0, seed=77, max_tokens=12)
        two = self.sdk_chat(temperature=1.0, seed=77, max_tokens=12, n=2)
        self.assertEqual(two.choices[0].message.content, one.choices[0].message.content)
        other = self.sdk_chat(temperature=1.0, seed=78, max_tokens=12)
        self.assertNotEqual(other.choices[0].message.content, one.choices[0].message.content)
        self.assertEqual(self.sdk_chat(temperature=1.0, seed=77, max_tokens=12).choices[0].message.content,
                         one.choices[0].message.content)

    # -- completions ----------------------------------------------------------

    def check_completion_logprobs(self, choice, k):
        lp = choice.logprobs
        self.assertEqual("".join(lp.tokens), choice.text)
        offsets, pos = [], 0
        for t in lp.tokens:
            offsets.append(pos)
            pos += len(t)
        self.assertEqual(lp.text_offset, offsets)
        for tok, value, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
            self.assertIn(tok, top)  # the chosen token is always there (OpenAI: up to logprobs + 1)
            self.assertAlmostEqual(top[tok], value, places=6)
            self.assertLessEqual(len(top), k + 1)
            if self.real:
                self.assertGreaterEqual(len(top), k)

    def test_completion_logprobs_n2_whole_and_streamed(self):
        kw = dict(n=2, logprobs=3, temperature=0.7, seed=3, max_tokens=10)
        r = self.sdk_completion(**kw)
        self.assertEqual([c.index for c in r.choices], [0, 1])
        for c in r.choices:
            self.check_completion_logprobs(c, 3)
        raw = self.completion_raw(**kw)
        self.assertEqual([c["text"] for c in raw["choices"]], [c.text for c in r.choices])
        chunks = self.completion_raw(stream=True, **kw)
        text, tokens, finish = {0: "", 1: ""}, {0: [], 1: []}, {}
        for ch in chunks:
            for c in ch["choices"]:
                text[c["index"]] += c["text"]
                if c["logprobs"]:
                    tokens[c["index"]] += c["logprobs"]["tokens"]
                if c["finish_reason"]:
                    finish[c["index"]] = c["finish_reason"]
        for c in r.choices:
            self.assertEqual(text[c.index], c.text)
            self.assertEqual(tokens[c.index], c.logprobs.tokens)
            self.assertEqual(finish[c.index], c.finish_reason)
        streamed = "".join(ch.choices[0].text for ch in self.lenient.completions.create(
            model=self.model, prompt="The capital of France is", stream=True, **kw) if ch.choices[0].index == 0)
        self.assertEqual(streamed, r.choices[0].text)

    def test_completion_logprobs_zero_gives_the_chosen_token_only(self):
        c = self.sdk_completion(logprobs=0, temperature=0, max_tokens=4).choices[0]
        for tok, top in zip(c.logprobs.tokens, c.logprobs.top_logprobs):
            self.assertEqual(list(top), [tok])

    # -- echo and prompt logprobs ----------------------------------------------

    def check_echo_logprobs(self, prompt, lp, top):
        """The prompt's tokens spell it, the first has no logprob, the others are
        log-probabilities with their alternatives; offsets count code points."""
        self.assertEqual("".join(lp["tokens"]), prompt)
        self.assertIsNone(lp["token_logprobs"][0])
        self.assertIsNone(lp["top_logprobs"][0])
        self.assertEqual(lp["text_offset"], [len("".join(lp["tokens"][:i])) for i in range(len(lp["tokens"]))])
        for tok, value, alts in zip(lp["tokens"][1:], lp["token_logprobs"][1:], lp["top_logprobs"][1:]):
            self.assertLessEqual(value, 1e-6)
            self.assertIn(tok, alts)  # the alternatives and the token itself (logprobs + 1 at most)
            self.assertLessEqual(len(alts), top + 1)
            if self.real:
                self.assertGreaterEqual(max(alts.values()), value - 1e-6)

    def test_echo_logprobs_score_the_prompt(self):
        prompt = "The capital of France is Paris"
        kw = dict(prompt=prompt, echo=True, logprobs=2, temperature=0)
        scored = self.completion_raw(max_tokens=0, **kw)
        c = scored["choices"][0]
        self.assertEqual(c["text"], prompt)
        self.assertEqual(c["finish_reason"], "length")
        self.assertEqual(scored["usage"]["completion_tokens"], 0)
        self.check_echo_logprobs(prompt, c["logprobs"], 2)
        n = len(c["logprobs"]["tokens"])
        self.assertEqual(scored["usage"]["prompt_tokens"], n)  # the model adds no BOS
        # With output: the same prompt part, then the completion's tokens.
        more = self.completion_raw(max_tokens=3, **kw)["choices"][0]
        self.assertTrue(more["text"].startswith(prompt))
        self.assertEqual(more["logprobs"]["tokens"][:n], c["logprobs"]["tokens"])
        for a, b in zip(more["logprobs"]["token_logprobs"][1:n], c["logprobs"]["token_logprobs"][1:]):
            self.assertAlmostEqual(a, b, delta=1e-5)
        self.assertEqual("".join(more["logprobs"]["tokens"]), more["text"])
        # Streamed: the prompt is the first chunk, with its logprobs.
        chunks = self.completion_raw(stream=True, max_tokens=3, **kw)
        first = chunks[0]["choices"][0]
        self.assertEqual(first["text"], prompt)
        self.assertEqual(first["logprobs"]["tokens"], c["logprobs"]["tokens"])
        self.assertEqual("".join(ch["choices"][0]["text"] for ch in chunks), more["text"])
        # The SDK (lenient: the null first entries) reads the same numbers.
        sdk = self.lenient.completions.create(model=self.model, max_tokens=0, **kw).choices[0]
        self.assertEqual(sdk.logprobs.token_logprobs, c["logprobs"]["token_logprobs"])
        if not self.real:
            return
        # The engine's own next-token logprobs (greedy: the raw distribution) give the same
        # values: prompt token k scored with the prefix before it as the prompt.
        root = ARGS.base_url[: -len("/v1")]
        req = urllib.request.Request(root + "/tokenize", data=json.dumps(
            {"model": self.model, "prompt": prompt}).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            ids = json.loads(r.read())["tokens"]
        self.assertEqual(len(ids), n)
        matched = 0
        for k in range(1, n):
            nxt = self.completion_raw(prompt=ids[:k], max_tokens=1, logprobs=5, temperature=0)
            alts = nxt["choices"][0]["logprobs"]["top_logprobs"][0]
            tok = c["logprobs"]["tokens"][k]
            if tok in alts:
                matched += 1
                self.assertAlmostEqual(alts[tok], c["logprobs"]["token_logprobs"][k], delta=1e-4, msg=tok)
        self.assertGreaterEqual(matched, n // 2)

    def test_echo_combinations_we_do_not_serve_are_400(self):
        status, err = post("/completions", {"model": self.model, "prompt": "x", "echo": True, "n": 2})
        self.assertEqual(status, 400)
        self.assertEqual(err["error"]["param"], "echo")
        self.assertEqual(err["error"]["code"], "unsupported_value")
        status, err = post("/completions", {"model": self.model, "prompt": "x", "max_tokens": 0})
        self.assertEqual(status, 400)
        self.assertEqual(err["error"]["param"], "max_tokens")

    # -- logit processing (real model) ----------------------------------------

    def greedy_first(self, **kw):
        r = self.sdk_chat(temperature=0, max_tokens=1, logprobs=True, top_logprobs=5, **kw)
        return r.choices[0].logprobs.content[0]

    def test_logprobs_are_a_distribution(self):
        if not self.real:
            self.skipTest("the mocker has no logits")
        t = self.greedy_first()
        self.assertEqual(t.logprob, t.top_logprobs[0].logprob)  # greedy picks the most likely
        mass = sum(math.exp(a.logprob) for a in t.top_logprobs)
        self.assertLessEqual(mass, 1.0 + 1e-5)

    def test_logit_bias_forces_and_forbids_tokens(self):
        if not self.real:
            self.skipTest("the mocker ignores logit_bias")
        ids = vocabulary_ids()
        prompt = "The capital of France is"
        plain = self.sdk_completion(prompt=prompt, max_tokens=1, temperature=0, logprobs=2).choices[0]
        self.assertEqual(plain.text, " Paris")
        paris = ids["\u0120Paris"]  # byte-level BPE writes the leading space as U+0120
        banned = self.sdk_completion(prompt=prompt, max_tokens=1, temperature=0, logprobs=2,
                                     logit_bias={str(paris): -100}).choices[0]
        self.assertNotEqual(banned.text, " Paris")
        # The runner-up of the unbiased distribution wins.
        runner_up = [t for t in plain.logprobs.top_logprobs[0] if t != " Paris"][0]
        self.assertEqual(banned.text, runner_up)
        forced = self.sdk_completion(prompt=prompt, max_tokens=2, temperature=0, logprobs=1,
                                     logit_bias={str(ids["\u0120London"]): 100}).choices[0]
        self.assertEqual(forced.logprobs.tokens, [" London", " London"])
        self.assertGreater(forced.logprobs.token_logprobs[0], -1e-3)  # +100 leaves nothing else

    def test_penalties_change_greedy_repetition(self):
        if not self.real:
            self.skipTest("the mocker ignores penalties")
        prompt = "The cat sat on the mat. The cat sat on the mat. The cat"
        plain = self.sdk_completion(prompt=prompt, temperature=0, max_tokens=8).choices[0].text
        self.assertIn(" sat on the mat", plain)  # greedy repeats the prompt
        rep = self.sdk_completion(prompt=prompt, temperature=0, max_tokens=8,
                                  extra_body={"repetition_penalty": 2.0})
        self.assertNotIn(" sat", rep.choices[0].text)  # every prompt token is penalised
        freq = self.sdk_completion(prompt=prompt, temperature=0, max_tokens=12, frequency_penalty=2.0,
                                   presence_penalty=2.0, logprobs=1)
        toks = freq.choices[0].logprobs.tokens
        self.assertLess(max(toks.count(t) for t in set(toks)), 4, "no token dominates under penalties")

    def test_min_p_one_is_greedy(self):
        if not self.real:
            self.skipTest("the mocker has no logits")
        greedy = self.sdk_chat(temperature=0, max_tokens=10).choices[0].message.content
        for seed in (1, 2):
            self.assertEqual(self.sdk_chat(temperature=1.5, seed=seed, max_tokens=10,
                                           extra_body={"min_p": 1.0}).choices[0].message.content, greedy)

    def test_greedy_n2_choices_are_equal(self):
        if not self.real:
            self.skipTest("the mocker's choices follow their own streams")
        r = self.sdk_chat(temperature=0, n=2, max_tokens=10)
        self.assertEqual(r.choices[0].message.content, r.choices[1].message.content)

    # -- stop rules -----------------------------------------------------------

    def test_min_tokens_masks_eos_and_ignore_eos_runs_to_max_tokens(self):
        if not self.real:
            self.skipTest("the mocker never emits EOS")
        question = [{"role": "user", "content": "What is the capital of France?"}]
        short = self.sdk_chat(messages=question, temperature=0, max_tokens=64)
        self.assertEqual(short.choices[0].finish_reason, "stop")
        n = short.usage.completion_tokens  # the EOS token counts
        longer = self.sdk_chat(messages=question, temperature=0, max_tokens=64,
                               extra_body={"min_tokens": n + 4}, logprobs=True)
        self.assertGreaterEqual(longer.usage.completion_tokens, n + 4)
        self.assertTrue(longer.choices[0].message.content.startswith(short.choices[0].message.content))
        ignored = self.sdk_chat(messages=question, temperature=0, max_tokens=n + 6,
                                extra_body={"ignore_eos": True})
        self.assertEqual(ignored.usage.completion_tokens, n + 6)
        self.assertEqual(ignored.choices[0].finish_reason, "length")

    def test_stop_token_ids_end_a_choice_without_its_text(self):
        if self.real:
            self.skipTest("token ids of the mocker's byte vocabulary are its characters")
        full = self.sdk_completion(seed=9, max_tokens=12).choices[0].text
        cut_at = full[4]
        r = self.sdk_completion(seed=9, max_tokens=12, logprobs=1,
                                extra_body={"stop_token_ids": [ord(cut_at)], "ignore_eos": True})
        c = r.choices[0]
        self.assertEqual(c.finish_reason, "stop")
        self.assertEqual(c.text, full[: full.index(cut_at)])
        self.assertEqual(c.logprobs.tokens, list(c.text))
        self.assertEqual(r.usage.completion_tokens, len(c.text) + 1)  # the stop token counts

    # -- validation -----------------------------------------------------------

    def test_out_of_range_values_are_400_naming_the_parameter(self):
        cases = [
            ("/chat/completions", {"presence_penalty": 2.5}, "presence_penalty"),
            ("/chat/completions", {"frequency_penalty": -3}, "frequency_penalty"),
            ("/chat/completions", {"repetition_penalty": 0}, "repetition_penalty"),
            ("/chat/completions", {"min_p": 1.5}, "min_p"),
            ("/chat/completions", {"logit_bias": {"5": 101}}, "logit_bias"),
            ("/chat/completions", {"logit_bias": {"abc": 1}}, "logit_bias"),
            ("/chat/completions", {"logit_bias": {"4000000000": 1}}, "logit_bias"),
            ("/chat/completions", {"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
            ("/chat/completions", {"top_logprobs": 3}, "top_logprobs"),
            ("/chat/completions", {"n": 0}, "n"),
            ("/chat/completions", {"n": 129}, "n"),
            ("/completions", {"logprobs": 6}, "logprobs"),
            ("/completions", {"n": 2, "best_of": 1}, "best_of"),
            ("/completions", {"stop_token_ids": [10 ** 9]}, "stop_token_ids[0]"),
        ]
        for path, extra, param in cases:
            with self.subTest(param=param, extra=extra):
                body = {"model": self.model, "max_tokens": 2, **extra}
                body.update({"messages": self.messages} if path == "/chat/completions" else {"prompt": "x"})
                status, err = post(path, body)
                self.assertEqual(status, 400)
                self.assertEqual(err["error"]["param"], param)
                self.assertEqual(err["error"]["type"], "invalid_request_error")
        with self.assertRaises(openai.BadRequestError) as ctx:
            self.sdk_chat(presence_penalty=3)
        self.assertEqual(ctx.exception.body["param"], "presence_penalty")


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
