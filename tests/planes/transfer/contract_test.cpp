// The kv_transport contract, run against every transport in one process: inproc,
// tcp on loopback, ucx with active messages (single runs and iov batches), ucx with
// RMA put and ucx into a receiver's own shared memory (direct copies); then hostile
// bytes on the tcp receiver's port. Deadlines only bound a
// failing test; nothing asserts on speed.
#include "planes/transfer/frame.hpp"
#include "planes/transfer/inproc_transport.hpp"
#include "planes/transfer/socket_util.hpp"
#include "runtime/protocol/codec.hpp"

#include "transfer_support.hpp"

#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <numeric>
#include <random>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::transfer_testing;
namespace bdata = boost::unit_test::data;

namespace {

using backend = transport_backend;

const std::vector<backend> all_backends{
    {"inproc", "inproc"}, {"tcp", "tcp"}, {"ucx-am", "ucx", ucx_method::am},
    {"ucx-am-iov", "ucx", ucx_method::am, 4}, {"ucx-put", "ucx", ucx_method::put},
    {"ucx-am-peer-errmode", "ucx", ucx_method::am, 1, ucx_error_mode::peer},
    {"ucx-shm-allocated", "ucx", ucx_method::am, 1, ucx_error_mode::peer, true}};

const protocol::kv_layout small_layout = protocol::make_block_major_layout(2, 4, 2, 8, protocol::kv_dtype::f16);  // 512 B
const protocol::kv_layout large_layout = protocol::make_block_major_layout(4, 16, 4, 32, protocol::kv_dtype::f32); // 64 KiB

constexpr auto transfer_timeout = std::chrono::milliseconds{15'000};

// A receiver config for `b` over `dst`; a backend that allocates gets a region of
// dst's shape to allocate instead (its memory is then the receiver's region()).
kv_receiver_config receiver_config(const backend& b, const protocol::kv_layout& layout,
                                   const host_region& dst, kv_status_callback on_received) {
  kv_receiver_config rc{layout, dst.region(), std::move(on_received), options_for(b)};
  if (b.allocate) {
    rc.allocate_region = true;
    rc.region.base = nullptr;
  }
  return rc;
}

// A receiver and a sender over fresh regions; the sender's blocks hold seeded patterns.
struct pair_fixture {
  pair_fixture(const backend& b, const protocol::kv_layout& layout, uint64_t src_blocks,
               uint64_t dst_blocks, uint64_t dst_stride, uint64_t seed = 1234)
      : layout_(layout), src(src_blocks, layout.bytes_per_block), dst(dst_blocks, dst_stride),
        seed_(seed) {
    src.fill_all(seed);
    auto r = make_kv_receiver(b.transport, receiver_config(b, layout, dst, received.callback()));
    BOOST_REQUIRE_MESSAGE(static_cast<bool>(r), why(r));
    receiver = std::move(*r);
    landing = dst.region();
    if (b.allocate) {
      landing = receiver->region();
      BOOST_REQUIRE(landing.base != nullptr && landing.num_blocks == dst_blocks);
      std::memset(landing.base, 0, landing.num_blocks * landing.block_stride);
    }
    auto s = make_kv_sender(b.transport, {layout, src.region(), options_for(b)});
    BOOST_REQUIRE_MESSAGE(static_cast<bool>(s), why(s));
    sender = std::move(*s);
  }

  protocol::kv_transfer_request request(uint64_t id, std::vector<uint32_t> s,
                                        std::vector<uint32_t> d) const {
    return make_transfer_request(id, 77, std::move(s), std::move(d), layout_, receiver->offers().at(0));
  }

  std::optional<protocol::kv_transfer_status> run(const protocol::kv_transfer_request& r,
                                                  std::chrono::milliseconds timeout = transfer_timeout) {
    sender->send(r, timeout, done.callback());
    return done.wait(r.transfer_id);
  }

  const uint8_t* landed(uint64_t block) const {
    return static_cast<const uint8_t*>(landing.base) + block * landing.block_stride;
  }

  // Every destination block holds its source's pattern; every other one is still zero.
  void verify(const std::vector<uint32_t>& s, const std::vector<uint32_t>& d) const {
    std::vector<bool> written(landing.num_blocks, false);
    for (size_t i = 0; i < s.size(); ++i) {
      written[d[i]] = true;
      auto bad = find_mismatch(landed(d[i]), layout_.bytes_per_block, block_seed(seed_, s[i]));
      BOOST_TEST(!bad.has_value(), "block " << s[i] << " -> " << d[i] << " differs at byte "
                                            << bad.value_or(0));
    }
    for (uint64_t b = 0; b < written.size(); ++b) {
      if (written[b])
        continue;
      const uint8_t* p = landed(b);
      BOOST_TEST(std::all_of(p, p + landing.block_stride, [](uint8_t x) { return x == 0; }),
                 "block " << b << " was written but is not a destination");
    }
  }

  protocol::kv_layout layout_;
  host_region src;
  host_region dst;
  kv_region landing; ///< where blocks land: dst, or the receiver's own region
  uint64_t seed_;
  status_waiter received;
  status_waiter done;
  std::unique_ptr<kv_receiver> receiver;
  std::unique_ptr<kv_sender> sender;
};

// `n` distinct random ids below `limit` (seeded: the same every run).
std::vector<uint32_t> random_ids(size_t n, uint32_t limit, uint32_t seed) {
  std::vector<uint32_t> all(limit);
  std::iota(all.begin(), all.end(), 0u);
  std::mt19937 rng{seed};
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(n);
  return all;
}

void expect_landed(const std::optional<protocol::kv_transfer_status>& s, uint64_t blocks,
                   uint64_t bytes) {
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(s), "no completion");
  BOOST_TEST(s->ok(), "failed: " << s->message);
  BOOST_TEST(s->blocks == blocks);
  BOOST_TEST(s->bytes == bytes);
}

} // namespace

BOOST_AUTO_TEST_SUITE(kv_transport_contract)

BOOST_DATA_TEST_CASE(random_blocks_land_byte_exact, bdata::make(all_backends), b) {
  for (const auto& layout : {small_layout, large_layout}) {
    const uint64_t bpb = layout.bytes_per_block;
    pair_fixture f{b, layout, 24, 40, bpb};
    // 12 scattered pairs, then a run of 4 consecutive ids on both sides (one merged run).
    auto s = random_ids(12, 20, 1);
    auto d = random_ids(12, 32, 2);
    for (uint32_t i = 0; i < 4; ++i) {
      s.push_back(20 + i);
      d.push_back(34 + i);
    }
    auto status = f.run(f.request(1, s, d));
    expect_landed(status, 16, 16 * bpb);
    f.verify(s, d);
    auto seen = f.received.wait(1);
    BOOST_REQUIRE(seen.has_value());
    BOOST_TEST(seen->ok());
    BOOST_TEST(seen->blocks == 16u);
    BOOST_TEST(seen->source_worker_id == 77u);
  }
}

BOOST_DATA_TEST_CASE(a_transfer_past_8_mib_lands_byte_exact, bdata::make(all_backends), b) {
  // 10 MiB: past the size that ucx copies inline, so direct copies are split
  // across the copy threads, a cut falling inside a run of merged blocks.
  const uint64_t bpb = large_layout.bytes_per_block;
  pair_fixture f{b, large_layout, 160, 200, bpb};
  auto s = random_ids(150, 150, 3);
  auto d = random_ids(150, 190, 4);
  for (uint32_t i = 0; i < 10; ++i) { // a run of ten consecutive blocks on both sides, mid-transfer
    s.insert(s.begin() + 75 + i, 150 + i);
    d.insert(d.begin() + 75 + i, 190 + i);
  }
  expect_landed(f.run(f.request(1, s, d)), 160, 160 * bpb);
  f.verify(s, d);
}

BOOST_DATA_TEST_CASE(strided_destination_blocks, bdata::make(all_backends), b) {
  const uint64_t bpb = large_layout.bytes_per_block;
  pair_fixture f{b, large_layout, 8, 8, bpb + 4096};
  std::vector<uint32_t> s{0, 1, 2, 3, 4}, d{3, 4, 5, 6, 0};
  expect_landed(f.run(f.request(2, s, d)), 5, 5 * bpb);
  f.verify(s, d);
}

BOOST_DATA_TEST_CASE(concurrent_transfers_all_land, bdata::make(all_backends), b) {
  const uint64_t bpb = large_layout.bytes_per_block;
  pair_fixture f{b, large_layout, 32, 64, bpb};
  auto dst = random_ids(64, 64, 3);
  std::vector<protocol::kv_transfer_request> reqs;
  for (uint32_t t = 0; t < 8; ++t) {
    std::vector<uint32_t> s, d;
    for (uint32_t i = 0; i < 4; ++i) {
      s.push_back((t * 4 + i * 7) % 32);
      d.push_back(dst[t * 8 + i]);
    }
    reqs.push_back(f.request(100 + t, s, d));
  }
  for (const auto& r : reqs) // all in flight before any is waited for
    f.sender->send(r, transfer_timeout, f.done.callback());
  std::vector<uint32_t> all_s, all_d;
  for (const auto& r : reqs) {
    expect_landed(f.done.wait(r.transfer_id), 4, 4 * bpb);
    BOOST_TEST(f.done.count(r.transfer_id) == 1u);
    all_s.insert(all_s.end(), r.source_block_ids.begin(), r.source_block_ids.end());
    all_d.insert(all_d.end(), r.destination_block_ids.begin(), r.destination_block_ids.end());
  }
  f.verify(all_s, all_d);
}

BOOST_DATA_TEST_CASE(zero_block_transfer_completes, bdata::make(all_backends), b) {
  pair_fixture f{b, small_layout, 4, 4, small_layout.bytes_per_block};
  expect_landed(f.run(f.request(3, {}, {})), 0, 0);
  f.verify({}, {});
}

BOOST_DATA_TEST_CASE(layout_mismatch_is_rejected, bdata::make(all_backends), b) {
  // The receiver holds blocks of another shape (same byte size, other dtype).
  auto other = protocol::make_block_major_layout(2, 4, 2, 8, protocol::kv_dtype::bf16);
  host_region src{4, small_layout.bytes_per_block};
  host_region dst{4, other.bytes_per_block};
  status_waiter received, done;
  auto r = make_kv_receiver(b.transport, receiver_config(b, other, dst, received.callback()));
  BOOST_REQUIRE(static_cast<bool>(r));
  auto s = make_kv_sender(b.transport, {small_layout, src.region(), options_for(b)});
  BOOST_REQUIRE(static_cast<bool>(s));
  protocol::kv_transfer_request req;
  req.transfer_id = 4;
  req.source_block_ids = {0};
  req.destination_block_ids = {1};
  req.layout = small_layout;
  req.connection = (*r)->offers().at(0);
  (*s)->send(req, transfer_timeout, done.callback());
  auto st = done.wait(4);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->code == static_cast<uint8_t>(errc::invalid_argument));
  BOOST_TEST(st->message.find("layout mismatch: dtype f16 != bf16") != std::string::npos, st->message);
  // A request whose layout is not the sender's own is refused too.
  req.transfer_id = 5;
  req.layout = other;
  (*s)->send(req, transfer_timeout, done.callback());
  st = done.wait(5);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->code == static_cast<uint8_t>(errc::invalid_argument));
  BOOST_TEST(received.count(4) + received.count(5) == 0u);
}

BOOST_DATA_TEST_CASE(ids_outside_the_regions_are_rejected, bdata::make(all_backends), b) {
  pair_fixture f{b, small_layout, 4, 4, small_layout.bytes_per_block};
  auto st = f.run(f.request(6, {0}, {4}));
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->code == static_cast<uint8_t>(errc::invalid_argument));
  st = f.run(f.request(7, {4}, {0}));
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->code == static_cast<uint8_t>(errc::invalid_argument));
  st = f.run(f.request(8, {0, 1}, {2, 2}));
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->code == static_cast<uint8_t>(errc::invalid_argument));
  f.verify({}, {});
}

BOOST_DATA_TEST_CASE(malformed_descriptors_are_errors, bdata::make(all_backends), b) {
  pair_fixture f{b, small_layout, 4, 4, small_layout.bytes_per_block};
  auto req = f.request(9, {0}, {0});
  req.connection.descriptor = {0xc1, 0xff, 0x00};
  auto st = f.run(req);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->code == static_cast<uint8_t>(errc::malformed_message));
  req = f.request(10, {0}, {0});
  req.connection.transport = "smoke-signals";
  st = f.run(req);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->code == static_cast<uint8_t>(errc::unsupported));
  // Valid msgpack, wrong shape: an array where a map is expected.
  req = f.request(11, {0}, {0});
  req.connection.descriptor = protocol::encode(std::vector<int>{1, 2, 3});
  st = f.run(req);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->code == static_cast<uint8_t>(errc::malformed_message));
  // Truncated in the middle.
  req = f.request(12, {0}, {0});
  req.connection.descriptor.resize(req.connection.descriptor.size() / 2);
  st = f.run(req);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(!st->ok());
  f.verify({}, {});
}

BOOST_DATA_TEST_CASE(receiver_gone_is_an_error_not_a_hang, bdata::make(all_backends), b) {
  pair_fixture f{b, small_layout, 4, 4, small_layout.bytes_per_block};
  auto req = f.request(13, {0, 1}, {2, 3});
  f.receiver.reset();
  auto st = f.run(req, std::chrono::milliseconds{1500});
  BOOST_REQUIRE_MESSAGE(st.has_value(), "no completion: the sender hung");
  BOOST_TEST(!st->ok());
  BOOST_TEST((st->code == static_cast<uint8_t>(errc::disconnected) ||
              st->code == static_cast<uint8_t>(errc::timeout)),
             "code " << int(st->code) << ": " << st->message);
}

BOOST_AUTO_TEST_CASE(duplicate_in_flight_id_and_damaged_ucx_address) {
  backend b{"ucx-am", "ucx", ucx_method::am};
  pair_fixture f{b, small_layout, 4, 4, small_layout.bytes_per_block};
  auto req = f.request(14, {0}, {0});
  auto desc = protocol::decode<protocol::kv_ucx_descriptor>(req.connection.descriptor);
  BOOST_REQUIRE(static_cast<bool>(desc));
  desc->worker_address.at(desc->worker_address.size() / 2) ^= 0x5a;
  req.connection.descriptor = protocol::encode(*desc);
  auto st = f.run(req);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->code == static_cast<uint8_t>(errc::malformed_message));
  BOOST_TEST(st->message == "ucx descriptor: worker address or rkey damaged");
}

BOOST_AUTO_TEST_CASE(inproc_paused_receiver_times_out_and_destroyed_sender_cancels) {
  host_region src{4, 512}, dst{4, 512};
  status_waiter done;
  auto r = make_inproc_receiver({small_layout, dst.region(), {}, {}});
  BOOST_REQUIRE(static_cast<bool>(r));
  auto s = make_kv_sender("inproc", {small_layout, src.region(), {}});
  BOOST_REQUIRE(static_cast<bool>(s));
  (*r)->set_paused(true);
  protocol::kv_transfer_request req;
  req.transfer_id = 15;
  req.source_block_ids = {1};
  req.destination_block_ids = {2};
  req.layout = small_layout;
  req.connection = (*r)->offers().at(0);
  (*s)->send(req, std::chrono::milliseconds{50}, done.callback());
  auto st = done.wait(15);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->code == static_cast<uint8_t>(errc::timeout));
  // Queued behind a long wait, then the sender goes away: both end, exactly once.
  req.transfer_id = 16;
  (*s)->send(req, std::chrono::milliseconds{300}, done.callback());
  req.transfer_id = 17;
  (*s)->send(req, std::chrono::milliseconds{300}, done.callback());
  s->reset();
  BOOST_TEST(done.wait(16).has_value());
  auto last = done.wait(17);
  BOOST_REQUIRE(last.has_value());
  BOOST_TEST(!last->ok());
  BOOST_TEST(done.count(16) == 1u);
  BOOST_TEST(done.count(17) == 1u);
}

BOOST_AUTO_TEST_CASE(ucx_debug_info_reports_lanes) {
  backend b{"ucx-am", "ucx", ucx_method::am};
  pair_fixture f{b, large_layout, 2, 2, large_layout.bytes_per_block};
  expect_landed(f.run(f.request(18, {0, 1}, {1, 0})), 2, 2 * large_layout.bytes_per_block);
  auto info = f.sender->debug_info();
  BOOST_TEST_MESSAGE("ucx sender lanes:\n" << info);
  BOOST_TEST(info.find("lane[") != std::string::npos, info);
}

BOOST_AUTO_TEST_CASE(auto_receiver_offers_ucx_then_tcp_and_auto_sender_uses_either) {
  host_region src{4, 512}, dst{4, 512};
  src.fill_all(1234);
  status_waiter done;
  auto r = make_kv_receiver("auto", {small_layout, dst.region(), {}, {}});
  BOOST_REQUIRE(static_cast<bool>(r));
  auto offers = (*r)->offers();
  BOOST_REQUIRE(offers.size() == 2u);
  BOOST_TEST(offers[0].transport == "ucx");
  BOOST_TEST(offers[1].transport == "tcp");
  auto s = make_kv_sender("auto", {small_layout, src.region(), {}});
  BOOST_REQUIRE(static_cast<bool>(s));
  auto chosen = select_offer(offers, local_host_id(), kv_memory::host);
  BOOST_REQUIRE(static_cast<bool>(chosen));
  BOOST_TEST(chosen->transport == "ucx");
  for (uint64_t id : {19u, 20u}) {
    protocol::kv_transfer_request req;
    req.transfer_id = id;
    req.source_block_ids = {static_cast<uint32_t>(id - 19)};
    req.destination_block_ids = {static_cast<uint32_t>(id - 17)};
    req.layout = small_layout;
    req.connection = id == 19 ? *chosen : offers[1];
    (*s)->send(req, transfer_timeout, done.callback());
    expect_landed(done.wait(id), 1, 512);
  }
  BOOST_TEST(!find_mismatch(dst.block(2), 512, block_seed(1234, 0)).has_value());
  BOOST_TEST(!find_mismatch(dst.block(3), 512, block_seed(1234, 1)).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

// Hostile bytes on the tcp receiver's port: the connection is dropped and the
// transfer reported failed; the region and the process are untouched.
namespace {

using namespace dynamo::planes::transfer_detail;

unique_fd raw_connect(const protocol::kv_tcp_descriptor& d) {
  auto fd = connect_tcp(d.host, d.port);
  BOOST_REQUIRE(static_cast<bool>(fd));
  pollfd p{fd->get(), POLLOUT, 0};
  BOOST_REQUIRE(::poll(&p, 1, 10000) == 1);
  ::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) & ~O_NONBLOCK);
  return std::move(*fd);
}

void send_all(int fd, const void* p, size_t n) {
  BOOST_REQUIRE(::send(fd, p, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n));
}

// True when the peer closes the connection within 10 s.
bool closed_by_peer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 10000) != 1)
    return false;
  char c;
  return ::recv(fd, &c, 1, 0) <= 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(kv_tcp_receiver_hostile_input)

BOOST_AUTO_TEST_CASE(garbage_wrong_receiver_and_out_of_range_frames_are_refused) {
  host_region dst{4, small_layout.bytes_per_block};
  status_waiter received;
  auto r = make_kv_receiver("tcp", {small_layout, dst.region(), received.callback(), {}});
  BOOST_REQUIRE(static_cast<bool>(r));
  auto desc = protocol::decode<protocol::kv_tcp_descriptor>((*r)->offers().at(0).descriptor);
  BOOST_REQUIRE(static_cast<bool>(desc));
  {
    auto fd = raw_connect(*desc);
    std::vector<uint8_t> junk(40, 0xab);
    send_all(fd.get(), junk.data(), junk.size());
    BOOST_TEST(closed_by_peer(fd.get()));
  }
  {
    auto fd = raw_connect(*desc);
    auto hello = encode_frame({frame_kind::hello, 0, 0, 0, desc->receiver_id + 1, small_layout.bytes_per_block});
    send_all(fd.get(), hello.data(), hello.size());
    BOOST_TEST(closed_by_peer(fd.get())); // a port reused by another receiver
  }
  {
    auto fd = raw_connect(*desc);
    auto hello = encode_frame({frame_kind::hello, 0, 0, 0, desc->receiver_id, small_layout.bytes_per_block});
    send_all(fd.get(), hello.data(), hello.size());
    auto data = encode_frame({frame_kind::data, 0, 21, 8, 4, small_layout.bytes_per_block}); // block 4 of 4
    send_all(fd.get(), data.data(), data.size());
    BOOST_TEST(closed_by_peer(fd.get()));
    auto st = received.wait(21);
    BOOST_REQUIRE(st.has_value());
    BOOST_TEST(st->code == static_cast<uint8_t>(errc::malformed_message));
    BOOST_TEST(st->source_worker_id == 8u);
  }
  for (uint64_t b = 0; b < 4; ++b) {
    const uint8_t* p = dst.block(b);
    BOOST_TEST(std::all_of(p, p + small_layout.bytes_per_block, [](uint8_t x) { return x == 0; }));
  }
}

BOOST_AUTO_TEST_SUITE_END()
