// CUDA IPC hand-off (label gpu): a receiver with device memory in a child process,
// a sender with device memory here, bytes checked by the child after copying its
// blocks back to the host. Every case is skipped when cudaGetDeviceCount fails.
#define BOOST_TEST_MODULE planes_transfer_gpu
#include "planes/transfer/cuda_ipc_transport.hpp"

#include "transfer_support.hpp"

#include <boost/test/unit_test.hpp>

#include <cuda_runtime.h>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::transfer_testing;

namespace {

struct gpu_present {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    boost::test_tools::assertion_result r{cuda_device_available()};
    if (!r)
      r.message() << "no usable CUDA device (cudaGetDeviceCount failed or found none): skipped";
    return r;
  }
};

const protocol::kv_layout layout = protocol::make_block_major_layout(4, 16, 4, 32, protocol::kv_dtype::f16); // 32 KiB

/// `blocks` blocks of the seed's pattern, on the host and copied to the device.
struct seeded_blocks {
  seeded_blocks(uint64_t blocks, uint64_t seed) : host(blocks, layout.bytes_per_block) {
    host.fill_all(seed);
    const std::string failed = device.upload(host.region());
    BOOST_REQUIRE_MESSAGE(failed.empty(), failed);
  }
  host_region host;
  device_blocks device;
};

} // namespace

BOOST_AUTO_TEST_CASE(child_receiver_gets_device_blocks_byte_exact, *boost::unit_test::precondition(gpu_present{})) {
  seeded_blocks src{16, 31};
  peer_args args;
  args.transport = "cuda-ipc";
  args.num_blocks = 32;
  args.layout = layout;
  args.device_memory = "cuda";
  auto peer = spawn_peer(TRANSFER_TEST_PEER, to_argv(args));
  BOOST_REQUIRE_MESSAGE(peer.has_value(), "peer did not start");
  auto offer = select_offer(peer->offers, local_host_id(), kv_memory::cuda_device);
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(offer), why(offer));
  BOOST_TEST(offer->transport == "cuda-ipc");
  auto sender = make_kv_sender("cuda-ipc", {layout, src.device.region(), {}});
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(sender), why(sender));
  std::vector<uint32_t> s{0, 1, 2, 3, 9, 15, 7}, d{30, 31, 0, 1, 17, 4, 12};
  protocol::kv_transfer_request req{1, 3, s, d, layout, *offer};
  status_waiter done;
  (*sender)->send(req, std::chrono::seconds{20}, done.callback());
  auto st = done.wait(1);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->ok(), st->message);
  BOOST_TEST(st->blocks == s.size());
  BOOST_REQUIRE(peer->process.write_line("WAIT 1 20000"));
  BOOST_TEST(peer->process.read_line().value_or("") ==
             "STATUS 0 7 " + std::to_string(7 * layout.bytes_per_block));
  std::string pairs;
  for (size_t i = 0; i < s.size(); ++i)
    pairs += (i ? "," : "") + std::to_string(s[i]) + ":" + std::to_string(d[i]);
  BOOST_REQUIRE(peer->process.write_line("VERIFY 31 " + pairs));
  BOOST_TEST(peer->process.read_line().value_or("") == "OK");
}

BOOST_AUTO_TEST_CASE(same_process_and_layout_mismatch_are_refused, *boost::unit_test::precondition(gpu_present{})) {
  seeded_blocks src{4, 1}, dst{4, 2};
  auto receiver = make_kv_receiver("auto", {layout, dst.device.region(), {}, {}});
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(receiver), why(receiver));
  auto offers = (*receiver)->offers();
  BOOST_REQUIRE(offers.size() == 1u);
  BOOST_TEST(offers[0].transport == "cuda-ipc");
  auto sender = make_kv_sender("auto", {layout, src.device.region(), {}});
  BOOST_REQUIRE(static_cast<bool>(sender));
  status_waiter done;
  protocol::kv_transfer_request req{2, 3, {0}, {1}, layout, offers[0]};
  (*sender)->send(req, std::chrono::seconds{20}, done.callback());
  auto st = done.wait(2);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->code == static_cast<uint8_t>(errc::unsupported), st->message);
  req.transfer_id = 3;
  req.layout = protocol::make_block_major_layout(4, 16, 2, 64, protocol::kv_dtype::f16);
  (*sender)->send(req, std::chrono::seconds{20}, done.callback());
  st = done.wait(3);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(!st->ok());
}

BOOST_AUTO_TEST_CASE(inproc_copies_device_blocks_inside_one_process, *boost::unit_test::precondition(gpu_present{})) {
  // Two CUDA workers of one process (dynamo-run --disagg out=cuda) hand KV over this way.
  seeded_blocks src{8, 5}, dst{8, 6};
  auto receiver = make_kv_receiver("inproc", {layout, dst.device.region(), {}, {}});
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(receiver), why(receiver));
  auto offer = select_offer((*receiver)->offers(), local_host_id(), kv_memory::cuda_device);
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(offer), why(offer));
  BOOST_TEST(offer->transport == "inproc");
  auto sender = make_kv_sender("inproc", {layout, src.device.region(), {}});
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(sender), why(sender));
  const std::vector<uint32_t> s{0, 3, 7, 4}, d{5, 1, 2, 6};
  status_waiter done;
  (*sender)->send({4, 3, s, d, layout, *offer}, std::chrono::seconds{20}, done.callback());
  auto st = done.wait(4);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->ok(), st->message);
  const uint64_t bpb = layout.bytes_per_block;
  std::vector<uint8_t> back(8 * bpb);
  BOOST_REQUIRE(cudaMemcpy(back.data(), dst.device.region().base, back.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (size_t i = 0; i < s.size(); ++i) {
    BOOST_TEST_INFO("block " << s[i] << " -> " << d[i]);
    BOOST_TEST(!find_mismatch(back.data() + d[i] * bpb, bpb, block_seed(5, s[i])));
  }
  BOOST_TEST(!find_mismatch(back.data() + 0 * bpb, bpb, block_seed(6, 0))); // untouched block keeps its bytes
}
