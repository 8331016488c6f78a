// Declarative command-line parsing for every binary: `--name value`,
// `--name=value`, boolean switches, Dynamo-style `key=value` pseudo-arguments
// (`in=http out=mocker`) and `--help`. Errors name the offending argument.
// Build and parse on one thread; targets are written during parse().
#pragma once

#include "runtime/core/error.hpp"

#include <charconv>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo {

class cli {
public:
  cli(std::string program, std::string summary);

  cli& option(std::string name, std::string* target, std::string help);
  cli& option(std::string name, int64_t* target, std::string help);
  cli& option(std::string name, uint32_t* target, std::string help);
  cli& option(std::string name, double* target, std::string help);
  /// A switch: `--name` sets true; `--name=false` / `--no-name` sets false.
  cli& option(std::string name, bool* target, std::string help);
  /// An option with its own setter (value "" for a switch given without one).
  cli& custom(std::string name, bool is_switch, std::function<expected<void>(const std::string&)> set,
              std::string help);
  /// A `key=value` pseudo-argument (no dashes), e.g. in=http.
  cli& pseudo(std::string key, std::string* target, std::string help);
  /// Trailing free text for the help page (examples, environment variables).
  cli& epilog(std::string text);

  /// Parses argv. Returns false when --help was printed (the caller exits 0).
  [[nodiscard]] expected<bool> parse(int argc, const char* const* argv);

  [[nodiscard]] std::string help() const;

private:
  struct entry {
    std::string name;
    std::string help;
    std::string default_text;
    bool is_switch = false;
    bool is_pseudo = false;
    std::function<expected<void>(const std::string&)> set;
  };
  entry* find(const std::string& name, bool pseudo);
  cli& add(entry e);

  std::string program_;
  std::string summary_;
  std::string epilog_;
  std::vector<entry> entries_;
};

/// What a main does with parse()'s result: nullopt to go on; 0 after --help;
/// 2 after a bad command line, printed to stderr as "<program>: <message>".
/// Usage: `if (auto code = cli_exit_code("prog", c.parse(argc, argv))) return *code;`
[[nodiscard]] std::optional<int> cli_exit_code(std::string_view program, const expected<bool>& parsed);

/// A comma-separated list of numbers given to `--flag` ("1,8,32"); errors
/// (errc::invalid_argument) name the flag and the item that is not a number.
template <class T>
[[nodiscard]] expected<std::vector<T>> parse_number_list(std::string_view flag, std::string_view text) {
  std::vector<T> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto item = text.substr(0, comma);
    T v{};
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc{} || p != item.data() + item.size())
      return make_error(errc::invalid_argument,
                        "--" + std::string{flag} + ": '" + std::string{item} + "' is not a number");
    out.push_back(v);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  if (out.empty())
    return make_error(errc::invalid_argument, "--" + std::string{flag} + ": empty list");
  return out;
}

/// `--flag on|off` (also true/false, 1/0, yes/no); errc::invalid_argument naming the flag otherwise.
[[nodiscard]] expected<bool> parse_on_off(std::string_view flag, std::string_view text);

} // namespace dynamo
