#include "planes/http/router.hpp"

#include <algorithm>
#include <cctype>

namespace dynamo::http {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

void append_method(std::string& allow, std::string_view method) {
  if (allow.find(method) != std::string::npos)
    return;
  if (!allow.empty())
    allow += ", ";
  allow += method;
}

} // namespace

std::string_view request::header(std::string_view name) const {
  for (const auto& h : headers)
    if (iequals(h.name, name))
      return h.value;
  return {};
}

void router::add(std::string method, std::string path, handler h) {
  exact_[std::move(path)][std::move(method)] = std::move(h);
}

void router::add_prefix(std::string method, std::string prefix, handler h) {
  prefixes_.push_back({std::move(method), std::move(prefix), std::move(h)});
  // Longest prefix first, so the first match is the most specific.
  std::stable_sort(prefixes_.begin(), prefixes_.end(), [](const auto& a, const auto& b) {
    return a.prefix.size() > b.prefix.size();
  });
}

router::match_result router::match(std::string_view method, std::string_view path) const {
  match_result r;
  if (auto it = exact_.find(path); it != exact_.end()) {
    r.path_known = true;
    for (const auto& [m, h] : it->second) {
      append_method(r.allow, m);
      if (m == method)
        r.found = &h;
    }
    return r;
  }
  for (const auto& p : prefixes_) {
    if (path.size() <= p.prefix.size() || !path.starts_with(p.prefix))
      continue;
    r.path_known = true;
    append_method(r.allow, p.method);
    if (!r.found && p.method == method)
      r.found = &p.h;
  }
  return r;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = hex_value(s[i + 1]);
      int lo = hex_value(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

bool is_json_media_type(std::string_view content_type) {
  auto essence = content_type.substr(0, content_type.find(';'));
  auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
      v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
      v.remove_suffix(1);
    return v;
  };
  essence = trim(essence);
  const auto slash = essence.find('/');
  if (slash == std::string_view::npos || !iequals(essence.substr(0, slash), "application"))
    return false;
  const auto subtype = essence.substr(slash + 1);
  constexpr std::string_view suffix = "+json";
  return iequals(subtype, "json") ||
         (subtype.size() > suffix.size() && iequals(subtype.substr(subtype.size() - suffix.size()), suffix));
}

} // namespace dynamo::http
