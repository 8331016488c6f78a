#!/usr/bin/env python3
"""Writes data/chat_template_cases.json: golden renders of real chat templates
(data/templates/*.jinja, the Hugging Face templates llama.cpp keeps in
models/templates) as Hugging Face's apply_chat_template renders them with
Python jinja2 (its environment is in hf_jinja_env.py; strftime_now is pinned),
with the variables messages, tools (None without tools), documents (None),
add_generation_prompt, bos_token, eos_token plus the extra template kwargs. Our C++ interpreter must produce the same text, or an error
where jinja2 raises.

usage: python3 make_chat_template_cases.py > data/chat_template_cases.json   (needs jinja2)
"""
import copy
import json
import os
import sys

import jinja2

from hf_jinja_env import NOW, make_env

HERE = os.path.dirname(os.path.abspath(__file__))

LLAMA3 = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
QWEN = {"bos_token": None, "eos_token": "<|im_end|>"}
MISTRAL = {"bos_token": "<s>", "eos_token": "</s>"}
DEEPSEEK = {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}
PHI3 = {"bos_token": "<s>", "eos_token": "<|endoftext|>"}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city, in °C or °F.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7.5}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        "return": {"type": "string"}}},
]

SYSTEM = {"role": "system", "content": "You are a helpful assistant.\nAnswer briefly."}
USER = {"role": "user", "content": "What's the weather in Paris? 🌦 Привет, 世界!"}
CHAT = [SYSTEM, {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "  Tell me a \"joke\" about 'quotes' \\ and tabs\t.  "}]
NO_SYSTEM = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"},
             {"role": "user", "content": "Bye"}]

CALL_ID = "call12345"  # Mistral wants 9 alphanumerics
TOOL_TURN = [
    SYSTEM, USER,
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": CALL_ID, "type": "function",
         "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": 2}}}]},
    {"role": "tool", "tool_call_id": CALL_ID, "name": "get_weather",
     "content": "{\"temperature\": 21.5, \"sky\": \"clear\"}"},
]
# Templates that read the content of a tool-calling turn need a string there.
TOOL_TURN_EMPTY_CONTENT = copy.deepcopy(TOOL_TURN)
TOOL_TURN_EMPTY_CONTENT[2]["content"] = ""
# The same turn with the arguments as the JSON string OpenAI clients send.
TOOL_TURN_STRING_ARGS = copy.deepcopy(TOOL_TURN)
TOOL_TURN_STRING_ARGS[2]["tool_calls"][0]["function"]["arguments"] = "{\"city\": \"Paris\"}"
TOOL_TURN_STRING_ARGS[2]["content"] = ""
TWO_CALLS = TOOL_TURN[:2] + [
    {"role": "assistant", "content": "Let me check both.", "tool_calls": [
        {"id": CALL_ID, "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"id": "call67890", "type": "function", "function": {"name": "search", "arguments": {"query": "Paris news"}}}]},
    {"role": "tool", "tool_call_id": CALL_ID, "content": "sunny"},
    {"role": "tool", "tool_call_id": "call67890", "content": "nothing new"},
    {"role": "assistant", "content": "Sunny, and no news."},
    {"role": "user", "content": "Thanks"},
]
THINKING = [
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4", "reasoning_content": "Two plus two.\nThat is four."},
    {"role": "user", "content": "And 3+3?"},
    {"role": "assistant", "content": "<think>\nThree and three.\n</think>\n\n6"},
    {"role": "user", "content": "Thanks"},
]
PARTS = [
    {"role": "system", "content": [{"type": "text", "text": "Be terse."}]},
    {"role": "user", "content": [{"type": "text", "text": "Describe "}, {"type": "text", "text": "this."}]},
]
NOT_ALTERNATING = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
BUILTIN = [
    {"role": "user", "content": "Search for llamas"},
    {"role": "assistant", "tool_calls": [
        {"id": CALL_ID, "type": "function", "function": {"name": "brave_search", "arguments": {"query": "llamas"}}}]},
    {"role": "ipython", "content": "Llamas are camelids."},
]

# (template file, special tokens, case name, messages, tools, kwargs)
CASES = [
    ("meta-llama-Llama-3.1-8B-Instruct", LLAMA3, "plain", [SYSTEM, USER], None, {}),
    ("meta-llama-Llama-3.1-8B-Instruct", LLAMA3, "chat", CHAT, None, {}),
    ("meta-llama-Llama-3.1-8B-Instruct", LLAMA3, "no_system", NO_SYSTEM, None, {}),
    ("meta-llama-Llama-3.1-8B-Instruct", LLAMA3, "tools", [SYSTEM, USER], TOOLS, {}),
    ("meta-llama-Llama-3.1-8B-Instruct", LLAMA3, "tools_in_system", [SYSTEM, USER], TOOLS,
     {"tools_in_user_message": False, "date_string": "01 Feb 2025"}),
    ("meta-llama-Llama-3.1-8B-Instruct", LLAMA3, "tool_call_and_result", TOOL_TURN, TOOLS, {}),
    ("meta-llama-Llama-3.1-8B-Instruct", LLAMA3, "two_tool_calls_rejected", TWO_CALLS, TOOLS, {}),
    ("meta-llama-Llama-3.1-8B-Instruct", LLAMA3, "builtin_tools", BUILTIN, None,
     {"builtin_tools": ["brave_search", "code_interpreter", "wolfram_alpha"]}),
    ("meta-llama-Llama-3.1-8B-Instruct", LLAMA3, "content_parts", PARTS, None, {}),
    ("meta-llama-Llama-3.2-3B-Instruct", LLAMA3, "plain", [SYSTEM, USER], None, {}),
    ("meta-llama-Llama-3.2-3B-Instruct", LLAMA3, "chat", CHAT, None, {}),
    ("meta-llama-Llama-3.2-3B-Instruct", LLAMA3, "tools", [USER], TOOLS, {}),
    ("meta-llama-Llama-3.2-3B-Instruct", LLAMA3, "tool_call_and_result", TOOL_TURN, TOOLS, {}),
    ("Qwen-Qwen2.5-7B-Instruct", QWEN, "plain", [SYSTEM, USER], None, {}),
    ("Qwen-Qwen2.5-7B-Instruct", QWEN, "no_system", NO_SYSTEM, None, {}),
    ("Qwen-Qwen2.5-7B-Instruct", QWEN, "tools", [USER], TOOLS, {}),
    ("Qwen-Qwen2.5-7B-Instruct", QWEN, "tool_call_and_result", TOOL_TURN, TOOLS, {}),
    ("Qwen-Qwen2.5-7B-Instruct", QWEN, "two_tool_calls", TWO_CALLS, TOOLS, {}),
    ("Qwen-Qwen3-0.6B", QWEN, "plain", [SYSTEM, USER], None, {}),
    ("Qwen-Qwen3-0.6B", QWEN, "thinking_off", [SYSTEM, USER], None, {"enable_thinking": False}),
    ("Qwen-Qwen3-0.6B", QWEN, "thinking_on", [SYSTEM, USER], None, {"enable_thinking": True}),
    ("Qwen-Qwen3-0.6B", QWEN, "reasoning_history", THINKING, None, {}),
    ("Qwen-Qwen3-0.6B", QWEN, "reasoning_history_thinking_off", THINKING, None, {"enable_thinking": False}),
    ("Qwen-Qwen3-0.6B", QWEN, "tools", [SYSTEM, USER], TOOLS, {}),
    ("Qwen-Qwen3-0.6B", QWEN, "tool_call_with_null_content", TOOL_TURN, TOOLS, {}),
    ("Qwen-Qwen3-0.6B", QWEN, "tool_call_and_result", TOOL_TURN_EMPTY_CONTENT, TOOLS, {}),
    ("Qwen-Qwen3-0.6B", QWEN, "tool_call_string_arguments", TOOL_TURN_STRING_ARGS, TOOLS, {}),
    ("Qwen-Qwen3-0.6B", QWEN, "two_tool_calls", TWO_CALLS, TOOLS, {"enable_thinking": False}),
    ("Qwen-QwQ-32B", QWEN, "reasoning_history", THINKING, None, {}),
    ("Qwen-QwQ-32B", QWEN, "tool_call_with_null_content", TOOL_TURN, TOOLS, {}),
    ("Qwen-QwQ-32B", QWEN, "tool_call_and_result", TOOL_TURN_EMPTY_CONTENT, TOOLS, {}),
    ("mistralai-Mistral-Nemo-Instruct-2407", MISTRAL, "plain", [SYSTEM, USER], None, {}),
    ("mistralai-Mistral-Nemo-Instruct-2407", MISTRAL, "chat", CHAT, None, {}),
    ("mistralai-Mistral-Nemo-Instruct-2407", MISTRAL, "tools", [SYSTEM, USER], TOOLS, {}),
    ("mistralai-Mistral-Nemo-Instruct-2407", MISTRAL, "tool_call_and_result", TOOL_TURN, TOOLS, {}),
    ("mistralai-Mistral-Nemo-Instruct-2407", MISTRAL, "two_tool_calls", TWO_CALLS, TOOLS, {}),
    ("mistralai-Mistral-Nemo-Instruct-2407", MISTRAL, "roles_must_alternate", NOT_ALTERNATING, None, {}),
    ("Mistral-Small-3.2-24B-Instruct-2506", MISTRAL, "plain", [SYSTEM, USER], None, {}),
    ("Mistral-Small-3.2-24B-Instruct-2506", MISTRAL, "default_system_with_date", NO_SYSTEM, None, {}),
    ("Mistral-Small-3.2-24B-Instruct-2506", MISTRAL, "tools", [USER], TOOLS, {}),
    ("Mistral-Small-3.2-24B-Instruct-2506", MISTRAL, "tool_call_and_result", TOOL_TURN, TOOLS, {}),
    ("Mistral-Small-3.2-24B-Instruct-2506", MISTRAL, "content_parts", PARTS, None, {}),
    ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", DEEPSEEK, "chat", CHAT, None, {}),
    ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", DEEPSEEK, "reasoning_history", THINKING, None, {}),
    ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", DEEPSEEK, "tool_call_and_result", TOOL_TURN_STRING_ARGS, None, {}),
    ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B", DEEPSEEK, "chat", CHAT, None, {}),
    ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B", DEEPSEEK, "thinking_off", CHAT, None, {"enable_thinking": False}),
    ("microsoft-Phi-3.5-mini-instruct", PHI3, "chat", CHAT, None, {}),
]


def main():
    env = make_env()
    out = []
    for file, special, name, messages, tools, kwargs in CASES:
        with open(os.path.join(HERE, "data", "templates", file + ".jinja"), encoding="utf-8") as f:
            source = f.read()
        template = env.from_string(source)
        for gen in (True, False):
            case = {"name": file + "/" + name, "template": file + ".jinja", "messages": messages, "tools": tools,
                    "add_generation_prompt": gen, "kwargs": kwargs, **special, "now": NOW.isoformat()}
            try:
                case["expected"] = template.render(messages=copy.deepcopy(messages), tools=copy.deepcopy(tools),
                                                   documents=None, add_generation_prompt=gen, **special,
                                                   **copy.deepcopy(kwargs))
            except Exception as e:  # jinja2 raised: we must return an error value
                case["error"] = type(e).__name__ + ": " + str(e)
            out.append(case)
    json.dump({"generator": f"make_chat_template_cases.py with jinja2 {jinja2.__version__}", "cases": out},
              sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
