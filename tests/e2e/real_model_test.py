#!/usr/bin/env python3
"""End-to-end checks of dynamo-run serving the real default model (SmolLM2-135M
on the CPU engine) through the official `openai` client. The server comes from
with_server.py (DYNAMO_BASE_URL)."""
import os
import sys

try:
    from openai import OpenAI
except ImportError:
    print("SKIP: the `openai` Python package is not installed")
    sys.exit(77)

base_url = os.environ["DYNAMO_BASE_URL"]
client = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0, timeout=300)
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


model = client.models.list().data[0].id
print("model:", model)

question = [{"role": "user", "content": "What is the capital of France?"}]
answer = client.chat.completions.create(model=model, messages=question, temperature=0, max_tokens=32)
text = answer.choices[0].message.content
print("answer:", repr(text))
check("Paris" in text, "the capital of France is Paris")
check(answer.usage.prompt_tokens > 20, "usage counts the chat template's system prompt too")
check(answer.choices[0].finish_reason in ("stop", "length"), "finish_reason is stop or length")

again = client.chat.completions.create(model=model, messages=question, temperature=0, max_tokens=32)
check(again.choices[0].message.content == text, "greedy decoding is deterministic")

stream = client.chat.completions.create(model=model, messages=question, temperature=0, max_tokens=32,
                                        stream=True, stream_options={"include_usage": True})
pieces, usage = [], None
for chunk in stream:
    if chunk.choices and chunk.choices[0].delta.content:
        pieces.append(chunk.choices[0].delta.content)
    if chunk.usage:
        usage = chunk.usage
check("".join(pieces) == text, "streamed text equals the non-streamed text")
check(usage is not None and usage.completion_tokens == answer.usage.completion_tokens,
      "streamed usage matches")

seeded = [client.completions.create(model=model, prompt="Once upon a time", max_tokens=16,
                                    temperature=0.8, seed=1234).choices[0].text for _ in range(2)]
check(seeded[0] == seeded[1] and len(seeded[0]) > 0, "seeded sampling is reproducible")

if failures:
    print(f"{len(failures)} check(s) failed", file=sys.stderr)
    sys.exit(1)
print("all real-model checks passed")
