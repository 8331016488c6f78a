// libFuzzer target: the HTTP plane's request side without the socket
// (planes/http/parse.hpp, router.hpp): Beast's parser under the server's limits,
// fed in pieces as a socket would; the conversion to our request; the route
// table; percent_decode; the JSON media-type check. Input: one byte choosing the
// piece size, then the bytes of a connection.
#include "planes/http/parse.hpp"
#include "planes/http/router.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

using namespace dynamo::http;

// The frontend's and admin API's shapes: exact routes, nested prefixes.
struct table {
  router r;
  std::array<int, 8> tags{};
  int hit = -1;
  table() {
    auto tag = [this](int t) { return [this, t](request, std::shared_ptr<http_responder>) { hit = t; }; };
    r.add("POST", "/v1/chat/completions", tag(0));
    r.add("GET", "/v1/models", tag(1));
    r.add("POST", "/v1/models", tag(2));
    r.add_prefix("GET", "/v1/models/", tag(3));
    r.add_prefix("POST", "/admin/", tag(4));
    r.add_prefix("POST", "/admin/workers/", tag(5));
    r.add_prefix("GET", "/admin/", tag(6));
  }
};

/// What the table must answer, computed the slow way.
int expected(std::string_view method, std::string_view path) {
  struct route { std::string_view m, p; bool prefix; int tag; };
  static constexpr route routes[] = {
      {"POST", "/v1/chat/completions", false, 0}, {"GET", "/v1/models", false, 1},
      {"POST", "/v1/models", false, 2},           {"GET", "/v1/models/", true, 3},
      {"POST", "/admin/", true, 4},               {"POST", "/admin/workers/", true, 5},
      {"GET", "/admin/", true, 6}};
  bool exact_path = false;
  for (const auto& r : routes)
    if (!r.prefix && r.p == path) {
      exact_path = true;
      if (r.m == method)
        return r.tag;
    }
  if (exact_path)
    return -1; // exact routes own their path
  int best = -1;
  size_t best_len = 0;
  for (const auto& r : routes)
    if (r.prefix && r.m == method && path.size() > r.p.size() && path.starts_with(r.p) &&
        r.p.size() >= best_len) {
      best = r.tag;
      best_len = r.p.size();
    }
  return best;
}

void check_route(std::string_view method, std::string_view path) {
  static table t;
  auto m = t.r.match(method, path);
  t.hit = -1;
  if (m.found)
    (*m.found)({}, nullptr);
  if (t.hit != expected(method, path))
    __builtin_trap();
  if (m.found && !m.path_known)
    __builtin_trap();
  if (m.path_known == m.allow.empty())
    __builtin_trap();
}

std::string encode_all(std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    out += '%';
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

void check_decode(std::string_view s) {
  auto d = percent_decode(s);
  if (d.size() > s.size())
    __builtin_trap();
  if (s.find('%') == std::string_view::npos && d != s)
    __builtin_trap();
  if (percent_decode(encode_all(s)) != s)
    __builtin_trap();
}

void check_media_type(std::string_view ct) {
  const bool json = is_json_media_type(ct);
  if (ct.find(';') == std::string_view::npos &&
      is_json_media_type(std::string{ct} + "; charset=utf-8") != json)
    __builtin_trap();
}

bool same(const parsed& a, const parsed& b) {
  if (!a.req || !b.req)
    return false;
  const auto &x = *a.req, &y = *b.req;
  return a.consumed == b.consumed && x.method == y.method && x.target == y.target &&
         x.body == y.body && x.version == y.version && x.headers.size() == y.headers.size();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  parse_limits limits;
  limits.header_limit = 512;
  limits.body_limit = 256;
  const size_t piece = data[0] % 16;
  auto whole = parse_request(bytes, limits);
  auto pieces = parse_request(bytes, limits, piece);
  // A socket's piece sizes must not change what the server sees: a request read
  // one way is the same request read the other way. Beast's allowances: its
  // header limit is not exact (in one buffer it bounds the request line and then
  // the fields each, in pieces what it has buffered), so a header near the limit
  // may pass one way and be a 431 the other; it parses the request line of its
  // first buffer at once but, after a short first buffer, waits for the end of
  // the header, so a bad request line in a header that never ends is a 400 in
  // one piece and "need more" (the read times out) in several; and of a bad
  // message's several faults (a chunk over the body limit, a bad chunk
  // extension) it reports the first it reaches, so error statuses may differ.
  const bool limit = whole.status == 431 || pieces.status == 431;
  if (!limit && (whole.req || pieces.req) && !same(whole, pieces))
    __builtin_trap();
  if (!whole.req)
    return 0;
  const auto& req = *whole.req;
  if (whole.consumed > bytes.size() || req.body.size() > limits.body_limit ||
      req.path.find('?') != std::string::npos ||
      req.target != req.path + (req.target.size() > req.path.size() ? "?" + req.query : ""))
    __builtin_trap();
  check_route(req.method, req.path);
  check_decode(req.path);
  check_decode(req.query);
  check_media_type(req.header("Content-Type"));
  return 0;
}
