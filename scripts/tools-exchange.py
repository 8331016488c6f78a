#!/usr/bin/env python3
"""One tool-calling exchange against a running server, through the official openai SDK
(strict validation, the chat.completions.stream() helper): the same question with
tool_choice auto and required, the call answered by a tool message, and the final answer.
Prints one line per turn (finish_reason, content, calls, argument fragments, tokens).

Manual, not CI: it shows what a real model does (docs/TOOLS.md records a run), e.g.
    build/bin/dynamo-run in=http --http-port 8000 &
    scripts/tools-exchange.py --base-url http://127.0.0.1:8000/v1
"""
import argparse
import json
import time

import openai

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def streamed_turn(client, model, messages, choice, max_tokens):
    fragments, start = {}, time.time()
    with client.chat.completions.stream(model=model, messages=messages, tools=TOOLS, tool_choice=choice,
                                        max_tokens=max_tokens, temperature=0,
                                        stream_options={"include_usage": True}) as stream:
        for ev in stream:
            if ev.type == "tool_calls.function.arguments.delta":
                fragments.setdefault(ev.index, []).append(ev.arguments_delta)
        try:
            r = stream.get_final_completion()
        except openai.LengthFinishReasonError as e:  # the helper refuses a cut reply; show it anyway
            r = e.completion
    m = r.choices[0].message
    calls = [(c.function.name, c.function.arguments) for c in m.tool_calls or []]
    print(f"[{choice}] finish={r.choices[0].finish_reason} content={m.content!r} calls={calls} "
          f"fragments={ {i: len(f) for i, f in fragments.items()} } tokens={r.usage.completion_tokens} "
          f"{time.time() - start:.1f}s")
    return m


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    p.add_argument("--max-tokens", type=int, default=60)
    args = p.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key="not-needed", max_retries=0, timeout=300,
                           _strict_response_validation=True)
    model = client.models.list().data[0].id
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    called = None
    for choice in ("auto", "required"):
        m = streamed_turn(client, model, messages, choice, args.max_tokens)
        called = called or (m.tool_calls[0] if m.tool_calls else None)
    if called is None:
        print("no call was made: no tool turn")
        return
    city = json.loads(called.function.arguments).get("city")
    messages += [{"role": "assistant", "content": None, "tool_calls": [called.model_dump(exclude_none=True)]},
                 {"role": "tool", "tool_call_id": called.id,
                  "content": json.dumps({"city": city, "temperature_c": 21, "sky": "clear"})}]
    r = client.chat.completions.create(model=model, messages=messages, tools=TOOLS, max_tokens=args.max_tokens,
                                       temperature=0)
    print(f"[final] finish={r.choices[0].finish_reason} content={r.choices[0].message.content!r} "
          f"calls={r.choices[0].message.tool_calls} prompt_tokens={r.usage.prompt_tokens}")


if __name__ == "__main__":
    main()
