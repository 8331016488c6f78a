#!/usr/bin/env python3
"""Writes the text seed corpora of the fuzz targets into <corpus dir>/<target>/
(scripts/fuzz.sh runs it; binary seeds come from fuzz_make_seeds). Sources: the
tests' chat templates and Jinja cases, llama.cpp's tokenizer test inputs (from
scripts/setup.sh), the example cluster configs, and request bodies below."""
import glob
import hashlib
import json
import os
import sys

root = sys.argv[1]
src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
vocab = os.environ.get("DYNAMO_LLAMA_VOCAB_DIR") or os.path.expanduser("~/.cache/dynamo/llama.cpp-vocab")


def put(target, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]
for path in sorted(glob.glob(os.path.join(src, "tests/runtime/tokenizer/data/templates/*.jinja"))):
    with open(path, encoding="utf-8") as f:
        put("fuzz_jinja", f.read() + "\0" + json.dumps(messages))
with open(os.path.join(src, "tests/runtime/tokenizer/data/jinja_cases.json"), encoding="utf-8") as f:
    for case in json.load(f)["cases"]:
        put("fuzz_jinja", case["template"] + "\0" + json.dumps(case.get("messages", messages)))

# Selector byte: (tokenizer index << 1) | parse_special, as fuzz_tokenizer reads it.
for i, name in enumerate(["gpt-2", "llama-spm", "qwen2", "phi-3", "bert-bge"]):
    path = os.path.join(vocab, f"ggml-vocab-{name}.gguf.inp")
    if not os.path.exists(path):
        continue
    with open(path, "rb") as f:
        cases = f.read().split(b"\n__ggml_vocab_test__\n")
    for text in cases[:40]:
        put("fuzz_tokenizer", bytes([(i << 1) | (len(text) & 1)]) + text)

chat = [
    {"model": "m", "messages": messages},
    {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
     "stream": True, "stream_options": {"include_usage": True}, "max_tokens": 8, "temperature": 0.5,
     "top_p": 0.9, "stop": ["\n", "END"], "seed": 1, "n": 2, "logprobs": True, "top_logprobs": 3},
    {"model": "m", "messages": messages, "logit_bias": {"15": -100, "7": 5}, "presence_penalty": 0.5,
     "frequency_penalty": 0.1, "max_completion_tokens": 4},
    {"model": "m", "messages": messages, "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}},
    {"model": "m", "messages": messages, "response_format": {"type": "json_object"}},
    {"model": "m", "messages": messages, "tool_choice": "auto", "parallel_tool_calls": False,
     "tools": [{"type": "function", "function": {"name": "f", "description": "d",
                                                  "parameters": {"type": "object", "properties": {}}}}]},
    {"model": "m", "messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"}],
     "chat_template_kwargs": {"enable_thinking": False}},
]
for body in chat:
    put("fuzz_openai", b"\0" + json.dumps(body).encode())
completion = [
    {"model": "m", "prompt": "Once upon"},
    {"model": "m", "prompt": ["a", "b"], "max_tokens": 3, "echo": True, "logprobs": 2, "stream": True},
    {"model": "m", "prompt": [1, 2, 3], "stop": "x", "suffix": None, "best_of": 1},
    {"model": "m", "prompt": [[1, 2], [3]], "min_tokens": 1, "ignore_eos": True},
    {"model": "m", "prompt": "The cat sat", "max_tokens": 0, "echo": True, "logprobs": 1,
     "temperature": 0},
]
for body in completion:
    put("fuzz_openai", b"\1" + json.dumps(body).encode())

for s in ["", "{}", '{"a":1}\n{"b":2}', "x\r\ny\rz", "done\0[DONE]", "chunk\0a\nb", "ev\nid: 1\0data"]:
    put("fuzz_sse", s)

# fuzz_http: a piece-size byte, then the bytes of a connection (pipelined too).
body = json.dumps(chat[0])
http = [
    f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    f"Content-Length: {len(body)}\r\n\r\n{body}",
    "GET /v1/models/org%2Fname?x=1 HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models HTTP/1.0\r\n\r\n",
    "POST /admin/workers/00ff/drain HTTP/1.1\r\nAuthorization: Bearer t\r\nContent-Length: 0\r\n\r\n",
    "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n"
    "Content-Type: application/vnd.x+JSON; charset=utf-8\r\n\r\n4\r\n{\"a\"\r\n2\r\n:1\r\n1\r\n}\r\n0\r\n\r\n",
]
for i, req in enumerate(http):
    put("fuzz_http", bytes([i * 5]) + req.encode())

for path in sorted(glob.glob(os.path.join(src, "examples/configs/*.yaml"))):
    with open(path, "rb") as f:
        put("fuzz_cluster_config", f.read())
