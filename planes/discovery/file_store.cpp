#include "planes/discovery/file_store.hpp"

#include "planes/discovery/record_codec.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace dynamo::planes {
namespace {

namespace fs = std::filesystem;

class file_store final : public record_store {
public:
  explicit file_store(std::string root) : root_(std::move(root)) {}

  [[nodiscard]] expected<void> put(const std::string& key, const bytes& data) override {
    auto target = fs::path{root_} / key;
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec)
      return make_error(errc::io_error, fmt::format("mkdir {}: {}", target.parent_path().string(),
                                                    ec.message()));
    auto temp = target.parent_path() /
                fmt::format(".{}.tmp.{}.{}", target.filename().string(), ::getpid(), ++counter_);
    if (auto written = write_file(temp, data); !written)
      return written;
    if (std::rename(temp.c_str(), target.c_str()) != 0) {
      auto err = make_error(errc::io_error, fmt::format("rename {}: {}", target.string(),
                                                        std::strerror(errno)));
      fs::remove(temp, ec);
      return err;
    }
    return {};
  }

  [[nodiscard]] expected<void> remove(const std::string& key) override {
    std::error_code ec;
    fs::remove(fs::path{root_} / key, ec);
    if (ec)
      return make_error(errc::io_error, fmt::format("remove {}: {}", key, ec.message()));
    return {};
  }

  [[nodiscard]] std::optional<bytes> get(const std::string& key) override {
    auto e = read_entry(fs::path{root_} / key, key);
    if (!e || e->unreadable)
      return std::nullopt;
    return std::move(e->data);
  }

  [[nodiscard]] expected<std::vector<entry>>
  scan(const std::vector<std::string>& prefix) override {
    std::vector<entry> out;
    fs::path start{root_};
    std::string key_prefix;
    for (auto& seg : prefix) {
      start /= seg;
      key_prefix += seg + "/";
    }
    if (prefix.size() == 4) { // a full key: one file
      key_prefix.pop_back();
      if (auto e = read_entry(start, key_prefix))
        out.push_back(std::move(*e));
      return out;
    }
    walk(start, key_prefix, 4 - prefix.size(), out);
    return out;
  }

private:
  static expected<void> write_file(const fs::path& path, const bytes& data) {
    std::ofstream f{path, std::ios::binary | std::ios::trunc};
    f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    f.close();
    if (!f) {
      std::error_code ec;
      fs::remove(path, ec);
      return make_error(errc::io_error, "write " + path.string() + " failed");
    }
    return {};
  }

  /// nullopt when the file is gone or not a regular file.
  static std::optional<entry> read_entry(const fs::path& path, std::string key) {
    std::error_code ec;
    auto size = fs::file_size(path, ec);
    if (ec || !fs::is_regular_file(path, ec))
      return std::nullopt;
    entry e{std::move(key), {}, false};
    if (size > discovery_codec::max_record_bytes) {
      e.unreadable = true;
      return e;
    }
    std::ifstream f{path, std::ios::binary};
    if (!f)
      return std::nullopt; // removed meanwhile
    e.data.resize(size);
    f.read(reinterpret_cast<char*>(e.data.data()), static_cast<std::streamsize>(size));
    e.data.resize(static_cast<size_t>(f.gcount()));
    return e;
  }

  /// Collects files `depth` directory levels below `dir`.
  void walk(const fs::path& dir, const std::string& key_prefix, size_t depth,
            std::vector<entry>& out) {
    std::error_code ec;
    fs::directory_iterator it{dir, ec}, end;
    for (; !ec && it != end; it.increment(ec)) {
      auto name = it->path().filename().string();
      if (name.starts_with(".")) {
        remove_if_stale_temp(it->path());
        continue;
      }
      if (depth > 1) {
        if (it->is_directory(ec) && is_valid_name(name))
          walk(it->path(), key_prefix + name + "/", depth - 1, out);
      } else if (auto e = read_entry(it->path(), key_prefix + name)) {
        out.push_back(std::move(*e));
      }
    }
  }

  static void remove_if_stale_temp(const fs::path& path) {
    std::error_code ec;
    if (path.filename().string().find(".tmp.") == std::string::npos)
      return;
    auto age = fs::file_time_type::clock::now() - fs::last_write_time(path, ec);
    if (!ec && age > std::chrono::seconds{stale_temp_file_seconds})
      fs::remove(path, ec);
  }

  std::string root_;
  std::atomic<uint64_t> counter_{0};
};

} // namespace

std::unique_ptr<record_store> make_file_store(std::string root) {
  return std::make_unique<file_store>(std::move(root));
}

} // namespace dynamo::planes
