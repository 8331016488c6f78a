// planes_test_peer: a separate process for the plane contract suites, so that a
// real process can be killed with SIGKILL mid-stream. It prints one handshake
// line on stdout when ready, then idles until killed.
//   serve-request <bind> <path> <heartbeat_ms> <peer_timeout_ms>  -> "ADDR <address>"
//   call-request <address> <path> <heartbeat_ms> <peer_timeout_ms> -> "CALLED"
//   register <root> <ns/component/endpoint> <ttl_ms> <keep_alive_ms> -> "REGISTERED <hex>"
//   register-etcd <url> <key prefix> <ns/component/endpoint> <ttl_ms> <keep_alive_ms> -> same
#include "planes/discovery/etcd_discovery.hpp"
#include "planes/discovery/file_discovery.hpp"
#include "planes/request/zmq_request_plane.hpp"

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace dynamo;
using namespace dynamo::planes;

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

[[noreturn]] void idle_forever() {
  for (;;)
    std::this_thread::sleep_for(std::chrono::hours{1});
}

request_plane_timing timing_from(const char* heartbeat, const char* timeout) {
  request_plane_timing t;
  t.heartbeat_interval = std::chrono::milliseconds{std::stoi(heartbeat)};
  t.peer_timeout = std::chrono::milliseconds{std::stoi(timeout)};
  t.tick = std::min(t.tick, t.heartbeat_interval);
  return t;
}

int serve_request(char** argv) {
  auto server = make_zmq_request_server({argv[2], timing_from(argv[4], argv[5])});
  if (!server) {
    say("ERROR " + describe(server.error()));
    return 1;
  }
  static std::mutex mutex;
  static std::vector<response_stream_ptr> held; // streams stay open until we die
  auto ok = (*server)->serve(argv[3], [](bytes, response_stream_ptr stream) {
    (void)stream->send(bytes{'h', 'e', 'l', 'l', 'o'});
    std::lock_guard lock{mutex};
    held.push_back(std::move(stream));
  });
  if (!ok) {
    say("ERROR " + describe(ok.error()));
    return 1;
  }
  say("ADDR " + (*server)->address());
  idle_forever();
}

int call_request(char** argv) {
  auto client = make_zmq_request_client({timing_from(argv[4], argv[5])});
  auto handle = client->call(argv[2], argv[3], bytes{'h', 'i'}, [](bytes) {},
                             [](const caf::error&) {});
  (void)handle;
  say("CALLED");
  idle_forever();
}

// argv: register <root dir> <endpoint> <ttl ms> <keep-alive ms>, or
// register-etcd <etcd url> <key prefix> <endpoint> <ttl ms> <keep-alive ms>.
int register_instance(char** argv, bool etcd) {
  discovery_options opts;
  int at = etcd ? 4 : 3;
  opts.lease_ttl = std::chrono::milliseconds{std::stoi(argv[at + 1])};
  opts.keep_alive_interval = std::chrono::milliseconds{std::stoi(argv[at + 2])};
  expected<std::unique_ptr<discovery_plane>> plane = make_error(errc::invalid_argument, "");
  if (etcd) {
    etcd_discovery_options eo;
    eo.endpoints = {argv[2]};
    eo.key_prefix = argv[3];
    eo.base = opts;
    plane = make_etcd_discovery(eo);
  } else {
    plane = make_file_discovery(argv[2], opts);
  }
  auto ep = endpoint_id::parse(argv[at]);
  if (!plane || !ep) {
    say("ERROR bad arguments");
    return 1;
  }
  instance_record rec;
  rec.endpoint = *ep;
  rec.request_address = "tcp://127.0.0.1:1";
  auto reg = (*plane)->register_instance(rec);
  if (!reg) {
    say("ERROR " + describe(reg.error()));
    return 1;
  }
  say("REGISTERED " + to_hex((*reg)->record().instance));
  idle_forever();
}

} // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "serve-request" && argc == 6)
    return serve_request(argv);
  if (mode == "call-request" && argc == 6)
    return call_request(argv);
  if (mode == "register" && argc == 6)
    return register_instance(argv, false);
  if (mode == "register-etcd" && argc == 7)
    return register_instance(argv, true);
  std::fputs("usage: planes_test_peer serve-request|call-request|register|register-etcd ...\n", stderr);
  return 2;
}
