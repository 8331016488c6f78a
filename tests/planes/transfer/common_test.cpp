// planes/transfer internals: copy plans, frame headers, landing checks, the
// receiver's ledger and offer selection.
#include "planes/transfer/frame.hpp"
#include "planes/transfer/receive_ledger.hpp"
#include "planes/transfer/transfer_common.hpp"

#include "transfer_support.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::transfer_detail;

BOOST_AUTO_TEST_SUITE(kv_transfer_common)

BOOST_AUTO_TEST_CASE(runs_merge_only_touching_ascending_blocks) {
  // Contiguous on both sides: 3,4,5 -> 10,11,12 is one run; 9 -> 2 another.
  auto runs = plan_runs({3, 4, 5, 9}, {10, 11, 12, 2}, 100, 100, 100);
  BOOST_REQUIRE(runs.size() == 2u);
  BOOST_TEST(runs[0].src_offset == 300u);
  BOOST_TEST(runs[0].dst_offset == 1000u);
  BOOST_TEST(runs[0].length == 300u);
  BOOST_TEST(runs[0].dst_block == 10u);
  BOOST_TEST(runs[0].blocks == 3u);
  BOOST_TEST(runs[1].src_offset == 900u);
  BOOST_TEST(runs[1].dst_offset == 200u);
  BOOST_TEST(runs[1].blocks == 1u);
  // A destination stride above bytes_per_block: every block is its own run.
  runs = plan_runs({3, 4}, {10, 11}, 100, 128, 100);
  BOOST_REQUIRE(runs.size() == 2u);
  BOOST_TEST(runs[1].dst_offset == 11u * 128u);
  // Descending ids never merge.
  BOOST_TEST(plan_runs({4, 3}, {11, 10}, 100, 100, 100).size() == 2u);
  // The run cap splits long runs.
  BOOST_TEST(plan_runs({0, 1, 2, 3}, {0, 1, 2, 3}, 100, 100, 100, 200).size() == 2u);
  BOOST_TEST(plan_runs({}, {}, 100, 100, 100).empty());
}

BOOST_AUTO_TEST_CASE(frames_round_trip_and_reject_garbage) {
  frame_header h{frame_kind::ack, 7, 0x0102030405060708ull, 42, 5, 1u << 20};
  auto bytes = encode_frame(h);
  BOOST_TEST(bytes[0] == 'D');
  BOOST_TEST(bytes[8] == 0x08); // little-endian transfer id
  auto back = decode_frame(bytes);
  BOOST_REQUIRE(static_cast<bool>(back));
  BOOST_TEST(static_cast<int>(back->kind) == static_cast<int>(frame_kind::ack));
  BOOST_TEST(back->code == 7);
  BOOST_TEST(back->transfer_id == h.transfer_id);
  BOOST_TEST(back->source_worker == 42u);
  BOOST_TEST(back->block == 5u);
  BOOST_TEST(back->length == (1u << 20));
  auto bad = bytes;
  bad[1] = 'X';
  BOOST_TEST(code_of(decode_frame(bad).error()) == errc::malformed_message);
  bad = bytes;
  bad[4] = 99;
  BOOST_TEST(!decode_frame(bad));
  BOOST_TEST(!decode_frame(std::span<const uint8_t>{bytes.data(), 39}));
}

BOOST_AUTO_TEST_CASE(landing_checks_bounds_and_whole_blocks) {
  protocol::kv_region_geometry g{10, 512, protocol::make_block_major_layout(2, 4, 2, 8, protocol::kv_dtype::f16)};
  BOOST_TEST(check_landing(g, 0, 512).value() == 1u);
  BOOST_TEST(check_landing(g, 8, 1024).value() == 2u);
  BOOST_TEST(!check_landing(g, 9, 1024));  // past the end
  BOOST_TEST(!check_landing(g, 10, 512));  // past the end
  BOOST_TEST(!check_landing(g, 0, 500));   // not whole blocks
  BOOST_TEST(!check_landing(g, 0, 0));
  BOOST_TEST(!check_landing(g, ~uint64_t{0}, 512)); // no overflow
  g.block_stride = 1024; // blocks do not touch: one block per frame
  BOOST_TEST(!check_landing(g, 0, 1024));
  BOOST_TEST(check_landing(g, 9, 512).value() == 1u);
}

BOOST_AUTO_TEST_CASE(landing_runs_must_fit_the_region_and_add_up_to_the_payload) {
  protocol::kv_region_geometry g{10, 512, protocol::make_block_major_layout(2, 4, 2, 8, protocol::kv_dtype::f16)};
  std::vector<landing_run> runs{{1, 2}, {8, 1}};
  uint64_t blocks = 0;
  auto spans = check_runs(g, runs, 1536, blocks);
  BOOST_REQUIRE(static_cast<bool>(spans));
  BOOST_TEST(blocks == 3u);
  BOOST_REQUIRE(spans->size() == 2u);
  BOOST_TEST((*spans)[0].offset == 512u);
  BOOST_TEST((*spans)[0].bytes == 1024u);
  BOOST_TEST((*spans)[1].offset == 4096u);
  BOOST_TEST((*spans)[1].bytes == 512u);
  BOOST_TEST(!check_runs(g, runs, 1024, blocks));                    // more than the payload
  BOOST_TEST(!check_runs(g, runs, 2048, blocks));                    // less than the payload
  BOOST_TEST(!check_runs(g, std::vector<landing_run>{{9, 2}}, 1024, blocks)); // past the end
  BOOST_TEST(!check_runs(g, std::vector<landing_run>{{0, 0}}, 0, blocks));    // an empty run
  BOOST_TEST(static_cast<bool>(check_runs(g, {}, 0, blocks)));
  BOOST_TEST(blocks == 0u);
}

BOOST_AUTO_TEST_CASE(ledger_completes_after_done_and_all_data) {
  receive_ledger ledger{std::chrono::milliseconds{1000}};
  auto t0 = clock::now();
  receive_ledger::key k{1, 2};
  BOOST_TEST(!ledger.on_data(k, 2, 200, t0));
  auto s = ledger.on_done(k, 3, 300, false, t0);
  BOOST_TEST(!s); // one block still to land (a rendezvous behind the done)
  s = ledger.on_data(k, 1, 100, t0);
  BOOST_REQUIRE(s);
  BOOST_TEST(s->ok());
  BOOST_TEST(s->blocks == 3u);
  BOOST_TEST(s->bytes == 300u);
  BOOST_TEST(ledger.open_count() == 0u);
  // Out of band (RMA): done alone completes.
  s = ledger.on_done({1, 3}, 4, 400, true, t0);
  BOOST_REQUIRE(s);
  BOOST_TEST(s->blocks == 4u);
  // Zero blocks complete at once.
  s = ledger.on_done({1, 4}, 0, 0, false, t0);
  BOOST_REQUIRE(s);
  BOOST_TEST(s->ok());
}

BOOST_AUTO_TEST_CASE(ledger_rejects_excess_and_expires_stale) {
  receive_ledger ledger{std::chrono::milliseconds{1000}};
  auto t0 = clock::now();
  BOOST_TEST(!ledger.on_data({1, 1}, 5, 500, t0));
  auto s = ledger.on_done({1, 1}, 3, 300, false, t0);
  BOOST_REQUIRE(s);
  BOOST_TEST(s->code == static_cast<uint8_t>(errc::malformed_message));
  BOOST_TEST(ledger.is_dead({1, 1}));
  BOOST_TEST(!ledger.on_data({1, 1}, 1, 100, t0)); // dead: ignored
  BOOST_TEST(!ledger.on_data({1, 2}, 1, 100, t0));
  BOOST_TEST(ledger.expire(t0 + std::chrono::milliseconds{999}).empty());
  auto stale = ledger.expire(t0 + std::chrono::milliseconds{1000});
  BOOST_REQUIRE(stale.size() == 1u);
  BOOST_TEST(stale[0].transfer_id == 2u);
  BOOST_TEST(stale[0].code == static_cast<uint8_t>(errc::timeout));
  BOOST_TEST(stale[0].blocks == 1u);
  BOOST_TEST(ledger.is_dead({1, 2}));
  auto f = ledger.fail({3, 3}, errc::disconnected, "gone", t0);
  BOOST_TEST(f.code == static_cast<uint8_t>(errc::disconnected));
  BOOST_TEST(ledger.is_dead({3, 3}));
}

BOOST_AUTO_TEST_CASE(select_offer_prefers_cuda_ipc_then_ucx_then_tcp) {
  std::vector<protocol::kv_connection_info> offers{
      {"tcp", "h1", {}}, {"ucx", "h1", {}}, {"cuda-ipc", "h1", {}}};
  BOOST_TEST(select_offer(offers, "h1", kv_memory::host)->transport == "ucx");
  BOOST_TEST(select_offer(offers, "h2", kv_memory::host)->transport == "ucx");
  BOOST_TEST(select_offer(offers, "h1", kv_memory::cuda_device)->transport == "cuda-ipc");
  // Another host: CUDA IPC cannot cross machines.
  BOOST_TEST(code_of(select_offer(offers, "h2", kv_memory::cuda_device).error()) == errc::unsupported);
  BOOST_TEST(select_offer({{"tcp", "h1", {}}}, "h2", kv_memory::host)->transport == "tcp");
  BOOST_TEST(!select_offer({{"inproc", "h1", {}}}, "h2", kv_memory::host));
  BOOST_TEST(select_offer({{"inproc", "h1", {}}}, "h1", kv_memory::host)->transport == "inproc");
  BOOST_TEST(!select_offer({}, "h1", kv_memory::host));
  // Device blocks inside one process: inproc (cudaMemcpy), never tcp or ucx.
  BOOST_TEST(select_offer({{"tcp", "h1", {}}, {"inproc", "h1", {}}}, "h1", kv_memory::cuda_device)->transport ==
             "inproc");
  BOOST_TEST(!select_offer({{"tcp", "h1", {}}, {"ucx", "h1", {}}}, "h1", kv_memory::cuda_device));
}

BOOST_AUTO_TEST_CASE(unknown_transport_names_are_errors) {
  kv_receiver_config rc;
  rc.layout = protocol::make_block_major_layout(2, 4, 2, 8, protocol::kv_dtype::f16);
  auto r = make_kv_receiver("carrier-pigeon", rc);
  BOOST_TEST(code_of(r.error()) == errc::unsupported);
  kv_sender_config sc;
  sc.layout = rc.layout;
  BOOST_TEST(code_of(make_kv_sender("carrier-pigeon", sc).error()) == errc::unsupported);
  // A region too small for the layout is refused up front.
  transfer_testing::host_region small{4, 100};
  rc.region = small.region();
  BOOST_TEST(code_of(make_kv_receiver("tcp", rc).error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(cuda_ipc_is_refused_for_host_memory_or_without_cuda) {
  transfer_testing::host_region blocks{4, 512};
  kv_receiver_config rc;
  rc.layout = protocol::make_block_major_layout(2, 4, 2, 8, protocol::kv_dtype::f16);
  rc.region = blocks.region();
  auto r = make_kv_receiver("cuda-ipc", rc);
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::unsupported); // host memory, or no CUDA in this build
  kv_sender_config sc{rc.layout, blocks.region(), {}};
  BOOST_TEST(code_of(make_kv_sender("cuda-ipc", sc).error()) == errc::unsupported);
}

BOOST_AUTO_TEST_SUITE_END()
