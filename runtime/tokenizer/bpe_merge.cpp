// The BPE merge loop of bpe_tokenizer: O(n log n) in the piece length.
#include "runtime/tokenizer/bpe_tokenizer.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <limits>
#include <algorithm>

namespace dynamo::tok {

namespace {

constexpr uint32_t no_id = std::numeric_limits<uint32_t>::max();
constexpr uint32_t none = std::numeric_limits<uint32_t>::max();

} // namespace

void bpe_tokenizer::encode_piece(std::string_view piece, merge_scratch& scratch, std::vector<uint32_t>& out) const {
  if (piece.size() == 1) { // most punctuation and digits: no pair to merge
    if (const uint32_t id = byte_ids_[static_cast<unsigned char>(piece[0])]; id != no_id)
      out.push_back(id);
    return;
  }
  if (ignore_merges_) {
    std::string mapped;
    for (unsigned char b : piece)
      append_utf8(mapped, byte_to_codepoint(b));
    if (auto id = token_id(mapped)) {
      out.push_back(*id);
      return;
    }
  }
  const auto n = static_cast<uint32_t>(piece.size());
  auto& syms = scratch.symbols;
  auto& queue = scratch.queue; // a min-heap under std::greater
  syms.resize(n);
  queue.clear();
  for (uint32_t i = 0; i < n; ++i)
    syms[i] = {byte_ids_[static_cast<unsigned char>(piece[i])], i == 0 ? none : i - 1, i + 1 == n ? none : i + 1,
               true};
  auto consider = [&](uint32_t left) {
    if (left == none || syms[left].next == none)
      return;
    const uint32_t right = syms[left].next;
    const uint32_t a = syms[left].id, b = syms[right].id;
    if (a == no_id || b == no_id)
      return;
    auto it = merges_.find((uint64_t{a} << 32) | b);
    if (it != merges_.end()) {
      queue.push_back({it->second.rank, left, right, a, b, it->second.id});
      std::push_heap(queue.begin(), queue.end(), std::greater<>{});
    }
  };
  for (uint32_t i = 0; i + 1 < n; ++i)
    consider(i);
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), std::greater<>{});
    const merge_candidate c = queue.back();
    queue.pop_back();
    merge_symbol& l = syms[c.left];
    if (!l.alive || l.id != c.left_id || l.next != c.right || syms[c.right].id != c.right_id)
      continue; // stale: one side merged since
    merge_symbol& r = syms[c.right];
    l.id = c.merged_id;
    l.next = r.next;
    r.alive = false;
    if (r.next != none)
      syms[r.next].prev = c.left;
    consider(l.prev);
    consider(c.left);
  }
  // A byte with no token of its own is dropped, as HF tokenizers does (the
  // SmolLM2 vocabulary lacks 21 of the 256 bytes, e.g. 0x04 and 0xF1).
  for (uint32_t i = 0; i != none && n > 0; i = syms[i].next)
    if (syms[i].id != no_id)
      out.push_back(syms[i].id);
}

} // namespace dynamo::tok
