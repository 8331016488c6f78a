// runtime/protocol/kv_transfer.hpp: layouts, requests, statuses and descriptors.
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/kv_transfer.hpp"

#include "transfer_support.hpp"

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

using namespace dynamo;
using namespace dynamo::protocol;

namespace {

kv_layout small_layout() {
  return make_block_major_layout(2, 4, 2, 8, kv_dtype::f16);
}

kv_transfer_request request_of(std::vector<uint32_t> src, std::vector<uint32_t> dst) {
  kv_transfer_request r;
  r.transfer_id = 7;
  r.source_worker_id = 9;
  r.source_block_ids = std::move(src);
  r.destination_block_ids = std::move(dst);
  r.layout = small_layout();
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(kv_transfer_protocol)

BOOST_AUTO_TEST_CASE(block_major_bytes_and_offsets) {
  auto l = small_layout();
  // 2 layers * 2 (K,V) * 4 tokens * 2 heads * 8 dims * 2 bytes
  BOOST_TEST(l.bytes_per_block == 512u);
  BOOST_TEST(l.name == "block-major");
  BOOST_TEST(static_cast<bool>(validate(l)));
  BOOST_TEST(block_major_offset(l, 0, 0, 0, 0, 0) == 0u);
  BOOST_TEST(block_major_offset(l, 0, 0, 0, 0, 1) == 2u);
  BOOST_TEST(block_major_offset(l, 0, 0, 0, 1, 0) == 16u);  // next head
  BOOST_TEST(block_major_offset(l, 0, 0, 1, 0, 0) == 32u);  // next token
  BOOST_TEST(block_major_offset(l, 0, 1, 0, 0, 0) == 128u); // V after K
  BOOST_TEST(block_major_offset(l, 1, 0, 0, 0, 0) == 256u); // next layer
  BOOST_TEST(block_major_offset(l, 1, 1, 3, 1, 7) == 510u); // last element
  auto f32 = make_block_major_layout(1, 1, 1, 1, kv_dtype::f32);
  BOOST_TEST(f32.bytes_per_block == 8u);
}

BOOST_AUTO_TEST_CASE(invalid_layouts_are_errors) {
  auto l = small_layout();
  l.bytes_per_block = 511;
  BOOST_TEST(code_of(validate(l).error()) == errc::invalid_argument);
  l = small_layout();
  l.num_kv_heads = 0;
  BOOST_TEST(!validate(l));
  l = small_layout();
  l.name = "layer-major";
  BOOST_TEST(!validate(l));
  l = small_layout();
  l.dtype = static_cast<kv_dtype>(9);
  BOOST_TEST(!validate(l));
  // An overflowing product never validates.
  auto huge = make_block_major_layout(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, kv_dtype::f32);
  BOOST_TEST(huge.bytes_per_block == 0u);
  BOOST_TEST(!validate(huge));
}

BOOST_AUTO_TEST_CASE(mismatch_names_the_field) {
  auto a = small_layout();
  auto b = make_block_major_layout(2, 4, 4, 8, kv_dtype::f16);
  auto r = check_compatible(a, b);
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::invalid_argument);
  BOOST_TEST(message_of(r.error()) == "layout mismatch: num_kv_heads 2 != 4");
  auto c = make_block_major_layout(2, 4, 2, 8, kv_dtype::bf16); // same byte size, other dtype
  BOOST_TEST(c.bytes_per_block == a.bytes_per_block);
  r = check_compatible(a, c);
  BOOST_REQUIRE(!r);
  BOOST_TEST(message_of(r.error()) == "layout mismatch: dtype f16 != bf16");
  BOOST_TEST(static_cast<bool>(check_compatible(a, small_layout())));
}

BOOST_AUTO_TEST_CASE(request_validation) {
  BOOST_TEST(static_cast<bool>(validate(request_of({1, 2}, {5, 6}))));
  BOOST_TEST(static_cast<bool>(validate(request_of({}, {}))));
  BOOST_TEST(message_of(validate(request_of({1, 2}, {5})).error()) ==
             "kv transfer 7: 2 source blocks but 1 destination blocks");
  BOOST_TEST(message_of(validate(request_of({1, 2}, {5, 5})).error()) ==
             "kv transfer 7: destination block 5 appears twice");
  BOOST_TEST(static_cast<bool>(validate(request_of({1, 1}, {5, 6})))); // one source, two copies
  // Sparse ids (the sorted path) and a large dense set (the bitmap path).
  BOOST_TEST(message_of(validate(request_of({1, 2, 3}, {4000000000u, 9, 4000000000u})).error()) ==
             "kv transfer 7: destination block 4000000000 appears twice");
  BOOST_TEST(static_cast<bool>(validate(request_of({1, 2}, {4000000000u, 9}))));
  std::vector<uint32_t> many(4096), src(4096, 0);
  for (uint32_t i = 0; i < 4096; ++i)
    many[i] = (i * 2654435761u) % 8192; // distinct, scattered
  BOOST_TEST(static_cast<bool>(validate(request_of(src, many))));
  many[4000] = many[17];
  BOOST_TEST(message_of(validate(request_of(src, many)).error()) ==
             fmt::format("kv transfer 7: destination block {} appears twice", many[17]));
}

BOOST_AUTO_TEST_CASE(request_round_trips_through_msgpack) {
  auto r = request_of({3, 1, 4}, {1, 5, 9});
  r.connection = {"tcp", "host/boot", {1, 2, 3}};
  auto back = decode<kv_transfer_request>(encode(r));
  BOOST_REQUIRE(static_cast<bool>(back));
  BOOST_TEST(back->transfer_id == 7u);
  BOOST_TEST(back->source_block_ids == r.source_block_ids);
  BOOST_TEST(back->destination_block_ids == r.destination_block_ids);
  BOOST_TEST((back->layout == r.layout));
  BOOST_TEST(back->connection.descriptor == r.connection.descriptor);
  BOOST_TEST(back->connection.transport == "tcp");
}

BOOST_AUTO_TEST_CASE(status_to_error_and_back) {
  kv_transfer_status ok;
  BOOST_TEST(ok.ok());
  BOOST_TEST(!status_error(ok));
  auto failed = failed_status(3, 4, make_error(errc::timeout, "slow"));
  BOOST_TEST(!failed.ok());
  BOOST_TEST(failed.transfer_id == 3u);
  BOOST_TEST(failed.source_worker_id == 4u);
  auto err = status_error(failed);
  BOOST_TEST(code_of(err) == errc::timeout);
  BOOST_TEST(message_of(err) == "slow");
  failed.code = 250; // not an errc: still an error, never "ok"
  BOOST_TEST(code_of(status_error(failed)) == errc::internal);
  auto back = decode<kv_transfer_status>(encode(failed_status(1, 2, make_error(errc::closed, "x"))));
  BOOST_REQUIRE(static_cast<bool>(back));
  BOOST_TEST(back->code == static_cast<uint8_t>(errc::closed));
}

BOOST_AUTO_TEST_CASE(malformed_descriptor_bytes_are_errors) {
  std::vector<uint8_t> junk{0xc1, 0x00, 0x17};
  BOOST_TEST(code_of(decode<kv_tcp_descriptor>(junk).error()) == errc::malformed_message);
  BOOST_TEST(code_of(decode<kv_ucx_descriptor>({}).error()) == errc::malformed_message);
  // A map where a descriptor's field has the wrong type.
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk{buf};
  pk.pack_map(1);
  pk.pack(std::string{"port"});
  pk.pack(std::string{"not a number"});
  std::vector<uint8_t> wrong(buf.data(), buf.data() + buf.size());
  BOOST_TEST(!decode<kv_tcp_descriptor>(wrong));
}

BOOST_AUTO_TEST_SUITE_END()
