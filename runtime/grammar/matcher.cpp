#include "runtime/grammar/matcher.hpp"

#include <algorithm>

namespace dynamo::gram {

matcher::matcher(std::shared_ptr<const compiled_grammar> g) : g_(std::move(g)), walker_(g_->rules()) { reset(); }

void matcher::reset() {
  stacks_.assign(1, std::vector<uint32_t>{g_->rules().start()});
  terminated_ = false;
}

bool matcher::can_terminate() const noexcept {
  if (terminated_) return false;
  const automaton& a = g_->rules();
  return std::any_of(stacks_.begin(), stacks_.end(), [&](const std::vector<uint32_t>& st) {
    return std::all_of(st.begin(), st.end(), [&](uint32_t s) { return a.accepting(s); });
  });
}

bool matcher::can_continue() const noexcept {
  if (terminated_) return false;
  const automaton& a = g_->rules();
  for (const auto& st : stacks_) {
    for (size_t i = st.size(); i-- > 0;) {
      if (!a.first(st[i]).empty()) return true;
      if (!a.accepting(st[i])) break;
    }
  }
  return false;
}

void matcher::fill_next_token_bitmask(std::span<uint64_t> mask) {
  const token_vocab& v = g_->vocab();
  std::fill(mask.begin(), mask.begin() + static_cast<ptrdiff_t>(v.mask_words()), 0);
  if (terminated_) return;
  tops_seen_.clear();
  for (const auto& st : stacks_) {
    const uint32_t top = st.back();
    const mask_entry& e = g_->entry(top, walker_);
    if (std::find(tops_seen_.begin(), tops_seen_.end(), top) == tops_seen_.end()) {
      tops_seen_.push_back(top);
      if (!e.accepted_bits.empty()) {
        const uint64_t* src = e.accepted_bits.data();
        for (size_t w = 0; w < e.accepted_bits.size(); ++w) mask[w] |= src[w];
      } else {
        for (uint32_t id : e.accepted_ids) mask[id >> 6] |= uint64_t{1} << (id & 63);
      }
    }
    if (e.uncertain.empty()) continue;
    walker_.reset();
    const detail::config init = walker_.load(st);
    walker_.walk(v, std::span<const detail::config>(&init, 1), e.uncertain,
                 [&](uint32_t, uint32_t id, detail::token_result r) {
                   if (r == detail::token_result::accepted) mask[id >> 6] |= uint64_t{1} << (id & 63);
                 });
  }
  if (can_terminate())
    for (uint32_t id : v.eos()) mask[id >> 6] |= uint64_t{1} << (id & 63);
}

expected<void> matcher::advance(std::string_view bytes, std::string_view what) {
  walker_.reset();
  cur_.clear();
  for (const auto& st : stacks_) cur_.push_back(walker_.load(st));
  for (size_t i = 0; i < bytes.size(); ++i) {
    next_.clear();
    bool pop = false;
    for (const detail::config& c : cur_) walker_.step(c, static_cast<uint8_t>(bytes[i]), next_, 0, pop);
    if (next_.empty())
      return make_error(errc::invalid_argument, std::string(what) + " is not allowed by the grammar here (byte " +
                                                    std::to_string(i) + " of " + std::to_string(bytes.size()) + ")");
    if (next_.size() > max_stacks)
      return make_error(errc::invalid_argument, "grammar is too ambiguous: more than " + std::to_string(max_stacks) +
                                                    " parses at once");
    std::swap(cur_, next_);
  }
  std::vector<std::vector<uint32_t>> out(cur_.size());
  for (size_t i = 0; i < cur_.size(); ++i) walker_.unload(cur_[i], out[i]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  stacks_ = std::move(out);
  return {};
}

expected<void> matcher::accept_token(uint32_t id) {
  const token_vocab& v = g_->vocab();
  if (id >= v.size())
    return make_error(errc::invalid_argument, "token " + std::to_string(id) + " is outside the vocabulary (" +
                                                  std::to_string(v.size()) + " tokens)");
  if (terminated_)
    return make_error(errc::invalid_argument, "token " + std::to_string(id) + " after the grammar terminated");
  if (v.is_eos(id)) {
    if (!can_terminate())
      return make_error(errc::invalid_argument,
                        "end-of-sequence token " + std::to_string(id) + " before the grammar is complete");
    terminated_ = true;
    return {};
  }
  if (v.bytes(id).empty())
    return make_error(errc::invalid_argument, "special token " + std::to_string(id) + " is never allowed by a grammar");
  return advance(v.bytes(id), "token " + std::to_string(id));
}

expected<void> matcher::accept_bytes(std::string_view bytes) {
  if (terminated_) return make_error(errc::invalid_argument, "text after the grammar terminated");
  return advance(bytes, "text");
}

} // namespace dynamo::gram
