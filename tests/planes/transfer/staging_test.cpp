// Host staging of device KV blocks (planes/transfer/kv_staging): slot accounting
// and the block <-> slot copies, driven here with a host region standing in for
// the device (the copies are plain memcpy then; CUDA is exercised on a GPU by
// dynamo-run --disagg out=cuda --kv-transfer tcp).
#include "planes/transfer/kv_staging.hpp"

#include "transfer_support.hpp"

#include <boost/test/unit_test.hpp>

#include <thread>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::transfer_testing;

BOOST_AUTO_TEST_SUITE(kv_staging)

BOOST_AUTO_TEST_CASE(slots_are_handed_out_and_returned) {
  kv_staging_pool pool{4, 64};
  BOOST_TEST(pool.region().num_blocks == 4u);
  BOOST_TEST(pool.region().block_stride == 64u);
  BOOST_TEST((pool.region().memory == kv_memory::host));
  auto a = pool.acquire(3);
  BOOST_REQUIRE(a.has_value());
  BOOST_TEST(*a == (std::vector<uint32_t>{2, 1, 0}), boost::test_tools::per_element());
  BOOST_TEST(!pool.acquire(2).has_value()); // one left: the transfer is refused, not split
  BOOST_TEST(pool.free_slots() == 1u);
  pool.release(*a);
  BOOST_TEST(pool.free_slots() == 4u);
  BOOST_TEST(pool.acquire(4).has_value());
}

BOOST_AUTO_TEST_CASE(slots_of_a_failed_transfer_come_back_only_after_the_delay) {
  kv_staging_pool pool{2, 64};
  auto a = pool.acquire(2);
  BOOST_REQUIRE(a.has_value());
  pool.release_later(*a, std::chrono::milliseconds{200});
  BOOST_TEST(!pool.acquire(1).has_value()); // still quarantined
  std::this_thread::sleep_for(std::chrono::milliseconds{250});
  BOOST_TEST(pool.acquire(2).has_value());
}

BOOST_AUTO_TEST_CASE(gather_then_scatter_moves_exact_blocks) {
  const uint64_t bpb = 256;
  host_region source{8, bpb + 64}; // a wider stride than the block, as a KV cache may have
  source.fill_all(11);
  host_region dest{8, bpb + 64};
  dest.fill_all(12);
  kv_staging_pool send{4, bpb}, recv{4, bpb};
  const std::vector<uint32_t> blocks{6, 1, 3}, into{0, 7, 2};
  auto s = send.acquire(blocks.size());
  auto r = recv.acquire(blocks.size());
  BOOST_REQUIRE((s && r));
  BOOST_REQUIRE(static_cast<bool>(send.gather(source.region(), blocks, *s)));
  // The wire: slot i of the sender's pool lands in slot i of the receiver's.
  for (size_t i = 0; i < blocks.size(); ++i)
    std::memcpy(static_cast<uint8_t*>(recv.region().base) + (*r)[i] * bpb,
                static_cast<const uint8_t*>(send.region().base) + (*s)[i] * bpb, bpb);
  BOOST_REQUIRE(static_cast<bool>(recv.scatter(*r, dest.region(), into)));
  for (size_t i = 0; i < blocks.size(); ++i) {
    BOOST_TEST_INFO("block " << blocks[i] << " -> " << into[i]);
    BOOST_TEST(!find_mismatch(dest.block(into[i]), bpb, block_seed(11, blocks[i])));
  }
  BOOST_TEST(!find_mismatch(dest.block(5), bpb, block_seed(12, 5))); // untouched
}

BOOST_AUTO_TEST_CASE(slots_in_a_ucx_receivers_shared_memory_take_a_transfer) {
  // The decode side of a ucx hand-off of device blocks (kv_handoff): the receiver
  // allocates the slots in UCX shared memory and the pool adopts them; the
  // prefill side sends into slots, which are then scattered into the blocks.
  const auto layout = protocol::make_block_major_layout(2, 4, 2, 8, protocol::kv_dtype::f32); // 512 B
  const uint64_t bpb = layout.bytes_per_block;
  kv_receiver_config rc;
  rc.layout = layout;
  rc.region = {nullptr, 6, bpb, kv_memory::host, 0};
  rc.allocate_region = true;
  auto receiver = make_kv_receiver("ucx", rc);
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(receiver), why(receiver));
  std::shared_ptr<kv_receiver> shared = std::move(*receiver);
  const kv_region slots = shared->region();
  BOOST_REQUIRE(slots.base != nullptr);
  BOOST_TEST(slots.num_blocks == 6u);
  BOOST_TEST(shared->debug_info().find("allocated by UCX") != std::string::npos);
  const auto offer = shared->offers().at(0);
  auto pool = std::make_shared<kv_staging_pool>(slots, shared);
  shared.reset(); // the pool keeps the receiver, and so its memory, alive
  BOOST_TEST(pool->region().base == slots.base);
  auto r = pool->acquire(2);
  BOOST_REQUIRE(r.has_value());

  host_region source{4, bpb};
  source.fill_all(21);
  auto sender = make_kv_sender("ucx", {layout, source.region(), {}});
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(sender), why(sender));
  status_waiter done;
  (*sender)->send(make_transfer_request(1, 3, {3, 0}, *r, layout, offer), std::chrono::seconds{20},
                  done.callback());
  auto st = done.wait(1);
  BOOST_REQUIRE(st.has_value());
  BOOST_REQUIRE_MESSAGE(st->ok(), st->message);
  host_region dest{4, bpb};
  dest.fill_all(22);
  BOOST_REQUIRE(static_cast<bool>(pool->scatter(*r, dest.region(), {1, 2})));
  BOOST_TEST(!find_mismatch(dest.block(1), bpb, block_seed(21, 3)));
  BOOST_TEST(!find_mismatch(dest.block(2), bpb, block_seed(21, 0)));
  BOOST_TEST(!find_mismatch(dest.block(0), bpb, block_seed(22, 0))); // untouched
  BOOST_TEST_MESSAGE((*sender)->debug_info());
}

BOOST_AUTO_TEST_CASE(only_ucx_allocates_a_region) {
  const auto layout = protocol::make_block_major_layout(2, 4, 2, 8, protocol::kv_dtype::f32);
  kv_receiver_config rc;
  rc.layout = layout;
  rc.region = {nullptr, 2, layout.bytes_per_block, kv_memory::host, 0};
  rc.allocate_region = true;
  BOOST_TEST(code_of(make_kv_receiver("tcp", rc).error()) == errc::unsupported);
  rc.region.base = &rc; // a region to allocate has no base yet
  BOOST_TEST(code_of(make_kv_receiver("ucx", rc).error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(out_of_range_ids_are_refused) {
  host_region source{2, 64};
  kv_staging_pool pool{2, 64};
  BOOST_TEST(code_of(pool.gather(source.region(), {2}, {0}).error()) == errc::invalid_argument);
  BOOST_TEST(code_of(pool.gather(source.region(), {0}, {5}).error()) == errc::invalid_argument);
  BOOST_TEST(code_of(pool.gather(source.region(), {0, 1}, {0}).error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
