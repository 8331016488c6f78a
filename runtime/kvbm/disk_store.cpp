#include "runtime/kvbm/disk_store.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <tuple>
#include <unordered_set>
#include <utility>

namespace dynamo::kvbm {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view segment_prefix = "seg-";
constexpr std::string_view segment_suffix = ".kvs";
constexpr std::string_view lock_name = "LOCK";
constexpr std::string_view live_name = "LIVE";
/// A live index longer than this is not read (24 bytes a block: 40 M blocks).
constexpr uint64_t max_live_index_bytes = uint64_t{1} << 30;
constexpr unsigned max_siblings = 16;

std::string segment_path(const std::string& dir, uint64_t id) {
  return fmt::format("{}/{}{:016x}{}", dir, segment_prefix, id, segment_suffix);
}

/// Locks `dir`/LOCK; the descriptor, -1 when another process (or store) holds
/// it, -2 on another error.
int lock_directory(const std::string& dir) {
  const std::string path = dir + "/" + std::string{lock_name};
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return -2;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const bool held = errno == EWOULDBLOCK;
    ::close(fd);
    return held ? -1 : -2;
  }
  return fd;
}

bool is_block_file(std::string_view name) { return name.ends_with(".kvb") || name.ends_with(".kvb.tmp"); }

/// The pid in "<pool>-<pid>-<index>" (digits both), or nullopt.
std::optional<long> pid_of_block_dir(std::string_view name, std::string_view pool) {
  if (!name.starts_with(pool) || name.size() <= pool.size() || name[pool.size()] != '-')
    return std::nullopt;
  name.remove_prefix(pool.size() + 1);
  const size_t dash = name.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == name.size() || dash > 9)
    return std::nullopt;
  auto digits = [](std::string_view t) {
    return std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(name.substr(0, dash)) || !digits(name.substr(dash + 1)))
    return std::nullopt;
  return std::stol(std::string{name.substr(0, dash)});
}

bool process_alive(long pid) { return pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; }

} // namespace

std::vector<std::string> remove_stale_block_dirs(const std::string& root, std::string_view pool,
                                                 const std::function<bool(long)>& alive) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(root, ec)) {
    const std::optional<long> pid = pid_of_block_dir(d.path().filename().string(), pool);
    if (!pid || !d.is_directory(ec) || d.is_symlink(ec) || (alive ? alive(*pid) : process_alive(*pid)))
      continue;
    std::vector<fs::path> files;
    bool only_blocks = true;
    std::error_code listed;
    for (const auto& f : fs::directory_iterator(d.path(), listed)) {
      std::error_code kind;
      only_blocks = only_blocks && f.is_regular_file(kind) && !f.is_symlink(kind) && !kind &&
                    is_block_file(f.path().filename().string());
      files.push_back(f.path());
    }
    if (listed || !only_blocks || files.empty())
      continue;
    for (const fs::path& f : files)
      fs::remove(f, ec);
    if (fs::remove(d.path(), ec)) { // only when empty
      spdlog::info("KVBM disk: removed {} ({} block files of the old layout, process {} gone)", d.path().string(),
                   files.size(), *pid);
      removed.push_back(d.path().string());
    }
  }
  return removed;
}

disk_store::disk_store(disk_store_config cfg) : cfg_(std::move(cfg)), index_(cfg_.capacity_blocks) {}

disk_store::disk_store(disk_store&& o) noexcept
    : cfg_(std::move(o.cfg_)), lock_fd_(std::exchange(o.lock_fd_, -1)), index_(std::move(o.index_)),
      places_(std::move(o.places_)), segments_(std::move(o.segments_)), active_(o.active_), next_id_(o.next_id_),
      dead_bytes_(o.dead_bytes_), restored_(std::move(o.restored_)), rebuilt_(o.rebuilt_),
      compaction_(std::move(o.compaction_)), compaction_read_(std::move(o.compaction_read_)) {}

disk_store& disk_store::operator=(disk_store&& o) noexcept {
  if (this != &o) {
    close();
    cfg_ = std::move(o.cfg_);
    lock_fd_ = std::exchange(o.lock_fd_, -1);
    index_ = std::move(o.index_);
    places_ = std::move(o.places_);
    segments_ = std::move(o.segments_);
    active_ = o.active_;
    next_id_ = o.next_id_;
    dead_bytes_ = o.dead_bytes_;
    restored_ = std::move(o.restored_);
    rebuilt_ = o.rebuilt_;
    compaction_ = std::move(o.compaction_);
    compaction_read_ = std::move(o.compaction_read_); // ours, if any, waited for first
  }
  return *this;
}

disk_store::~disk_store() { close(); }

void disk_store::close() {
  if (lock_fd_ < 0)
    return;
  live_index live;
  live.tag = cfg_.tag;
  for (const auto& [id, seg] : segments_)
    live.segments.push_back({id, seg.file->end()});
  for (const auto& [hash, priority] : index_.use_order())
    if (auto p = places_.find(hash); p != places_.end())
      live.records.push_back({p->second.segment, p->second.offset, priority, 0});
  const std::vector<std::byte> bytes = encode_live_index(live);
  const std::string path = cfg_.path + "/" + std::string{live_name};
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  std::error_code ec;
  if (out.good())
    fs::rename(tmp, path, ec);
  if (!out.good() || ec) {
    fs::remove(tmp, ec);
    spdlog::warn("KVBM disk {}: could not write its live index; the next start restores blocks evicted since their "
                 "segments were written",
                 cfg_.path);
  }
  ::close(std::exchange(lock_fd_, -1)); // releases the directory; the segments stay for the next store
}

std::optional<live_index>
disk_store::take_live_index(const std::map<uint64_t, std::shared_ptr<segment_file>>& found) const {
  const std::string path = cfg_.path + "/" + std::string{live_name};
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec)
    return std::nullopt; // none: the last store did not close cleanly (or there was none)
  std::vector<std::byte> bytes;
  if (size <= max_live_index_bytes) {
    bytes.resize(size);
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
    if (!in)
      bytes.clear();
  }
  fs::remove(path, ec); // it holds only until the next write
  std::optional<live_index> live = parse_live_index(bytes);
  bool same = live && live->tag == cfg_.tag && live->segments.size() == found.size();
  for (size_t k = 0; same && k < live->segments.size(); ++k) {
    auto f = found.find(live->segments[k].id);
    same = f != found.end() && f->second->end() == live->segments[k].end;
  }
  if (!same) {
    spdlog::info("KVBM disk {}: its live index does not match the segments; restoring from them alone", cfg_.path);
    return std::nullopt;
  }
  return live;
}

expected<disk_store> disk_store::open(disk_store_config cfg) {
  if (cfg.segment_bytes == 0)
    return make_error(errc::config_error, "kvbm disk segment size must be > 0");
  disk_store s{std::move(cfg)};
  if (s.has_files()) {
    if (auto ok = s.claim(); !ok)
      return ok.error();
    s.rebuild();
  }
  return s;
}

expected<void> disk_store::claim() {
  const std::string base = cfg_.path;
  for (unsigned k = 0; k < max_siblings; ++k) {
    const std::string dir = k == 0 ? base : base + "." + std::to_string(k);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir, ec))
      return make_error(errc::io_error, "KVBM disk path " + dir + " is not a usable directory" +
                                            (ec ? ": " + ec.message() : std::string{}));
    const int fd = lock_directory(dir);
    if (fd == -2)
      return make_error(errc::io_error, "KVBM disk path " + dir + ": cannot lock it: " + std::strerror(errno));
    if (fd >= 0) {
      lock_fd_ = fd;
      cfg_.path = dir;
      return {};
    }
  }
  return make_error(errc::io_error, "KVBM disk path " + base + " and its siblings are all in use");
}

void disk_store::rebuild() {
  std::error_code ec;
  std::map<uint64_t, std::shared_ptr<segment_file>> found;
  for (const auto& e : fs::directory_iterator(cfg_.path, ec)) {
    const std::string name = e.path().filename().string();
    if (is_block_file(name)) { // the one-file-per-block format
      fs::remove(e.path(), ec);
      continue;
    }
    if (!name.starts_with(segment_prefix) || !name.ends_with(segment_suffix))
      continue;
    auto f = segment_file::open(e.path().string());
    if (!f || (*f)->tag() != cfg_.tag || found.contains((*f)->id())) { // not ours: KV of another model
      fs::remove(e.path(), ec);
      continue;
    }
    found.emplace((*f)->id(), std::move(*f));
  }
  // Every segment's records (oldest first), by its footer or by a scan.
  std::map<uint64_t, std::vector<segment_file::scanned>> records;
  for (auto& [id, file] : found) {
    std::optional<std::vector<segment_file::scanned>> r = file->read_footer();
    ++(r ? rebuilt_.segments_from_footer : rebuilt_.segments_scanned);
    records.emplace(id, r ? std::move(*r) : file->scan());
  }
  // The last store's live index, when it names exactly these segments as they
  // are: then only its records come back, in its order and priorities.
  std::optional<live_index> live = take_live_index(found);
  rebuilt_.live_index = live.has_value();
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> live_rank; // (segment, offset) -> position
  if (live)
    for (uint64_t k = 0; k < live->records.size(); ++k)
      live_rank.emplace(std::pair{live->records[k].segment, live->records[k].offset}, k);
  std::unordered_map<uint64_t, restored_block> meta;
  std::unordered_map<uint64_t, uint64_t> rank; // hash -> position in the live index
  for (auto& [id, file] : found) {
    segments_.emplace(id, segment{file, 0, 0});
    next_id_ = std::max(next_id_, id + 1);
    active_ = id; // drop_place() keeps the segment being scanned
    for (const segment_file::scanned& r : records.at(id)) { // oldest first
      const uint64_t h = r.header.sequence_hash;
      auto ranked = live_rank.find({id, r.offset});
      if (live && ranked == live_rank.end()) {
        ++rebuilt_.evicted_records; // a hole the footer still lists
        continue;
      }
      drop_place(h); // an older copy (a compaction cut short): this one is newer
      const place p{id, r.offset, r.header.length};
      places_[h] = p;
      add_live(p);
      meta[h] = restored_block{h, r.header.tokens_hash, r.header.parent()};
      if (live)
        rank[h] = ranked->second;
    }
  }
  // The policy's order: the live index's, else the write order (the last
  // written the most recent); parents first; past the capacity the oldest
  // leaves go.
  std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> order; // (rank or segment, offset, hash)
  order.reserve(places_.size());
  for (const auto& [h, p] : places_)
    order.emplace_back(live ? rank.at(h) : p.segment, live ? 0 : p.offset, h);
  std::sort(order.begin(), order.end());
  const std::vector<restored_block> listed = parents_first(meta, order);
  for (const restored_block& b : listed) {
    const uint32_t priority = live ? live->records[rank.at(b.sequence_hash)].priority : 0;
    for (block_lru::evicted& gone : index_.insert(b.sequence_hash, nullptr, priority, b.parent))
      drop_place(gone.sequence_hash);
  }
  for (const restored_block& b : listed)
    if (index_.contains(b.sequence_hash))
      restored_.push_back(b);
  active_ = 0; // appends go to a new segment
  dead_bytes_ = 0;
  for (auto it = segments_.begin(); it != segments_.end();) {
    dead_bytes_ += it->second.file->end() - sizeof(segment_header) - it->second.live_bytes;
    if (it->second.live_records == 0) {
      dead_bytes_ -= it->second.file->end() - sizeof(segment_header);
      it->second.file->remove();
      it = segments_.erase(it);
    } else {
      if (!it->second.file->sealed())
        (void)it->second.file->seal(); // the next start reads its footer
      ++it;
    }
  }
  if (!segments_.empty() || rebuilt_.segments_scanned > 0)
    spdlog::info("KVBM disk {}: {} blocks restored, {} segments read by their footer, {} scanned, {}", cfg_.path,
                 restored_.size(), rebuilt_.segments_from_footer, rebuilt_.segments_scanned,
                 rebuilt_.live_index ? fmt::format("order and {} evictions kept by the live index", rebuilt_.evicted_records)
                                     : std::string{"no live index (write order)"});
}

std::vector<restored_block>
disk_store::parents_first(const std::unordered_map<uint64_t, restored_block>& meta,
                          std::span<const std::tuple<uint64_t, uint64_t, uint64_t>> order) const {
  std::vector<restored_block> out;
  std::unordered_set<uint64_t> listed;
  std::vector<uint64_t> chain;
  for (const auto& [key, offset, hash] : order) {
    // Up the parents held and not listed yet, then listed root first.
    chain.clear();
    for (std::optional<uint64_t> h = hash; h && places_.contains(*h) && !listed.contains(*h);) {
      if (std::find(chain.begin(), chain.end(), *h) != chain.end())
        break; // a cycle: never from real hashes
      chain.push_back(*h);
      h = meta.at(*h).parent;
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      listed.insert(*it);
      out.push_back(meta.at(*it));
    }
  }
  return out;
}

bool disk_store::room_for(uint64_t bytes) const {
  struct statvfs st {};
  if (::statvfs(cfg_.path.c_str(), &st) != 0)
    return false;
  const uint64_t free_bytes = uint64_t{st.f_bavail} * st.f_frsize;
  return free_bytes >= bytes && free_bytes - bytes >= cfg_.min_free_bytes;
}

std::optional<disk_store::place> disk_store::append(const record_header* header, std::span<const std::byte> bytes,
                                                    write_status& why) {
  const uint64_t record = (header != nullptr ? sizeof *header : 0) + bytes.size();
  auto active = segments_.find(active_);
  if (active == segments_.end() || (active->second.file->end() + record > cfg_.segment_bytes &&
                                    active->second.file->end() > sizeof(segment_header))) {
    bool no_space = false;
    auto f = segment_file::create(segment_path(cfg_.path, next_id_), cfg_.tag, next_id_, &no_space);
    if (!f) {
      why = no_space ? write_status::disk_full : write_status::io_error;
      return std::nullopt;
    }
    if (active != segments_.end() && active->second.live_records == 0) { // sealed with nothing live
      dead_bytes_ -= active->second.file->end() - sizeof(segment_header);
      active->second.file->remove();
      segments_.erase(active);
    } else if (active != segments_.end()) {
      (void)active->second.file->seal(); // unsealed (no space): scanned at the next start
    }
    active_ = next_id_++;
    active = segments_.emplace(active_, segment{std::move(*f), 0, 0}).first;
  }
  const segment_file::appended a = active->second.file->append(header, bytes);
  if (a.error != 0) {
    why = a.error == ENOSPC || a.error == EDQUOT ? write_status::disk_full : write_status::io_error;
    return std::nullopt;
  }
  return place{active_, a.offset, record - sizeof(record_header)};
}

void disk_store::add_live(const place& p) {
  segment& s = segments_.at(p.segment);
  ++s.live_records;
  s.live_bytes += sizeof(record_header) + p.length;
}

void disk_store::drop_place(uint64_t hash) {
  auto it = places_.find(hash);
  if (it == places_.end())
    return;
  const place p = it->second;
  places_.erase(it);
  auto s = segments_.find(p.segment);
  if (s == segments_.end())
    return;
  s->second.live_records -= 1;
  s->second.live_bytes -= sizeof(record_header) + p.length;
  dead_bytes_ += sizeof(record_header) + p.length;
  if (s->second.live_records == 0 && p.segment != active_) {
    dead_bytes_ -= s->second.file->end() - sizeof(segment_header);
    s->second.file->remove();
    segments_.erase(s);
  }
}

disk_store::write_result disk_store::write(uint64_t hash, std::span<const std::byte> bytes, uint32_t priority,
                                           std::optional<uint64_t> parent, uint64_t tokens_hash) {
  write_result r;
  if (index_.contains(hash)) {
    (void)index_.insert(hash, nullptr, priority); // most recent, new priority
    r.status = write_status::present;
    return r;
  }
  std::optional<place> p;
  if (has_files()) {
    if (!room_for(sizeof(record_header) + bytes.size())) {
      r.status = write_status::disk_full;
      return r;
    }
    const record_header h = make_record_header(hash, parent, tokens_hash, bytes);
    p = append(&h, bytes, r.status);
    if (!p)
      return r;
    places_[hash] = *p;
    add_live(*p);
  }
  for (block_lru::evicted& e : index_.insert(hash, nullptr, priority, parent)) {
    drop_place(e.sequence_hash);
    r.evicted.push_back(e.sequence_hash);
  }
  if (has_files())
    maybe_compact(r.evicted);
  return r;
}

void disk_store::maybe_compact(std::vector<uint64_t>& dropped) {
  take_compaction(/*wait=*/false, dropped);
  if (compaction_ || dead_bytes_ <= 2 * cfg_.segment_bytes)
    return;
  auto victim = segments_.end();
  for (auto it = segments_.begin(); it != segments_.end(); ++it)
    if (it->first != active_ && (victim == segments_.end() || it->second.live_bytes < victim->second.live_bytes))
      victim = it;
  if (victim == segments_.end())
    return;
  auto c = std::make_shared<compaction>(compaction{victim->first, victim->second.file, {}, {}});
  for (const auto& [h, p] : places_)
    if (p.segment == c->victim)
      c->live.emplace_back(p.offset, h, p.length);
  std::sort(c->live.begin(), c->live.end());
  if (cfg_.async_compaction) {
    try {
      compaction_read_ = std::async(std::launch::async, [c] { c->read_all(); });
      compaction_ = std::move(c);
      return;
    } catch (const std::system_error& e) { // no thread to be had: read here
      spdlog::warn("KVBM disk {}: compaction reads inline ({})", cfg_.path, e.what());
    }
  }
  c->read_all();
  apply(*c, dropped);
}

void disk_store::compaction::read_all() {
  raw.resize(live.size());
  for (size_t i = 0; i < live.size(); ++i)
    raw[i] = file->read_raw(std::get<0>(live[i]), std::get<2>(live[i]));
}

void disk_store::take_compaction(bool wait, std::vector<uint64_t>& dropped) {
  if (!compaction_ ||
      (!wait && compaction_read_.wait_for(std::chrono::seconds(0)) != std::future_status::ready))
    return; // none, or still reading: copied by a later write
  compaction_read_.wait();
  const std::shared_ptr<compaction> c = std::move(compaction_);
  compaction_.reset();
  apply(*c, dropped);
}

void disk_store::apply(const compaction& c, std::vector<uint64_t>& dropped) {
  for (size_t i = 0; i < c.live.size() && i < c.raw.size(); ++i) { // raw short: the reads failed (bad_alloc)
    const auto [offset, h, length] = c.live[i];
    const auto at = places_.find(h);
    if (at == places_.end() || at->second.segment != c.victim || at->second.offset != offset)
      continue; // evicted (or erased) while it was read
    if (c.raw[i].empty()) { // unreadable (the file was cut short): the block is gone
      (void)index_.erase(h);
      drop_place(h);
      dropped.push_back(h);
      continue;
    }
    write_status why = write_status::stored;
    const std::optional<place> np = append(nullptr, c.raw[i], why);
    if (!np)
      return; // short of space: tried again after the next write
    drop_place(h); // the last one deletes the victim
    places_[h] = *np;
    add_live(*np);
  }
}

std::vector<uint64_t> disk_store::finish_compaction() {
  std::vector<uint64_t> dropped;
  take_compaction(/*wait=*/true, dropped);
  return dropped;
}

bool disk_store::erase(uint64_t hash) {
  if (!index_.erase(hash))
    return false;
  drop_place(hash);
  return true;
}

std::optional<disk_location> disk_store::locate(uint64_t hash) const {
  auto it = places_.find(hash);
  if (it == places_.end())
    return std::nullopt;
  return disk_location{segments_.at(it->second.segment).file, it->second.offset, it->second.length};
}

uint64_t disk_store::file_bytes() const noexcept {
  uint64_t n = 0;
  for (const auto& [id, s] : segments_)
    n += s.file->end();
  return n;
}

} // namespace dynamo::kvbm
