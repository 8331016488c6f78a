// planes_bench: speed of the planes on this machine, printed as one JSON object.
// Request plane: sequential round trips (one request, one item, end) and the
// item rate of one long stream; event plane: publish -> deliver rate. Each ZMQ
// number comes with the in-process fake's as a baseline from the same run.
//   planes_bench [--calls N] [--items N] [--events N]
#include "planes/codec/serial_executor.hpp"
#include "planes/event/inproc_event_plane.hpp"
#include "planes/event/zmq_event_plane.hpp"
#include "planes/request/inproc_request_plane.hpp"
#include "planes/request/zmq_request_plane.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace dynamo;
using namespace dynamo::planes;
using clk = std::chrono::steady_clock;

double us_since(clk::time_point t0) {
  return std::chrono::duration<double, std::micro>(clk::now() - t0).count();
}

struct rtt_result {
  double p50_us = 0, p99_us = 0;
};

rtt_result round_trips(request_server& server, request_client& client, int calls) {
  (void)server.serve("bench/echo/one", [](bytes req, response_stream_ptr s) {
    (void)s->send(std::move(req));
    s->finish();
  });
  std::vector<double> lat;
  bytes req(64, 1);
  for (int i = 0; i < calls + 100; ++i) {
    std::promise<void> done;
    auto t0 = clk::now();
    (void)client.call(server.address(), "bench/echo/one", req, [](bytes) {},
                      [&](const caf::error&) { done.set_value(); });
    done.get_future().wait();
    if (i >= 100) // warm-up
      lat.push_back(us_since(t0));
  }
  std::sort(lat.begin(), lat.end());
  return {lat[lat.size() / 2], lat[lat.size() * 99 / 100]};
}

double stream_rate(request_server& server, request_client& client, int items) {
  serial_executor worker{"bench-worker"};
  (void)server.serve("bench/echo/many", [&](bytes, response_stream_ptr s) {
    (void)worker.post([s, items] {
      bytes item(64, 2);
      for (int i = 0; i < items; ++i)
        (void)s->send(item);
      s->finish();
    });
  });
  std::promise<void> done;
  std::atomic<int> got{0};
  auto t0 = clk::now();
  (void)client.call(server.address(), "bench/echo/many", bytes{}, [&](bytes) { ++got; },
                    [&](const caf::error&) { done.set_value(); });
  done.get_future().wait();
  return got.load() / (us_since(t0) / 1e6);
}

struct event_result {
  double rate = 0;
  uint64_t received = 0, gaps = 0;
};

/// Counts "kv-events" deliveries and when the last one arrived.
struct event_counter {
  std::atomic<uint64_t> probes{0}, events{0};
  std::atomic<int64_t> last_ns{0};
  void operator()(const event_envelope& e) {
    if (e.topic == "probe") {
      ++probes;
      return;
    }
    ++events;
    last_ns = clk::now().time_since_epoch().count();
  }
};

/// Publishes a burst of `events` and measures the delivery rate up to the last
/// delivered event (a burst larger than the HWM loses some: reported as gaps).
event_result event_rate(event_publisher& pub, event_subscriber& sub, event_counter& c,
                        int events) {
  (void)sub.connect(pub.address());
  (void)sub.subscribe("");
  while (c.probes.load() == 0) { // readiness handshake (slow joiner)
    (void)pub.publish("probe", bytes{});
    usleep(2000);
  }
  auto gaps_before = sub.stats().gaps;
  bytes payload(256, 3);
  auto t0 = clk::now();
  for (int i = 0; i < events; ++i)
    (void)pub.publish("kv-events", payload);
  uint64_t seen = 0;
  for (int idle = 0; idle < 100 && c.events.load() < uint64_t(events); ++idle) { // 1 s of silence
    usleep(10000);
    if (c.events.load() != seen)
      idle = 0, seen = c.events.load();
  }
  auto secs = double(c.last_ns.load() - t0.time_since_epoch().count()) / 1e9;
  return {c.events.load() / secs, c.events.load(), sub.stats().gaps - gaps_before};
}

int arg(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0)
      return std::stoi(argv[i + 1]);
  return fallback;
}

} // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0) {
      fmt::print("usage: planes_bench [--calls N] [--items N] [--events N]\n");
      return 0;
    }
  int calls = arg(argc, argv, "--calls", 2000);
  int items = arg(argc, argv, "--items", 100000);
  int events = arg(argc, argv, "--events", 100000);

  auto tcp_server = make_zmq_request_server({"tcp://127.0.0.1:0", {}});
  auto ipc_server = make_zmq_request_server(
      {fmt::format("ipc:///tmp/dynamo-planes-bench-{}.sock", getpid()), {}});
  auto zmq_client = make_zmq_request_client();
  auto net = make_inproc_request_network();
  auto fake_server = make_inproc_request_server(net);
  auto fake_client = make_inproc_request_client(net);
  if (!tcp_server || !ipc_server) {
    fmt::print(stderr, "bind failed\n");
    return 1;
  }
  auto tcp = round_trips(**tcp_server, *zmq_client, calls);
  auto ipc = round_trips(**ipc_server, *zmq_client, calls);
  auto fake = round_trips(*fake_server, *fake_client, calls);
  auto tcp_stream = stream_rate(**tcp_server, *zmq_client, items);
  auto fake_stream = stream_rate(*fake_server, *fake_client, items);

  event_counter zmq_count, fake_count;
  auto zpub = make_zmq_event_publisher();
  zmq_event_subscriber_options so;
  so.callbacks.on_event = [&](const event_envelope& e) { zmq_count(e); };
  auto zsub = make_zmq_event_subscriber(so);
  auto bus = make_inproc_event_bus();
  auto fpub = make_inproc_event_publisher(bus);
  auto fsub =
      make_inproc_event_subscriber(bus, {[&](const event_envelope& e) { fake_count(e); }, {}});
  if (!zpub)
    return 1;
  auto zev = event_rate(**zpub, *zsub, zmq_count, events);
  auto fev = event_rate(*fpub, *fsub, fake_count, events);

  fmt::print(
      "{{\"request_rtt_us\": {{\"zmq_tcp\": {{\"p50\": {:.1f}, \"p99\": {:.1f}}}, "
      "\"zmq_ipc\": {{\"p50\": {:.1f}, \"p99\": {:.1f}}}, \"fake\": {{\"p50\": {:.1f}, \"p99\": "
      "{:.1f}}}, \"calls\": {}}},\n"
      " \"stream_items_per_s\": {{\"zmq_tcp\": {:.0f}, \"fake\": {:.0f}, \"items\": {}, "
      "\"item_bytes\": 64}},\n"
      " \"events_per_s\": {{\"zmq_tcp\": {:.0f}, \"zmq_received\": {}, \"zmq_gaps\": {}, "
      "\"fake\": {:.0f}, \"events\": {}, \"payload_bytes\": 256}}}}\n",
      tcp.p50_us, tcp.p99_us, ipc.p50_us, ipc.p99_us, fake.p50_us, fake.p99_us, calls,
      tcp_stream, fake_stream, items, zev.rate, zev.received, zev.gaps, fev.rate, events);
  return 0;
}
