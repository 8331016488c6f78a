#include "runtime/metrics/exposition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace dynamo::metrics {

namespace {

bool is_name_char(char c, bool first) {
  bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  return first ? alpha : alpha || (c >= '0' && c <= '9');
}

caf::error malformed(size_t line_no, std::string_view why) {
  return make_error(errc::malformed_message, fmt::format("metrics line {}: {}", line_no, why));
}

// Reads one `"value"` (escapes \\, \" and \n) at line[i], the opening quote
// already passed; leaves i after the closing quote.
caf::error read_label_value(std::string_view line, size_t& i, size_t line_no, std::string& value) {
  while (i < line.size() && line[i] != '"') {
    char c = line[i++];
    if (c == '\\') {
      if (i >= line.size())
        return malformed(line_no, "bad escape");
      char e = line[i++];
      c = e == 'n' ? '\n' : e;
    }
    value.push_back(c);
  }
  if (i >= line.size())
    return malformed(line_no, "unterminated label value");
  ++i; // closing quote
  return {};
}

// Reads `{name="value",...}` at line[i].
caf::error read_labels(std::string_view line, size_t& i, size_t line_no, exposition_sample& s) {
  ++i; // '{'
  while (true) {
    while (i < line.size() && line[i] == ' ')
      ++i;
    if (i < line.size() && line[i] == '}') {
      ++i;
      return {};
    }
    size_t start = i;
    while (i < line.size() && is_name_char(line[i], i == start))
      ++i;
    if (i == start || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
      return malformed(line_no, "bad label");
    auto& [key, value] = s.labels.emplace_back(std::string{line.substr(start, i - start)}, std::string{});
    (void)key;
    i += 2;
    if (auto err = read_label_value(line, i, line_no, value))
      return err;
    if (i < line.size() && line[i] == ',')
      ++i;
    else if (i >= line.size() || line[i] != '}')
      return malformed(line_no, "expected ',' or '}' after a label");
  }
}

expected<exposition_sample> read_sample(std::string_view line, size_t line_no) {
  exposition_sample s;
  size_t i = 0;
  while (i < line.size() && is_name_char(line[i], i == 0))
    ++i;
  if (i == 0)
    return malformed(line_no, "expected a metric name");
  s.name = line.substr(0, i);
  if (i < line.size() && line[i] == '{')
    if (auto err = read_labels(line, i, line_no, s))
      return err;
  if (i >= line.size() || (line[i] != ' ' && line[i] != '\t'))
    return malformed(line_no, "expected a value after the name");
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
    ++i;
  size_t end = line.find_first_of(" \t", i);
  std::string value{line.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i)};
  char* stop = nullptr;
  s.value = std::strtod(value.c_str(), &stop);
  if (value.empty() || stop != value.c_str() + value.size())
    return malformed(line_no, "bad value '" + value + "'");
  return s;
}

} // namespace

std::string_view exposition_sample::label(std::string_view key) const {
  for (const auto& [k, v] : labels)
    if (k == key)
      return v;
  return {};
}

expected<std::vector<exposition_sample>> parse_exposition(std::string_view text) {
  std::vector<exposition_sample> out;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty() || line.front() == '#')
      continue;
    auto s = read_sample(line, line_no);
    if (!s)
      return s.error();
    out.push_back(std::move(*s));
  }
  return out;
}

std::optional<double> sum_samples(std::span<const exposition_sample> samples, std::string_view name,
                                  std::initializer_list<label_match> match) {
  std::optional<double> sum;
  for (const exposition_sample& s : samples) {
    if (s.name != name || !std::isfinite(s.value))
      continue;
    if (!std::all_of(match.begin(), match.end(), [&](const label_match& m) { return s.label(m.first) == m.second; }))
      continue;
    sum = sum.value_or(0) + s.value;
  }
  return sum;
}

} // namespace dynamo::metrics
