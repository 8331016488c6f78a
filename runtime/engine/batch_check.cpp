#include "runtime/engine/batch_check.hpp"

#include <string>
#include <unordered_set>

namespace dynamo::engine {
namespace {

[[nodiscard]] caf::error broken(size_t entry, const std::string& what) {
  return make_error(errc::internal, "batch entry " + std::to_string(entry) + ": " + what);
}

[[nodiscard]] expected<void> check_fork(size_t i, const batch_entry& e, const batch& b) {
  if (!e.tokens.empty() || !e.sample)
    return broken(i, "a fork entry computes no tokens and samples");
  for (size_t j = 0; j < i; ++j) {
    const batch_entry& p = b.entries[j];
    if (p.seq_id != *e.fork_of)
      continue;
    if (!p.sample || p.fork_of || p.sample_position != e.sample_position)
      return broken(i, "fork of seq_id " + std::to_string(p.seq_id) + " that does not sample at " +
                           std::to_string(e.sample_position));
    return {};
  }
  return broken(i, "fork of seq_id " + std::to_string(*e.fork_of) + " not earlier in the batch");
}

[[nodiscard]] expected<void> check_entry(size_t i, const batch_entry& e, const kv_geometry& g) {
  if (e.tokens.empty())
    return broken(i, "no tokens");
  if (e.embed && e.sample)
    return broken(i, "an embed entry does not sample");
  if (e.prompt_targets.size() > e.tokens.size())
    return broken(i, std::to_string(e.prompt_targets.size()) + " prompt targets for " +
                         std::to_string(e.tokens.size()) + " tokens");
  const uint64_t end = uint64_t{e.start_pos} + e.tokens.size();
  if (uint64_t{e.block_table.size()} * g.block_size < end)
    return broken(i, "block table of " + std::to_string(e.block_table.size()) +
                         " blocks does not cover position " + std::to_string(end - 1));
  for (uint32_t id : e.block_table)
    if (id >= g.num_blocks)
      return broken(i, "block id " + std::to_string(id) + " out of range");
  if (e.sample && e.sample_position != end)
    return broken(i, "sample_position " + std::to_string(e.sample_position) + " != " +
                         std::to_string(end));
  return {};
}

} // namespace

expected<void> check_batch(const batch& b, const kv_geometry& g) {
  uint64_t total = 0;
  std::unordered_set<uint64_t> seen;
  for (size_t i = 0; i < b.entries.size(); ++i) {
    const batch_entry& e = b.entries[i];
    if (auto ok = e.fork_of ? check_fork(i, e, b) : check_entry(i, e, g); !ok)
      return ok;
    if (!seen.insert(e.seq_id).second)
      return broken(i, "seq_id " + std::to_string(e.seq_id) + " appears twice");
    total += e.tokens.size();
  }
  for (const block_copy& c : b.block_copies)
    if (c.src >= g.num_blocks || c.dst >= g.num_blocks || c.src == c.dst)
      return make_error(errc::internal, "block copy " + std::to_string(c.src) + " -> " +
                                            std::to_string(c.dst) + " is out of range or in place");
  if (total != b.num_tokens)
    return make_error(errc::internal, "batch num_tokens " + std::to_string(b.num_tokens) +
                                          " != sum of entries " + std::to_string(total));
  return {};
}

} // namespace dynamo::engine
