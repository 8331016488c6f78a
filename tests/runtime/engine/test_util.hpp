// Helpers shared by the engine and mocker tests: request builders, a run loop
// that collects each request's stream, an engine that chunks prompts, a loop
// that drains an engine's outputs, and Boost.Test printers.
#pragma once

#include "runtime/engine/engine_core.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/llm.hpp"

#include <boost/test/unit_test.hpp>

#include <iterator>
#include <map>
#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

namespace dynamo {
inline std::ostream& boost_test_print_type(std::ostream& os, errc e) { return os << to_string(e); }
} // namespace dynamo

namespace dynamo::protocol {
inline std::ostream& boost_test_print_type(std::ostream& os, finish_reason r) {
  return os << to_string(r);
}
inline std::ostream& boost_test_print_type(std::ostream& os, kv_event_kind k) {
  return os << to_string(k);
}
} // namespace dynamo::protocol

namespace dynamo::test {

/// Tokens first, first+1, ..., first+n-1.
inline std::vector<uint32_t> iota_tokens(uint32_t n, uint32_t first) {
  std::vector<uint32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

inline protocol::preprocessed_request request(std::string id, std::vector<uint32_t> prompt,
                                              uint32_t max_tokens) {
  protocol::preprocessed_request r;
  r.request_id = std::move(id);
  r.token_ids = std::move(prompt);
  r.prompt_tokens = static_cast<uint32_t>(r.token_ids.size());
  r.stop.max_tokens = max_tokens;
  return r;
}

/// One request's stream folded together.
struct stream {
  std::vector<uint32_t> tokens;
  protocol::finish_reason finish = protocol::finish_reason::none;
  uint32_t cached_tokens = 0;
  uint32_t chunks = 0;
  std::string error;
  uint8_t error_code = 0;          ///< the final chunk's (dynamo::errc)
  bool prefilled_locally = false;  ///< the first chunk's flag
  uint32_t flagged_chunks = 0;     ///< chunks with prefilled_locally set
};

/// Steps `core` until it has no work (at most `max_steps`), checking that no
/// chunk follows a final one. Also collects the kv events.
inline std::map<std::string, stream> run(engine::engine_core& core,
                                         std::vector<protocol::kv_event>* events = nullptr,
                                         int max_steps = 10000) {
  std::map<std::string, stream> all;
  for (int i = 0; i < max_steps && core.has_work(); ++i) {
    auto r = core.step();
    BOOST_REQUIRE(r);
    for (auto& o : r->outputs) {
      stream& s = all[o.request_id];
      BOOST_REQUIRE(s.finish == protocol::finish_reason::none);
      if (s.chunks++ == 0) {
        s.cached_tokens = o.output.cached_tokens;
        s.prefilled_locally = o.output.prefilled_locally;
      }
      s.flagged_chunks += o.output.prefilled_locally ? 1 : 0;
      s.tokens.insert(s.tokens.end(), o.output.token_ids.begin(), o.output.token_ids.end());
      s.finish = o.output.finish;
      s.error = o.output.error;
      s.error_code = o.output.error_code;
    }
    if (events)
      events->insert(events->end(), r->kv_events.begin(), r->kv_events.end());
  }
  BOOST_REQUIRE(!core.has_work());
  return all;
}

/// An engine_core over `ex` with `max_num_batched_tokens` per step (to make
/// prompts take several chunks); fails the test when it cannot be built.
inline std::unique_ptr<engine::engine_core> chunking_core(std::unique_ptr<engine::executor> ex,
                                                          uint32_t max_num_batched_tokens) {
  engine::engine_config cfg;
  cfg.max_num_batched_tokens = max_num_batched_tokens;
  auto core = engine::engine_core::create(std::move(ex), cfg);
  BOOST_REQUIRE(core);
  return std::move(*core);
}

/// Every output of `core` until it has no work, in order.
inline std::vector<engine::request_output> drain(engine::engine_core& core) {
  std::vector<engine::request_output> all;
  for (int i = 0; i < 100 && core.has_work(); ++i) {
    auto r = core.step();
    BOOST_REQUIRE(r);
    std::move(r->outputs.begin(), r->outputs.end(), std::back_inserter(all));
  }
  BOOST_REQUIRE(!core.has_work());
  return all;
}

} // namespace dynamo::test
