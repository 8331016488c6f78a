#include "support.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <unistd.h>

namespace dynamo::planes::testing {

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds deadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end)
      return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

temp_dir::temp_dir() {
  std::string tmpl = "/tmp/dynamo-planes-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw std::runtime_error(std::string{"mkdtemp: "} + std::strerror(errno));
  path_ = tmpl;
}

temp_dir::~temp_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::optional<peer_process> spawn_planes_peer(const std::vector<std::string>& args) {
  return test::child_process::spawn(DYNAMO_PLANES_PEER, args);
}

item_callback call_recorder::on_item() {
  return [r = r_](bytes item) {
    std::lock_guard lock{r->mutex};
    if (r->end)
      r->item_after_end = true;
    r->items.push_back(to_string(item));
    r->cv.notify_all();
  };
}

end_callback call_recorder::on_end() {
  return [r = r_](const caf::error& err) {
    std::lock_guard lock{r->mutex};
    ++r->end_count;
    r->end = err;
    r->cv.notify_all();
  };
}

bool call_recorder::wait_end(std::chrono::milliseconds deadline) {
  std::unique_lock lock{r_->mutex};
  return r_->cv.wait_for(lock, deadline, [&] { return r_->end.has_value(); });
}

bool call_recorder::wait_items(size_t n, std::chrono::milliseconds deadline) {
  std::unique_lock lock{r_->mutex};
  return r_->cv.wait_for(lock, deadline, [&] { return r_->items.size() >= n; });
}

std::vector<std::string> call_recorder::items() const {
  std::lock_guard lock{r_->mutex};
  return r_->items;
}

bool call_recorder::ended() const {
  std::lock_guard lock{r_->mutex};
  return r_->end.has_value();
}

caf::error call_recorder::error() const {
  std::lock_guard lock{r_->mutex};
  return r_->end ? *r_->end : caf::error{};
}

int call_recorder::end_count() const {
  std::lock_guard lock{r_->mutex};
  return r_->end_count;
}

bool call_recorder::item_after_end() const {
  std::lock_guard lock{r_->mutex};
  return r_->item_after_end;
}

bytes to_bytes(const std::string& s) {
  return bytes(s.begin(), s.end());
}

std::string to_string(const bytes& b) {
  return std::string(b.begin(), b.end());
}

} // namespace dynamo::planes::testing
