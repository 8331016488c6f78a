#include "planes/transfer/ucx_worker.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <poll.h>

namespace dynamo::planes::transfer_detail {

errc ucx_errc(ucs_status_t status) noexcept {
  switch (status) {
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_ENDPOINT_TIMEOUT:
      return errc::timeout;
    case UCS_ERR_CANCELED:
      return errc::cancelled;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
      return errc::disconnected;
    case UCS_ERR_INVALID_PARAM:
      return errc::invalid_argument;
    case UCS_ERR_UNSUPPORTED:
      return errc::unsupported;
    default:
      return errc::io_error;
  }
}

caf::error ucx_error(ucs_status_t status, const std::string& what) {
  return make_error(ucx_errc(status), fmt::format("{}: {}", what, ucs_status_string(status)));
}

std::string ucx_ep_info(ucp_ep_h ep) {
  char* text = nullptr;
  size_t size = 0;
  FILE* f = ::open_memstream(&text, &size);
  if (f == nullptr)
    return {};
  ucp_ep_print_info(ep, f);
  std::fclose(f);
  std::string out{text, size};
  std::free(text);
  return out;
}

expected<std::unique_ptr<ucx_worker>> ucx_worker::create(const ucx_transport_options& options) {
  std::unique_ptr<ucx_worker> self{new ucx_worker};
  self->spin_ = options.progress_spin;
  if (!self->wake_.valid())
    return make_error(errc::io_error, "ucx: eventfd failed");
  ucp_config_t* config = nullptr;
  if (auto st = ucp_config_read(nullptr, nullptr, &config); st != UCS_OK)
    return ucx_error(st, "ucp_config_read");
  auto modify = [&](const char* name, const std::string& value) -> expected<void> {
    if (auto st = ucp_config_modify(config, name, value.c_str()); st != UCS_OK)
      return ucx_error(st, fmt::format("ucp_config_modify {}={}", name, value));
    return {};
  };
  expected<void> ok{};
  if (!options.tls.empty())
    ok = modify("TLS", options.tls);
  if (ok && options.mm_error_handling && options.error_mode == ucx_error_mode::peer)
    ok = modify("MM_ERROR_HANDLING", "y");
  if (!ok) {
    ucp_config_release(config);
    return ok.error();
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  auto st = ucp_init(&params, config, &self->context_);
  ucp_config_release(config);
  if (st != UCS_OK)
    return ucx_error(st, "ucp_init");
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  if (st = ucp_worker_create(self->context_, &wp, &self->worker_); st != UCS_OK)
    return ucx_error(st, "ucp_worker_create");
  if (st = ucp_worker_get_efd(self->worker_, &self->worker_fd_); st != UCS_OK)
    self->worker_fd_ = -1; // no wake-up support: poll with a short timeout instead
  return self;
}

ucx_worker::~ucx_worker() {
  stop();
  for (auto m : maps_)
    ucp_mem_unmap(context_, m);
  if (worker_)
    ucp_worker_destroy(worker_);
  if (context_)
    ucp_cleanup(context_);
}

void ucx_worker::start(hooks h) {
  hooks_ = std::move(h);
  thread_ = std::thread([this] { run(); });
}

void ucx_worker::stop() {
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  wake_.signal();
  if (thread_.joinable())
    thread_.join();
}

bool ucx_worker::post(std::function<void()> fn) {
  {
    std::lock_guard lock{mutex_};
    if (stopping_)
      return false;
    tasks_.push_back(std::move(fn));
  }
  wake_.signal();
  return true;
}

expected<ucx_worker::mapped> ucx_worker::map(void* base, uint64_t length) {
  const bool allocate = base == nullptr;
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                  UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  mp.address = base;
  mp.length = length;
  mp.flags = allocate ? UCP_MEM_MAP_ALLOCATE : 0;
  mapped m;
  if (auto st = ucp_mem_map(context_, &mp, &m.memh); st != UCS_OK)
    return ucx_error(st, allocate ? "ucp_mem_map (allocate)" : "ucp_mem_map");
  maps_.push_back(m.memh);
  m.base = base;
  if (allocate) {
    ucp_mem_attr_t attr{};
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    if (auto st = ucp_mem_query(m.memh, &attr); st != UCS_OK)
      return ucx_error(st, "ucp_mem_query");
    m.base = attr.address;
  }
  return m;
}

void ucx_worker::run_tasks() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard lock{mutex_};
    batch.swap(tasks_);
  }
  for (auto& t : batch)
    t();
}

// Progresses the worker; after any activity it keeps polling for spin_ before
// sleeping on the worker's event fd, so a stream of blocks is not paced by wake-ups.
void ucx_worker::run() {
  auto last_activity = clock::now() - spin_;
  for (;;) {
    bool stopping = false;
    {
      std::lock_guard lock{mutex_};
      stopping = stopping_;
    }
    run_tasks();
    if (stopping)
      break;
    unsigned events = 0;
    for (int i = 0; i < 256; ++i) {
      unsigned n = ucp_worker_progress(worker_);
      if (n == 0)
        break;
      events += n;
    }
    auto now = clock::now();
    if (events > 0)
      last_activity = now;
    if (hooks_.tick)
      hooks_.tick(now);
    if (now - last_activity < spin_)
      continue;
    idle_wait();
  }
  run_tasks(); // tasks posted before stop: they see the owner stopping
  if (hooks_.shutdown)
    hooks_.shutdown();
}

// Sleeps until the worker has events, a task is posted or the next tick is due.
void ucx_worker::idle_wait() {
  {
    std::lock_guard lock{mutex_};
    if (!tasks_.empty() || stopping_)
      return;
  }
  auto wait = std::chrono::milliseconds{100};
  if (hooks_.next_wake) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(hooks_.next_wake() - clock::now());
    wait = std::clamp(left, std::chrono::milliseconds{0}, wait);
  }
  if (worker_fd_ < 0) {
    wait = std::min(wait, std::chrono::milliseconds{1});
  } else {
    auto st = ucp_worker_arm(worker_);
    if (st == UCS_ERR_BUSY)
      return; // more events already: progress again
    if (st != UCS_OK)
      wait = std::min(wait, std::chrono::milliseconds{1});
  }
  pollfd fds[2] = {{wake_.fd(), POLLIN, 0}, {worker_fd_, POLLIN, 0}};
  int n = worker_fd_ < 0 ? 1 : 2;
  if (::poll(fds, n, static_cast<int>(wait.count())) > 0 && fds[0].revents)
    wake_.drain();
}

} // namespace dynamo::planes::transfer_detail
