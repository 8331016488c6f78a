// Test support for the mocker suites: the tiny engine configuration they
// share and a helper that builds a mocker engine or fails the test. Test
// thread only.
#pragma once

#include "runtime/mocker/mock_executor.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>

namespace dynamo::test {

/// 16 blocks of 4 tokens (by default), context 64, 32 tokens per step, no simulated delay.
inline mocker::mocker_config tiny(uint32_t num_blocks = 16) {
  mocker::mocker_config c;
  c.block_size = 4;
  c.num_blocks = num_blocks;
  c.context_length = 64;
  c.speedup_ratio = 0;
  c.max_num_batched_tokens = 32;
  return c;
}

/// A mocker engine_core for `c`; fails the test when it cannot be built.
inline std::unique_ptr<engine::engine_core> engine_of(const mocker::mocker_config& c,
                                                      engine::engine_config base = {}) {
  auto core = mocker::make_engine(c, std::move(base));
  BOOST_REQUIRE(core);
  return std::move(*core);
}

} // namespace dynamo::test
