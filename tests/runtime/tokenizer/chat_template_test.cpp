// Chat templates: SmolLM2's exact template, ChatML (Qwen), Llama 3 and
// Mistral-style templates render exact strings (checked against Python
// jinja2 with HF's trim_blocks/lstrip_blocks); malformed templates give
// errors; load_chat_template falls back to ChatML.
#include "runtime/gguf/writer.hpp"
#include "runtime/tokenizer/jinja_chat_template.hpp"
#include "tests/runtime/gguf/test_model.hpp"
#include "tests/runtime/gguf/test_print.hpp"

#include <boost/test/unit_test.hpp>

#include <fstream>
#include <random>

using namespace dynamo;
using namespace dynamo::tok;

namespace {

// SmolLM2-135M-Instruct's tokenizer.chat_template, byte for byte as its GGUF carries it.
const std::string smollm2_template =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n"
    "' + message['content'] + '<|im_end|>' + '\n"
    "'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n"
    "' }}{% endif %}";

// Meta-Llama-3-8B-Instruct's template as its GGUF files carry it.
const std::string llama3_template =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

// Qwen2.5's template without its tool-calling branches: multi-line, with {%- -%}.
const std::string qwen_template = R"({%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
{%- else %}
    {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant") %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
)";

const std::string mistral_template =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
    "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";

std::shared_ptr<jinja_chat_template> parse(const std::string& src, std::string bos = "<s>", std::string eos = "</s>") {
  auto t = jinja_chat_template::parse(src, std::move(bos), std::move(eos));
  BOOST_REQUIRE_MESSAGE(t, error_text(t));
  return *t;
}

std::string render(const chat_template& t, const std::vector<chat_message>& m, bool gen = true) {
  auto r = t.render(m, gen);
  BOOST_REQUIRE_MESSAGE(r, error_text(r));
  return *r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(chat_templates)

BOOST_AUTO_TEST_CASE(smollm2_adds_its_default_system_prompt_only_without_a_system_message) {
  auto t = parse(smollm2_template);
  BOOST_TEST(render(*t, {{"user", "Hi"}}) ==
             "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
             "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  BOOST_TEST(render(*t, {{"system", "Be brief."}, {"user", "Hi"}}, false) ==
             "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

BOOST_AUTO_TEST_CASE(smollm2_multi_turn_keeps_every_message) {
  auto t = parse(smollm2_template);
  BOOST_TEST(render(*t, {{"user", "2+2?"}, {"assistant", "4"}, {"user", "And 3+3?"}}) ==
             "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
             "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
             "<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n");
}

BOOST_AUTO_TEST_CASE(qwen_chatml_strips_block_whitespace) {
  auto t = parse(qwen_template);
  BOOST_TEST(render(*t, {{"user", "Hello"}}) ==
             "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
             "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  BOOST_TEST(render(*t, {{"system", "S"}, {"user", "U"}, {"assistant", "A"}}, false) ==
             "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n");
}

BOOST_AUTO_TEST_CASE(builtin_chatml_renders_roles_verbatim) {
  auto t = parse(std::string(chatml_template_source()));
  BOOST_TEST(render(*t, {{"system", "S"}, {"user", "U"}}) ==
             "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
}

BOOST_AUTO_TEST_CASE(the_mockers_template_takes_structured_input_too) {
  simple_chat_template t;
  BOOST_TEST(t.render({{"user", "hi"}}, true).value() == "user: hi\nassistant: ");
  chat_input in;
  in.messages = nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
          {"role": "assistant", "content": null}])");
  in.add_generation_prompt = false;
  BOOST_TEST(t.render(in).value() == "user: ab\nassistant: \n");
  in.messages = nlohmann::ordered_json::array({{{"content", "no role"}}});
  BOOST_TEST(!t.render(in));
}

BOOST_AUTO_TEST_CASE(llama3_uses_bos_headers_and_trims_content) {
  auto t = parse(llama3_template, "<|begin_of_text|>", "<|eot_id|>");
  BOOST_TEST(render(*t, {{"system", "You are a bot."}, {"user", " Hello! "}}) ==
             "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a bot.<|eot_id|>"
             "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
             "<|start_header_id|>assistant<|end_header_id|>\n\n");
  BOOST_TEST(render(*t, {{"user", "x"}}, false) ==
             "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
}

BOOST_AUTO_TEST_CASE(raise_exception_becomes_an_error_value) {
  auto t = parse(mistral_template);
  BOOST_TEST(render(*t, {{"user", "a"}, {"assistant", "b"}, {"user", "c"}}) ==
             "<s>[INST] a [/INST]b</s>[INST] c [/INST]");
  auto r = t->render({{"user", "a"}, {"user", "b"}}, true);
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::invalid_argument);
  BOOST_TEST(message_of(r.error()) ==
             "chat template: Conversation roles must alternate user/assistant/user/assistant/...");
  auto s = t->render({{"user", "a"}, {"system", "x"}}, true);
  BOOST_REQUIRE(!s);
  BOOST_TEST(message_of(s.error()) == "chat template: Only user and assistant roles are supported!");
}

BOOST_AUTO_TEST_CASE(empty_conversations_are_rejected) {
  auto t = parse(smollm2_template);
  BOOST_TEST(code_of(t->render({}, true).error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(malformed_templates_give_errors_naming_the_problem) {
  const std::pair<std::string, std::string> bad[] = {
      {"{% if x %}never closed", "missing '{% endif %}'"},
      {"{{ x ", "unclosed tag '{{'"},
      {"{% for %}{% endfor %}", "expected a loop variable"},
      {"{% for x of xs %}{% endfor %}", "expected 'in'"},
      {"{% endif %}", "unexpected '{% endif %}'"},
      {"{% if a %}{% endfor %}", "unexpected '{% endfor %}'"},
      {"{{ 'unterminated }}", "unclosed tag"},
      {"{{ a + }}", "unexpected end of expression"},
      {"{{ a b }}", "unexpected 'b'"},
      {"{{ x | frobnicate }}", "unknown filter 'frobnicate'"},
      {"{{ x is shiny }}", "unknown test 'shiny'"},
      {"{% macro m() %}{% endmacro %}", "tag '{% macro %}' is not supported"},
      {"{% set x %}block{% endset %}", "only '{% set name = value %}'"},
      {"line one\n{{ 1 $ 2 }}", "line 2: unexpected character '$'"},
      {"{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}", "nested too deeply"},
  };
  for (const auto& [src, want] : bad) {
    auto t = jinja_chat_template::parse(src, "", "");
    BOOST_REQUIRE_MESSAGE(!t, "parsed: " << src);
    BOOST_TEST(message_of(t.error()).find(want) != std::string::npos,
               "'" << message_of(t.error()) << "' lacks '" << want << "'");
  }
  BOOST_TEST(code_of(jinja_chat_template::parse("{% macro m() %}", "", "").error()) == errc::unsupported);
  BOOST_TEST(code_of(jinja_chat_template::parse("{% if %}", "", "").error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(render_time_type_errors_are_values) {
  auto t = parse("{{ messages[0].content - 1 }}");
  auto r = t->render({{"user", "x"}}, false);
  BOOST_REQUIRE(!r);
  BOOST_TEST(message_of(r.error()) == "chat template line 1: unsupported operand types for -: 'string' and 'int'");
  auto u = parse("{{ messages[0]['missing'] + 'x' }}")->render({{"user", "x"}}, false);
  BOOST_REQUIRE(!u);
  BOOST_TEST(message_of(u.error()).find("'undefined' and 'string'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(hostile_templates_fail_or_stay_bounded) {
  const std::vector<chat_message> m = {{"user", "x"}};
  auto error_of = [&](const std::string& src) {
    auto t = jinja_chat_template::parse(src, "", "");
    BOOST_REQUIRE_MESSAGE(t, error_text(t));
    auto r = (*t)->render(m, false);
    return r ? std::string() : message_of(r.error());
  };
  BOOST_TEST(error_of("{% set ns = namespace(a=1) %}{% set ns.me = ns %}").find("inside itself") !=
             std::string::npos);
  BOOST_TEST(error_of("{% set ns = namespace(a=1) %}{% set ns.me = {'x': [ns]} %}").find("inside itself") !=
             std::string::npos);
  BOOST_TEST(error_of("{{ " + std::string(40, '[') + std::string(40, ']') + " }}").find("nested more than 32") !=
             std::string::npos);
  BOOST_TEST(error_of("{{ 'x' * 100000000 }}").find("repetition too large") != std::string::npos);
  BOOST_TEST(error_of("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
                      "{% endfor %}")
                 .find("too large") != std::string::npos);
  BOOST_TEST(error_of("{% for i in range(2000) %}{% for j in range(2000) %}{% endfor %}{% endfor %}")
                 .find("steps") != std::string::npos);
  BOOST_TEST(error_of("{{ 1 // 0 }}").find("division by zero") != std::string::npos);
  // A chain of 5000 namespaces (each link checked shallow) prints with a depth cap and is torn down safely.
  auto chain = parse("{% set head = namespace(next=none) %}{% set st = namespace(tail=head) %}"
                     "{% for i in range(5000) %}{% set n = namespace(next=none) %}{% set t = st.tail %}"
                     "{% set t.next = n %}{% set st.tail = n %}{% endfor %}{{ head }}");
  const std::string out = render(*chain, m, false);
  BOOST_TEST(out.size() < 2000u);
  BOOST_TEST(out.find("...") != std::string::npos);
}

// What one operation builds and what a render builds in all are bounded
// (jinja_builtins.hpp, jinja_eval.cpp); copies share, so they cost nothing.
BOOST_AUTO_TEST_CASE(templates_cannot_build_more_than_their_limits) {
  const std::vector<chat_message> m = {{"user", "x"}};
  auto result_of = [&](const std::string& src) {
    auto t = jinja_chat_template::parse(src, "", "");
    BOOST_REQUIRE_MESSAGE(t, error_text(t));
    auto r = (*t)->render(m, false);
    return r ? *r : "error: " + message_of(r.error());
  };
  auto fails_with = [&](const std::string& src, const std::string& what) {
    const std::string r = result_of(src);
    BOOST_TEST_INFO(src);
    BOOST_TEST(r.find("error: ") == 0u);
    BOOST_TEST(r.find(what) != std::string::npos, r);
  };
  // A million copies of a 16 MB string: shared, not copied.
  BOOST_TEST(result_of("{% set s = 'a' * 16000000 %}{{ ([s] * 1000000) | length }}") == "1000000");
  // Every string kept is new: 100 x 10 MB (each read and built once) passes the render's 256 MiB.
  fails_with("{% set ns = namespace(l=[]) %}{% set s = 'a' * 10000000 %}"
             "{% for i in range(100) %}{% set ns.l = ns.l + [s ~ i] %}{% endfor %}",
             "template exceeds its budget of 256 MiB");
  BOOST_TEST(result_of("{% set ns = namespace(l=[]) %}{% set s = 'a' * 10000000 %}"
                       "{% for i in range(10) %}{% set ns.l = ns.l + [s ~ i] %}{% endfor %}{{ ns.l | length }}") ==
             "10");
  // Reading counts too, so time is bounded as well: the 17th scan of a 16 MB string stops the render.
  fails_with("{% set s = 'a' * 16000000 %}{% for i in range(100) %}{{ s | length }}{% endfor %}",
             "template exceeds its budget of 256 MiB of strings and items built or read");
  BOOST_TEST(result_of("{% set s = 'a' * 16000000 %}{% for i in range(14) %}{{ s | length }}{% endfor %}").size() ==
             14 * 8u);
  fails_with("{{ ('x' * 3000) | join('y' * 6000) }}", "join: result over 16777216 bytes");
  fails_with("{{ ('y' * 6000).join(('x' * 3000) | list) }}", "join: result over 16777216 bytes");
  BOOST_TEST(result_of("{{ ('x' * 3) | join('-') }}{{ '+'.join(['a', 'b']) }}") == "x-x-xa+b");
  fails_with("{{ ('a' * 1000000).replace('a', 'b' * 20) }}", "replace: result over 16777216 bytes");
  fails_with("{{ ('a' * 1000000) | replace('a', 'b' * 20) }}", "replace: result over 16777216 bytes");
  BOOST_TEST(result_of("{{ ('a' * 1000000).replace('a', 'b' * 16) | length }}") == "16000000");
  fails_with("{% for c in 'a' * 2000000 %}{% endfor %}", "cannot iterate over a string of more than 1048576");
  // A join, first or last of a string reads its characters in place: no list of them, no iteration limit.
  BOOST_TEST(result_of("{{ ('a' * 2000000) | join | length }}") == "2000000");
  fails_with("{{ ('a' * 9000000) | join('-') }}", "join: result over 16777216 bytes");
  BOOST_TEST(result_of("{{ 'h\u00e9llo' | join('.') }}|{{ 'h\u00e9llo' | first }}{{ 'llo\u00e9' | last }}|"
                       "{{ '' | first is defined }}|{{ 'x' | join('-') }}|{% for c in 'a\u00e9b' %}{{ c }}.{% endfor %}") ==
             "h.\u00e9.l.l.o|h\u00e9|False|x|a.\u00e9.b.");
  fails_with("{{ ('a,' * 1100000).split(',') | length }}", "split: more than 1048576 parts");
  BOOST_TEST(result_of("{{ ('a,' * 1000000).split(',') | length }}") == "1000001");
  // Strings index and slice by code point without copying them into characters.
  BOOST_TEST(result_of("{{ 'h\u00e9llo'[1] }}|{{ 'h\u00e9llo'[-1] }}|{{ 'h\u00e9llo'[1:3] }}|"
                       "{{ 'h\u00e9llo'[::-2] }}|{{ 'ab'[5] is defined }}|{{ 'ab'[-3] is defined }}") ==
             "\u00e9|o|\u00e9l|olh|False|False");
}

// A libFuzzer input from tests/runtime/tokenizer/data/fuzz/, rendered as the
// fuzz target renders it (`template \0 messages`; these messages do not parse,
// so the target's default conversation): its output, or "error: " and why.
namespace {
std::string fuzz_input_render(const std::string& name, size_t size) {
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is not set (run through ctest)");
  std::ifstream in(std::string(src) + "/tests/runtime/tokenizer/data/fuzz/" + name, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_REQUIRE_EQUAL(bytes.size(), size);
  auto t = jinja_chat_template::parse(bytes.substr(0, bytes.find('\0')), "<s>", "</s>");
  BOOST_REQUIRE_MESSAGE(t, error_text(t));
  chat_input input;
  input.messages = nlohmann::ordered_json::parse(
      R"([{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}])");
  input.now = std::tm{};
  auto r = (*t)->render(input);
  return r ? *r : "error: " + message_of(r.error());
}
} // namespace

// fuzz_jinja, 2026-11-29 (OOM): nested `| join(sep)` over strings multiplied a
// string's length by ~200 per level (a 419 MB string, a 1 GB vector of its
// characters). Now a join is sized before it builds anything.
BOOST_AUTO_TEST_CASE(fuzz_nested_join_fails_within_its_limits) {
  const std::string what = fuzz_input_render("jinja-oom-nested-join", 1173);
  BOOST_TEST(what.find("join: result over 16777216 bytes") != std::string::npos, what);
}

// fuzz_jinja, 2026-11-29 (slow: 0.9-1.8 s under ASan after the limits above):
// the same nested joins, inside the limits, but each `| join` over a string
// first turned its ~10^6 characters into as many one-character strings on the
// heap. A join (first, last) over a string now reads it in place: 0.06-0.2 s
// under ASan. The output is Python Jinja2 3.1.6's for the same template and
// messages (934,829 bytes, 12,464 "upper").
BOOST_AUTO_TEST_CASE(fuzz_join_over_a_long_string_renders_as_jinja2_does) {
  const std::string out = fuzz_input_render("jinja-slow-join-over-string", 727);
  BOOST_TEST(out.size() == 934829u);
  const std::string head = "[]|,,[{\"role\": \"system\", \"\x17\x17\x17\x17---", tail = "A]uppere|3|role=system,content=s,";
  BOOST_TEST(out.starts_with(head));
  BOOST_TEST(out.ends_with(tail));
  size_t upper = 0;
  for (size_t at = 0; (at = out.find("upper", at)) != std::string::npos; at += 5)
    ++upper;
  BOOST_TEST(upper == 12464u);
}

BOOST_AUTO_TEST_CASE(random_mutations_of_real_templates_never_crash) {
  std::mt19937 rng(77);
  const std::string alphabet = "{}%#-+|.,:()[]'\" abcefilnorstx0123=!<>~\n";
  const std::string* sources[] = {&smollm2_template, &llama3_template, &qwen_template, &mistral_template};
  int parsed = 0, rendered = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    std::string src = *sources[iter % 4];
    for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) {
      const size_t at = rng() % src.size();
      switch (rng() % 3) {
        case 0: src[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: src.erase(at, 1 + rng() % 8); break;
        default: src.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
      if (src.empty())
        src = "x";
    }
    auto t = jinja_chat_template::parse(src, "<s>", "</s>");
    if (!t) {
      BOOST_TEST(!message_of(t.error()).empty());
      continue;
    }
    ++parsed;
    auto r = (*t)->render({{"system", "s"}, {"user", "u"}, {"assistant", "a"}}, true);
    rendered += static_cast<bool>(r);
  }
  BOOST_TEST(parsed > 100);
  BOOST_TEST(rendered > 50);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(chat_template_loading)

BOOST_AUTO_TEST_CASE(a_gguf_template_is_used_with_its_bos_and_eos_texts) {
  gguf::writer w;
  w.set_string_array("tokenizer.ggml.tokens", {"<|begin_of_text|>", "<|eot_id|>", "a"});
  w.set_u32("tokenizer.ggml.bos_token_id", 0);
  w.set_u32("tokenizer.ggml.eos_token_id", 1);
  w.set_string("tokenizer.chat_template", llama3_template);
  auto f = gguf::file::from_bytes(w.bytes());
  BOOST_REQUIRE(f);
  auto loaded = load_chat_template(**f);
  BOOST_TEST(!loaded.fallback);
  BOOST_TEST(render(*loaded.tmpl, {{"user", "hi"}}, false) ==
             "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>");
}

BOOST_AUTO_TEST_CASE(an_unparsable_or_missing_template_falls_back_to_chatml) {
  gguf::writer w;
  w.set_string("tokenizer.chat_template", "{% macro fancy() %}{% endmacro %}");
  auto f = gguf::file::from_bytes(w.bytes());
  auto loaded = load_chat_template(**f);
  BOOST_TEST(loaded.fallback);
  BOOST_TEST(loaded.reason.find("macro") != std::string::npos);
  BOOST_TEST(render(*loaded.tmpl, {{"user", "U"}}) == "<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
  gguf::writer empty;
  f = gguf::file::from_bytes(empty.bytes());
  auto none = load_chat_template(**f);
  BOOST_TEST(none.fallback);
  BOOST_TEST(none.reason.find("not_found") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_smollm2_file_carries_the_template_under_test,
                     *boost::unit_test::precondition(&dynamo::testing::model_available)) {
  auto f = gguf::file::open(*dynamo::testing::smollm2_path());
  BOOST_REQUIRE(f);
  BOOST_TEST(*(*f)->get_string("tokenizer.chat_template") == smollm2_template);
  auto loaded = load_chat_template(**f);
  BOOST_TEST(!loaded.fallback);
  BOOST_TEST(render(*loaded.tmpl, {{"user", "Hi"}}).starts_with("<|im_start|>system\nYou are a helpful AI"));
}

BOOST_AUTO_TEST_SUITE_END()
