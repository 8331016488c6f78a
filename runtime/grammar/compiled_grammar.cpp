#include "runtime/grammar/compiled_grammar.hpp"

#include "runtime/grammar/token_walk.hpp"

namespace dynamo::gram {

expected<std::shared_ptr<const compiled_grammar>> compiled_grammar::compile(const grammar& g,
                                                                            std::shared_ptr<const token_vocab> vocab,
                                                                            const automaton_limits& limits) {
  auto a = automaton::build(g, limits);
  if (!a) return a.error();
  return std::make_shared<const compiled_grammar>(std::move(*a), std::move(vocab));
}

compiled_grammar::compiled_grammar(std::shared_ptr<const gram::automaton> a, std::shared_ptr<const token_vocab> v)
    : a_(std::move(a)), v_(std::move(v)), cache_(new std::atomic<const mask_entry*>[a_->state_count()]) {
  for (uint32_t s = 0; s < a_->state_count(); ++s) cache_[s].store(nullptr, std::memory_order_relaxed);
}

std::unique_ptr<mask_entry> compiled_grammar::build_entry(uint32_t state, detail::walker& w) const {
  auto e = std::make_unique<mask_entry>();
  w.reset();
  const detail::config init{state, detail::node_base};
  std::vector<uint32_t> accepted;
  w.walk(*v_, std::span<const detail::config>(&init, 1), {}, [&](uint32_t idx, uint32_t id, detail::token_result r) {
    if (r == detail::token_result::accepted)
      accepted.push_back(id);
    else if (r == detail::token_result::uncertain)
      e->uncertain.push_back(idx);
  });
  // A list costs 32 bits per token, the bitset one bit per vocabulary entry.
  if (accepted.size() * 32 > v_->size()) {
    e->accepted_bits.assign(v_->mask_words(), 0);
    for (uint32_t id : accepted) e->accepted_bits[id >> 6] |= uint64_t{1} << (id & 63);
  } else {
    e->accepted_ids = std::move(accepted);
  }
  e->accepted_ids.shrink_to_fit();
  e->uncertain.shrink_to_fit();
  return e;
}

const mask_entry& compiled_grammar::entry(uint32_t state, detail::walker& w) const {
  if (const mask_entry* e = cache_[state].load(std::memory_order_acquire)) return *e;
  auto built = build_entry(state, w);
  std::lock_guard lock(mutex_);
  if (const mask_entry* e = cache_[state].load(std::memory_order_acquire)) return *e;
  bytes_ += sizeof(mask_entry) + built->accepted_bits.size() * 8 + built->accepted_ids.size() * 4 +
            built->uncertain.size() * 4;
  owned_.push_back(std::move(built));
  cache_[state].store(owned_.back().get(), std::memory_order_release);
  return *owned_.back();
}

void compiled_grammar::precompute() const {
  detail::walker w(*a_);
  for (uint32_t s = 0; s < a_->state_count(); ++s) (void)entry(s, w);
}

size_t compiled_grammar::cached_entries() const {
  std::lock_guard lock(mutex_);
  return owned_.size();
}

size_t compiled_grammar::cached_bytes() const noexcept { return bytes_.load(); }

} // namespace dynamo::gram
