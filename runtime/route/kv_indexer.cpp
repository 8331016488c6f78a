#include "runtime/route/kv_indexer.hpp"

#include "runtime/core/cpu_relax.hpp"
#include "runtime/route/event_sequencer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <variant>

namespace dynamo::route {

namespace {

struct sequenced {
  protocol::router_event event;
};
struct unsequenced {
  protocol::router_event event;
};
struct dump_request {
  worker_key worker;
};
struct forget {
  uint64_t worker_id = 0;
};
using job = std::variant<sequenced, unsequenced, protocol::kv_replay, dump_request, forget>;

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

} // namespace

struct kv_indexer::shard {
  shard(radix_index_options o, size_t max_pending) : index(o), host(o), disk(o), sequencer(max_pending) {}

  // The index side, guarded by mtx. `readers` counts readers waiting for mtx:
  // the event thread lets them in between two jobs.
  mutable std::mutex mtx;
  mutable std::atomic<uint32_t> readers{0};
  radix_index index; ///< device (G1) blocks: the prefix cache
  radix_index host;  ///< KVBM host tier (G2) blocks
  radix_index disk;  ///< KVBM disk tier (G3) blocks
  event_sequencer sequencer;

  /// Applies `e` to the index of its tier (a cleared event to all three).
  void apply(const protocol::router_event& e) {
    using protocol::storage_tier;
    if (e.event.kind == protocol::kv_event_kind::cleared) {
      (void)index.apply(e);
      (void)host.remove_worker(worker_key{e.worker_id, e.event.dp_rank});
      (void)disk.remove_worker(worker_key{e.worker_id, e.event.dp_rank});
      return;
    }
    radix_index* to = e.event.medium == storage_tier::device        ? &index
                      : e.event.medium == storage_tier::host_pinned ? &host
                      : e.event.medium == storage_tier::disk        ? &disk
                                                                    : nullptr;
    if (to == &index) {
      (void)index.apply(e); // statuses are counted by the index
    } else if (to != nullptr) { // each index holds one tier: as device events there
      protocol::router_event as_device = e;
      as_device.event.medium = storage_tier::device;
      (void)to->apply(as_device);
    }
  }
  void forget(uint64_t worker_id) {
    (void)index.remove_worker(worker_id);
    (void)host.remove_worker(worker_id);
    (void)disk.remove_worker(worker_id);
  }
  /// Sets lower_blocks of out.scores[from..] (this shard's workers), adding
  /// workers that match only in a lower tier. REQUIRES: mtx held.
  void add_lower(std::span<const uint64_t> local_hashes, overlap_scores& out, size_t from) const {
    for (size_t i = from; i < out.scores.size(); ++i)
      out.scores[i].lower_blocks = out.scores[i].blocks;
    thread_local overlap_scores lower;
    for (const radix_index* idx : {&host, &disk}) {
      if (idx->entry_count() == 0)
        continue;
      idx->find_matches(local_hashes, false, lower);
      for (const overlap_scores::entry& e : lower.scores) {
        auto it = std::find_if(out.scores.begin() + static_cast<std::ptrdiff_t>(from), out.scores.end(),
                               [&](const overlap_scores::entry& x) { return x.worker == e.worker; });
        if (it == out.scores.end())
          out.scores.push_back({e.worker, 0, index.tree_size(e.worker), e.blocks});
        else
          it->lower_blocks = std::max(it->lower_blocks, e.blocks);
      }
    }
  }

  // The queue side, guarded by qmtx.
  std::mutex qmtx;
  std::condition_variable wake;    ///< the queue is no longer empty, or stopping
  std::condition_variable drained; ///< `finished` moved, or the queue was taken (room)
  std::vector<job> queue;
  uint64_t queued = 0;
  uint64_t finished = 0;
  bool stopping = false;

  uint32_t workers = 0; ///< assigned workers; guarded by state::assign_mtx
  std::thread thread;
};

namespace {

/// A reader's hold on a shard's index: it goes before the event thread's next
/// job. A job takes about a microsecond, far less than a futex sleep and wake,
/// so the reader spins for a while before it blocks.
class reader_lock {
public:
  template <class Shard>
  explicit reader_lock(const Shard& s) : mtx_(s.mtx) {
    s.readers.fetch_add(1, std::memory_order_relaxed);
    bool locked = false;
    for (int spin = 0; spin < 4096 && !locked; ++spin) {
      locked = mtx_.try_lock();
      if (!locked)
        cpu_relax();
    }
    if (!locked)
      mtx_.lock();
    s.readers.fetch_sub(1, std::memory_order_relaxed);
  }
  ~reader_lock() { mtx_.unlock(); }
  reader_lock(const reader_lock&) = delete;
  reader_lock& operator=(const reader_lock&) = delete;

private:
  std::mutex& mtx_;
};

} // namespace

struct kv_indexer::state {
  kv_indexer_options options;
  resync_sink sink;
  std::vector<std::unique_ptr<shard>> shards;
  bool threaded = false;
  mutable std::mutex assign_mtx;
  std::unordered_map<uint64_t, uint32_t> shard_of; ///< worker_id -> shard

  /// The worker's shard, assigning the least loaded one on first sight.
  shard& assign(uint64_t worker_id) {
    std::lock_guard lk{assign_mtx};
    return *shards[assign_locked(worker_id)];
  }
  /// REQUIRES: assign_mtx held.
  uint32_t assign_locked(uint64_t worker_id) {
    auto [it, fresh] = shard_of.try_emplace(worker_id, 0);
    if (fresh) {
      auto least = std::min_element(shards.begin(), shards.end(), [](const auto& a, const auto& b) {
        return a->workers < b->workers;
      });
      it->second = static_cast<uint32_t>(least - shards.begin());
      ++(*least)->workers;
    }
    return it->second;
  }
  [[nodiscard]] const shard* find(uint64_t worker_id) const {
    std::lock_guard lk{assign_mtx};
    auto it = shard_of.find(worker_id);
    return it == shard_of.end() ? nullptr : shards[it->second].get();
  }
  /// Drops the worker's assignment; its shard still owns the queued jobs.
  shard* unassign(uint64_t worker_id) {
    std::lock_guard lk{assign_mtx};
    auto it = shard_of.find(worker_id);
    if (it == shard_of.end())
      return nullptr;
    shard* s = shards[it->second].get();
    --s->workers;
    shard_of.erase(it);
    return s;
  }

  static void run(shard& s, job& j, std::vector<protocol::kv_resync_request>& resync) {
    std::visit(overloaded{
                   [&](sequenced& e) {
                     sequence_step step = s.sequencer.on_event(e.event);
                     if (step.verdict == sequence_verdict::apply)
                       s.apply(e.event);
                     if (step.resync)
                       resync.push_back(*step.resync);
                   },
                   [&](unsequenced& e) { s.apply(e.event); },
                   [&](protocol::kv_replay& r) {
                     recovery_step step = s.sequencer.on_replay(r);
                     if (step.replace) { // a dump holds device blocks only: lower tiers restart
                       const worker_key w{r.worker_id, r.dp_rank};
                       (void)s.index.replace_worker(w, step.dump);
                       (void)s.host.remove_worker(w);
                       (void)s.disk.remove_worker(w);
                     }
                     for (const protocol::router_event& ev : step.ready)
                       s.apply(ev);
                     if (step.resync)
                       resync.push_back(*step.resync);
                   },
                   [&](dump_request& d) { resync.push_back(s.sequencer.request_dump(d.worker)); },
                   [&](forget& f) {
                     s.forget(f.worker_id);
                     s.sequencer.forget(f.worker_id);
                   },
               },
               j);
  }

  void deliver(std::vector<protocol::kv_resync_request>& resync) const {
    if (sink)
      for (auto& r : resync)
        sink(std::move(r));
    resync.clear();
  }

  void submit(shard& s, job&& j) {
    if (!threaded) {
      std::vector<protocol::kv_resync_request> resync;
      {
        std::lock_guard lk{s.mtx};
        run(s, j, resync);
      }
      deliver(resync);
      return;
    }
    enqueue(s, std::span(&j, 1));
  }

  /// Moves `jobs` to the end of the shard's queue, waiting while it is full
  /// (back-pressure), and wakes the event thread if it was idle.
  void enqueue(shard& s, std::span<job> jobs) {
    bool was_empty;
    {
      std::unique_lock lk{s.qmtx};
      s.drained.wait(lk, [&] { return s.queue.size() < options.max_queued; });
      was_empty = s.queue.empty();
      s.queue.insert(s.queue.end(), std::make_move_iterator(jobs.begin()),
                     std::make_move_iterator(jobs.end()));
      s.queued += jobs.size();
    }
    if (was_empty)
      s.wake.notify_one();
  }

  /// An event thread: applies its shard's queue in arrival order, letting
  /// readers in between jobs; resync requests go out after each batch.
  void loop(shard& s) {
    std::vector<job> batch;
    std::vector<protocol::kv_resync_request> resync;
    for (;;) {
      {
        std::unique_lock lk{s.qmtx};
        s.wake.wait(lk, [&] { return s.stopping || !s.queue.empty(); });
        if (s.queue.empty())
          return;
        std::swap(batch, s.queue);
      }
      s.drained.notify_all(); // room for writers
      {
        std::unique_lock lk{s.mtx};
        for (job& j : batch) {
          if (s.readers.load(std::memory_order_relaxed) != 0) {
            lk.unlock();
            while (s.readers.load(std::memory_order_relaxed) != 0)
              std::this_thread::yield();
            lk.lock();
          }
          run(s, j, resync);
        }
      }
      deliver(resync);
      size_t n = batch.size();
      batch.clear();
      {
        std::lock_guard lk{s.qmtx};
        s.finished += n;
      }
      s.drained.notify_all();
    }
  }
};

kv_indexer::kv_indexer(kv_indexer_options options, resync_sink sink)
    : state_(std::make_unique<state>()) {
  state& st = *state_;
  uint32_t n = std::max<uint32_t>(options.event_threads, 1);
  st.options = options;
  st.sink = std::move(sink);
  st.threaded = n > 1;
  radix_index_options per_shard = options.index;
  if (per_shard.max_blocks != 0)
    per_shard.max_blocks = std::max<size_t>(per_shard.max_blocks / n, 1);
  for (uint32_t i = 0; i < n; ++i)
    st.shards.push_back(std::make_unique<shard>(per_shard, options.max_pending));
  if (st.threaded)
    for (auto& s : st.shards)
      s->thread = std::thread([&st, p = s.get()] { st.loop(*p); });
}

kv_indexer::~kv_indexer() {
  for (auto& s : state_->shards) {
    {
      std::lock_guard lk{s->qmtx};
      s->stopping = true;
    }
    s->wake.notify_one();
  }
  for (auto& s : state_->shards)
    if (s->thread.joinable())
      s->thread.join();
}

void kv_indexer::on_event(protocol::router_event event) {
  shard& s = state_->assign(event.worker_id);
  state_->submit(s, sequenced{std::move(event)});
}

void kv_indexer::on_events(std::span<protocol::router_event> events) {
  state& st = *state_;
  if (!st.threaded) {
    for (auto& e : events)
      on_event(std::move(e));
    return;
  }
  // One lock per shard and batch instead of one per event.
  thread_local std::vector<std::vector<job>> by_shard;
  by_shard.resize(st.shards.size());
  {
    std::lock_guard lk{st.assign_mtx};
    for (auto& e : events)
      by_shard[st.assign_locked(e.worker_id)].push_back(sequenced{std::move(e)});
  }
  for (size_t i = 0; i < st.shards.size(); ++i) {
    if (by_shard[i].empty())
      continue;
    st.enqueue(*st.shards[i], by_shard[i]);
    by_shard[i].clear();
  }
}

void kv_indexer::apply_unsequenced(protocol::router_event event) {
  shard& s = state_->assign(event.worker_id);
  state_->submit(s, unsequenced{std::move(event)});
}

void kv_indexer::on_replay(protocol::kv_replay replay) {
  shard& s = state_->assign(replay.worker_id);
  state_->submit(s, std::move(replay));
}

void kv_indexer::add_worker(const worker_key& worker) {
  shard& s = state_->assign(worker.worker_id);
  state_->submit(s, dump_request{worker});
}

void kv_indexer::remove_worker(uint64_t worker_id) {
  if (shard* s = state_->unassign(worker_id))
    state_->submit(*s, forget{worker_id});
}

void kv_indexer::flush() {
  if (!state_->threaded)
    return;
  for (auto& s : state_->shards) {
    std::unique_lock lk{s->qmtx};
    uint64_t target = s->queued;
    s->drained.wait(lk, [&] { return s->finished >= target; });
  }
}

void kv_indexer::find_matches(std::span<const uint64_t> local_hashes, bool early_exit,
                              overlap_scores& out) const {
  const auto& shards = state_->shards;
  if (shards.size() == 1) {
    reader_lock lk{*shards[0]};
    shards[0]->index.find_matches(local_hashes, early_exit, out);
    shards[0]->add_lower(local_hashes, out, 0);
    return;
  }
  thread_local overlap_scores part;
  out.scores.clear();
  for (const auto& s : shards) {
    {
      reader_lock lk{*s};
      s->index.find_matches(local_hashes, early_exit, part);
      s->add_lower(local_hashes, part, 0);
    }
    out.scores.insert(out.scores.end(), part.scores.begin(), part.scores.end());
  }
}

/// f(shard) under the reader lock of the shard holding `worker`; `none` when no
/// shard does.
template <class R, class F>
R kv_indexer::on_shard_of(const worker_key& worker, R none, F&& f) const {
  const shard* s = state_->find(worker.worker_id);
  if (!s)
    return none;
  reader_lock lk{*s};
  return f(*s);
}

size_t kv_indexer::tree_size(const worker_key& worker) const {
  return on_shard_of(worker, size_t{0}, [&](const shard& s) { return s.index.tree_size(worker); });
}

bool kv_indexer::holds(const worker_key& worker, uint64_t block_hash) const {
  return on_shard_of(worker, false,
                     [&](const shard& s) { return s.index.holds(worker, block_hash); });
}

std::vector<worker_key> kv_indexer::workers() const {
  std::vector<worker_key> out;
  for (const auto& s : state_->shards) {
    reader_lock lk{*s};
    auto part = s->index.workers();
    out.insert(out.end(), part.begin(), part.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<protocol::kv_event> kv_indexer::dump_worker(const worker_key& worker,
                                                        uint64_t event_id) const {
  return on_shard_of(worker, std::vector<protocol::kv_event>{},
                     [&](const shard& s) { return s.index.dump_worker(worker, event_id); });
}

std::optional<uint64_t> kv_indexer::last_event_id(const worker_key& worker) const {
  return on_shard_of(worker, std::optional<uint64_t>{},
                     [&](const shard& s) { return s.sequencer.last_event_id(worker); });
}

namespace {
template <class Shards, class F>
auto sum_over(const Shards& shards, F&& f) {
  decltype(f(shards[0]->index)) total{};
  for (const auto& s : shards) {
    reader_lock lk{*s};
    total += f(s->index);
  }
  return total;
}
} // namespace

size_t kv_indexer::entry_count() const {
  return sum_over(state_->shards, [](const radix_index& i) { return i.entry_count(); });
}

size_t kv_indexer::node_count() const {
  return sum_over(state_->shards, [](const radix_index& i) { return i.node_count(); });
}

uint64_t kv_indexer::pruned_entries() const {
  return sum_over(state_->shards, [](const radix_index& i) { return i.pruned_entries(); });
}

uint64_t kv_indexer::applied(protocol::kv_event_kind kind, apply_status status) const {
  return sum_over(state_->shards,
                  [&](const radix_index& i) { return i.applied(kind, status); });
}

uint32_t kv_indexer::shard_count() const noexcept {
  return static_cast<uint32_t>(state_->shards.size());
}

std::string kv_indexer::check_invariants() const {
  const auto& shards = state_->shards;
  std::unordered_map<uint64_t, size_t> seen; // worker_id -> shard
  for (size_t i = 0; i < shards.size(); ++i) {
    reader_lock lk{*shards[i]};
    if (std::string bad = shards[i]->index.check_invariants(); !bad.empty())
      return fmt::format("shard {}: {}", i, bad);
    for (const worker_key& w : shards[i]->index.workers()) {
      auto [it, fresh] = seen.try_emplace(w.worker_id, i);
      if (!fresh && it->second != i)
        return fmt::format("worker {:x} is in shards {} and {}", w.worker_id, it->second, i);
    }
  }
  return {};
}

} // namespace dynamo::route
