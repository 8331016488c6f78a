// The HTTP plane's request value and route table: exact routes (method + path)
// and prefix routes (e.g. GET "/v1/models/" + id). Transport only: no OpenAI
// semantics. The router is built before the server starts and is immutable
// afterwards (safe to read from every io thread).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dynamo::http {

class http_responder;

struct header_field {
  std::string name;
  std::string value;
};

/// One parsed request, owned by the handler.
struct request {
  std::string method; ///< "GET", "POST", ...
  std::string target; ///< as received, e.g. "/v1/models?x=1"
  std::string path;   ///< target up to '?', not percent-decoded
  std::string query;  ///< after '?', "" when none
  std::string body;
  std::vector<header_field> headers;
  unsigned version = 11; ///< 10 or 11
  std::string remote;    ///< peer "ip:port"

  /// First header named `name` (case-insensitive); "" when absent.
  [[nodiscard]] std::string_view header(std::string_view name) const;
};

/// Runs on an io thread and must not block: answer through the responder
/// (now or later, from any thread).
using handler = std::function<void(request, std::shared_ptr<http_responder>)>;

class router {
public:
  /// Exact match on method and path.
  void add(std::string method, std::string path, handler h);
  /// Matches every path that starts with `prefix` and is longer than it;
  /// the longest matching prefix wins. Exact routes win over prefix routes.
  void add_prefix(std::string method, std::string prefix, handler h);

  struct match_result {
    const handler* found = nullptr; ///< the handler, or nullptr
    bool path_known = false;        ///< some route has this path (-> 405 rather than 404)
    std::string allow;              ///< methods for that path, "GET, POST"
  };
  [[nodiscard]] match_result match(std::string_view method, std::string_view path) const;

private:
  struct prefix_route {
    std::string method;
    std::string prefix;
    handler h;
  };
  std::map<std::string, std::map<std::string, handler>, std::less<>> exact_; // path -> method -> h
  std::vector<prefix_route> prefixes_;
};

/// Decodes %XX escapes (invalid escapes are kept as they are). '+' stays '+'.
[[nodiscard]] std::string percent_decode(std::string_view s);

/// True when a Content-Type value names JSON: application/json or
/// application/<anything>+json, any case, parameters (charset=...) ignored.
/// False for "" (no header), text/plain, application/x-www-form-urlencoded, ...
[[nodiscard]] bool is_json_media_type(std::string_view content_type);

} // namespace dynamo::http
