// The model registry: a model replaced under the same name (re-offered with a
// new context length) keeps the `created` time it was first listed with.
#include "actors/frontend/model_registry.hpp"

#include "tests/actors/frontend/fake_llm_client.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::frontend;

namespace {

model_entry entry(uint32_t context, int64_t created = 0) {
  model_entry e;
  e.card.name = "m";
  e.card.context_length = context;
  e.tokenizer = std::make_shared<tok::byte_tokenizer>();
  e.chat_template = std::make_shared<tok::simple_chat_template>();
  e.client = std::make_shared<test::fake_llm_client>(test::fake_options{});
  e.created = created;
  return e;
}

} // namespace

BOOST_AUTO_TEST_SUITE(model_registry_suite)

BOOST_AUTO_TEST_CASE(a_re_offered_model_keeps_its_first_created_time) {
  model_registry r;
  BOOST_REQUIRE(r.add(entry(4096, 1000)));
  BOOST_REQUIRE(r.add(entry(8192))); // the same model, its context widened
  auto m = r.find("m");
  BOOST_REQUIRE(m);
  BOOST_TEST(m->card.context_length == 8192u);
  BOOST_TEST(m->created == 1000);
}

BOOST_AUTO_TEST_CASE(a_model_added_afresh_gets_the_time_it_is_added) {
  model_registry r;
  BOOST_REQUIRE(r.add(entry(4096, 1000)));
  BOOST_TEST(r.remove("m"));
  BOOST_REQUIRE(r.add(entry(4096)));
  BOOST_TEST(r.find("m")->created > 1000); // now, not the removed entry's
  BOOST_REQUIRE(r.add(entry(4096, 7))); // an explicit time wins
  BOOST_TEST(r.find("m")->created == 7);
}

BOOST_AUTO_TEST_SUITE_END()
