#include "runtime/core/cli.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdio>

namespace dynamo {

namespace {

template <class T>
expected<void> parse_number(const std::string& name, const std::string& text, T* out) {
  T value{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || ptr != text.data() + text.size())
    return make_error(errc::invalid_argument,
                      fmt::format("--{}: '{}' is not a valid number", name, text));
  *out = value;
  return {};
}

expected<void> parse_double(const std::string& name, const std::string& text, double* out) {
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used != text.size())
      throw std::invalid_argument(text);
    *out = v;
    return {};
  } catch (const std::exception&) {
    return make_error(errc::invalid_argument,
                      fmt::format("--{}: '{}' is not a valid number", name, text));
  }
}

} // namespace

cli::cli(std::string program, std::string summary)
  : program_(std::move(program)), summary_(std::move(summary)) {}

cli& cli::add(entry e) {
  entries_.push_back(std::move(e));
  return *this;
}

cli& cli::option(std::string name, std::string* target, std::string help) {
  auto def = target->empty() ? std::string{} : *target;
  return add({name, std::move(help), def, false, false,
              [target](const std::string& v) -> expected<void> {
                *target = v;
                return {};
              }});
}

cli& cli::option(std::string name, int64_t* target, std::string help) {
  return add({name, std::move(help), std::to_string(*target), false, false,
              [name, target](const std::string& v) { return parse_number(name, v, target); }});
}

cli& cli::option(std::string name, uint32_t* target, std::string help) {
  return add({name, std::move(help), std::to_string(*target), false, false,
              [name, target](const std::string& v) { return parse_number(name, v, target); }});
}

cli& cli::option(std::string name, double* target, std::string help) {
  return add({name, std::move(help), fmt::format("{}", *target), false, false,
              [name, target](const std::string& v) { return parse_double(name, v, target); }});
}

cli& cli::option(std::string name, bool* target, std::string help) {
  return add({name, std::move(help), *target ? "true" : "false", true, false,
              [name, target](const std::string& v) -> expected<void> {
                auto on = parse_on_off(name, v.empty() ? "true" : v);
                if (!on)
                  return on.error();
                *target = *on;
                return {};
              }});
}

expected<bool> parse_on_off(std::string_view flag, std::string_view text) {
  if (text == "on" || text == "true" || text == "1" || text == "yes")
    return true;
  if (text == "off" || text == "false" || text == "0" || text == "no")
    return false;
  return make_error(errc::invalid_argument, fmt::format("--{}: '{}' is not on or off", flag, text));
}

cli& cli::custom(std::string name, bool is_switch,
                 std::function<expected<void>(const std::string&)> set, std::string help) {
  return add({std::move(name), std::move(help), "", is_switch, false, std::move(set)});
}

cli& cli::pseudo(std::string key, std::string* target, std::string help) {
  return add({key, std::move(help), *target, false, true,
              [target](const std::string& v) -> expected<void> {
                *target = v;
                return {};
              }});
}

cli& cli::epilog(std::string text) {
  epilog_ = std::move(text);
  return *this;
}

cli::entry* cli::find(const std::string& name, bool pseudo) {
  for (auto& e : entries_)
    if (e.name == name && e.is_pseudo == pseudo)
      return &e;
  return nullptr;
}

expected<bool> cli::parse(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (arg.rfind("--", 0) == 0) {
      std::string name = arg.substr(2);
      std::string value;
      bool has_value = false;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
        has_value = true;
      }
      auto* e = find(name, false);
      if (!e && name.rfind("no-", 0) == 0) {
        if (auto* neg = find(name.substr(3), false); neg && neg->is_switch && !has_value) {
          if (auto r = neg->set("false"); !r)
            return r.error();
          continue;
        }
      }
      if (!e)
        return make_error(errc::invalid_argument,
                          fmt::format("unknown option --{} (see {} --help)", name, program_));
      if (!has_value && !e->is_switch) {
        if (i + 1 >= argc)
          return make_error(errc::invalid_argument, fmt::format("--{} needs a value", name));
        value = argv[++i];
      }
      if (auto r = e->set(value); !r)
        return r.error();
      continue;
    }
    if (auto eq = arg.find('='); eq != std::string::npos) {
      auto* e = find(arg.substr(0, eq), true);
      if (!e)
        return make_error(errc::invalid_argument,
                          fmt::format("unknown argument '{}' (see {} --help)", arg, program_));
      if (auto r = e->set(arg.substr(eq + 1)); !r)
        return r.error();
      continue;
    }
    return make_error(errc::invalid_argument,
                      fmt::format("unexpected argument '{}' (see {} --help)", arg, program_));
  }
  return true;
}

std::string cli::help() const {
  std::string out = fmt::format("{} - {}\n\nUsage: {} [options]\n", program_, summary_, program_);
  bool any_pseudo = false;
  for (const auto& e : entries_)
    any_pseudo |= e.is_pseudo;
  if (any_pseudo) {
    out += "\nArguments:\n";
    for (const auto& e : entries_)
      if (e.is_pseudo)
        out += fmt::format("  {:<28} {}{}\n", e.name + "=VALUE", e.help,
                           e.default_text.empty() ? "" : fmt::format(" [default: {}]", e.default_text));
  }
  out += "\nOptions:\n";
  for (const auto& e : entries_) {
    if (e.is_pseudo)
      continue;
    std::string flag = "--" + e.name + (e.is_switch ? "" : " VALUE");
    out += fmt::format("  {:<28} {}{}\n", flag, e.help,
                       e.default_text.empty() ? "" : fmt::format(" [default: {}]", e.default_text));
  }
  out += fmt::format("  {:<28} {}\n", "--help", "show this help and exit");
  if (!epilog_.empty())
    out += "\n" + epilog_ + "\n";
  return out;
}

std::optional<int> cli_exit_code(std::string_view program, const expected<bool>& parsed) {
  if (!parsed) {
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(),
                 message_of(parsed.error()).c_str());
    return 2;
  }
  if (!*parsed)
    return 0;
  return std::nullopt;
}

} // namespace dynamo
