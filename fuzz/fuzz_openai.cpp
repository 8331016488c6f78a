// libFuzzer target: an HTTP body for /v1/chat/completions (first byte even) or
// /v1/completions (odd), parsed and validated into a request.
#include "runtime/openai/request.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1)
    (void)dynamo::openai::parse_completion_request(body);
  else
    (void)dynamo::openai::parse_chat_request(body);
  return 0;
}
