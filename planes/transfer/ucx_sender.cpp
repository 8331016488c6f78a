// The ucx transport's sender: one endpoint per receiver (by worker address), data by
// active messages, RMA put + flush, or direct copies into a same-host receiver's
// shared memory (copy threads), then a done message; a transfer completes when the
// receiver's ack arrives. Deadlines, cancel and endpoint errors end it early.
#include "planes/transfer/frame.hpp"
#include "planes/transfer/task_thread.hpp"
#include "planes/transfer/ucx_transport.hpp"
#include "planes/transfer/ucx_worker.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <unordered_set>

namespace dynamo::planes {

namespace {

using namespace transfer_detail;

// Batch limits of the active-message method (header: 40 + 8 bytes per run, well
// under UCX's 8 KB active-message header limit).
constexpr size_t max_batch_runs = 256;
constexpr uint64_t max_batch_bytes = uint64_t{64} << 20;
// Data messages in flight per transfer.
constexpr int max_outstanding = 16;
constexpr uint32_t max_copy_threads = 16;
// Direct copies this small run on the progress thread.
constexpr uint64_t inline_copy_bytes = uint64_t{8} << 20;

// A same-host receiver's region mapped into this process (ucp_rkey_ptr). Released
// (ucp_rkey_destroy, which unmaps) on the progress thread once no copy uses it.
struct mapping {
  mapping(ucp_rkey_h k, uint8_t* b) : rkey(k), base(b) {}
  ~mapping() { ucp_rkey_destroy(rkey); }
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;
  ucp_rkey_h rkey;
  uint8_t* base;
};

// The part [from, to) of the byte stream the runs make, as runs.
std::vector<copy_run> slice_runs(const std::vector<copy_run>& runs, uint64_t from, uint64_t to) {
  std::vector<copy_run> out;
  uint64_t at = 0;
  for (const copy_run& r : runs) {
    const uint64_t lo = std::max(from, at), hi = std::min(to, at + r.length);
    if (lo < hi)
      out.push_back({r.src_offset + (lo - at), r.dst_offset + (lo - at), hi - lo, r.dst_block, 0});
    at += r.length;
  }
  return out;
}

class ucx_sender final : public kv_sender {
public:
  static expected<std::unique_ptr<kv_sender>> create(kv_sender_config c);

  ~ucx_sender() override {
    stopping_ = true;
    worker_->stop(); // runs shutdown(): joins the copy threads, cancels transfers, closes endpoints
    worker_.reset();
    for (auto* o : ops_)
      delete o;
  }

  std::string_view transport() const noexcept override { return "ucx"; }

  void send(const protocol::kv_transfer_request& request, std::chrono::milliseconds timeout,
            kv_status_callback done) override {
    auto started = clock::now();
    auto task = [this, request, started, deadline = started + timeout, done]() mutable {
      start(request, started, deadline, std::move(done));
    };
    if (!worker_->post(std::move(task)))
      done(error_status(request.transfer_id, request.source_worker_id, errc::cancelled,
                        "kv sender destroyed", started));
  }

  std::string debug_info() const override {
    std::lock_guard lock{info_mutex_};
    std::string all;
    for (const auto& [id, text] : infos_)
      all += text;
    return all.empty() ? std::string{"ucx sender: no endpoints yet\n"} : all;
  }

private:
  struct peer {
    uint64_t receiver_id = 0;
    ucp_ep_h ep = nullptr;
    ucp_rkey_h rkey = nullptr;
    uint64_t remote_base = 0;
    bool failed = false;
    bool info_refreshed = false;
    std::shared_ptr<mapping> mapped; ///< the receiver's region, when directly writable
  };
  struct transfer {
    uint64_t id = 0;
    uint64_t source = 0;
    kv_status_callback done;
    clock::time_point started;
    clock::time_point deadline;
    peer* to = nullptr;
    uint64_t blocks = 0;
    uint64_t bytes = 0;
    int pending = 0;          // data operations (or the flush) outstanding
    bool posted = false;      // every run issued
    std::vector<copy_run> runs;
    size_t next = 0;          // first run not issued yet
    bool finished = false;
  };
  // One transfer's direct copies, split over the copy threads. Owned by the
  // progress thread (direct_), so the mapping is only ever released there; the
  // copy threads use it until they count `left` down.
  struct direct_job {
    std::shared_ptr<transfer> t;
    std::shared_ptr<mapping> map;
    std::atomic<size_t> left{0};
    std::atomic<bool> ok{true};
  };
  enum class op_kind : uint8_t { data, flush, ctrl };
  struct op {
    ucx_sender* self = nullptr;
    std::shared_ptr<transfer> t;
    op_kind kind = op_kind::data;
    std::vector<uint8_t> header;   // frame (+ landing runs); lives until completion
    std::vector<ucp_dt_iov_t> iov; // gathered source runs of a batch
  };

  explicit ucx_sender(kv_sender_config c) : config_(std::move(c)) {}

  void start(const protocol::kv_transfer_request& req, clock::time_point started,
             clock::time_point deadline, kv_status_callback done);
  expected<peer*> get_peer(const protocol::kv_ucx_descriptor& d);
  void post_data(const std::shared_ptr<transfer>& t, const protocol::kv_transfer_request& req,
                 const protocol::kv_ucx_descriptor& d);
  void pump(const std::shared_ptr<transfer>& t);
  bool post_put(const std::shared_ptr<transfer>& t);
  bool post_batch(const std::shared_ptr<transfer>& t);
  void post_direct(const std::shared_ptr<transfer>& t);
  void copied(const std::shared_ptr<transfer>& t, bool ok);
  void direct_done(uint64_t job);
  void try_map(peer& p, const protocol::kv_ucx_descriptor& d);
  ucp_request_param_t data_param(op* o) const;
  bool issue(const std::shared_ptr<transfer>& t, op_kind kind, ucs_status_ptr_t req, op* o);
  op* new_op(const std::shared_ptr<transfer>& t, op_kind kind);
  void after_data(const std::shared_ptr<transfer>& t);
  void send_ctrl(const std::shared_ptr<transfer>& t, frame_kind kind);
  void finish(const std::shared_ptr<transfer>& t, const protocol::kv_transfer_status& s);
  void fail(const std::shared_ptr<transfer>& t, errc code, const std::string& why);
  void fail_peer(peer& p, errc code, const std::string& why);
  void tick(clock::time_point now);
  clock::time_point next_wake() const;
  void shutdown();
  void refresh_info(peer& p);
  static void on_send_done(void* request, ucs_status_t status, void* user_data);
  static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status);
  static ucs_status_t on_ack_am(void* arg, const void* header, size_t header_length, void* data,
                                size_t length, const ucp_am_recv_param_t* param);

  kv_sender_config config_;
  std::unique_ptr<ucx_worker> worker_;
  std::vector<std::unique_ptr<task_thread>> copiers_; ///< direct copies (same-host shared memory)
  std::map<uint64_t, std::unique_ptr<direct_job>> direct_; ///< by job number; progress thread only
  uint64_t next_job_ = 0;
  ucp_mem_h memh_ = nullptr;
  std::map<uint64_t, std::unique_ptr<peer>> peers_; // by receiver id
  std::map<uint64_t, std::shared_ptr<transfer>> in_flight_;
  std::unordered_set<op*> ops_;
  mutable std::mutex info_mutex_;
  std::map<uint64_t, std::string> infos_; // lanes per receiver
  std::atomic<bool> stopping_{false};
};

expected<std::unique_ptr<kv_sender>> ucx_sender::create(kv_sender_config c) {
  std::unique_ptr<ucx_sender> self{new ucx_sender{std::move(c)}};
  auto w = ucx_worker::create(self->config_.options.ucx);
  if (!w)
    return w.error();
  self->worker_ = std::move(*w);
  const uint64_t bytes = self->config_.region.num_blocks * self->config_.region.block_stride;
  if (bytes > 0) {
    auto m = self->worker_->map(self->config_.region.base, bytes);
    if (!m)
      return m.error();
    self->memh_ = m->memh;
  }
  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                  UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  hp.id = am_ack;
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  hp.cb = &on_ack_am;
  hp.arg = self.get();
  if (auto st = ucp_worker_set_am_recv_handler(self->worker_->worker(), &hp); st != UCS_OK)
    return ucx_error(st, "ucp_worker_set_am_recv_handler");
  const uint32_t copiers = std::min(self->config_.options.ucx.copy_threads, max_copy_threads);
  for (uint32_t i = 0; i < copiers; ++i)
    self->copiers_.push_back(std::make_unique<task_thread>());
  auto* raw = self.get();
  raw->worker_->start({[raw](clock::time_point now) { raw->tick(now); },
                       [raw] { return raw->next_wake(); }, [raw] { raw->shutdown(); }});
  return std::unique_ptr<kv_sender>{std::move(self)};
}

void ucx_sender::start(const protocol::kv_transfer_request& req, clock::time_point started,
                       clock::time_point deadline, kv_status_callback done) {
  auto reject = [&](errc code, const std::string& why) {
    done(error_status(req.transfer_id, req.source_worker_id, code, why, started));
  };
  if (stopping_)
    return reject(errc::cancelled, "kv sender destroyed");
  auto desc = decode_descriptor<protocol::kv_ucx_descriptor>(req.connection, "ucx");
  if (!desc)
    return reject(code_of(desc.error()), message_of(desc.error()));
  if ((protocol::fingerprint(desc->worker_address) ^ protocol::fingerprint(desc->rkey)) != desc->check)
    return reject(errc::malformed_message, "ucx descriptor: worker address or rkey damaged");
  if (auto ok = check_request(req, config_.layout, config_.region, desc->geometry); !ok)
    return reject(code_of(ok.error()), message_of(ok.error()));
  if (in_flight_.count(req.transfer_id))
    return reject(errc::invalid_argument,
                  fmt::format("kv transfer {} is already in flight", req.transfer_id));
  auto p = get_peer(*desc);
  if (!p)
    return reject(code_of(p.error()), message_of(p.error()));
  auto t = std::make_shared<transfer>();
  t->id = req.transfer_id;
  t->source = req.source_worker_id;
  t->done = std::move(done);
  t->started = started;
  t->deadline = deadline;
  t->to = *p;
  t->blocks = req.source_block_ids.size();
  in_flight_[t->id] = t;
  post_data(t, req, *desc);
}

expected<ucx_sender::peer*> ucx_sender::get_peer(const protocol::kv_ucx_descriptor& d) {
  if (auto it = peers_.find(d.receiver_id); it != peers_.end() && !it->second->failed)
    return it->second.get();
  if (d.worker_address.empty())
    return make_error(errc::malformed_message, "ucx descriptor without a worker address");

  auto p = std::make_unique<peer>();
  p->receiver_id = d.receiver_id;
  p->remote_base = d.remote_base;
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  ep.address = reinterpret_cast<const ucp_address_t*>(d.worker_address.data());
  if (config_.options.ucx.error_mode == ucx_error_mode::peer) {
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.err_handler.cb = &on_ep_error;
    ep.err_handler.arg = this;
  } else {
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  }
  // The address passed its fingerprint, so a failure here means the receiver's
  // worker is gone (its shared-memory segments no longer exist) or unreachable.
  if (auto st = ucp_ep_create(worker_->worker(), &ep, &p->ep); st != UCS_OK)
    return make_error(errc::disconnected,
                      fmt::format("cannot reach the ucx receiver: {}", ucs_status_string(st)));
  if (config_.options.ucx.method == ucx_method::put && !d.rkey.empty()) {
    if (auto st = ucp_ep_rkey_unpack(p->ep, d.rkey.data(), &p->rkey); st != UCS_OK) {
      fail_peer(*p, errc::malformed_message, "bad rkey");
      return ucx_error(st, "ucp_ep_rkey_unpack");
    }
  }
  try_map(*p, d);
  auto* raw = p.get();
  peers_[d.receiver_id] = std::move(p); // replaces a failed peer of the same receiver
  refresh_info(*raw);
  return raw;
}

// A receiver whose region UCX allocated in shared memory on this host can be
// mapped here; any other (registered memory, another host) cannot, and is served
// by active messages. Not an error either way.
void ucx_sender::try_map(peer& p, const protocol::kv_ucx_descriptor& d) {
  if (copiers_.empty() || d.rkey.empty() || d.geometry.num_blocks == 0)
    return;
  ucp_rkey_h rkey = nullptr;
  if (ucp_ep_rkey_unpack(p.ep, d.rkey.data(), &rkey) != UCS_OK)
    return;
  void* local = nullptr;
  if (ucp_rkey_ptr(rkey, d.remote_base, &local) != UCS_OK || local == nullptr) {
    ucp_rkey_destroy(rkey);
    return;
  }
  p.mapped = std::make_shared<mapping>(rkey, static_cast<uint8_t*>(local));
}

ucx_sender::op* ucx_sender::new_op(const std::shared_ptr<transfer>& t, op_kind kind) {
  auto* o = new op{this, t, kind, {}, {}};
  ops_.insert(o);
  return o;
}

// Accounts for one issued operation; false when the transfer failed.
bool ucx_sender::issue(const std::shared_ptr<transfer>& t, op_kind kind, ucs_status_ptr_t req,
                       op* o) {
  if (req == nullptr) { // completed in place: no callback comes
    ops_.erase(o);
    delete o;
    return true;
  }
  if (UCS_PTR_IS_ERR(req)) {
    ops_.erase(o);
    delete o;
    fail(t, ucx_errc(UCS_PTR_STATUS(req)),
         std::string{"ucx send failed: "} + ucs_status_string(UCS_PTR_STATUS(req)));
    return false;
  }
  if (kind != op_kind::ctrl)
    ++t->pending;
  return true;
}

void ucx_sender::post_data(const std::shared_ptr<transfer>& t,
                           const protocol::kv_transfer_request& req,
                           const protocol::kv_ucx_descriptor& d) {
  const bool put = config_.options.ucx.method == ucx_method::put;
  if (put && !t->to->rkey && !req.source_block_ids.empty())
    return fail(t, errc::malformed_message, "ucx descriptor without an rkey");
  t->runs = plan_runs(req.source_block_ids, req.destination_block_ids,
                      config_.region.block_stride, d.geometry.block_stride,
                      config_.layout.bytes_per_block);
  if (t->to->mapped && !t->runs.empty())
    return post_direct(t);
  pump(t);
}

// Splits the transfer's bytes evenly over the copy threads; the last one to
// finish hands the transfer back to the progress thread.
void ucx_sender::post_direct(const std::shared_ptr<transfer>& t) {
  uint64_t total = 0;
  for (const copy_run& r : t->runs)
    total += r.length;
  t->bytes = total;
  t->posted = true;
  const auto* base = static_cast<const uint8_t*>(config_.region.base);
  if (total <= inline_copy_bytes) { // hand-offs to the copy threads would cost more
    for (const copy_run& r : t->runs)
      std::memcpy(t->to->mapped->base + r.dst_offset, base + r.src_offset, r.length);
    return copied(t, true);
  }
  const size_t lanes = copiers_.size();
  const uint64_t key = next_job_++;
  auto& job = direct_[key] = std::make_unique<direct_job>();
  job->t = t;
  job->map = t->to->mapped;
  job->left = lanes;
  direct_job* raw = job.get(); // lives until direct_done, after every lane counted down
  for (size_t k = 0; k < lanes; ++k) {
    auto share = slice_runs(t->runs, total * k / lanes, total * (k + 1) / lanes);
    copiers_[k]->post([this, raw, key, src = base, share = std::move(share)](bool cancelled) {
      if (cancelled)
        raw->ok = false;
      else
        for (const copy_run& r : share)
          std::memcpy(raw->map->base + r.dst_offset, src + r.src_offset, r.length);
      if (raw->left.fetch_sub(1) == 1) // the last lane: `raw` is not touched after this
        (void)worker_->post([this, key] { direct_done(key); });
    });
  }
}

void ucx_sender::direct_done(uint64_t key) {
  auto it = direct_.find(key);
  if (it == direct_.end())
    return;
  auto job = std::move(it->second);
  direct_.erase(it);
  copied(job->t, job->ok.load()); // the mapping reference goes here, on this thread
}

void ucx_sender::copied(const std::shared_ptr<transfer>& t, bool ok) {
  if (t->finished)
    return; // timed out or failed meanwhile
  if (!ok || stopping_)
    return fail(t, errc::cancelled, "kv sender destroyed");
  send_ctrl(t, frame_kind::done_rma); // the bytes are in the receiver's memory
}

// Issues runs while fewer than max_outstanding messages are in flight (a window keeps
// UCX's own pending queues short); once all are issued and done, moves on.
void ucx_sender::pump(const std::shared_ptr<transfer>& t) {
  const bool put = config_.options.ucx.method == ucx_method::put;
  while (!t->finished && t->next < t->runs.size() && t->pending < max_outstanding) {
    if (!(put ? post_put(t) : post_batch(t)))
      return;
  }
  if (t->finished || t->next < t->runs.size())
    return;
  t->posted = true;
  if (t->pending == 0)
    after_data(t);
}

ucp_request_param_t ucx_sender::data_param(op* o) const {
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                    UCP_OP_ATTR_FIELD_MEMH;
  rp.cb.send = &on_send_done;
  rp.user_data = o;
  rp.memh = memh_;
  return rp;
}

bool ucx_sender::post_put(const std::shared_ptr<transfer>& t) {
  auto* base = static_cast<uint8_t*>(config_.region.base);
  const auto& r = t->runs[t->next++];
  auto* o = new_op(t, op_kind::data);
  auto rp = data_param(o);
  auto* sent = ucp_put_nbx(t->to->ep, base + r.src_offset, r.length,
                           t->to->remote_base + r.dst_offset, t->to->rkey, &rp);
  if (!issue(t, op_kind::data, sent, o))
    return false;
  t->bytes += r.length;
  return true;
}

// One active message carrying up to batch_runs runs: the header lists where they land,
// the payload is gathered from the source blocks. A single run goes contiguous (on
// one host the receiver pulls it with one CMA copy); several go as an iov.
bool ucx_sender::post_batch(const std::shared_ptr<transfer>& t) {
  auto* base = static_cast<uint8_t*>(config_.region.base);
  const size_t batch = std::clamp<size_t>(config_.options.ucx.batch_runs, 1, max_batch_runs);
  const auto& runs = t->runs;
  size_t first = t->next, last = first;
  uint64_t bytes = 0;
  while (last < runs.size() && last - first < batch &&
         (last == first || bytes + runs[last].length <= max_batch_bytes))
    bytes += runs[last++].length;
  t->next = last;
  auto* o = new_op(t, op_kind::data);
  std::vector<landing_run> lands;
  for (size_t i = first; i < last; ++i) {
    lands.push_back({static_cast<uint32_t>(runs[i].dst_block), static_cast<uint32_t>(runs[i].blocks)});
    o->iov.push_back({base + runs[i].src_offset, runs[i].length});
  }
  auto head = encode_frame({frame_kind::data, 0, t->id, t->source, lands.size(), bytes});
  o->header.assign(head.begin(), head.end());
  append_runs(o->header, lands);
  auto rp = data_param(o);
  ucs_status_ptr_t sent;
  if (o->iov.size() == 1) {
    sent = ucp_am_send_nbx(t->to->ep, am_data, o->header.data(), o->header.size(),
                           o->iov[0].buffer, o->iov[0].length, &rp);
  } else {
    rp.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    rp.datatype = ucp_dt_make_iov();
    sent = ucp_am_send_nbx(t->to->ep, am_data, o->header.data(), o->header.size(), o->iov.data(),
                           o->iov.size(), &rp);
  }
  if (!issue(t, op_kind::data, sent, o))
    return false;
  t->bytes += bytes;
  return true;
}

// Every data operation completed: flush (put) or go straight to done (am).
void ucx_sender::after_data(const std::shared_ptr<transfer>& t) {
  if (config_.options.ucx.method != ucx_method::put)
    return send_ctrl(t, frame_kind::done);
  auto* o = new_op(t, op_kind::flush);
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.send = &on_send_done;
  rp.user_data = o;
  auto* req = ucp_ep_flush_nbx(t->to->ep, &rp);
  if (issue(t, op_kind::flush, req, o) && req == nullptr)
    send_ctrl(t, frame_kind::done_rma);
}

void ucx_sender::send_ctrl(const std::shared_ptr<transfer>& t, frame_kind kind) {
  auto* o = new_op(t, op_kind::ctrl);
  auto head = encode_frame({kind, 0, t->id, t->source, t->blocks, t->bytes});
  o->header.assign(head.begin(), head.end());
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                    UCP_OP_ATTR_FIELD_FLAGS;
  rp.cb.send = &on_send_done;
  rp.user_data = o;
  rp.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
  auto* req = ucp_am_send_nbx(t->to->ep, am_ctrl, o->header.data(), o->header.size(), nullptr, 0, &rp);
  issue(t, op_kind::ctrl, req, o); // the ack (or the deadline) ends the transfer
}

void ucx_sender::on_send_done(void* request, ucs_status_t status, void* user_data) {
  auto* o = static_cast<op*>(user_data);
  auto* self = o->self;
  auto t = o->t;
  auto kind = o->kind;
  self->ops_.erase(o);
  delete o;
  ucp_request_free(request);
  if (t->finished)
    return;
  if (status != UCS_OK) {
    self->fail(t, ucx_errc(status), std::string{"ucx operation failed: "} + ucs_status_string(status));
    return;
  }
  if (kind == op_kind::ctrl)
    return;
  --t->pending;
  if (kind == op_kind::flush) {
    self->send_ctrl(t, frame_kind::done_rma);
    return;
  }
  if (!t->posted)
    return self->pump(t); // issues more runs, or moves on once all are done
  if (t->pending == 0)
    self->after_data(t);
}

ucs_status_t ucx_sender::on_ack_am(void* arg, const void* header, size_t header_length, void*,
                                   size_t, const ucp_am_recv_param_t*) {
  auto* self = static_cast<ucx_sender*>(arg);
  auto f = decode_frame({static_cast<const uint8_t*>(header), header_length});
  if (!f || f->kind != frame_kind::ack)
    return UCS_OK;
  auto it = self->in_flight_.find(f->transfer_id);
  if (it == self->in_flight_.end() || it->second->source != f->source_worker)
    return UCS_OK; // timed out already
  auto t = it->second;
  if (!t->to->info_refreshed) {
    t->to->info_refreshed = true;
    self->refresh_info(*t->to); // lanes are final once wire-up is done
  }
  if (f->code == 0)
    self->finish(t, ok_status(t->id, t->source, f->block, f->length, t->started));
  else
    self->finish(t, error_status(t->id, t->source, static_cast<errc>(f->code),
                                 "kv receiver refused the transfer", t->started));
  return UCS_OK;
}

void ucx_sender::finish(const std::shared_ptr<transfer>& t, const protocol::kv_transfer_status& s) {
  if (t->finished)
    return;
  t->finished = true;
  in_flight_.erase(t->id);
  auto done = std::move(t->done);
  if (done)
    done(s);
}

void ucx_sender::fail(const std::shared_ptr<transfer>& t, errc code, const std::string& why) {
  finish(t, error_status(t->id, t->source, code, why, t->started));
}

void ucx_sender::on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* self = static_cast<ucx_sender*>(arg);
  for (auto& [id, p] : self->peers_) {
    if (p->ep == ep)
      self->fail_peer(*p, ucx_errc(status) == errc::timeout ? errc::timeout : errc::disconnected,
                      std::string{"ucx endpoint failed: "} + ucs_status_string(status));
  }
}

// Fails every transfer to `p` and closes its endpoint (force-close needs peer mode;
// in none mode the endpoint is left to the worker's destruction).
void ucx_sender::fail_peer(peer& p, errc code, const std::string& why) {
  if (p.failed)
    return;
  p.failed = true;
  std::vector<std::shared_ptr<transfer>> victims;
  for (auto& [id, t] : in_flight_) {
    if (t->to == &p)
      victims.push_back(t);
  }
  for (auto& t : victims)
    fail(t, code, why);
  p.mapped.reset(); // copies in flight keep it until they end
  if (config_.options.ucx.error_mode != ucx_error_mode::peer)
    return;
  if (p.rkey)
    ucp_rkey_destroy(p.rkey);
  p.rkey = nullptr;
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
  auto* req = ucp_ep_close_nbx(p.ep, &rp);
  if (req && !UCS_PTR_IS_ERR(req))
    ucp_request_free(req); // completes on its own; nothing waits for it
  p.ep = nullptr;
}

void ucx_sender::tick(clock::time_point now) {
  std::vector<std::shared_ptr<transfer>> expired;
  for (auto& [id, t] : in_flight_) {
    if (now >= t->deadline)
      expired.push_back(t);
  }
  for (auto& t : expired) {
    fail(t, errc::timeout, fmt::format("kv transfer {} timed out", t->id));
    if (t->to->ep && !t->to->failed)
      send_ctrl(t, frame_kind::cancel); // the receiver stops landing its bytes
  }
}

clock::time_point ucx_sender::next_wake() const {
  auto next = clock::now() + std::chrono::milliseconds{100};
  for (auto& [id, t] : in_flight_)
    next = std::min(next, t->deadline);
  return next;
}

void ucx_sender::shutdown() {
  stopping_ = true;
  copiers_.clear(); // joins; lanes still queued count down cancelled, their posts refused
  direct_.clear();  // so no copy uses a mapping any more
  std::vector<std::shared_ptr<transfer>> left;
  for (auto& [id, t] : in_flight_)
    left.push_back(t);
  for (auto& t : left)
    fail(t, errc::cancelled, "kv sender destroyed");
  for (auto& [id, p] : peers_) {
    p->mapped.reset(); // the copy threads are joined and their jobs gone
    if (p->rkey)
      ucp_rkey_destroy(p->rkey);
    p->rkey = nullptr;
    if (!p->ep)
      continue;
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = config_.options.ucx.error_mode == ucx_error_mode::peer ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    auto* req = ucp_ep_close_nbx(p->ep, &rp);
    // A graceful close needs the peer; give it a moment, then let the worker go.
    auto until = clock::now() + std::chrono::milliseconds{200};
    while (req && !UCS_PTR_IS_ERR(req) && ucp_request_check_status(req) == UCS_INPROGRESS &&
           clock::now() < until)
      ucp_worker_progress(worker_->worker());
    if (req && !UCS_PTR_IS_ERR(req))
      ucp_request_free(req);
    p->ep = nullptr;
  }
}

void ucx_sender::refresh_info(peer& p) {
  if (!p.ep)
    return;
  auto text = ucx_ep_info(p.ep);
  std::lock_guard lock{info_mutex_};
  infos_[p.receiver_id] = fmt::format("ucx sender endpoint to receiver {:016x} ({}, error mode {}):\n{}",
                      p.receiver_id,
                      p.mapped ? fmt::format("direct copy into its shared memory, {} threads", copiers_.size())
                      : config_.options.ucx.method == ucx_method::put ? "rma put" : "active messages",
                      config_.options.ucx.error_mode == ucx_error_mode::peer ? "peer" : "none", text);
}

} // namespace

expected<std::unique_ptr<kv_sender>> make_ucx_sender(kv_sender_config config) {
  if (auto ok = check_region(config.region, config.layout); !ok)
    return ok.error();
  if (config.region.memory != kv_memory::host)
    return make_error(errc::unsupported,
                      "ucx transport: host memory only (Debian's UCX has no CUDA transport; stage "
                      "device blocks through pinned host memory)");
  return ucx_sender::create(std::move(config));
}

} // namespace dynamo::planes
