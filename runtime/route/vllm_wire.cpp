// Decoding of vLLM KV-event messages: walks the msgpack object tree by hand,
// checking every type, so hostile bytes give an error value and nothing else.
#include "runtime/route/vllm_wire.hpp"

#include "runtime/protocol/codec.hpp"

#include <fmt/format.h>

#include <limits>

namespace dynamo::route {

namespace {

using msgpack::object;
namespace mt = msgpack::type;

caf::error bad(std::string what) {
  protocol::detail::count_malformed();
  return make_error(errc::malformed_message, "vllm kv event: " + std::move(what));
}

[[nodiscard]] bool is_nil(const object& o) noexcept { return o.type == mt::NIL; }

[[nodiscard]] std::optional<uint64_t> as_hash(const object& o) noexcept {
  if (o.type == mt::POSITIVE_INTEGER)
    return o.via.u64;
  if (o.type == mt::NEGATIVE_INTEGER)
    return static_cast<uint64_t>(o.via.i64); // bitwise, as Dynamo does
  return std::nullopt;
}

[[nodiscard]] std::optional<uint64_t> as_unsigned(const object& o) noexcept {
  if (o.type == mt::POSITIVE_INTEGER)
    return o.via.u64;
  return std::nullopt;
}

[[nodiscard]] std::optional<std::string_view> as_str(const object& o) noexcept {
  if (o.type == mt::STR)
    return std::string_view{o.via.str.ptr, o.via.str.size};
  return std::nullopt;
}

[[nodiscard]] std::span<const object> as_array(const object& o) noexcept {
  if (o.type != mt::ARRAY)
    return {};
  return {o.via.array.ptr, o.via.array.size};
}

expected<std::vector<uint64_t>> read_hashes(const object& o) {
  if (o.type != mt::ARRAY)
    return bad("block_hashes is not an array");
  std::vector<uint64_t> out;
  out.reserve(o.via.array.size);
  for (const object& h : as_array(o)) {
    auto v = as_hash(h);
    if (!v)
      return bad("block hash is not an integer");
    out.push_back(*v);
  }
  return out;
}

expected<std::optional<uint64_t>> read_parent(const object& o) {
  if (is_nil(o))
    return std::optional<uint64_t>{};
  auto v = as_hash(o);
  if (!v)
    return bad("parent_block_hash is not an integer");
  return std::optional<uint64_t>{*v};
}

expected<uint32_t> read_token(const object& o) {
  auto v = as_unsigned(o);
  if (!v || *v > std::numeric_limits<uint32_t>::max())
    return bad("token id is not a u32");
  return static_cast<uint32_t>(*v);
}

// token_ids: [u32...] or EAGLE bigrams [[u32,u32]...] -> firsts + last second.
expected<void> read_tokens(const object& o, vllm_event& ev) {
  if (o.type != mt::ARRAY)
    return bad("token_ids is not an array");
  auto items = as_array(o);
  ev.bigram = !items.empty() && items[0].type == mt::ARRAY;
  ev.token_ids.reserve(items.size() + 1);
  for (const object& t : items) {
    if (!ev.bigram) {
      auto v = read_token(t);
      if (!v)
        return std::move(v.error());
      ev.token_ids.push_back(*v);
      continue;
    }
    auto pair = as_array(t);
    if (pair.size() != 2)
      return bad("bigram token is not a pair");
    auto first = read_token(pair[0]);
    if (!first)
      return std::move(first.error());
    ev.token_ids.push_back(*first);
  }
  if (ev.bigram) {
    auto last = read_token(as_array(items.back())[1]);
    if (!last)
      return std::move(last.error());
    ev.token_ids.push_back(*last);
  }
  return {};
}

expected<std::optional<std::string>> read_opt_str(const object& o, const char* field) {
  if (is_nil(o))
    return std::optional<std::string>{};
  auto s = as_str(o);
  if (!s)
    return bad(fmt::format("{} is not a string", field));
  return std::optional<std::string>{std::string{*s}};
}

// A 64-hex-digit extra key is a multimodal identifier; its first 16 hex digits
// are the block's mm_hash. Other extra keys (LoRA, cache salt) are not.
std::optional<uint64_t> mm_hash_of_key(std::string_view s) {
  if (s.size() != 64)
    return std::nullopt;
  uint64_t v = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0)
      return std::nullopt;
    if (i < 16)
      v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

// extra_keys: per block, nil or a list of items; an item is a string or a
// [string, offset] pair (vLLM 0.19+); other item kinds are ignored.
expected<void> read_extra_keys(const object& o, vllm_event& ev) {
  if (is_nil(o))
    return {};
  if (o.type != mt::ARRAY)
    return bad("extra_keys is not an array");
  for (const object& block : as_array(o)) {
    auto& hashes = ev.mm_hashes.emplace_back();
    if (is_nil(block))
      continue;
    if (block.type != mt::ARRAY)
      return bad("extra_keys entry is not an array");
    for (const object& item : as_array(block)) {
      std::optional<std::string_view> key = as_str(item);
      auto pair = as_array(item);
      if (!key && !pair.empty())
        key = as_str(pair[0]);
      if (key)
        if (auto h = mm_hash_of_key(*key))
          hashes.push_back(*h);
    }
  }
  return {};
}

// Trailing filter fields: an integer group_idx or a kv_cache_spec_kind string.
// Events of other KV groups than the main attention are ignored.
struct event_filter {
  std::optional<uint64_t> group_idx;
  std::optional<std::string_view> spec_kind;

  void record(const object& o) {
    if (auto v = as_unsigned(o))
      group_idx = v;
    else if (auto s = as_str(o))
      spec_kind = s;
  }
  [[nodiscard]] bool ignore() const {
    if (spec_kind)
      return *spec_kind != "full_attention" && *spec_kind != "mla_attention" &&
             *spec_kind != "sink_full_attention";
    return group_idx && *group_idx != 0;
  }
};

expected<vllm_event_kind> kind_of_tag(std::string_view tag) {
  if (tag == "BlockStored")
    return vllm_event_kind::block_stored;
  if (tag == "BlockRemoved")
    return vllm_event_kind::block_removed;
  if (tag == "AllBlocksCleared")
    return vllm_event_kind::all_blocks_cleared;
  if (tag == "Ignored")
    return vllm_event_kind::ignored;
  return bad(fmt::format("unknown event tag '{}'", tag.substr(0, 64)));
}

#define DYNAMO_TRY_ASSIGN(lhs, expr)                                                             \
  do {                                                                                           \
    auto r_ = (expr);                                                                            \
    if (!r_)                                                                                     \
      return std::move(r_.error());                                                              \
    lhs = std::move(*r_);                                                                        \
  } while (false)

#define DYNAMO_TRY(expr)                                                                         \
  do {                                                                                           \
    auto r_ = (expr);                                                                            \
    if (!r_)                                                                                     \
      return std::move(r_.error());                                                              \
  } while (false)

// ["BlockStored", hashes, parent, token_ids, block_size, lora_id, medium,
//  lora_name, extra_keys, <up to 3 trailing fields>, ...]
expected<vllm_event> read_stored_array(std::span<const object> a) {
  if (a.size() < 5)
    return bad("BlockStored array is too short");
  vllm_event ev;
  ev.kind = vllm_event_kind::block_stored;
  DYNAMO_TRY_ASSIGN(ev.block_hashes, read_hashes(a[1]));
  DYNAMO_TRY_ASSIGN(ev.parent_block_hash, read_parent(a[2]));
  DYNAMO_TRY(read_tokens(a[3], ev));
  auto bs = as_unsigned(a[4]);
  if (!bs)
    return bad("block_size is not an unsigned integer");
  ev.block_size = *bs;
  // a[5] is the legacy lora_id: ignored.
  if (a.size() > 6)
    DYNAMO_TRY_ASSIGN(ev.medium, read_opt_str(a[6], "medium"));
  if (a.size() > 7)
    DYNAMO_TRY_ASSIGN(ev.lora_name, read_opt_str(a[7], "lora_name"));
  if (a.size() > 8)
    DYNAMO_TRY(read_extra_keys(a[8], ev));
  event_filter filter;
  for (size_t i = 9; i < a.size() && i < 12; ++i)
    filter.record(a[i]);
  if (filter.ignore())
    ev.kind = vllm_event_kind::ignored;
  return ev;
}

// ["BlockRemoved", hashes, medium, <up to 2 trailing fields>, ...]
expected<vllm_event> read_removed_array(std::span<const object> a) {
  if (a.size() < 2)
    return bad("BlockRemoved array is too short");
  vllm_event ev;
  ev.kind = vllm_event_kind::block_removed;
  DYNAMO_TRY_ASSIGN(ev.block_hashes, read_hashes(a[1]));
  if (a.size() > 2)
    DYNAMO_TRY_ASSIGN(ev.medium, read_opt_str(a[2], "medium"));
  event_filter filter;
  for (size_t i = 3; i < a.size() && i < 5; ++i)
    filter.record(a[i]);
  if (filter.ignore())
    ev.kind = vllm_event_kind::ignored;
  return ev;
}

expected<vllm_event> read_event_array(std::span<const object> a) {
  if (a.empty())
    return bad("event array has no tag");
  auto tag = as_str(a[0]);
  if (!tag)
    return bad("event tag is not a string");
  vllm_event_kind kind;
  DYNAMO_TRY_ASSIGN(kind, kind_of_tag(*tag));
  switch (kind) {
  case vllm_event_kind::block_stored:
    return read_stored_array(a);
  case vllm_event_kind::block_removed:
    return read_removed_array(a);
  default:
    break;
  }
  vllm_event ev;
  ev.kind = kind;
  return ev;
}

// One key of a map-form event.
expected<void> read_map_field(std::string_view key, const object& v, vllm_event& ev,
                              event_filter& filter, bool& has_hashes, bool& has_size,
                              bool& has_tokens) {
  if (key == "block_hashes") {
    DYNAMO_TRY_ASSIGN(ev.block_hashes, read_hashes(v));
    has_hashes = true;
  } else if (key == "parent_block_hash") {
    DYNAMO_TRY_ASSIGN(ev.parent_block_hash, read_parent(v));
  } else if (key == "token_ids") {
    DYNAMO_TRY(read_tokens(v, ev));
    has_tokens = true;
  } else if (key == "block_size") {
    auto bs = as_unsigned(v);
    if (!bs)
      return bad("block_size is not an unsigned integer");
    ev.block_size = *bs;
    has_size = true;
  } else if (key == "medium") {
    DYNAMO_TRY_ASSIGN(ev.medium, read_opt_str(v, "medium"));
  } else if (key == "lora_name") {
    DYNAMO_TRY_ASSIGN(ev.lora_name, read_opt_str(v, "lora_name"));
  } else if (key == "extra_keys") {
    DYNAMO_TRY(read_extra_keys(v, ev));
  } else if (key == "group_idx" || key == "kv_cache_spec_kind") {
    if (!is_nil(v))
      filter.record(v);
  }
  return {}; // unknown keys are ignored
}

expected<vllm_event> read_event_map(const object& o) {
  vllm_event ev;
  event_filter filter;
  std::optional<std::string_view> tag;
  bool has_hashes = false, has_size = false, has_tokens = false;
  for (uint32_t i = 0; i < o.via.map.size; ++i) {
    const auto& kv = o.via.map.ptr[i];
    auto key = as_str(kv.key);
    if (!key)
      return bad("event map key is not a string");
    if (*key == "type") {
      tag = as_str(kv.val);
      if (!tag)
        return bad("event type is not a string");
      continue;
    }
    DYNAMO_TRY(read_map_field(*key, kv.val, ev, filter, has_hashes, has_size, has_tokens));
  }
  if (!tag)
    return bad("event map has no type");
  DYNAMO_TRY_ASSIGN(ev.kind, kind_of_tag(*tag));
  if (ev.kind == vllm_event_kind::block_stored && !(has_hashes && has_tokens && has_size))
    return bad("BlockStored lacks block_hashes, token_ids or block_size");
  if (ev.kind == vllm_event_kind::block_removed && !has_hashes)
    return bad("BlockRemoved lacks block_hashes");
  if ((ev.kind == vllm_event_kind::block_stored || ev.kind == vllm_event_kind::block_removed) &&
      filter.ignore())
    ev.kind = vllm_event_kind::ignored;
  return ev;
}

expected<double> read_ts(const object& o) {
  switch (o.type) {
  case mt::FLOAT32:
  case mt::FLOAT64:
    return o.via.f64;
  case mt::POSITIVE_INTEGER:
    return static_cast<double>(o.via.u64);
  case mt::NEGATIVE_INTEGER:
    return static_cast<double>(o.via.i64);
  default:
    return bad("timestamp is not a number");
  }
}

expected<std::optional<int64_t>> read_dp_rank(const object& o) {
  if (is_nil(o))
    return std::optional<int64_t>{};
  if (o.type == mt::POSITIVE_INTEGER && o.via.u64 <= INT64_MAX)
    return std::optional<int64_t>{static_cast<int64_t>(o.via.u64)};
  if (o.type == mt::NEGATIVE_INTEGER)
    return std::optional<int64_t>{o.via.i64};
  return bad("data_parallel_rank is not an integer");
}

expected<void> read_events(const object& o, vllm_event_batch& batch) {
  if (o.type != mt::ARRAY)
    return bad("events is not an array");
  for (const object& e : as_array(o)) {
    expected<vllm_event> ev = e.type == mt::MAP     ? read_event_map(e)
                              : e.type == mt::ARRAY ? read_event_array(as_array(e))
                                                    : expected<vllm_event>{bad("event is "
                                                                               "neither map "
                                                                               "nor array")};
    if (!ev)
      return std::move(ev.error());
    batch.events.push_back(std::move(*ev));
  }
  return {};
}

// msgspec's default struct encoding: {"ts": f, "events": [...],
// "data_parallel_rank": n} (omit_defaults may leave the rank out).
expected<vllm_event_batch> read_batch_map(const object& root) {
  vllm_event_batch batch;
  bool has_ts = false, has_events = false;
  for (uint32_t i = 0; i < root.via.map.size; ++i) {
    const auto& kv = root.via.map.ptr[i];
    auto key = as_str(kv.key);
    if (!key)
      return bad("batch map key is not a string");
    if (*key == "ts") {
      DYNAMO_TRY_ASSIGN(batch.ts, read_ts(kv.val));
      has_ts = true;
    } else if (*key == "events") {
      DYNAMO_TRY(read_events(kv.val, batch));
      has_events = true;
    } else if (*key == "data_parallel_rank" || *key == "dp_rank") {
      DYNAMO_TRY_ASSIGN(batch.dp_rank, read_dp_rank(kv.val));
    } // unknown keys are ignored
  }
  if (!has_ts || !has_events)
    return bad("batch map lacks ts or events");
  return batch;
}

} // namespace

expected<vllm_event_batch> decode_vllm_payload(std::span<const uint8_t> payload) {
  protocol::unpack_limits limits;
  limits.depth = 8; // batch > events > event > extra_keys > item > pair
  auto oh = protocol::detail::unpack(payload, limits);
  if (!oh)
    return std::move(oh.error());
  const object& root = oh->get();
  if (root.type == mt::MAP)
    return read_batch_map(root);
  // msgspec array_like: [ts, events, data_parallel_rank] (the rank may be omitted).
  auto top = as_array(root);
  if (top.size() < 2)
    return bad("payload is neither [ts, events, dp_rank] nor a batch map");
  vllm_event_batch batch;
  DYNAMO_TRY_ASSIGN(batch.ts, read_ts(top[0]));
  DYNAMO_TRY(read_events(top[1], batch));
  if (top.size() > 2)
    DYNAMO_TRY_ASSIGN(batch.dp_rank, read_dp_rank(top[2]));
  return batch;
}

expected<vllm_message> decode_vllm_frames(std::span<const std::span<const uint8_t>> frames) {
  if (frames.size() != 3)
    return bad(fmt::format("expected 3 frames, got {}", frames.size()));
  if (frames[1].size() != 8)
    return bad(fmt::format("sequence frame has {} bytes, not 8", frames[1].size()));
  vllm_message msg;
  msg.topic.assign(frames[0].begin(), frames[0].end());
  for (uint8_t b : frames[1])
    msg.sequence = (msg.sequence << 8) | b;
  DYNAMO_TRY_ASSIGN(msg.batch, decode_vllm_payload(frames[2]));
  return msg;
}

} // namespace dynamo::route
