// Private to the collection layer: row bitmaps, JSON payload lookups and the
// per-segment payload indexes (keyword -> rows, sorted numeric columns, bool).
//
// Payload indexes answer single-key leaf conditions with the same semantics
// as the row-by-row evaluator in filter_eval.cc (keyword: exact strings;
// integer: integral numbers; float/timestamp: numbers, and for timestamps
// RFC 3339 strings, as seconds). Not thread-safe: the owning segment's lock
// (the collection's reader/writer lock) guards them.
#pragma once

#include <strata/core/status.h>
#include <strata/vector/filter.h>
#include <strata/vector/index.h>
#include <strata/vector/schema.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace strata::vector::internal {

// A dense bitmap over rows [0, universe). Also an IdFilter, because index ids
// are row offsets: a RowSet is passed to Index::Search as it is.
class RowSet final : public IdFilter {
 public:
  RowSet() = default;
  explicit RowSet(size_t universe, bool all = false) { Reset(universe, all); }

  void Reset(size_t universe, bool all);
  // Grows the universe; new rows are clear.
  void Resize(size_t universe);
  size_t universe() const { return universe_; }

  void Set(size_t r) {
    uint64_t& w = words_[r >> 6];
    uint64_t m = uint64_t{1} << (r & 63);
    count_ += (w & m) == 0;
    w |= m;
  }
  void Clear(size_t r) {
    uint64_t& w = words_[r >> 6];
    uint64_t m = uint64_t{1} << (r & 63);
    count_ -= (w & m) != 0;
    w &= ~m;
  }
  bool Test(size_t r) const { return r < universe_ && ((words_[r >> 6] >> (r & 63)) & 1); }
  size_t Count() const { return count_; }
  bool Empty() const { return count_ == 0; }

  void And(const RowSet& o);
  void Or(const RowSet& o);
  void AndNot(const RowSet& o);
  void Invert();  // within the universe

  template <class F>
  void ForEach(F&& f) const {
    for (size_t w = 0; w < words_.size(); ++w) {
      uint64_t bits = words_[w];
      while (bits) {
        f(static_cast<uint32_t>(w * 64 + std::countr_zero(bits)));
        bits &= bits - 1;
      }
    }
  }
  std::vector<uint32_t> ToRows() const;

  const std::vector<uint64_t>& words() const { return words_; }
  // Replaces the bits (size must match the universe); recounts.
  void SetWords(std::vector<uint64_t> words);

  bool Contains(uint64_t id) const override { return Test(static_cast<size_t>(id)); }
  int64_t Cardinality() const override { return static_cast<int64_t>(count_); }
  bool Enumerate(std::vector<uint64_t>* ids) const override;

  size_t MemoryBytes() const { return words_.capacity() * 8; }

 private:
  void Recount();
  size_t universe_ = 0;
  size_t count_ = 0;
  std::vector<uint64_t> words_;
};

// The values at a key path in a payload: "a.b" descends objects, and arrays
// on the way are walked element by element ("a[].b" says so explicitly).
// Each leaf is appended as found (a leaf may itself be an array).
void LookupPath(const nlohmann::json& doc, std::string_view path,
                std::vector<const nlohmann::json*>* out);

// Payload index of one key in one segment.
class PayloadFieldIndex {
 public:
  virtual ~PayloadFieldIndex() = default;
  static std::unique_ptr<PayloadFieldIndex> Create(const std::string& key, PayloadType type);

  PayloadType type() const { return type_; }
  const std::string& key() const { return key_; }
  // Indexes the values of row `row` (rows are added in increasing order).
  void Add(uint32_t row, const nlohmann::json& payload);
  // Rows (of a universe of `rows`) whose values satisfy the leaf condition `c`
  // on this key; false when this index cannot answer that kind of condition.
  virtual bool Eval(const Condition& c, size_t rows, RowSet* out) const = 0;
  // Whether Eval can answer `c` (a leaf on this key).
  virtual bool CanAnswer(const Condition& c) const = 0;
  // Rows with at least one indexed value.
  size_t points() const { return points_; }
  virtual size_t MemoryBytes() const = 0;

 protected:
  PayloadFieldIndex(std::string key, PayloadType type) : key_(std::move(key)), type_(type) {}
  // Adds the usable values of one leaf (arrays are flattened by the caller).
  virtual bool AddValue(uint32_t row, const nlohmann::json& v) = 0;

 private:
  std::string key_;
  PayloadType type_;
  size_t points_ = 0;
};

// Checks a payload against a typed schema field; kInvalidArgument says why.
Status CheckTypedField(const nlohmann::json& payload, const PayloadFieldSchema& field);

}  // namespace strata::vector::internal
