#include "vector/payload_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "vector/filter_eval.h"

namespace strata::vector::internal {

using json = nlohmann::json;

// ---------------------------------------------------------------------------
// RowSet

void RowSet::Reset(size_t universe, bool all) {
  universe_ = universe;
  words_.assign((universe + 63) / 64, all ? ~uint64_t{0} : 0);
  if (all && (universe & 63) != 0) words_.back() = (uint64_t{1} << (universe & 63)) - 1;
  count_ = all ? universe : 0;
}

void RowSet::Resize(size_t universe) {
  if (universe <= universe_) return;
  universe_ = universe;
  words_.resize((universe + 63) / 64, 0);
}

void RowSet::And(const RowSet& o) {
  for (size_t i = 0; i < words_.size(); ++i) words_[i] &= i < o.words_.size() ? o.words_[i] : 0;
  Recount();
}

void RowSet::Or(const RowSet& o) {
  size_t n = std::min(words_.size(), o.words_.size());
  for (size_t i = 0; i < n; ++i) words_[i] |= o.words_[i];
  if ((universe_ & 63) != 0 && !words_.empty())
    words_.back() &= (uint64_t{1} << (universe_ & 63)) - 1;
  Recount();
}

void RowSet::AndNot(const RowSet& o) {
  size_t n = std::min(words_.size(), o.words_.size());
  for (size_t i = 0; i < n; ++i) words_[i] &= ~o.words_[i];
  Recount();
}

void RowSet::Invert() {
  for (auto& w : words_) w = ~w;
  if ((universe_ & 63) != 0 && !words_.empty())
    words_.back() &= (uint64_t{1} << (universe_ & 63)) - 1;
  count_ = universe_ - count_;
}

void RowSet::Recount() {
  size_t c = 0;
  for (uint64_t w : words_) c += static_cast<size_t>(std::popcount(w));
  count_ = c;
}

void RowSet::SetWords(std::vector<uint64_t> words) {
  words.resize((universe_ + 63) / 64, 0);
  words_ = std::move(words);
  if ((universe_ & 63) != 0 && !words_.empty())
    words_.back() &= (uint64_t{1} << (universe_ & 63)) - 1;
  Recount();
}

std::vector<uint32_t> RowSet::ToRows() const {
  std::vector<uint32_t> rows;
  rows.reserve(count_);
  ForEach([&](uint32_t r) { rows.push_back(r); });
  return rows;
}

bool RowSet::Enumerate(std::vector<uint64_t>* ids) const {
  ids->reserve(ids->size() + count_);
  ForEach([&](uint32_t r) { ids->push_back(r); });
  return true;
}

// ---------------------------------------------------------------------------
// Paths

namespace {

void Walk(const json& node, std::string_view path, std::vector<const json*>* out) {
  if (path.empty()) {
    out->push_back(&node);
    return;
  }
  if (node.is_array()) {
    // "a[].b" or an implicit walk through an array of objects.
    if (path.substr(0, 2) == "[]") {
      std::string_view rest = path.substr(2);
      if (!rest.empty() && rest[0] == '.') rest = rest.substr(1);
      if (rest.empty()) {
        for (const auto& e : node) out->push_back(&e);
        return;
      }
      for (const auto& e : node) Walk(e, rest, out);
      return;
    }
    for (const auto& e : node) {
      if (e.is_object()) Walk(e, path, out);
    }
    return;
  }
  if (!node.is_object()) return;
  size_t end = 0;
  while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
  std::string_view name = path.substr(0, end);
  std::string_view rest = path.substr(end);
  if (!rest.empty() && rest[0] == '.') rest = rest.substr(1);
  auto it = node.find(name);
  if (it == node.end()) {
    // A key that itself contains dots ("a.b" stored flat) is found whole.
    auto whole = node.find(path);
    if (whole != node.end()) out->push_back(&*whole);
    return;
  }
  Walk(*it, rest, out);
}

}  // namespace

void LookupPath(const json& doc, std::string_view path, std::vector<const json*>* out) {
  Walk(doc, path, out);
}

// ---------------------------------------------------------------------------
// Field indexes

void PayloadFieldIndex::Add(uint32_t row, const json& payload) {
  std::vector<const json*> leaves;
  LookupPath(payload, key_, &leaves);
  bool any = false;
  for (const json* leaf : leaves) {
    if (leaf->is_array()) {
      for (const auto& e : *leaf) any |= AddValue(row, e);
    } else {
      any |= AddValue(row, *leaf);
    }
  }
  points_ += any;
}

namespace {

bool IsIntegral(double d) {
  return std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.2e18;
}

// Sorted (value, row) pairs plus an unsorted tail merged in from time to time,
// so appends stay cheap while lookups binary-search most of the column.
template <class T>
class SortedColumn {
 public:
  void Add(T v, uint32_t row) {
    tail_.push_back({v, row});
    if (tail_.size() >= std::max<size_t>(4096, sorted_.size() / 8)) Merge();
  }
  void Merge() {
    if (tail_.empty()) return;
    std::sort(tail_.begin(), tail_.end());
    size_t mid = sorted_.size();
    sorted_.insert(sorted_.end(), tail_.begin(), tail_.end());
    std::inplace_merge(sorted_.begin(), sorted_.begin() + mid, sorted_.end());
    tail_.clear();
    tail_.shrink_to_fit();
  }
  // Rows whose value v satisfies lower(v) && upper(v); lower is monotone
  // false..true and upper true..false over the sorted values.
  template <class Lo, class Hi>
  void Select(Lo lower, Hi upper, RowSet* out) const {
    auto b = std::partition_point(sorted_.begin(), sorted_.end(),
                                  [&](const auto& e) { return !lower(e.first); });
    auto e = std::partition_point(b, sorted_.end(), [&](const auto& x) { return upper(x.first); });
    for (auto it = b; it != e; ++it) out->Set(it->second);
    for (const auto& t : tail_) {
      if (lower(t.first) && upper(t.first)) out->Set(t.second);
    }
  }
  template <class P>
  void SelectIf(P pred, RowSet* out) const {
    for (const auto& e : sorted_)
      if (pred(e.first)) out->Set(e.second);
    for (const auto& e : tail_)
      if (pred(e.first)) out->Set(e.second);
  }
  size_t MemoryBytes() const {
    return (sorted_.capacity() + tail_.capacity()) * sizeof(std::pair<T, uint32_t>);
  }

 private:
  std::vector<std::pair<T, uint32_t>> sorted_;
  std::vector<std::pair<T, uint32_t>> tail_;
};

// Range bounds as comparisons on long double (exact for every int64).
struct Bounds {
  std::optional<long double> gt, gte, lt, lte;
  explicit Bounds(const Condition& c) {
    if (c.gt) gt = *c.gt;
    if (c.gte) gte = *c.gte;
    if (c.lt) lt = *c.lt;
    if (c.lte) lte = *c.lte;
  }
  template <class T>
  bool Lower(T v) const {
    long double x = static_cast<long double>(v);
    return (!gt || x > *gt) && (!gte || x >= *gte);
  }
  template <class T>
  bool Upper(T v) const {
    long double x = static_cast<long double>(v);
    return (!lt || x < *lt) && (!lte || x <= *lte);
  }
};

class KeywordIndex final : public PayloadFieldIndex {
 public:
  explicit KeywordIndex(std::string key)
      : PayloadFieldIndex(std::move(key), PayloadType::kKeyword) {}

  bool Eval(const Condition& c, size_t rows, RowSet* out) const override {
    using K = Condition::Kind;
    auto all_strings = [&] {
      return std::all_of(c.values.begin(), c.values.end(),
                         [](const FilterValue& v) { return v.type == FilterValue::Type::kString; });
    };
    out->Reset(rows, false);
    switch (c.kind) {
      case K::kMatch:
      case K::kMatchAny:
        if (!all_strings()) return false;
        for (const auto& v : c.values) {
          auto it = postings_.find(v.s);
          if (it != postings_.end())
            for (uint32_t r : it->second) out->Set(r);
        }
        return true;
      case K::kMatchExcept: {
        if (!all_strings()) return false;
        // Not a structured binding: clang 14 (the fuzz build) cannot capture one.
        for (const auto& entry : postings_) {
          const auto& k = entry.first;
          bool excluded = std::any_of(c.values.begin(), c.values.end(),
                                      [&](const FilterValue& v) { return v.s == k; });
          if (!excluded)
            for (uint32_t r : entry.second) out->Set(r);
        }
        return true;
      }
      case K::kLike: {
        const std::string& p = c.pattern;
        size_t wild = p.find_first_of("%_\\");
        if (wild != std::string::npos && wild + 1 == p.size() && p[wild] == '%') {
          std::string prefix = p.substr(0, wild);
          for (auto it = postings_.lower_bound(prefix);
               it != postings_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
            for (uint32_t r : it->second) out->Set(r);
          }
          return true;
        }
        for (const auto& [k, list] : postings_) {
          if (LikeMatch(p, k))
            for (uint32_t r : list) out->Set(r);
        }
        return true;
      }
      case K::kText:
        for (const auto& [k, list] : postings_) {
          if (k.find(c.pattern) != std::string::npos)
            for (uint32_t r : list) out->Set(r);
        }
        return true;
      default:
        return false;
    }
  }

  bool CanAnswer(const Condition& c) const override {
    using K = Condition::Kind;
    switch (c.kind) {
      case K::kMatch:
      case K::kMatchAny:
      case K::kMatchExcept:
        return std::all_of(c.values.begin(), c.values.end(), [](const FilterValue& v) {
          return v.type == FilterValue::Type::kString;
        });
      case K::kLike:
      case K::kText:
        return true;
      default:
        return false;
    }
  }
  size_t MemoryBytes() const override { return bytes_; }

 protected:
  bool AddValue(uint32_t row, const json& v) override {
    if (!v.is_string()) return false;
    const auto& s = v.get_ref<const std::string&>();
    auto it = postings_.find(s);
    if (it == postings_.end()) {
      it = postings_.emplace(s, std::vector<uint32_t>{}).first;
      bytes_ += s.size() + 64;
    }
    if (it->second.empty() || it->second.back() != row) {
      it->second.push_back(row);
      bytes_ += 4;
    }
    return true;
  }

 private:
  std::map<std::string, std::vector<uint32_t>, std::less<>> postings_;
  size_t bytes_ = 0;
};

class IntegerIndex final : public PayloadFieldIndex {
 public:
  explicit IntegerIndex(std::string key)
      : PayloadFieldIndex(std::move(key), PayloadType::kInteger) {}

  bool Eval(const Condition& c, size_t rows, RowSet* out) const override {
    using K = Condition::Kind;
    out->Reset(rows, false);
    auto as_int = [](const FilterValue& v, int64_t* x) {
      if (v.type == FilterValue::Type::kInt) {
        *x = v.i;
        return true;
      }
      if (v.type == FilterValue::Type::kDouble && IsIntegral(v.d)) {
        *x = static_cast<int64_t>(v.d);
        return true;
      }
      return false;
    };
    switch (c.kind) {
      case K::kMatch:
      case K::kMatchAny:
        for (const auto& v : c.values) {
          int64_t x;
          if (!as_int(v, &x)) {
            if (v.type == FilterValue::Type::kDouble) continue;  // no integer equals it
            return false;
          }
          col_.Select([x](int64_t y) { return y >= x; }, [x](int64_t y) { return y <= x; }, out);
        }
        return true;
      case K::kRange: {
        if (c.datetime) return false;
        Bounds b(c);
        col_.Select([&](int64_t y) { return b.Lower(y); }, [&](int64_t y) { return b.Upper(y); },
                    out);
        return true;
      }
      default:
        return false;
    }
  }
  bool CanAnswer(const Condition& c) const override {
    using K = Condition::Kind;
    if (c.kind == K::kRange) return !c.datetime;
    if (c.kind != K::kMatch && c.kind != K::kMatchAny) return false;
    return std::all_of(c.values.begin(), c.values.end(), [](const FilterValue& v) {
      return v.type == FilterValue::Type::kInt || v.type == FilterValue::Type::kDouble;
    });
  }
  size_t MemoryBytes() const override { return col_.MemoryBytes(); }

 protected:
  bool AddValue(uint32_t row, const json& v) override {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) return false;
      col_.Add(v.get<int64_t>(), row);
      return true;
    }
    if (v.is_number_float() && IsIntegral(v.get<double>())) {
      col_.Add(static_cast<int64_t>(v.get<double>()), row);
      return true;
    }
    return false;
  }

 private:
  SortedColumn<int64_t> col_;
};

// Float and timestamp: one double per value.
class DoubleIndex final : public PayloadFieldIndex {
 public:
  DoubleIndex(std::string key, PayloadType t) : PayloadFieldIndex(std::move(key), t) {}

  bool Eval(const Condition& c, size_t rows, RowSet* out) const override {
    using K = Condition::Kind;
    out->Reset(rows, false);
    const bool ts = type() == PayloadType::kTimestamp;
    switch (c.kind) {
      case K::kMatch:
      case K::kMatchAny:
        if (ts) return false;
        for (const auto& v : c.values) {
          double x;
          if (v.type == FilterValue::Type::kInt) {
            x = static_cast<double>(v.i);
          } else if (v.type == FilterValue::Type::kDouble) {
            x = v.d;
          } else {
            return false;
          }
          col_.Select([x](double y) { return y >= x; }, [x](double y) { return y <= x; }, out);
        }
        return true;
      case K::kRange: {
        // A float index answers numeric ranges; a timestamp index both kinds
        // (numbers in it are seconds, like parsed timestamps).
        if (c.datetime && !ts) return false;
        Bounds b(c);
        col_.Select([&](double y) { return b.Lower(y); }, [&](double y) { return b.Upper(y); },
                    out);
        return true;
      }
      default:
        return false;
    }
  }
  bool CanAnswer(const Condition& c) const override {
    using K = Condition::Kind;
    const bool ts = type() == PayloadType::kTimestamp;
    if (c.kind == K::kRange) return ts || !c.datetime;
    if (ts || (c.kind != K::kMatch && c.kind != K::kMatchAny)) return false;
    return std::all_of(c.values.begin(), c.values.end(), [](const FilterValue& v) {
      return v.type == FilterValue::Type::kInt || v.type == FilterValue::Type::kDouble;
    });
  }
  size_t MemoryBytes() const override { return col_.MemoryBytes(); }

 protected:
  bool AddValue(uint32_t row, const json& v) override {
    if (v.is_number()) {
      double d = v.get<double>();
      if (std::isnan(d)) return false;
      col_.Add(d, row);
      return true;
    }
    if (type() == PayloadType::kTimestamp && v.is_string()) {
      auto t = ParseTimestamp(v.get_ref<const std::string&>());
      if (!t) return false;
      col_.Add(*t, row);
      return true;
    }
    return false;
  }

 private:
  SortedColumn<double> col_;
};

class BoolIndex final : public PayloadFieldIndex {
 public:
  explicit BoolIndex(std::string key) : PayloadFieldIndex(std::move(key), PayloadType::kBool) {}

  bool Eval(const Condition& c, size_t rows, RowSet* out) const override {
    using K = Condition::Kind;
    out->Reset(rows, false);
    if (c.kind != K::kMatch && c.kind != K::kMatchAny) return false;
    for (const auto& v : c.values) {
      if (v.type != FilterValue::Type::kBool) return false;
      for (uint32_t r : rows_[v.b ? 1 : 0]) out->Set(r);
    }
    return true;
  }
  bool CanAnswer(const Condition& c) const override {
    using K = Condition::Kind;
    if (c.kind != K::kMatch && c.kind != K::kMatchAny) return false;
    return std::all_of(c.values.begin(), c.values.end(),
                       [](const FilterValue& v) { return v.type == FilterValue::Type::kBool; });
  }
  size_t MemoryBytes() const override { return (rows_[0].capacity() + rows_[1].capacity()) * 4; }

 protected:
  bool AddValue(uint32_t row, const json& v) override {
    if (!v.is_boolean()) return false;
    auto& list = rows_[v.get<bool>() ? 1 : 0];
    if (list.empty() || list.back() != row) list.push_back(row);
    return true;
  }

 private:
  std::vector<uint32_t> rows_[2];
};

const char* JsonTypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a bool";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a float";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "a value";
  }
}

bool TypeOk(const json& v, PayloadType t) {
  switch (t) {
    case PayloadType::kKeyword:
      return v.is_string();
    case PayloadType::kInteger:
      return v.is_number_integer() &&
             !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX));
    case PayloadType::kFloat:
      return v.is_number() && std::isfinite(v.get<double>());
    case PayloadType::kBool:
      return v.is_boolean();
    case PayloadType::kTimestamp:
      return (v.is_number() && std::isfinite(v.get<double>())) ||
             (v.is_string() && ParseTimestamp(v.get_ref<const std::string&>()).has_value());
  }
  return false;
}

}  // namespace

std::unique_ptr<PayloadFieldIndex> PayloadFieldIndex::Create(const std::string& key,
                                                             PayloadType type) {
  switch (type) {
    case PayloadType::kKeyword:
      return std::make_unique<KeywordIndex>(key);
    case PayloadType::kInteger:
      return std::make_unique<IntegerIndex>(key);
    case PayloadType::kFloat:
    case PayloadType::kTimestamp:
      return std::make_unique<DoubleIndex>(key, type);
    case PayloadType::kBool:
      return std::make_unique<BoolIndex>(key);
  }
  return nullptr;
}

Status CheckTypedField(const json& payload, const PayloadFieldSchema& f) {
  std::vector<const json*> leaves;
  LookupPath(payload, f.name, &leaves);
  const std::string_view tname = PayloadTypeName(f.type);
  for (const json* leaf : leaves) {
    if (leaf->is_null()) continue;
    if (leaf->is_array()) {
      if (!f.is_list) {
        return Status::InvalidArgument(fmt::format(
            "payload field \"{}\" is declared {} (one value), got an array", f.name, tname));
      }
      for (const auto& e : *leaf) {
        if (!e.is_null() && !TypeOk(e, f.type)) {
          return Status::InvalidArgument(
              fmt::format("payload field \"{}\" is declared {}[], got an element that is {}",
                          f.name, tname, JsonTypeName(e)));
        }
      }
      continue;
    }
    if (!TypeOk(*leaf, f.type)) {
      return Status::InvalidArgument(fmt::format(
          "payload field \"{}\" is declared {}{}, got {}{}", f.name, tname, f.is_list ? "[]" : "",
          JsonTypeName(*leaf),
          f.type == PayloadType::kTimestamp ? " (use RFC 3339 or seconds since the epoch)" : ""));
    }
  }
  return Status::Ok();
}

}  // namespace strata::vector::internal
