#!/usr/bin/env python3
"""Writes data/jinja_cases.json: Jinja feature cases rendered by Python
jinja2 the way Hugging Face's apply_chat_template renders chat templates (its
environment is in hf_jinja_env.py; strftime_now is pinned). Our C++
interpreter must produce the same text, or an error where jinja2 raises.

usage: python3 make_jinja_cases.py > data/jinja_cases.json   (needs jinja2)
"""
import json
import sys

import jinja2

from hf_jinja_env import NOW, make_env

M1 = [{"role": "user", "content": "Hi"}]
M3 = [{"role": "system", "content": "Sys"}, {"role": "user", "content": " Q? "},
      {"role": "assistant", "content": "A."}]
ODD = [{"role": "user", "content": "tab\tnl\nquote'dq\"bs\\ \x01 \x7f é 🦀 \u2028 \u3000"},
       {"role": "assistant", "content": "\u3000 padded\u00a0 \x1c"}]

CASES = [
    ("text_only", "plain text\n", M1),
    ("whitespace_control", "a  {{- ' b ' -}}  c\n{%- if true -%}\n  d  \n{%- endif -%}\ne", M1),
    ("trim_and_lstrip_blocks", "x\n  {% if true %}\n    y\n  {% endif %}\nz\n", M1),
    ("plus_disables_lstrip", "x\n  {%+ if true %}y{% endif %}\n", M1),
    ("comments", "a{# hidden #}b\n  {# own line #}\nc{#- trimmed -#}  d", M1),
    ("loop_variables", "{% for m in messages %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.length }}/"
     "{{ loop.revindex }}/{{ loop.first }}/{{ loop.last }};{% endfor %}", M3),
    ("loop_else_and_filter", "{% for m in messages if m.role != 'system' %}{{ m.role }},{% else %}none{% endfor %}"
     "|{% for x in [] %}x{% else %}empty{% endfor %}", M3),
    ("set_does_not_leak_from_loops", "{% set x = 'outer' %}{% for m in messages %}{% set x = m.role %}{% endfor %}{{ x }}", M3),
    ("namespace_survives_loops", "{% set ns = namespace(found=false, n=0) %}{% for m in messages %}"
     "{% if m.role == 'assistant' %}{% set ns.found = true %}{% endif %}{% set ns.n = ns.n + 1 %}{% endfor %}"
     "{{ ns.found }} {{ ns.n }}", M3),
    ("if_elif_else", "{% for m in messages %}{% if m.role == 'system' %}S{% elif m.role == 'user' %}U"
     "{% else %}O{% endif %}{% endfor %}", M3),
    ("boolean_logic", "{{ true and false }} {{ true or false }} {{ not true }} {{ 1 and 'x' }} {{ 0 or 'y' }} "
     "{{ none or '' }}|{{ not messages }}", M1),
    ("comparisons", "{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 'a' != 'a' }} {{ true == 1 }}", M1),
    ("membership", "{{ 'ell' in 'hello' }} {{ 3 in [1, 2] }} {{ 'role' in messages[0] }} {{ 'x' not in 'abc' }}", M1),
    ("arithmetic", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} "
     "{{ 7 / 2 }} {{ 2 - 5 }} {{ -(3) }} {{ 1.5 + 1 }}", M1),
    ("concatenation", "{{ 'a' + 'b' ~ 1 ~ none ~ true }} {{ [1] + [2] }} {{ 'ab' * 3 }}", M1),
    ("filters", "{{ '  x y  ' | trim }}|{{ 'Ab' | upper }}|{{ 'Ab' | lower }}|{{ messages | length }}|"
     "{{ 'héllo' | length }}|{{ undefined_thing | default('dflt') }}|{{ '' | default('e', true) }}|"
     "{{ ['a', 'b'] | join(', ') }}|{{ [3, 4] | first }}{{ [3, 4] | last }}|{{ 'hello world' | title }}|"
     "{{ 'hELLO' | capitalize }}|{{ 42 | string }}|{{ 'a-b' | replace('-', '+') }}", M1),
    ("tests", "{{ x is defined }} {{ messages is defined }} {{ none is none }} {{ 'a' is string }} "
     "{{ 1 is number }} {{ messages[0] is mapping }} {{ 4 is even }} {{ 3 is odd }} {{ x is not defined }}", M1),
    ("subscripts_and_slices", "{{ messages[0]['role'] }} {{ messages[-1].content }} {{ messages[1:] | length }} "
     "{{ 'abcdef'[1:4] }} {{ 'abcdef'[::-1] }} {{ [1,2,3,4][::2] }} {{ messages[9] is defined }}", M3),
    ("ternary", "{{ 'yes' if messages | length > 2 else 'no' }} {{ 'a' if false }}|", M3),
    ("string_methods", "{{ '  pad  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ 'abc'.startswith('ab') }}|"
     "{{ 'abc'.endswith('b') }}|{{ 'a,b,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'Hi'.upper() }}|"
     "{{ ', '.join(['x', 'y']) }}|{{ 'aXbX'.replace('X', '-') }}", M1),
    ("dict_methods", "{% for k, v in messages[0].items() %}{{ k }}={{ v }};{% endfor %}"
     "{{ messages[0].get('role') }} {{ messages[0].get('nope', 'dflt') }} {{ messages[0].get('nope') }}", M1),
    ("list_and_dict_literals", "{% set d = {'a': 1, 'b': [1, 'two']} %}{{ d.a }} {{ d['b'][1] }} {{ d }} {{ [1, 'x'] }}", M1),
    ("tojson", "{{ {'k': 'v\"q', 'n': [1, none, true]} | tojson }}", M1),
    ("escapes_in_strings", "{{ 'tab\\there\\nnew' }}|{{ \"it's\" }}|{{ 'it\\'s' }}", M1),
    ("range_function", "{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(5, 1, -2) %}{{ i }}{% endfor %}", M1),
    ("undefined_prints_empty", "[{{ nothing }}][{{ messages[0].nothing }}]", M1),
    ("bos_eos_variables", "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}", M3),
    ("raise_exception_in_template", "{% if messages[0].role != 'system' %}{{ raise_exception('need a system message') }}{% endif %}ok", M1),
    ("type_error_is_an_error", "{{ messages[0].content - 1 }}", M1),
    ("crlf_and_trailing_newline", "a\r\nb{% if true %}\r\nc\rd{% endif %}\r\n", M1),
    ("nested_loops_and_outer_loop", "{% for m in messages %}{% set outer = loop.index %}{% for c in m.role %}"
     "{% if loop.first %}{{ outer }}{{ c }}{% endif %}{% endfor %}{% endfor %}", M3),
    ("mistral_alternation", "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
     "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate') }}{% endif %}"
     "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
     "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}", M3),
    ("add_generation_prompt_flag", "{% if add_generation_prompt %}GEN{% else %}NOGEN{% endif %}", M1),
    ("loop_controls", "{% for m in messages %}{% if loop.index == 2 %}{% continue %}{% endif %}{{ m.role }};"
     "{% for c in 'abc' %}{% if c == 'b' %}{% break %}{% endif %}{{ c }}{% endfor %};{% endfor %}"
     "{% for i in range(9) %}{% if i > 2 %}{% break %}{% endif %}{{ i }}{% else %}never{% endfor %}", M3),
    ("break_outside_a_loop", "{% if true %}{% break %}{% endif %}", M1),
    ("tests_with_arguments", "{{ 6 is divisibleby 3 }} {{ 7 is divisibleby(3) }} {{ 'a' is equalto 'a' }} "
     "{{ 2 is gt 1 }} {{ 2 is lt(1) }} {{ 'x' is in ['x'] }} {{ none is sameas none }} {{ 1 is ne 1 }} "
     "{{ true is number }} {{ nothing is iterable }} {{ raise_exception is callable }} {{ 'ab' is lower }}", M1),
    ("select_and_map_filters", "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }}"
     "|{{ messages | rejectattr('role', 'in', ['system', 'user']) | map(attribute='role') | join(',') }}"
     "|{{ [1, 2, 3, 4] | select('odd') | list }}|{{ [1, 2, 3] | reject('equalto', 2) | list }}"
     "|{{ ['a', 'b'] | map('upper') | join }}|{{ messages | map(attribute='missing', default='-') | join }}"
     "|{{ messages | selectattr('content') | list | length }}"
     "|{% for k, v in messages[0] | items %}{{ k }}={{ v }},{% endfor %}", M3),
    ("tojson_options", "{% set d = {'b': [1, 2.5, {'c': none}], 'a': 'é🦀\"', 'e': [], 'f': {}} %}"
     "{{ d | tojson }}\n{{ d | tojson(indent=2) }}\n{{ d | tojson(separators=(',', ':')) }}\n"
     "{{ d | tojson(sort_keys=true) }}\n{{ d | tojson(ensure_ascii=true) }}\n{{ d | tojson(indent='\t') }}\n"
     "{{ [10.0 * 10, 1.5 / 10000000, 0.1 + 0.2, 12345678.0 * 1000000000, -0.5] | tojson }}", M1),
    ("tojson_of_undefined_is_an_error", "{{ nothing | tojson }}", M1),
    ("python_reprs", "{{ messages }}|{{ [10.0 * 10, 1.5 / 10000000, 0.1 + 0.2, 12345678.0 * 1000000000] }}|"
     "{{ {'k': none, 'b': true} }}", ODD),
    ("python_strip_and_split", "[{{ messages[1].content | trim }}][{{ messages[1].content.strip() }}]"
     "[{{ 'a b  c'.split(' ', 1) }}][{{ 'a,b,c'.split(',', 1) }}][{{ ' a  b c '.split(none, 1) }}]"
     "[{{ 'xxhixx'.lstrip('x') }}][{{ 'hello'.startswith(('x', 'he')) }}][{{ 'héllo'.find('l') }}]"
     "[{{ 'banana'.count('an') }}]", ODD),
    ("string_filters_take_any_value", "[{{ messages[0] | trim }}][{{ nothing | trim }}][{{ 42 | upper }}]"
     "[{{ nothing | length }}][{{ nothing | list }}][{{ nothing ~ 'x' }}]", M1),
    ("undefined_attribute_of_undefined_is_an_error", "{{ nothing.attr }}", M1),
    ("undefined_index_of_undefined_is_an_error", "{{ messages[5].role }}", M1),
    ("in_none_is_an_error", "{{ 'a' in messages[0].nothing_here or 'a' in none }}", M1),
    ("int_in_string_is_an_error", "{{ 1 in 'abc' }}", M1),
    ("method_of_none_is_an_error", "{{ none.split('x') }}", M1),
    ("strftime_now_and_globals", "{{ strftime_now('%d %b %Y %H:%M:%S %A %j %y %m %B %a %p %I') }}|"
     "{{ strftime_now is defined }}|{{ dict(a=1, b='x') }}|{{ namespace is defined }}", M1),
    ("tuples_unpack", "{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }},{% endfor %}{{ (1,) | length }}", M1),
    ("filter_keyword_arguments", "{{ messages | map(attribute='role') | join(d='+') }}", M3),
]


def main():
    env = make_env()
    out = []
    for name, src, messages in CASES:
        for gen in (True, False):
            case = {"name": name, "template": src, "messages": messages, "add_generation_prompt": gen,
                    "bos_token": "<s>", "eos_token": "</s>", "now": NOW.isoformat()}
            try:
                case["expected"] = env.from_string(src).render(messages=messages, tools=None, documents=None,
                                                               add_generation_prompt=gen, bos_token="<s>",
                                                               eos_token="</s>")
            except Exception as e:  # jinja2 raised: we must return an error value
                case["error"] = type(e).__name__ + ": " + str(e)
            out.append(case)
    json.dump({"generator": f"make_jinja_cases.py with jinja2 {jinja2.__version__}", "cases": out},
              sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
