#include "runtime/core/base64.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;

namespace {
std::string decoded(std::string_view text, size_t max = 1024) {
  auto d = base64_decode(text, max);
  BOOST_REQUIRE_MESSAGE(d, std::string{text});
  return {d->begin(), d->end()};
}
} // namespace

BOOST_AUTO_TEST_SUITE(base64)

BOOST_AUTO_TEST_CASE(rfc4648_vectors_round_trip) {
  const std::pair<std::string_view, std::string_view> vectors[] = {
    {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (auto [plain, text] : vectors) {
    BOOST_TEST(base64_encode(plain) == text);
    BOOST_TEST(decoded(text) == plain);
  }
  std::vector<uint8_t> all(256);
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<uint8_t>(i);
  auto back = base64_decode(base64_encode(all), 256);
  BOOST_REQUIRE(back);
  BOOST_TEST(*back == all);
  BOOST_TEST(base64_encode(std::string_view{"/dyn/"}) == "L2R5bi8="); // etcd keys look like this
}

BOOST_AUTO_TEST_CASE(malformed_text_is_an_error_value) {
  for (std::string_view bad : {"Zg=", "Zm9", "Zg==Zg==", "Z===", "=Zg=", "Zm=v", "Zm9v!A==", "Zm9v\n"})
    BOOST_TEST((code_of(base64_decode(bad, 1024).error()) == errc::malformed_message), bad);
}

BOOST_AUTO_TEST_CASE(the_size_bound_is_checked_before_decoding) {
  BOOST_TEST(decoded("Zm9vYmFy", 6) == "foobar");
  BOOST_TEST((code_of(base64_decode("Zm9vYmFy", 5).error()) == errc::invalid_argument));
  BOOST_TEST((code_of(base64_decode("Zm9vYg==", 3).error()) == errc::invalid_argument));
  BOOST_TEST(decoded("Zm9vYg==", 4) == "foob");
}

BOOST_AUTO_TEST_SUITE_END()
