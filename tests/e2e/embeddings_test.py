#!/usr/bin/env python3
"""End-to-end test of POST /v1/embeddings against dynamo-run (mocker or the real
default model), through the official `openai` SDK with _strict_response_validation=True:

- embeddings.create with the SDK's default (base64) and with encoding_format="float": the
  same unit-norm vectors, every raw body validated against the OpenAI OpenAPI document's
  CreateEmbeddingResponse schema (data/openai_response_schemas.json);
- several inputs at once (strings and token ids) come back in order, equal inputs equal;
  usage.prompt_tokens is the sum of /tokenize's counts;
- 4xx envelopes: empty input, a width other than the model's (dimensions), an unknown
  model, a body not sent as JSON;
- the endpoint is counted in /metrics (endpoint="embeddings");
- --reference (real model only): the served embedding against decoder_ref.py --hidden,
  the independent float64 numpy forward pass over the same GGUF file.
"""
import argparse
import base64
import json
import math
import os
import struct
import subprocess
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
REFERENCE = os.path.join(HERE, "..", "runtime", "model", "decoder_ref.py")

with open(os.path.join(HERE, "data", "openai_response_schemas.json")) as f:
    _components = json.load(f)["components"]
SCHEMA = jsonschema.Draft202012Validator({"$ref": "#/components/schemas/CreateEmbeddingResponse",
                                          "components": _components})


def post(path, body, content_type="application/json"):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(ARGS.root + path, data=data, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode())


def norm(v):
    return math.sqrt(sum(x * x for x in v))


class Embeddings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = openai.OpenAI(base_url=ARGS.root + "/v1", api_key="none", _strict_response_validation=True,
                                   max_retries=0, timeout=300)
        # The SDK asks for base64 when no encoding_format is given and decodes it after
        # validation, so its strict mode refuses the (schema-valid) base64 string: that
        # path is exercised without strict mode; the raw body is schema-checked instead.
        cls.lenient = openai.OpenAI(base_url=ARGS.root + "/v1", api_key="none", max_retries=0, timeout=300)

    def raw(self, body):
        """The body of a 200 answer, checked against CreateEmbeddingResponse; base64
        vectors (which OpenAI's schema does not describe) are checked decoded."""
        status, j = post("/v1/embeddings", body)
        self.assertEqual(status, 200, j)
        checked = json.loads(json.dumps(j))
        for d in checked.get("data", []):
            if isinstance(d.get("embedding"), str):
                raw = base64.b64decode(d["embedding"], validate=True)
                d["embedding"] = list(struct.unpack(f"<{len(raw) // 4}f", raw))
        errors = list(SCHEMA.iter_errors(checked))
        self.assertFalse(errors, "\n".join(e.message[:300] for e in errors[:5]))
        return j

    def test_sdk_base64_and_float_agree_and_are_unit_vectors(self):
        text = "The capital of France is Paris."
        b64 = self.lenient.embeddings.create(model=ARGS.model, input=text)  # the SDK asks for base64
        flt = self.client.embeddings.create(model=ARGS.model, input=text, encoding_format="float")
        self.assertEqual(len(b64.data), 1)
        v, w = b64.data[0].embedding, flt.data[0].embedding
        self.assertEqual(len(v), ARGS.dims)
        self.assertEqual(v, w)  # base64 is exact float32; JSON numbers round-trip float32
        self.assertAlmostEqual(norm(v), 1.0, places=5)
        self.assertEqual(b64.model, ARGS.model)
        self.assertEqual(b64.object, "list")
        self.assertGreater(b64.usage.prompt_tokens, 0)
        self.assertEqual(b64.usage.total_tokens, b64.usage.prompt_tokens)
        raw = self.raw({"model": ARGS.model, "input": text, "encoding_format": "base64"})
        decoded = list(struct.unpack(f"<{ARGS.dims}f", base64.b64decode(raw["data"][0]["embedding"])))
        self.assertEqual(decoded, v)

    def test_several_inputs_come_back_in_order(self):
        inputs = ["alpha beta", "gamma", "alpha beta", "a much longer input " * 8]
        r = self.client.embeddings.create(model=ARGS.model, input=inputs, encoding_format="float")
        self.assertEqual([d.index for d in r.data], [0, 1, 2, 3])
        self.assertEqual(r.data[0].embedding, r.data[2].embedding)
        self.assertNotEqual(r.data[0].embedding, r.data[1].embedding)
        counts = 0
        for text in inputs:
            status, t = post("/tokenize", {"model": ARGS.model, "prompt": text})
            self.assertEqual(status, 200, t)
            counts += t["count"]
        self.assertEqual(r.usage.prompt_tokens, counts)
        alone = self.client.embeddings.create(model=ARGS.model, input=inputs[3], encoding_format="float")
        self.assertEqual(alone.data[0].embedding, r.data[3].embedding)  # batch-invariant

    def test_token_id_inputs_equal_their_text(self):
        status, t = post("/tokenize", {"model": ARGS.model, "prompt": "hello world"})
        self.assertEqual(status, 200, t)
        ids = t["tokens"]
        by_text = self.raw({"model": ARGS.model, "input": "hello world"})
        by_ids = self.raw({"model": ARGS.model, "input": ids})
        nested = self.raw({"model": ARGS.model, "input": [ids, ids]})
        self.assertEqual(by_text["data"][0]["embedding"], by_ids["data"][0]["embedding"])
        self.assertEqual(nested["data"][1]["embedding"], by_ids["data"][0]["embedding"])

    def test_bad_requests_are_openai_errors(self):
        cases = [
            ({"model": ARGS.model, "input": ""}, 400, "input"),
            ({"model": ARGS.model, "input": ["ok", ""]}, 400, "input[1]"),
            ({"model": ARGS.model, "input": "x", "dimensions": ARGS.dims + 1}, 400, "dimensions"),
            ({"model": ARGS.model, "input": "x", "encoding_format": "int8"}, 400, "encoding_format"),
            ({"model": "no-such-model", "input": "x"}, 404, "model"),
        ]
        for body, status, param in cases:
            with self.subTest(body=body):
                got, j = post("/v1/embeddings", body)
                self.assertEqual(got, status, j)
                self.assertEqual(j["error"]["param"], param)
        got, j = post("/v1/embeddings", b'{"model":"x","input":"y"}', content_type="text/plain")
        self.assertEqual(got, 415, j)
        with self.assertRaises(openai.BadRequestError):
            self.client.embeddings.create(model=ARGS.model, input="x", dimensions=ARGS.dims + 1)

    def test_counted_in_metrics(self):
        self.client.embeddings.create(model=ARGS.model, input="count me", encoding_format="float")
        with urllib.request.urlopen(ARGS.root + "/metrics", timeout=30) as r:
            text = r.read().decode()
        ok = [l for l in text.splitlines()
              if l.startswith("dynamo_frontend_requests_total") and 'endpoint="embeddings"' in l
              and 'status="success"' in l]
        self.assertTrue(ok, "no successful embeddings request in /metrics")

    def test_matches_the_float64_reference(self):
        if not ARGS.reference:
            self.skipTest("needs --reference")
        text = "Embeddings are the final hidden state of the last token."
        status, t = post("/tokenize", {"model": ARGS.model, "prompt": text})
        self.assertEqual(status, 200, t)
        out = subprocess.run([sys.executable, REFERENCE, "--model", ARGS.reference, "--hidden"]
                             + [str(i) for i in t["tokens"]], capture_output=True, text=True, check=True)
        lines = out.stdout.split("\n")
        ref = [float(x) for x in lines[1:1 + int(lines[0].split()[1])]]
        ref = [x / norm(ref) for x in ref]
        ours = self.client.embeddings.create(model=ARGS.model, input=text, encoding_format="float").data[0].embedding
        self.assertEqual(len(ours), len(ref))
        worst = max(abs(a - b) for a, b in zip(ours, ref))
        cosine = sum(a * b for a, b in zip(ours, ref))
        print(f"\nreference: max |normalized diff| {worst:.2e}, cosine {cosine:.6f}", flush=True)
        self.assertGreater(cosine, 0.99999)  # measured: 1 - <1e-6
        self.assertLess(worst, 1e-3)  # measured: 6.4e-5 (fp16 KV cache, int16 activation blocks)


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", default=os.environ.get("DYNAMO_BASE_URL", "http://127.0.0.1:8000/v1"))
    ap.add_argument("--model", help="served model name (default: the first of /v1/models)")
    ap.add_argument("--dims", type=int, required=True, help="the model's embedding width")
    ap.add_argument("--reference", help="the served GGUF file ('default': the default model's), compared "
                                        "with decoder_ref.py --hidden")
    ARGS, rest = ap.parse_known_args()
    ARGS.root = ARGS.base_url.rstrip("/").removesuffix("/v1")
    if not ARGS.model:
        with urllib.request.urlopen(ARGS.root + "/v1/models", timeout=30) as r:
            ARGS.model = json.loads(r.read().decode())["data"][0]["id"]
    if ARGS.reference == "default":
        ARGS.reference = os.environ.get("DYNAMO_MODEL_PATH") or os.path.expanduser(
            "~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
