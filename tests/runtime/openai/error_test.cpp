#include "runtime/openai/error.hpp"
#include "runtime/protocol/llm.hpp"

#include <boost/test/unit_test.hpp>
#include <caf/sec.hpp>

using namespace dynamo;
using namespace dynamo::openai;

BOOST_AUTO_TEST_SUITE(error_mapping)

BOOST_AUTO_TEST_CASE(every_errc_has_a_status_and_type) {
  struct row {
    errc code;
    unsigned status;
    const char* type;
  };
  const row table[] = {
    {errc::invalid_argument, 400, "invalid_request_error"},
    {errc::malformed_message, 400, "invalid_request_error"},
    {errc::unsupported, 400, "invalid_request_error"},
    {errc::not_found, 404, "invalid_request_error"},
    {errc::io_error, 500, "server_error"},
    {errc::corrupt_file, 500, "server_error"},
    {errc::timeout, 504, "timeout"},
    {errc::cancelled, 499, "request_cancelled"},
    {errc::closed, 503, "service_unavailable"},
    {errc::overloaded, 503, "service_unavailable"},
    {errc::no_workers, 503, "service_unavailable"},
    {errc::disconnected, 503, "service_unavailable"},
    {errc::device_error, 503, "service_unavailable"},
    {errc::config_error, 500, "server_error"},
    {errc::internal, 500, "server_error"},
    {errc::context_length_exceeded, 400, "invalid_request_error"},
  };
  BOOST_TEST(std::size(table) == static_cast<size_t>(errc::context_length_exceeded)); // every code listed
  for (const auto& r : table) {
    auto m = map_errc(r.code);
    BOOST_TEST(m.status == r.status, to_string(r.code));
    BOOST_TEST(m.type == r.type, to_string(r.code));
  }
}

BOOST_AUTO_TEST_CASE(a_workers_context_refusal_gets_the_openai_code) {
  // A worker's refusal names no request field: the code still says what it is.
  auto e = to_api_error(make_error(errc::context_length_exceeded, "this model's context length is 32"));
  BOOST_TEST(e.status == 400u);
  BOOST_TEST(e.type == "invalid_request_error");
  BOOST_TEST(e.code == "context_length_exceeded");
  BOOST_TEST(e.param.empty());
  BOOST_TEST(e.message == "this model's context length is 32");
}

BOOST_AUTO_TEST_CASE(field_error_carries_param_and_code) {
  auto e = to_api_error(field_error(errc::invalid_argument, "temperature", codes::invalid_value,
                                    "too hot"));
  BOOST_TEST(e.status == 400u);
  BOOST_TEST(e.type == "invalid_request_error");
  BOOST_TEST(e.message == "too hot");
  BOOST_TEST(e.param == "temperature");
  BOOST_TEST(e.code == "invalid_value");
}

BOOST_AUTO_TEST_CASE(plain_errors_keep_their_message_without_param) {
  auto e = to_api_error(make_error(errc::no_workers, "no worker serves m"));
  BOOST_TEST(e.status == 503u);
  BOOST_TEST(e.message == "no worker serves m");
  BOOST_TEST(e.param.empty());
  BOOST_TEST(e.code.empty());
}

BOOST_AUTO_TEST_CASE(a_backend_error_keeps_the_workers_code) {
  auto chunk = [](errc code, std::string message) {
    protocol::engine_output out;
    out.finish = protocol::finish_reason::error;
    out.error_code = static_cast<uint8_t>(code);
    out.error = std::move(message);
    return out;
  };
  auto rejected = to_api_error(backend_error(chunk(errc::invalid_argument, "the prompt has 475 tokens")));
  BOOST_TEST(rejected.status == 400u);
  BOOST_TEST(rejected.message == "backend error: the prompt has 475 tokens");
  auto no_code = chunk(errc::internal, "executor failed at step 9");
  no_code.error_code = 0;
  auto unknown = to_api_error(backend_error(no_code));
  BOOST_TEST(unknown.status == 500u);
  BOOST_TEST(unknown.message.find("step 9") == std::string::npos);
  BOOST_TEST(to_api_error(backend_error(chunk(errc::device_error, "gone"))).status == 503u);
}

BOOST_AUTO_TEST_CASE(internal_details_never_reach_the_client) {
  auto e = to_api_error(make_error(errc::internal, "segment 0x7f.. exploded in kernel foo"));
  BOOST_TEST(e.status == 500u);
  BOOST_TEST(e.message.find("exploded") == std::string::npos);
  auto foreign = to_api_error(caf::make_error(caf::sec::runtime_error, "boom"));
  BOOST_TEST(foreign.status == 500u);
  BOOST_TEST(foreign.type == "server_error");
}

BOOST_AUTO_TEST_CASE(error_body_is_openai_wrapped_object_with_nulls) {
  api_error e{404, "invalid_request_error", "The model 'x' does not exist", "model",
              "model_not_found"};
  BOOST_TEST(error_body(e) ==
             R"({"error":{"message":"The model 'x' does not exist","type":"invalid_request_error",)"
             R"("param":"model","code":"model_not_found"}})");
  api_error bare{500, "server_error", "oops", "", ""};
  BOOST_TEST(error_body(bare) ==
             R"({"error":{"message":"oops","type":"server_error","param":null,"code":null}})");
}

BOOST_AUTO_TEST_CASE(status_bodies_are_typed_by_status) {
  BOOST_TEST(status_error_body(405, "Method Not Allowed") ==
             R"({"error":{"message":"Method Not Allowed","type":"invalid_request_error",)"
             R"("param":null,"code":null}})");
  BOOST_TEST(status_error_body(500, "x").find("server_error") != std::string::npos);
  BOOST_TEST(status_error_body(503, "x").find("service_unavailable") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
