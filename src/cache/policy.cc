#include "cache/policy.h"

#include <algorithm>

namespace strata::cache {
namespace {

// Doubly linked list, newest at head_, oldest at tail_.
class ListPolicy : public Policy {
 public:
  void Insert(Entry* e) override {
    e->prev = nullptr;
    e->next = head_;
    e->visited = false;
    if (head_) head_->prev = e;
    head_ = e;
    if (!tail_) tail_ = e;
    ++size_;
  }
  void Erase(Entry* e) override {
    if (e->prev) e->prev->next = e->next;
    else head_ = e->next;
    if (e->next) e->next->prev = e->prev;
    else tail_ = e->prev;
    e->prev = e->next = nullptr;
    --size_;
  }
  size_t size() const override { return size_; }

 protected:
  Entry* head_ = nullptr;
  Entry* tail_ = nullptr;
  size_t size_ = 0;
};

class LruPolicy final : public ListPolicy {
 public:
  void Touch(Entry* e) override {
    if (head_ == e) return;
    ListPolicy::Erase(e);
    ListPolicy::Insert(e);
  }
  Entry* Victim(const std::function<bool(const Entry*)>& evictable) override {
    for (Entry* p = tail_; p; p = p->prev) {
      if (evictable(p)) return p;
    }
    return nullptr;
  }
};

// SIEVE (Zhang et al., NSDI'24): a FIFO queue, a visited bit per entry and a
// hand that moves from the oldest toward the newest, clearing visited bits and
// stopping at the first unvisited entry. New entries go to the head; a hit
// only sets the bit.
class SievePolicy final : public ListPolicy {
 public:
  void Touch(Entry* e) override { e->visited = true; }
  void Erase(Entry* e) override {
    if (hand_ == e) hand_ = e->prev;
    ListPolicy::Erase(e);
  }
  Entry* Victim(const std::function<bool(const Entry*)>& evictable) override {
    Entry* p = hand_ ? hand_ : tail_;
    // Two full sweeps clear every bit; more means nothing is evictable.
    for (size_t steps = 0; p && steps <= 2 * size_ + 1; ++steps) {
      if (p->visited) {
        p->visited = false;
      } else if (evictable(p)) {
        hand_ = p;
        return p;
      }
      p = p->prev ? p->prev : tail_;
    }
    return nullptr;
  }

 private:
  Entry* hand_ = nullptr;
};

// Belady with a known future: the largest priority (furthest next use) goes
// first; among equal priorities the oldest insertion.
class PriorityPolicy final : public Policy {
 public:
  void Insert(Entry* e) override { set_.insert(e); }
  void Touch(Entry*) override {}
  void Erase(Entry* e) override { set_.erase(e); }
  Entry* Victim(const std::function<bool(const Entry*)>& evictable) override {
    for (Entry* e : set_) {
      if (evictable(e)) return e;
    }
    return nullptr;
  }
  void SetPriority(Entry* e, uint64_t priority) override {
    if (e->priority == priority) return;
    set_.erase(e);
    e->priority = priority;
    set_.insert(e);
  }
  size_t size() const override { return set_.size(); }

 private:
  struct Order {
    bool operator()(const Entry* a, const Entry* b) const {
      if (a->priority != b->priority) return a->priority > b->priority;
      return a->seq < b->seq;
    }
  };
  std::set<Entry*, Order> set_;
};

}  // namespace

std::unique_ptr<Policy> MakePolicy(EvictionPolicy p) {
  switch (p) {
    case EvictionPolicy::kLru:
      return std::make_unique<LruPolicy>();
    case EvictionPolicy::kPriority:
      return std::make_unique<PriorityPolicy>();
    case EvictionPolicy::kSieve:
    default:
      return std::make_unique<SievePolicy>();
  }
}

FrequencySketch::FrequencySketch(uint64_t expected_entries) {
  // Wide rows (8 counters per expected entry, at least 4096) keep collisions
  // from inflating a never-seen block's estimate: 4 rows x 8 B per entry.
  const uint64_t want = std::max<uint64_t>(4096, expected_entries * 8);
  width_ = 4096;
  while (width_ < want && width_ < (1u << 26)) width_ <<= 1;
  table_.assign(4 * width_, 0);
  sample_size_ = std::max<uint64_t>(640, expected_entries * 10);
}

size_t FrequencySketch::Slot(const BlockId& id, int row) const {
  const uint64_t h = Mix64((id.lo + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(row + 1)) ^ id.hi);
  return static_cast<size_t>(row) * width_ + (h & (width_ - 1));
}

void FrequencySketch::Increment(const BlockId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  bool added = false;
  for (int r = 0; r < 4; ++r) {
    uint8_t& c = table_[Slot(id, r)];
    if (c < 15) {
      ++c;
      added = true;
    }
  }
  if (added && ++additions_ >= sample_size_) {
    for (uint8_t& c : table_) c >>= 1;
    additions_ /= 2;
  }
}

uint32_t FrequencySketch::Estimate(const BlockId& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t m = 15;
  for (int r = 0; r < 4; ++r) m = std::min<uint32_t>(m, table_[Slot(id, r)]);
  return m;
}

}  // namespace strata::cache
