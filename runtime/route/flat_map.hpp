// An open-addressing hash map for small trivially copyable keys and values,
// used by the radix index on its hot paths instead of std::unordered_map.
// A value type; not thread-safe. Pointers from find()/insert() die at the next
// insert or erase.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dynamo::route {

/// A 64-bit finalizer (splitmix64): good avalanche for structured ids.
[[nodiscard]] constexpr uint64_t mix64(uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

struct mix64_hash {
  [[nodiscard]] uint64_t operator()(uint64_t k) const noexcept { return mix64(k); }
};

/// Linear probing, power-of-two capacity, load <= 3/4, backward-shift erase (no
/// tombstones, so probes stay short under churn).
template <class Key, class Value, class Hash = mix64_hash>
class flat_map {
public:
  flat_map() = default;

  [[nodiscard]] size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] size_t capacity() const noexcept { return slots_.size(); }

  /// Drops every entry and releases the memory.
  void clear() noexcept {
    std::vector<slot>{}.swap(slots_);
    size_ = 0;
    mask_ = 0;
  }

  /// Makes room for `n` entries without rehashing.
  void reserve(size_t n) {
    size_t cap = 8;
    while (cap * 3 / 4 < n)
      cap <<= 1;
    if (cap > slots_.size())
      rehash(cap);
  }

  [[nodiscard]] Value* find(const Key& key) noexcept {
    return const_cast<Value*>(std::as_const(*this).find(key));
  }

  [[nodiscard]] const Value* find(const Key& key) const noexcept {
    if (size_ == 0)
      return nullptr;
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      const slot& s = slots_[i];
      if (!s.used)
        return nullptr;
      if (s.key == key)
        return &s.value;
    }
  }

  [[nodiscard]] bool contains(const Key& key) const noexcept { return find(key) != nullptr; }

  /// Hints the CPU to fetch the slot where `key` would start probing.
  void prefetch(const Key& key) const noexcept {
    if (!slots_.empty())
      __builtin_prefetch(&slots_[home(key)]);
  }

  /// Inserts `key -> value` unless `key` is present. Returns the stored value
  /// and whether it was inserted.
  std::pair<Value*, bool> insert(const Key& key, const Value& value) {
    if ((size_ + 1) * 4 > slots_.size() * 3)
      rehash(slots_.empty() ? 8 : slots_.size() * 2);
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      slot& s = slots_[i];
      if (!s.used) {
        s.key = key;
        s.value = value;
        s.used = true;
        ++size_;
        return {&s.value, true};
      }
      if (s.key == key)
        return {&s.value, false};
    }
  }

  /// Sets `key -> value`, replacing any previous value.
  void assign(const Key& key, const Value& value) {
    auto [v, inserted] = insert(key, value);
    if (!inserted)
      *v = value;
  }

  /// Removes `key`; false when it was absent.
  bool erase(const Key& key) noexcept { // like std containers: result optional
    if (size_ == 0)
      return false;
    size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      if (!slots_[i].used)
        return false;
      if (slots_[i].key == key)
        break;
    }
    // Backward shift: pull later entries of the probe run into the hole when
    // the hole lies between their home and their current position.
    for (size_t j = (i + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
      size_t h = home(slots_[j].key);
      if (((j - h) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].used = false;
    --size_;
    return true;
  }

  /// Calls f(key, value) for every entry; f must not insert or erase.
  template <class F>
  void for_each(F&& f) const {
    for (const slot& s : slots_)
      if (s.used)
        f(s.key, s.value);
  }

private:
  struct slot {
    Key key{};
    Value value{};
    bool used = false;
  };

  [[nodiscard]] size_t home(const Key& key) const noexcept {
    return static_cast<size_t>(Hash{}(key)) & mask_;
  }

  void rehash(size_t cap) {
    std::vector<slot> old;
    old.swap(slots_);
    slots_.assign(cap, slot{});
    mask_ = cap - 1;
    size_ = 0;
    for (const slot& s : old)
      if (s.used)
        insert(s.key, s.value);
  }

  std::vector<slot> slots_;
  size_t size_ = 0;
  size_t mask_ = 0;
};

} // namespace dynamo::route
