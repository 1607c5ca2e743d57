#include "vector/filter_eval.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace strata::vector::internal {

using json = nlohmann::json;
using K = Condition::Kind;

bool LikeMatch(std::string_view p, std::string_view s) {
  // Iterative wildcard matching with one backtrack point (the last %).
  size_t pi = 0, si = 0, star_p = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '%') {
      star_p = ++pi;
      star_s = si;
      continue;
    }
    if (pi < p.size()) {
      char pc = p[pi];
      bool escaped = false;
      if (pc == '\\' && pi + 1 < p.size()) {
        pc = p[pi + 1];
        escaped = true;
      }
      if ((!escaped && pc == '_') || pc == s[si]) {
        pi += escaped ? 2 : 1;
        ++si;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p;
    si = ++star_s;
  }
  while (pi < p.size() && p[pi] == '%') ++pi;
  return pi == p.size();
}

namespace {

bool ScalarEquals(const json& v, const FilterValue& x) {
  switch (x.type) {
    case FilterValue::Type::kString:
      return v.is_string() && v.get_ref<const std::string&>() == x.s;
    case FilterValue::Type::kBool:
      return v.is_boolean() && v.get<bool>() == x.b;
    case FilterValue::Type::kInt:
      if (v.is_number_unsigned()) return x.i >= 0 && v.get<uint64_t>() == uint64_t(x.i);
      if (v.is_number_integer()) return v.get<int64_t>() == x.i;
      if (v.is_number_float()) return v.get<double>() == double(x.i);
      return false;
    case FilterValue::Type::kDouble:
      return v.is_number() && v.get<double>() == x.d;
  }
  return false;
}

bool InBounds(double x, const Condition& c) {
  return (!c.gt || x > *c.gt) && (!c.gte || x >= *c.gte) && (!c.lt || x < *c.lt) &&
         (!c.lte || x <= *c.lte);
}

// One (already flattened) value against a value-testing leaf.
bool ValueMatches(const Condition& c, const json& v) {
  switch (c.kind) {
    case K::kMatch:
    case K::kMatchAny:
      for (const auto& x : c.values) {
        if (ScalarEquals(v, x)) return true;
      }
      return false;
    case K::kMatchExcept:
      if (v.is_null()) return false;
      for (const auto& x : c.values) {
        if (ScalarEquals(v, x)) return false;
      }
      return true;
    case K::kRange:
      if (v.is_number()) return InBounds(v.get<double>(), c);
      if (c.datetime && v.is_string()) {
        auto t = ParseTimestamp(v.get_ref<const std::string&>());
        return t && InBounds(*t, c);
      }
      return false;
    case K::kLike:
      return v.is_string() && LikeMatch(c.pattern, v.get_ref<const std::string&>());
    case K::kText:
      return v.is_string() && v.get_ref<const std::string&>().find(c.pattern) != std::string::npos;
    default:
      return false;
  }
}

bool IsValueLeaf(K k) {
  return k == K::kMatch || k == K::kMatchAny || k == K::kMatchExcept || k == K::kRange ||
         k == K::kLike || k == K::kText;
}

}  // namespace

bool RowMatches(const Condition& c, const json& payload, const PointId& id) {
  switch (c.kind) {
    case K::kTrue:
      return true;
    case K::kAnd:
      for (const auto& ch : c.children) {
        if (!RowMatches(ch, payload, id)) return false;
      }
      return true;
    case K::kOr:
      for (const auto& ch : c.children) {
        if (RowMatches(ch, payload, id)) return true;
      }
      return false;
    case K::kNot:
      return c.children.empty() || !RowMatches(c.children[0], payload, id);
    case K::kMinShould: {
      uint32_t n = 0;
      for (const auto& ch : c.children) {
        n += RowMatches(ch, payload, id);
        if (n >= c.min_count) return true;
      }
      return n >= c.min_count;
    }
    case K::kHasId:
      return std::find(c.ids.begin(), c.ids.end(), id) != c.ids.end();
    default:
      break;
  }
  std::vector<const json*> leaves;
  LookupPath(payload, c.key, &leaves);
  if (IsValueLeaf(c.kind)) {
    for (const json* leaf : leaves) {
      if (leaf->is_array()) {
        for (const auto& e : *leaf) {
          if (ValueMatches(c, e)) return true;
        }
      } else if (ValueMatches(c, *leaf)) {
        return true;
      }
    }
    return false;
  }
  switch (c.kind) {
    case K::kIsNull:
      for (const json* leaf : leaves) {
        if (leaf->is_null()) return true;
        if (leaf->is_array() &&
            std::any_of(leaf->begin(), leaf->end(), [](const json& e) { return e.is_null(); })) {
          return true;
        }
      }
      return false;
    case K::kIsEmpty:
      for (const json* leaf : leaves) {
        if (leaf->is_null()) continue;
        if (leaf->is_array() && leaf->empty()) continue;
        return false;
      }
      return true;
    case K::kValuesCount: {
      size_t n = 0;
      for (const json* leaf : leaves) {
        if (leaf->is_array()) {
          n += leaf->size();
        } else if (!leaf->is_null()) {
          ++n;
        }
      }
      return InBounds(double(n), c);
    }
    case K::kNested: {
      if (c.children.empty()) return false;
      for (const json* leaf : leaves) {
        if (leaf->is_array()) {
          for (const auto& e : *leaf) {
            if (RowMatches(c.children[0], e, id)) return true;
          }
        } else if (leaf->is_object() && RowMatches(c.children[0], *leaf, id)) {
          return true;
        }
      }
      return false;
    }
    default:
      return false;
  }
}

bool IsTrivial(const Condition& c) {
  if (c.kind == K::kTrue) return true;
  if (c.kind == K::kAnd) {
    return std::all_of(c.children.begin(), c.children.end(),
                       [](const Condition& ch) { return IsTrivial(ch); });
  }
  return false;
}

namespace {

class Evaluator {
 public:
  explicit Evaluator(const SegmentView& seg) : seg_(seg) {}

  RowSet Eval(const Condition& c, const RowSet& domain) {
    if (domain.Empty()) return RowSet(seg_.rows);
    switch (c.kind) {
      case K::kTrue:
        return domain;
      case K::kHasId: {
        RowSet out(seg_.rows);
        for (const auto& id : c.ids) {
          uint32_t r;
          if (seg_.find_row && seg_.find_row(id, &r) && domain.Test(r)) out.Set(r);
        }
        return out;
      }
      case K::kAnd:
        return EvalAnd(c, domain);
      case K::kOr:
        return EvalOr(c, domain);
      case K::kNot: {
        RowSet out = domain;
        if (!c.children.empty()) out.AndNot(Eval(c.children[0], domain));
        return out;
      }
      case K::kMinShould: {
        std::vector<uint32_t> counts(seg_.rows, 0);
        for (const auto& ch : c.children)
          Eval(ch, domain).ForEach([&](uint32_t r) { ++counts[r]; });
        RowSet out(seg_.rows);
        domain.ForEach([&](uint32_t r) {
          if (counts[r] >= c.min_count) out.Set(r);
        });
        return out;
      }
      default:
        break;
    }
    RowSet out;
    if (FromIndex(c, &out)) {
      out.And(domain);
      return out;
    }
    const Condition* one[] = {&c};
    return Scan(one, 1, domain, /*all=*/true);
  }

  // Whether `c` can be answered without touching payloads.
  bool IndexOnly(const Condition& c) const {
    switch (c.kind) {
      case K::kTrue:
      case K::kHasId:
        return true;
      case K::kAnd:
      case K::kOr:
      case K::kNot:
      case K::kMinShould:
        return std::all_of(c.children.begin(), c.children.end(),
                           [&](const Condition& ch) { return IndexOnly(ch); });
      default: {
        const PayloadFieldIndex* idx = IndexFor(c.key);
        return idx != nullptr && idx->CanAnswer(c);
      }
    }
  }

 private:
  const PayloadFieldIndex* IndexFor(const std::string& key) const {
    if (seg_.indexes == nullptr) return nullptr;
    auto it = seg_.indexes->find(key);
    return it == seg_.indexes->end() ? nullptr : it->second.get();
  }

  bool FromIndex(const Condition& c, RowSet* out) const {
    const PayloadFieldIndex* idx = IndexFor(c.key);
    return idx != nullptr && idx->CanAnswer(c) && idx->Eval(c, seg_.rows, out);
  }

  static bool IsCompound(const Condition& c) {
    return c.kind == K::kAnd || c.kind == K::kOr || c.kind == K::kNot || c.kind == K::kMinShould;
  }

  RowSet EvalAnd(const Condition& c, const RowSet& domain) {
    RowSet cur = domain;
    std::vector<const Condition*> compound, leaves;
    for (const auto& ch : c.children) {
      if (IndexOnly(ch)) {
        cur = Eval(ch, cur);
        if (cur.Empty()) return cur;
      } else if (IsCompound(ch)) {
        compound.push_back(&ch);
      } else {
        leaves.push_back(&ch);
      }
    }
    for (const Condition* ch : compound) {
      cur = Eval(*ch, cur);
      if (cur.Empty()) return cur;
    }
    if (!leaves.empty()) cur = Scan(leaves.data(), leaves.size(), cur, /*all=*/true);
    return cur;
  }

  RowSet EvalOr(const Condition& c, const RowSet& domain) {
    RowSet acc(seg_.rows);
    RowSet remaining = domain;
    std::vector<const Condition*> compound, leaves;
    for (const auto& ch : c.children) {
      if (IndexOnly(ch)) {
        acc.Or(Eval(ch, domain));
      } else if (IsCompound(ch)) {
        compound.push_back(&ch);
      } else {
        leaves.push_back(&ch);
      }
    }
    remaining.AndNot(acc);
    for (const Condition* ch : compound) {
      if (remaining.Empty()) break;
      RowSet r = Eval(*ch, remaining);
      acc.Or(r);
      remaining.AndNot(r);
    }
    if (!leaves.empty() && !remaining.Empty())
      acc.Or(Scan(leaves.data(), leaves.size(), remaining, /*all=*/false));
    return acc;
  }

  // Rows of domain where all (or any) of the conditions hold, parsing each
  // row's payload once.
  RowSet Scan(const Condition* const* conds, size_t n, const RowSet& domain, bool all) {
    RowSet out(seg_.rows);
    bool needs_payload = false;
    for (size_t i = 0; i < n; ++i) needs_payload |= conds[i]->kind != K::kHasId;
    json doc;
    static const json kEmpty = json::object();
    domain.ForEach([&](uint32_t r) {
      const json* p = &kEmpty;
      if (needs_payload) {
        std::string_view text = seg_.payload(r);
        if (!text.empty()) {
          doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
          if (!doc.is_discarded()) p = &doc;
        }
      }
      const PointId& id = (*seg_.ids)[r];
      bool keep = all;
      for (size_t i = 0; i < n; ++i) {
        bool m = RowMatches(*conds[i], *p, id);
        if (all && !m) {
          keep = false;
          break;
        }
        if (!all && m) {
          keep = true;
          break;
        }
      }
      if (keep) out.Set(r);
    });
    return out;
  }

  const SegmentView& seg_;
};

}  // namespace

RowSet Evaluate(const Condition& c, const SegmentView& seg, const RowSet& domain) {
  Evaluator e(seg);
  return e.Eval(c, domain);
}

}  // namespace strata::vector::internal
