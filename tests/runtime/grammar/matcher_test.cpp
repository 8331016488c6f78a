// The grammar core and matcher: UTF-8 range lowering, automaton errors, exact
// masks over a small multi-byte vocabulary (partial UTF-8, EOS, recursion),
// and the error values of accept_token.
#include "runtime/grammar/gbnf.hpp"
#include "runtime/grammar/json_schema.hpp"
#include "runtime/grammar/regex.hpp"
#include "tests/runtime/grammar/grammar_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <thread>

using namespace dynamo;
using namespace dynamo::gram;
using namespace dynamo::gram::testing;

BOOST_AUTO_TEST_SUITE(grammar_core)

BOOST_AUTO_TEST_CASE(utf8_sequences_cover_exactly_the_range) {
  // Every code point in a range is matched by exactly one sequence, and code
  // points just outside by none (checked exhaustively for a few ranges).
  const std::vector<cp_range> cases = {{0x41, 0x5A}, {0x70, 0x90}, {0x7FF, 0x801}, {0xD700, 0xE100}, {0xFFF0, 0x10010},
                                       {0x10000, 0x10FFFF}, {0x80, 0x10FFFF}};
  for (auto [lo, hi] : cases) {
    const auto seqs = utf8_sequences(lo, hi);
    auto matches = [&](char32_t cp) {
      std::string b;
      append_utf8(b, cp);
      int n = 0;
      for (const auto& s : seqs) {
        if (s.size() != b.size()) continue;
        bool ok = true;
        for (size_t i = 0; i < s.size(); ++i) ok = ok && uint8_t(b[i]) >= s[i].first && uint8_t(b[i]) <= s[i].second;
        n += ok;
      }
      return n;
    };
    for (char32_t cp = lo > 0x200 ? lo - 0x200 : 0; cp <= std::min<char32_t>(hi + 0x200, 0x10FFFF); cp += (hi - lo > 0x10000 ? 97 : 1)) {
      const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
      const int expect = (cp >= lo && cp <= hi && !surrogate) ? 1 : 0;
      if (surrogate) continue;
      BOOST_CHECK_MESSAGE(matches(cp) == expect, "cp " << std::hex << uint32_t(cp) << " range " << uint32_t(lo) << "-" << uint32_t(hi));
    }
  }
}

BOOST_AUTO_TEST_CASE(automaton_errors_name_the_culprit) {
  auto left = gbnf_grammar("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]");
  BOOST_REQUIRE(left);
  auto a = automaton::build(*left);
  BOOST_REQUIRE(!a);
  BOOST_CHECK(message_of(a.error()).find("left recursion") != std::string::npos);
  BOOST_CHECK(message_of(a.error()).find("'expr'") != std::string::npos);

  grammar g;
  const rule_id r = g.add_rule("root");
  const rule_id u = g.add_rule("missing");
  g.define(r, g.ref(u));
  g.set_root(r);
  auto b = automaton::build(g);
  BOOST_REQUIRE(!b);
  BOOST_CHECK(message_of(b.error()).find("'missing'") != std::string::npos);

  grammar never;
  const rule_id n = never.add_rule("root");
  never.define(n, never.seq({never.literal("a"), never.ref(n)})); // no finite sentence
  never.set_root(n);
  auto c = automaton::build(never);
  BOOST_REQUIRE(!c);
  BOOST_CHECK_EQUAL(message_of(c.error()), "grammar matches no string");
}

BOOST_AUTO_TEST_CASE(recursion_balanced_parentheses) {
  auto g = compile_bytes(gbnf_grammar("root ::= \"(\" root? \")\" root?"));
  BOOST_CHECK(accepts(g, "()"));
  BOOST_CHECK(accepts(g, "(())()"));
  BOOST_CHECK(accepts(g, "((()()))"));
  BOOST_CHECK(!accepts(g, "(()"));
  BOOST_CHECK(!accepts(g, "())"));
  BOOST_CHECK(!accepts(g, ""));
}

// A vocabulary with multi-byte tokens: "é" is C3 A9, "è" is C3 A8.
std::shared_ptr<const token_vocab> small_vocab() {
  std::vector<std::string> t = {"a", "b", "ab", "ba", "\xC3", "\xA9", "\xC3\xA9", "\xA9\xC3", "\xC3\xA8", "", "", "abab"};
  // ids:                        0    1    2     3     4       5       6           7           8         9   10  11
  // 9 is EOS, 10 is a control token (never allowed).
  return *token_vocab::build(std::move(t), {9});
}

std::vector<uint32_t> next_ids(matcher& m) {
  std::vector<uint64_t> mask(m.mask_words());
  m.fill_next_token_bitmask(mask);
  return mask_ids(mask);
}

BOOST_AUTO_TEST_CASE(masks_over_multibyte_tokens_and_partial_utf8) {
  auto g = regex_grammar("[é]+");
  BOOST_REQUIRE(g);
  auto c = compiled_grammar::compile(*g, small_vocab());
  BOOST_REQUIRE(c);
  matcher m(*c);
  BOOST_CHECK(next_ids(m) == (std::vector<uint32_t>{4, 6}));
  BOOST_REQUIRE(m.accept_token(4)); // half a character
  BOOST_CHECK(!m.can_terminate());
  BOOST_CHECK(next_ids(m) == (std::vector<uint32_t>{5, 7}));
  BOOST_REQUIRE(m.accept_token(7)); // ends one character, starts the next
  BOOST_CHECK(next_ids(m) == (std::vector<uint32_t>{5, 7}));
  BOOST_REQUIRE(m.accept_token(5));
  BOOST_CHECK(m.can_terminate());
  BOOST_CHECK(next_ids(m) == (std::vector<uint32_t>{4, 6, 9}));
  auto bad = m.accept_token(8); // "è" is not in the class
  BOOST_REQUIRE(!bad);
  BOOST_CHECK(code_of(bad.error()) == errc::invalid_argument);
  BOOST_REQUIRE(m.accept_token(9));
  BOOST_CHECK(m.is_terminated());
  BOOST_CHECK(next_ids(m).empty());
  BOOST_CHECK(!m.accept_token(6));
}

BOOST_AUTO_TEST_CASE(accept_token_errors) {
  auto g = regex_grammar("(ab)+");
  BOOST_REQUIRE(g);
  auto c = compiled_grammar::compile(*g, small_vocab());
  BOOST_REQUIRE(c);
  matcher m(*c);
  BOOST_CHECK(next_ids(m) == (std::vector<uint32_t>{0, 2, 11}));
  auto eos = m.accept_token(9);
  BOOST_REQUIRE(!eos);
  BOOST_CHECK(message_of(eos.error()).find("before the grammar is complete") != std::string::npos);
  auto special = m.accept_token(10);
  BOOST_REQUIRE(!special);
  BOOST_CHECK(message_of(special.error()).find("special token 10") != std::string::npos);
  auto range = m.accept_token(12);
  BOOST_REQUIRE(!range);
  BOOST_CHECK(message_of(range.error()).find("outside the vocabulary") != std::string::npos);
  auto wrong = m.accept_token(1);
  BOOST_REQUIRE(!wrong);
  BOOST_REQUIRE(m.accept_token(0)); // the failed calls left the state unchanged
  BOOST_CHECK(next_ids(m) == (std::vector<uint32_t>{1, 3}));
  BOOST_REQUIRE(m.accept_token(3));
  BOOST_CHECK(!m.can_terminate());
  BOOST_REQUIRE(m.accept_token(1));
  BOOST_CHECK(m.can_terminate());
  BOOST_CHECK(m.can_continue());
  m.reset();
  BOOST_CHECK(!m.can_terminate());
}

BOOST_AUTO_TEST_CASE(can_continue_false_at_the_end) {
  auto g = choice_grammar({"ab", "abab"});
  BOOST_REQUIRE(g);
  auto c = compiled_grammar::compile(*g, small_vocab());
  BOOST_REQUIRE(c);
  matcher m(*c);
  BOOST_CHECK(next_ids(m) == (std::vector<uint32_t>{0, 2, 11}));
  BOOST_REQUIRE(m.accept_token(11));
  BOOST_CHECK(m.can_terminate());
  BOOST_CHECK(!m.can_continue());
  BOOST_CHECK(next_ids(m) == (std::vector<uint32_t>{9}));
}

BOOST_AUTO_TEST_CASE(context_dependent_tokens_use_the_stack) {
  // "ba" crosses from the inner rule (a's) into what follows it, which
  // differs by context: after x it is "b", after y it is "c".
  auto gr = gbnf_grammar("root ::= \"x\" as \"b\" | \"y\" as \"c\"\nas ::= \"a\"+");
  BOOST_REQUIRE(gr);
  std::vector<std::string> t = {"x", "y", "a", "b", "c", "ab", "ac", "aab", ""};
  auto v = *token_vocab::build(std::move(t), {8});
  auto c = compiled_grammar::compile(*gr, v);
  BOOST_REQUIRE(c);
  matcher mx(*c), my(*c);
  BOOST_REQUIRE(mx.accept_token(0));
  BOOST_REQUIRE(my.accept_token(1));
  BOOST_REQUIRE(mx.accept_token(2));
  BOOST_REQUIRE(my.accept_token(2));
  BOOST_CHECK(next_ids(mx) == (std::vector<uint32_t>{2, 3, 5, 7}));
  BOOST_CHECK(next_ids(my) == (std::vector<uint32_t>{2, 4, 6}));
}

BOOST_AUTO_TEST_CASE(one_compiled_grammar_shared_by_threads) {
  // Four matchers on four threads fill the lazy cache of one compiled grammar
  // at once; their masks equal those of a grammar used by one thread.
  const std::string doc = R"({"a": [1, {"b": "x\u00e9y"}, null], "c": -2.5e3, "d": {"e": true}})";
  auto masks_of = [&](const std::shared_ptr<const compiled_grammar>& g) {
    std::vector<std::vector<uint64_t>> out;
    matcher m(g);
    for (char c : doc) {
      std::vector<uint64_t> mask(m.mask_words());
      m.fill_next_token_bitmask(mask);
      out.push_back(mask);
      BOOST_REQUIRE(m.accept_token(static_cast<uint8_t>(c)));
    }
    return out;
  };
  const auto expect = masks_of(compile_bytes(json_object_grammar()));
  for (int round = 0; round < 5; ++round) {
    const auto shared = compile_bytes(json_object_grammar());
    std::vector<std::vector<std::vector<uint64_t>>> got(4);
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) ts.emplace_back([&, t] {
        matcher m(shared);
        for (char c : doc) {
          std::vector<uint64_t> mask(m.mask_words());
          m.fill_next_token_bitmask(mask);
          got[size_t(t)].push_back(mask);
          if (!m.accept_token(static_cast<uint8_t>(c))) return;
        }
      });
    for (auto& t : ts) t.join();
    for (const auto& g : got) BOOST_CHECK(g == expect);
  }
}

BOOST_AUTO_TEST_SUITE_END()
