#include "actors/core/type_ids.hpp"

#include <boost/test/unit_test.hpp>
#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

using namespace dynamo;

namespace {

struct config : caf::actor_system_config {
  config() {
    set("scheduler.max-threads", 1);
    actors::register_types(*this);
  }
};

protocol::engine_output sample() {
  protocol::engine_output out;
  out.token_ids = {1, 2, 300};
  out.finish = protocol::finish_reason::length;
  out.cached_tokens = 16;
  out.error = "e";
  out.disagg = {9, 8};
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(type_ids)

BOOST_AUTO_TEST_CASE(block_starts_at_the_first_custom_id) {
  BOOST_TEST(caf::type_id<protocol::engine_output>::value == caf::first_custom_type_id);
  BOOST_TEST(caf::id_block::dynamo::begin == caf::first_custom_type_id);
  BOOST_TEST(caf::id_block::dynamo::end == caf::first_custom_type_id + 1);
  BOOST_TEST(caf::to_string(actors::client_gone_atom_v.value) == "clientgone");
}

BOOST_AUTO_TEST_CASE(engine_output_round_trips_through_caf_serialization) {
  config cfg;
  caf::actor_system sys{cfg};
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto in = sample();
  BOOST_REQUIRE(!sink(in));
  protocol::engine_output out;
  caf::binary_deserializer source{sys, buf};
  BOOST_REQUIRE(!source(out));
  BOOST_TEST(out.token_ids == in.token_ids);
  BOOST_TEST(static_cast<int>(out.finish) == static_cast<int>(in.finish));
  BOOST_TEST(out.cached_tokens == 16u);
  BOOST_TEST(out.error == "e");
  BOOST_TEST(out.disagg == in.disagg);
}

BOOST_AUTO_TEST_CASE(actors_exchange_engine_output_messages) {
  config cfg;
  caf::actor_system sys{cfg};
  auto echo = sys.spawn([]() -> caf::behavior {
    return {[](const protocol::engine_output& x) { return x.cached_tokens; }};
  });
  caf::scoped_actor self{sys};
  uint32_t got = 0;
  self->request(echo, std::chrono::seconds(5), sample())
    .receive([&](uint32_t v) { got = v; }, [](caf::error&) {});
  BOOST_TEST(got == 16u);
}

BOOST_AUTO_TEST_SUITE_END()
