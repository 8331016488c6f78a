// GBNF (llama.cpp's grammar text format, as vLLM/xgrammar accept for
// guided_grammar) parsed into a grammar. Called by the API layer; pure.
#pragma once

#include "runtime/grammar/grammar.hpp"

#include <string_view>

namespace dynamo::gram {

/// Parses `text`: rules `name ::= alternatives` (the root rule is `root`),
/// string literals "..." and classes [...] / [^...] with llama.cpp's escapes
/// (\n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH), `.`, groups, rule names,
/// | , * + ? {m} {m,} {m,n}, and # comments. A sequence ends at a newline
/// unless inside parentheses. Errors (errc::invalid_argument, with line and
/// column): syntax errors, duplicate or undefined rules, a missing root, and
/// left recursion (found when compiled); errc::unsupported for token
/// references <...>.
[[nodiscard]] expected<grammar> gbnf_grammar(std::string_view text);

} // namespace dynamo::gram
