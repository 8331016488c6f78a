// The ucx transport's receiver: a mapped region, active-message handlers that land
// data (eager copy or a rendezvous receive straight into the destination block),
// and acks sent back on the reply endpoint once a transfer is complete.
#include "planes/transfer/frame.hpp"
#include "planes/transfer/receive_ledger.hpp"
#include "planes/transfer/ucx_transport.hpp"
#include "planes/transfer/ucx_worker.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <set>
#include <unordered_set>

namespace dynamo::planes {

namespace {

using namespace transfer_detail;

class ucx_receiver final : public kv_receiver {
public:
  static expected<std::unique_ptr<kv_receiver>> create(kv_receiver_config c);

  ~ucx_receiver() override {
    closing_ = true;
    worker_->stop();
    worker_.reset(); // outstanding operations end here (or never)
    for (auto* op : ops_)
      delete op;
  }

  std::string_view transport() const noexcept override { return "ucx"; }

  std::vector<protocol::kv_connection_info> offers() const override {
    protocol::kv_ucx_descriptor d{id_, address_, reinterpret_cast<uint64_t>(config_.region.base),
                                  rkey_, geometry_,
                                  protocol::fingerprint(address_) ^ protocol::fingerprint(rkey_)};
    return {{"ucx", local_host_id(), protocol::encode(d)}};
  }

  std::string debug_info() const override {
    std::lock_guard lock{info_mutex_};
    return fmt::format("ucx receiver {:016x}: {} blocks, stride {}{}\n{}", id_,
                       config_.region.num_blocks, config_.region.block_stride,
                       config_.allocate_region ? ", region allocated by UCX" : "", info_);
  }

  kv_region region() const override { return config_.allocate_region ? config_.region : kv_region{}; }

private:
  struct op {
    ucx_receiver* self = nullptr;
    receive_ledger::key key;
    uint64_t blocks = 0;
    uint64_t bytes = 0;
    frame_bytes header{};          // acks: must live until the send completes
    std::vector<ucp_dt_iov_t> iov; // rendezvous receives: where the runs land
  };

  explicit ucx_receiver(kv_receiver_config c)
      : config_(std::move(c)), geometry_(geometry_of(config_.region, config_.layout)),
        ledger_(config_.options.stale_after) {}

  expected<void> setup();
  static ucs_status_t on_data_am(void* arg, const void* header, size_t header_length, void* data,
                                 size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t on_ctrl_am(void* arg, const void* header, size_t header_length, void* data,
                                 size_t length, const ucp_am_recv_param_t* param);
  static void on_recv_done(void* request, ucs_status_t status, size_t length, void* user_data);
  static void on_ack_sent(void* request, ucs_status_t status, void* user_data);
  ucs_status_t handle_data(const frame_header& f, const std::vector<landing_run>& runs, void* data,
                           size_t length, const ucp_am_recv_param_t* param);
  expected<std::vector<ucp_dt_iov_t>> landing_iov(const std::vector<landing_run>& runs,
                                                  uint64_t length, uint64_t& blocks) const;
  void handle_ctrl(const frame_header& f, const ucp_am_recv_param_t* param);
  void landed(const receive_ledger::key& k, uint64_t blocks, uint64_t bytes);
  void complete(const protocol::kv_transfer_status& s);
  void send_ack(ucp_ep_h ep, const protocol::kv_transfer_status& s);
  void remember_ep(ucp_ep_h ep);

  kv_receiver_config config_;
  protocol::kv_region_geometry geometry_;
  receive_ledger ledger_;
  uint64_t id_ = new_receiver_id();
  std::unique_ptr<ucx_worker> worker_;
  ucp_mem_h memh_ = nullptr;
  std::vector<uint8_t> address_;
  std::vector<uint8_t> rkey_;
  std::map<receive_ledger::key, ucp_ep_h> reply_eps_;
  std::unordered_set<op*> ops_;
  std::set<ucp_ep_h> seen_eps_;
  mutable std::mutex info_mutex_;
  std::string info_;
  clock::time_point next_tick_ = clock::now();
  std::atomic<bool> closing_{false}; // set by the destructor, read on the progress thread
};

expected<std::unique_ptr<kv_receiver>> ucx_receiver::create(kv_receiver_config c) {
  std::unique_ptr<ucx_receiver> self{new ucx_receiver{std::move(c)}};
  if (auto ok = self->setup(); !ok)
    return ok.error();
  auto* raw = self.get();
  raw->worker_->start({
      [raw](clock::time_point now) {
        if (now < raw->next_tick_)
          return;
        raw->next_tick_ = now + std::chrono::milliseconds{100};
        for (const auto& s : raw->ledger_.expire(now))
          raw->complete(s);
      },
      [raw] { return raw->next_tick_; },
      {},
  });
  return std::unique_ptr<kv_receiver>{std::move(self)};
}

expected<void> ucx_receiver::setup() {
  auto w = ucx_worker::create(config_.options.ucx);
  if (!w)
    return w.error();
  worker_ = std::move(*w);
  const uint64_t bytes = config_.region.num_blocks * config_.region.block_stride;
  if (bytes > 0) {
    auto m = worker_->map(config_.region.base, bytes); // allocate_region: base is null
    if (!m)
      return m.error();
    memh_ = m->memh;
    config_.region.base = m->base;
    void* packed = nullptr;
    size_t size = 0;
    if (auto st = ucp_rkey_pack(worker_->context(), memh_, &packed, &size); st != UCS_OK)
      return ucx_error(st, "ucp_rkey_pack");
    rkey_.assign(static_cast<uint8_t*>(packed), static_cast<uint8_t*>(packed) + size);
    ucp_rkey_buffer_release(packed);
  }
  ucp_address_t* addr = nullptr;
  size_t addr_len = 0;
  if (auto st = ucp_worker_get_address(worker_->worker(), &addr, &addr_len); st != UCS_OK)
    return ucx_error(st, "ucp_worker_get_address");
  address_.assign(reinterpret_cast<uint8_t*>(addr), reinterpret_cast<uint8_t*>(addr) + addr_len);
  ucp_worker_release_address(worker_->worker(), addr);
  for (auto [id, cb] : {std::pair{am_data, &on_data_am}, std::pair{am_ctrl, &on_ctrl_am}}) {
    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                    UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hp.id = id;
    hp.flags = UCP_AM_FLAG_WHOLE_MSG;
    hp.cb = cb;
    hp.arg = this;
    if (auto st = ucp_worker_set_am_recv_handler(worker_->worker(), &hp); st != UCS_OK)
      return ucx_error(st, "ucp_worker_set_am_recv_handler");
  }
  return {};
}

ucs_status_t ucx_receiver::on_data_am(void* arg, const void* header, size_t header_length,
                                      void* data, size_t length, const ucp_am_recv_param_t* param) {
  const bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
  auto* bytes = static_cast<const uint8_t*>(header);
  auto f = header_length >= frame_header_bytes ? decode_frame({bytes, frame_header_bytes})
                                               : expected<frame_header>{make_error(errc::malformed_message, "short header")};
  expected<std::vector<landing_run>> runs{make_error(errc::malformed_message, "no runs")};
  if (f && f->kind == frame_kind::data && f->length == length)
    runs = decode_runs({bytes + frame_header_bytes, header_length - frame_header_bytes}, f->block);
  if (!runs) {
    spdlog::warn("kv ucx receiver: dropping a malformed data message");
    return rndv ? UCS_ERR_INVALID_PARAM : UCS_OK;
  }
  return static_cast<ucx_receiver*>(arg)->handle_data(*f, *runs, data, length, param);
}

ucs_status_t ucx_receiver::on_ctrl_am(void* arg, const void* header, size_t header_length, void*,
                                      size_t length, const ucp_am_recv_param_t* param) {
  auto f = decode_frame({static_cast<const uint8_t*>(header), header_length});
  const bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
  if (!f || length != 0) {
    spdlog::warn("kv ucx receiver: dropping a malformed control message");
    return rndv ? UCS_ERR_INVALID_PARAM : UCS_OK;
  }
  static_cast<ucx_receiver*>(arg)->handle_ctrl(*f, param);
  return UCS_OK;
}

// Where a batch lands: one iov entry per run, every run checked against the region.
expected<std::vector<ucp_dt_iov_t>> ucx_receiver::landing_iov(const std::vector<landing_run>& runs,
                                                              uint64_t length, uint64_t& blocks) const {
  auto spans = check_runs(geometry_, runs, length, blocks);
  if (!spans)
    return spans.error();
  std::vector<ucp_dt_iov_t> iov;
  iov.reserve(spans->size());
  for (const auto& s : *spans)
    iov.push_back({static_cast<uint8_t*>(config_.region.base) + s.offset, s.bytes});
  return iov;
}

ucs_status_t ucx_receiver::handle_data(const frame_header& f, const std::vector<landing_run>& runs,
                                       void* data, size_t length, const ucp_am_recv_param_t* param) {
  const bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
  receive_ledger::key k{f.source_worker, f.transfer_id};
  uint64_t blocks = 0;
  auto iov = landing_iov(runs, length, blocks);
  if (!iov) {
    complete(ledger_.fail(k, errc::malformed_message, message_of(iov.error()), clock::now()));
    return rndv ? UCS_ERR_INVALID_PARAM : UCS_OK;
  }
  if (ledger_.is_dead(k))
    return rndv ? UCS_ERR_CANCELED : UCS_OK; // abandoned: its bytes never land
  if (!rndv) { // eager: the payload is here, contiguous
    auto* src = static_cast<const uint8_t*>(data);
    for (const auto& v : *iov) {
      std::memcpy(v.buffer, src, v.length);
      src += v.length;
    }
    landed(k, blocks, length);
    return UCS_OK;
  }
  auto* o = new op{this, k, blocks, length, {}, std::move(*iov)};
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                    UCP_OP_ATTR_FIELD_MEMH | UCP_OP_ATTR_FIELD_DATATYPE;
  rp.cb.recv_am = &on_recv_done;
  rp.user_data = o;
  rp.memh = memh_;
  void* buffer = o->iov.data();
  size_t count = o->iov.size();
  if (count == 1) { // contiguous: lets UCX use CMA
    buffer = o->iov[0].buffer;
    count = o->iov[0].length;
    rp.op_attr_mask &= ~uint32_t{UCP_OP_ATTR_FIELD_DATATYPE};
  } else {
    rp.datatype = ucp_dt_make_iov();
  }
  auto* req = ucp_am_recv_data_nbx(worker_->worker(), data, buffer, count, &rp);
  if (req == nullptr) {
    delete o;
    landed(k, blocks, length);
  } else if (UCS_PTR_IS_ERR(req)) {
    delete o;
    complete(ledger_.fail(k, ucx_errc(UCS_PTR_STATUS(req)), "ucp_am_recv_data_nbx failed",
                          clock::now()));
  } else {
    ops_.insert(o);
  }
  return UCS_INPROGRESS;
}

void ucx_receiver::on_recv_done(void* request, ucs_status_t status, size_t, void* user_data) {
  auto* o = static_cast<op*>(user_data);
  auto* self = o->self;
  self->ops_.erase(o);
  if (status == UCS_OK)
    self->landed(o->key, o->blocks, o->bytes);
  else if (!self->ledger_.is_dead(o->key))
    self->complete(self->ledger_.fail(o->key, ucx_errc(status),
                                      std::string{"rendezvous receive: "} + ucs_status_string(status),
                                      clock::now()));
  delete o;
  ucp_request_free(request);
}

void ucx_receiver::handle_ctrl(const frame_header& f, const ucp_am_recv_param_t* param) {
  receive_ledger::key k{f.source_worker, f.transfer_id};
  ucp_ep_h reply = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? param->reply_ep : nullptr;
  if (reply)
    remember_ep(reply);
  if (f.kind == frame_kind::cancel) {
    reply_eps_.erase(k);
    if (ledger_.is_open(k))
      complete(ledger_.fail(k, errc::timeout, "the sender gave up", clock::now()));
    return;
  }
  if (f.kind != frame_kind::done && f.kind != frame_kind::done_rma)
    return;
  if (ledger_.is_dead(k)) {
    if (reply)
      send_ack(reply, error_status(k.second, k.first, errc::timeout, "abandoned", clock::now()));
    return;
  }
  if (reply)
    reply_eps_[k] = reply;
  auto s = ledger_.on_done(k, f.block, f.length, f.kind == frame_kind::done_rma, clock::now());
  if (s)
    complete(*s);
}

void ucx_receiver::landed(const receive_ledger::key& k, uint64_t blocks, uint64_t bytes) {
  if (auto s = ledger_.on_data(k, blocks, bytes, clock::now()))
    complete(*s);
}

void ucx_receiver::complete(const protocol::kv_transfer_status& s) {
  if (auto it = reply_eps_.find({s.source_worker_id, s.transfer_id}); it != reply_eps_.end()) {
    send_ack(it->second, s);
    reply_eps_.erase(it);
  }
  if (!closing_ && config_.on_received)
    config_.on_received(s);
}

void ucx_receiver::send_ack(ucp_ep_h ep, const protocol::kv_transfer_status& s) {
  auto* o = new op{this, {s.source_worker_id, s.transfer_id}, s.blocks, s.bytes, {}, {}};
  o->header = encode_frame({frame_kind::ack, s.code, s.transfer_id, s.source_worker_id, s.blocks, s.bytes});
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.send = &on_ack_sent;
  rp.user_data = o;
  auto* req = ucp_am_send_nbx(ep, am_ack, o->header.data(), o->header.size(), nullptr, 0, &rp);
  if (req == nullptr || UCS_PTR_IS_ERR(req))
    delete o; // sent at once, or the sender is gone (it times out)
  else
    ops_.insert(o);
}

void ucx_receiver::on_ack_sent(void* request, ucs_status_t, void* user_data) {
  auto* o = static_cast<op*>(user_data);
  o->self->ops_.erase(o);
  delete o;
  ucp_request_free(request);
}

void ucx_receiver::remember_ep(ucp_ep_h ep) {
  if (!seen_eps_.insert(ep).second)
    return;
  auto text = ucx_ep_info(ep);
  std::lock_guard lock{info_mutex_};
  info_ += fmt::format("reply endpoint {}:\n{}", seen_eps_.size(), text);
}

} // namespace

expected<std::unique_ptr<kv_receiver>> make_ucx_receiver(kv_receiver_config config) {
  if (auto ok = check_region(config.region, config.layout, config.allocate_region); !ok)
    return ok.error();
  if (config.region.memory != kv_memory::host)
    return make_error(errc::unsupported,
                      "ucx transport: host memory only (Debian's UCX has no CUDA transport; stage "
                      "device blocks through pinned host memory)");
  return ucx_receiver::create(std::move(config));
}

} // namespace dynamo::planes
