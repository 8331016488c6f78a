#include "etcd_server.hpp"

#include "planes/discovery/etcd_client.hpp"
#include "planes/discovery/etcd_codec.hpp"
#include "runtime/core/base64.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>
#include <utility>
#include <vector>

namespace dynamo::planes::testing {
namespace fs = std::filesystem;

namespace {

uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0)
    ::close(fd);
  return port;
}

} // namespace

std::string etcd_server::binary() {
  if (const char* env = std::getenv("DYNAMO_ETCD_BIN"); env && *env)
    return ::access(env, X_OK) == 0 ? env : "";
  std::vector<std::string> dirs{"/usr/bin"};
  if (const char* path = std::getenv("PATH"))
    for (std::string_view p{path}; !p.empty();) {
      auto colon = p.find(':');
      dirs.emplace_back(p.substr(0, colon));
      p = colon == std::string_view::npos ? std::string_view{} : p.substr(colon + 1);
    }
  for (auto& d : dirs)
    if (auto f = d + "/etcd"; ::access(f.c_str(), X_OK) == 0)
      return f;
  return "";
}

boost::test_tools::assertion_result etcd_installed(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r{!etcd_server::binary().empty()};
  if (!r)
    r.message() << "etcd is not installed (apt-get install etcd-server, or set DYNAMO_ETCD_BIN): "
                   "skipping the etcd discovery tests";
  return r;
}

std::string etcd_tls_dir() {
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is set by CTest");
  return (fs::path{src} / "tests" / "planes" / "discovery" / "tls").string();
}

std::optional<etcd_server> etcd_server::start(bool tls) {
  etcd_server s;
  s.tls_ = tls;
  s.admin_ = s.security();
  s.dir_ = (fs::temp_directory_path() / ("dynamo-etcd-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(std::rand()))).string();
  s.client_port_ = free_port();
  s.peer_port_ = free_port();
  if (s.client_port_ == 0 || s.peer_port_ == 0 || !s.launch() || !s.wait_ready())
    return std::nullopt;
  return std::optional<etcd_server>{std::move(s)};
}

etcd_server::etcd_server(etcd_server&& o) noexcept
    : dir_(std::exchange(o.dir_, "")), tls_(o.tls_), admin_(o.admin_), client_port_(o.client_port_),
      peer_port_(o.peer_port_),
      pid_(std::exchange(o.pid_, -1)) {}

etcd_server::~etcd_server() {
  kill();
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

std::string etcd_server::url() const {
  return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(client_port_);
}

etcd_security etcd_server::security(const std::string& user, const std::string& password) const {
  etcd_security s;
  if (tls_) {
    auto dir = etcd_tls_dir();
    s = {dir + "/ca.crt", dir + "/client.crt", dir + "/client.key", "", ""};
  }
  s.username = user;
  s.password = password;
  return s;
}

bool etcd_server::enable_auth(const std::string& user, const std::string& password,
                              const std::string& prefix) {
  etcd_client c{{*parse_etcd_endpoint(url())}, std::chrono::milliseconds{5000}, security()};
  std::string range_end = prefix;
  range_end.back() = static_cast<char>(range_end.back() + 1);
  auto key = [](const std::string& s) { return base64_encode({reinterpret_cast<const uint8_t*>(s.data()), s.size()}); };
  std::vector<std::pair<std::string, std::string>> steps{
    {"/v3/auth/user/add", R"({"name":"root","password":")" + password + R"("})"},
    {"/v3/auth/role/add", R"({"name":"root"})"},
    {"/v3/auth/user/grant", R"({"user":"root","role":"root"})"},
    {"/v3/auth/user/add", R"({"name":")" + user + R"(","password":")" + password + R"("})"},
    {"/v3/auth/role/add", R"({"name":")" + user + R"("})"},
    {"/v3/auth/role/grant", R"({"name":")" + user + R"(","perm":{"permType":"READWRITE","key":")" +
                              key(prefix) + R"(","range_end":")" + key(range_end) + R"("}})"},
    {"/v3/auth/user/grant", R"({"user":")" + user + R"(","role":")" + user + R"("})"},
    {"/v3/auth/enable", "{}"}};
  for (auto& [path, body] : steps)
    if (auto r = c.call(path, body); !r) {
      std::cerr << "etcd " << path << ": " << describe(r.error()) << "\n";
      return false;
    }
  admin_ = security("root", password);
  return true;
}

bool etcd_server::invalidate_tokens() {
  etcd_client root{{*parse_etcd_endpoint(url())}, std::chrono::milliseconds{5000}, admin_};
  etcd_client anyone{{*parse_etcd_endpoint(url())}, std::chrono::milliseconds{5000}, security()};
  for (auto [c, path] : {std::pair{&root, "/v3/auth/disable"}, std::pair{&anyone, "/v3/auth/enable"}})
    if (auto r = c->call(path, "{}"); !r) {
      std::cerr << "etcd " << path << ": " << describe(r.error()) << "\n";
      return false;
    }
  return true;
}

bool etcd_server::launch() {
  fs::create_directories(dir_);
  auto client = url();
  auto peer = "http://127.0.0.1:" + std::to_string(peer_port_);
  std::vector<std::string> tls_args;
  if (tls_) {
    auto d = etcd_tls_dir();
    tls_args = {"--cert-file", d + "/server.crt", "--key-file", d + "/server.key",
                "--trusted-ca-file", d + "/ca.crt", "--client-cert-auth"};
  }
  std::vector<std::string> args{binary(), "--name", "test", "--data-dir", dir_ + "/data",
                                "--listen-client-urls", client, "--advertise-client-urls", client,
                                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                                "--initial-cluster", "test=" + peer, "--heartbeat-interval", "50",
                                "--election-timeout", "500", "--log-level", "warn"};
  args.insert(args.end(), tls_args.begin(), tls_args.end());
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  auto log = dir_ + "/etcd.log";
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    // etcd dies with the test, even when the test crashes.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)
      ::_exit(127);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || ::dup2(fd, STDOUT_FILENO) < 0 || ::dup2(fd, STDERR_FILENO) < 0)
      ::_exit(127);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid_ < 0) {
    std::cerr << "cannot start " << argv[0] << ": " << std::strerror(errno) << "\n";
    pid_ = -1;
    return false;
  }
  return true;
}

bool etcd_server::wait_ready() const {
  etcd_client c{{*parse_etcd_endpoint(url())}, std::chrono::milliseconds{500}, admin_};
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (std::chrono::steady_clock::now() < until) {
    if (auto r = c.call("/v3/kv/range", etcd_codec::range_body({"ready", ""})); r)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  std::cerr << "etcd on port " << client_port_ << " did not answer; log in " << dir_ << "/etcd.log\n";
  return false;
}

void etcd_server::kill() {
  if (pid_ <= 0)
    return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

bool etcd_server::restart(bool wipe) {
  kill();
  if (wipe) {
    std::error_code ec;
    fs::remove_all(dir_ + "/data", ec);
  }
  return launch() && wait_ready();
}

} // namespace dynamo::planes::testing
