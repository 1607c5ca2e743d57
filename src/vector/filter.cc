// Point ids, the filter AST, and its parsers: Qdrant's JSON filter and the
// Milvus-style expression language (a hand-written recursive descent parser).
#include <fmt/format.h>
#include <strata/core/strings.h>
#include <strata/vector/filter.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

namespace strata::vector {

using json = nlohmann::json;

namespace {
// json::dump throws type_error 316 on a string that is not valid UTF-8; filter
// strings can hold any bytes (a Milvus expression literal, a payload value),
// and printing one must not throw across the API: bad bytes become U+FFFD.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
}  // namespace

// ---------------------------------------------------------------------------
// PointId

namespace {
int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

Result<PointId> PointId::ParseUuid(std::string_view s) {
  if (s.size() >= 2 && s.front() == '{' && s.back() == '}') s = s.substr(1, s.size() - 2);
  uint64_t parts[2] = {0, 0};
  int nibbles = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '-') {
      // Hyphens only at the canonical positions 8-4-4-4-12.
      if (s.size() != 36 || (i != 8 && i != 13 && i != 18 && i != 23)) {
        return Status::InvalidArgument(fmt::format("\"{}\" is not a UUID", s));
      }
      continue;
    }
    int v = HexVal(c);
    if (v < 0 || nibbles >= 32)
      return Status::InvalidArgument(fmt::format("\"{}\" is not a UUID", s));
    uint64_t& p = parts[nibbles / 16];
    p = (p << 4) | uint64_t(v);
    ++nibbles;
  }
  if (nibbles != 32 || (s.size() != 32 && s.size() != 36)) {
    return Status::InvalidArgument(fmt::format("\"{}\" is not a UUID", s));
  }
  return PointId{true, parts[0], parts[1]};
}

Result<PointId> PointId::Parse(std::string_view s) {
  if (!s.empty() && s.size() <= 20 &&
      std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size()) return PointId::Number(v);
  }
  auto u = ParseUuid(s);
  if (!u) {
    return Status::InvalidArgument(
        fmt::format("point id \"{}\" is neither an unsigned integer nor a UUID", s));
  }
  return u;
}

std::string PointId::ToString() const {
  if (!is_uuid) return std::to_string(hi);
  std::string h = fmt::format("{:016x}{:016x}", hi, lo);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

// ---------------------------------------------------------------------------
// Conditions

Condition Condition::And(std::vector<Condition> c) {
  Condition x;
  x.kind = Kind::kAnd;
  x.children = std::move(c);
  return x;
}
Condition Condition::Or(std::vector<Condition> c) {
  Condition x;
  x.kind = Kind::kOr;
  x.children = std::move(c);
  return x;
}
Condition Condition::Not(Condition c) {
  Condition x;
  x.kind = Kind::kNot;
  x.children.push_back(std::move(c));
  return x;
}
Condition Condition::Match(std::string key, FilterValue v) {
  Condition x;
  x.kind = Kind::kMatch;
  x.key = std::move(key);
  x.values.push_back(std::move(v));
  return x;
}
Condition Condition::MatchAny(std::string key, std::vector<FilterValue> v) {
  Condition x;
  x.kind = Kind::kMatchAny;
  x.key = std::move(key);
  x.values = std::move(v);
  return x;
}
Condition Condition::MatchExcept(std::string key, std::vector<FilterValue> v) {
  Condition x;
  x.kind = Kind::kMatchExcept;
  x.key = std::move(key);
  x.values = std::move(v);
  return x;
}
Condition Condition::Range(std::string key, std::optional<double> gt, std::optional<double> gte,
                           std::optional<double> lt, std::optional<double> lte) {
  Condition x;
  x.kind = Kind::kRange;
  x.key = std::move(key);
  x.gt = gt;
  x.gte = gte;
  x.lt = lt;
  x.lte = lte;
  return x;
}
Condition Condition::IsNull(std::string key) {
  Condition x;
  x.kind = Kind::kIsNull;
  x.key = std::move(key);
  return x;
}
Condition Condition::IsEmpty(std::string key) {
  Condition x;
  x.kind = Kind::kIsEmpty;
  x.key = std::move(key);
  return x;
}
Condition Condition::HasId(std::vector<PointId> ids) {
  Condition x;
  x.kind = Kind::kHasId;
  x.ids = std::move(ids);
  return x;
}

namespace {

std::string ValueToString(const FilterValue& v) {
  switch (v.type) {
    case FilterValue::Type::kBool:
      return v.b ? "true" : "false";
    case FilterValue::Type::kInt:
      return std::to_string(v.i);
    case FilterValue::Type::kDouble:
      return fmt::format("{}", v.d);
    case FilterValue::Type::kString:
      return Dump(json(v.s));
  }
  return "?";
}

std::string ValuesToString(const std::vector<FilterValue>& vs) {
  std::string s = "[";
  for (size_t i = 0; i < vs.size(); ++i) {
    if (i) s += ",";
    s += ValueToString(vs[i]);
  }
  return s + "]";
}

std::string BoundsToString(const Condition& c) {
  std::string s;
  auto add = [&](const char* n, const std::optional<double>& v) {
    if (!v) return;
    if (!s.empty()) s += ",";
    s += fmt::format("{}:{}", n, *v);
  };
  add("gt", c.gt);
  add("gte", c.gte);
  add("lt", c.lt);
  add("lte", c.lte);
  return s;
}

}  // namespace

std::string Condition::ToString() const {
  auto list = [&](const char* op) {
    std::string s = std::string(op) + "(";
    for (size_t i = 0; i < children.size(); ++i) {
      if (i) s += ",";
      s += children[i].ToString();
    }
    return s + ")";
  };
  switch (kind) {
    case Kind::kTrue:
      return "true";
    case Kind::kAnd:
      return list("and");
    case Kind::kOr:
      return list("or");
    case Kind::kNot:
      return list("not");
    case Kind::kMinShould:
      return fmt::format("min{}", min_count) + list("");
    case Kind::kMatch:
      return fmt::format("{}=={}", key, ValueToString(values.at(0)));
    case Kind::kMatchAny:
      return fmt::format("{} in {}", key, ValuesToString(values));
    case Kind::kMatchExcept:
      return fmt::format("{} except {}", key, ValuesToString(values));
    case Kind::kRange:
      return fmt::format("{} range{}{{{}}}", key, datetime ? "(datetime)" : "",
                         BoundsToString(*this));
    case Kind::kLike:
      return fmt::format("{} like {}", key, Dump(json(pattern)));
    case Kind::kText:
      return fmt::format("{} text {}", key, Dump(json(pattern)));
    case Kind::kIsNull:
      return fmt::format("{} is null", key);
    case Kind::kIsEmpty:
      return fmt::format("{} is empty", key);
    case Kind::kValuesCount:
      return fmt::format("{} count{{{}}}", key, BoundsToString(*this));
    case Kind::kNested:
      return fmt::format("nested({},{})", key, children.at(0).ToString());
    case Kind::kHasId: {
      std::string s = "has_id[";
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i) s += ",";
        s += ids[i].ToString();
      }
      return s + "]";
    }
  }
  return "?";
}

// ---------------------------------------------------------------------------
// Timestamps

namespace {
}  // namespace

std::optional<double> ParseTimestamp(std::string_view s) {
  size_t i = 0;
  auto digits = [&](int n, unsigned* out) {
    unsigned v = 0;
    for (int k = 0; k < n; ++k) {
      if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
      v = v * 10 + unsigned(s[i++] - '0');
    }
    *out = v;
    return true;
  };
  auto lit = [&](char c) {
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  };
  unsigned y, mo, d, h = 0, mi = 0, sec = 0;
  if (!digits(4, &y) || !lit('-') || !digits(2, &mo) || !lit('-') || !digits(2, &d))
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return std::nullopt;
  double frac = 0;
  int64_t offset = 0;
  if (i < s.size()) {
    if (!(lit('T') || lit('t') || lit(' '))) return std::nullopt;
    if (!digits(2, &h) || !lit(':') || !digits(2, &mi)) return std::nullopt;
    if (lit(':')) {
      if (!digits(2, &sec)) return std::nullopt;
      if (lit('.') || lit(',')) {
        double scale = 0.1;
        size_t start = i;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
          frac += (s[i] - '0') * scale;
          scale /= 10;
          ++i;
        }
        if (i == start) return std::nullopt;
      }
    }
    if (h > 23 || mi > 59 || sec > 60) return std::nullopt;
    if (lit('Z') || lit('z')) {
    } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      bool neg = s[i++] == '-';
      unsigned oh, om = 0;
      if (!digits(2, &oh)) return std::nullopt;
      if (lit(':')) {
        if (!digits(2, &om)) return std::nullopt;
      } else if (i < s.size()) {
        if (!digits(2, &om)) return std::nullopt;
      }
      offset = (neg ? -1 : 1) * int64_t(oh * 3600 + om * 60);
    }
    if (i != s.size()) return std::nullopt;
  }
  int64_t secs =
      DaysFromCivil(y, mo, d) * 86400 + int64_t(h) * 3600 + int64_t(mi) * 60 + sec - offset;
  return double(secs) + frac;
}

// ---------------------------------------------------------------------------
// Qdrant JSON filters

namespace {

Status Bad(std::string msg) { return Status::InvalidArgument("filter: " + std::move(msg)); }

Result<FilterValue> ScalarFromJson(const json& v, std::string_view where) {
  if (v.is_boolean()) return FilterValue::Bool(v.get<bool>());
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) {
      return Bad(fmt::format("{}: integer {} is out of range", where, Dump(v)));
    }
    return FilterValue::Int(v.get<int64_t>());
  }
  if (v.is_number_float()) return FilterValue::Double(v.get<double>());
  if (v.is_string()) return FilterValue::String(v.get<std::string>());
  return Bad(fmt::format("{}: expected a string, integer or bool, got {}", where, Dump(v)));
}

Result<std::vector<FilterValue>> ScalarList(const json& v, std::string_view where) {
  if (!v.is_array()) return Bad(fmt::format("{}: expected an array, got {}", where, Dump(v)));
  std::vector<FilterValue> out;
  for (const auto& e : v) {
    STRATA_ASSIGN_OR_RETURN(FilterValue x, ScalarFromJson(e, where));
    out.push_back(std::move(x));
  }
  return out;
}

Result<PointId> IdFromJson(const json& v) {
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
    return PointId::Number(v.get<uint64_t>());
  }
  if (v.is_string()) return PointId::Parse(v.get<std::string>());
  return Bad(fmt::format("has_id: {} is not an unsigned integer or a UUID", Dump(v)));
}

// A bound given as a number or, for datetime ranges, an RFC 3339 string.
Status RangeBounds(const json& r, Condition* c, std::string_view what) {
  if (!r.is_object()) return Bad(fmt::format("{} must be an object, got {}", what, Dump(r)));
  for (auto it = r.begin(); it != r.end(); ++it) {
    const std::string& k = it.key();
    std::optional<double>* slot = k == "gt"    ? &c->gt
                                  : k == "gte" ? &c->gte
                                  : k == "lt"  ? &c->lt
                                  : k == "lte" ? &c->lte
                                               : nullptr;
    if (slot == nullptr)
      return Bad(fmt::format("{}: unknown bound \"{}\" (use gt, gte, lt, lte)", what, k));
    const json& v = it.value();
    if (v.is_null()) continue;
    if (v.is_number()) {
      *slot = v.get<double>();
    } else if (v.is_string()) {
      auto t = ParseTimestamp(v.get<std::string>());
      if (!t)
        return Bad(fmt::format("{}.{}: \"{}\" is not a number or an RFC 3339 timestamp", what, k,
                               v.get<std::string>()));
      *slot = *t;
      c->datetime = true;
    } else {
      return Bad(fmt::format("{}.{}: expected a number, got {}", what, k, Dump(v)));
    }
  }
  return Status::Ok();
}

Result<Condition> FilterFromJson(const json& j, int depth);

Result<Condition> ConditionFromJson(const json& j, int depth) {
  if (depth > 64) return Bad("nested too deeply (more than 64 levels)");
  if (!j.is_object()) return Bad(fmt::format("a condition must be an object, got {}", Dump(j)));
  if (j.contains("must") || j.contains("should") || j.contains("must_not") ||
      j.contains("min_should")) {
    return FilterFromJson(j, depth + 1);
  }
  if (j.contains("has_id")) {
    const json& ids = j["has_id"];
    if (!ids.is_array()) return Bad("has_id must be an array of point ids");
    std::vector<PointId> out;
    for (const auto& e : ids) {
      STRATA_ASSIGN_OR_RETURN(PointId id, IdFromJson(e));
      out.push_back(id);
    }
    return Condition::HasId(std::move(out));
  }
  auto key_of = [&](const json& o, std::string_view what) -> Result<std::string> {
    if (!o.is_object() || !o.contains("key") || !o["key"].is_string() ||
        o["key"].get<std::string>().empty()) {
      return Bad(fmt::format("{} needs a \"key\" string", what));
    }
    return o["key"].get<std::string>();
  };
  if (j.contains("is_empty") && !j.contains("key")) {
    STRATA_ASSIGN_OR_RETURN(std::string key, key_of(j["is_empty"], "is_empty"));
    return Condition::IsEmpty(std::move(key));
  }
  if (j.contains("is_null") && !j.contains("key")) {
    STRATA_ASSIGN_OR_RETURN(std::string key, key_of(j["is_null"], "is_null"));
    return Condition::IsNull(std::move(key));
  }
  if (j.contains("nested")) {
    const json& n = j["nested"];
    STRATA_ASSIGN_OR_RETURN(std::string key, key_of(n, "nested"));
    if (!n.contains("filter")) return Bad("nested needs a \"filter\"");
    STRATA_ASSIGN_OR_RETURN(Condition inner, FilterFromJson(n["filter"], depth + 1));
    Condition c;
    c.kind = Condition::Kind::kNested;
    c.key = std::move(key);
    c.children.push_back(std::move(inner));
    return c;
  }
  if (j.contains("has_vector")) return Bad("has_vector conditions are not supported");
  if (!j.contains("key")) {
    return Bad(
        fmt::format("unknown condition {} (expected key/match/range, has_id, is_empty, is_null, "
                    "nested, or must/should/must_not)",
                    Dump(j).substr(0, 200)));
  }
  STRATA_ASSIGN_OR_RETURN(std::string key, key_of(j, "a field condition"));
  std::vector<Condition> parts;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (k == "key" || v.is_null()) continue;
    if (k == "match") {
      if (!v.is_object()) return Bad(fmt::format("match on \"{}\" must be an object", key));
      if (v.contains("value")) {
        STRATA_ASSIGN_OR_RETURN(FilterValue x, ScalarFromJson(v["value"], "match.value"));
        parts.push_back(Condition::Match(key, std::move(x)));
      } else if (v.contains("any")) {
        STRATA_ASSIGN_OR_RETURN(auto xs, ScalarList(v["any"], "match.any"));
        parts.push_back(Condition::MatchAny(key, std::move(xs)));
      } else if (v.contains("except")) {
        STRATA_ASSIGN_OR_RETURN(auto xs, ScalarList(v["except"], "match.except"));
        parts.push_back(Condition::MatchExcept(key, std::move(xs)));
      } else if (v.contains("text") || v.contains("phrase")) {
        const json& t = v.contains("text") ? v["text"] : v["phrase"];
        if (!t.is_string()) return Bad("match.text must be a string");
        Condition c;
        c.kind = Condition::Kind::kText;
        c.key = key;
        c.pattern = t.get<std::string>();
        parts.push_back(std::move(c));
      } else if (v.contains("text_any")) {
        if (!v["text_any"].is_string()) return Bad("match.text_any must be a string");
        std::vector<Condition> any;
        std::string s = v["text_any"].get<std::string>();
        size_t p = 0;
        while (p < s.size()) {
          while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
          size_t e = p;
          while (e < s.size() && !std::isspace(static_cast<unsigned char>(s[e]))) ++e;
          if (e > p) {
            Condition c;
            c.kind = Condition::Kind::kText;
            c.key = key;
            c.pattern = s.substr(p, e - p);
            any.push_back(std::move(c));
          }
          p = e;
        }
        parts.push_back(Condition::Or(std::move(any)));
      } else {
        return Bad(fmt::format("match on \"{}\" needs value, any, except or text", key));
      }
    } else if (k == "range") {
      Condition c = Condition::Range(key, {}, {}, {}, {});
      STRATA_RETURN_IF_ERROR(RangeBounds(v, &c, "range"));
      parts.push_back(std::move(c));
    } else if (k == "values_count") {
      Condition c;
      c.kind = Condition::Kind::kValuesCount;
      c.key = key;
      STRATA_RETURN_IF_ERROR(RangeBounds(v, &c, "values_count"));
      parts.push_back(std::move(c));
    } else if (k == "is_empty" || k == "is_null") {
      if (!v.is_boolean()) return Bad(fmt::format("{} must be a bool", k));
      Condition c = k == "is_empty" ? Condition::IsEmpty(key) : Condition::IsNull(key);
      parts.push_back(v.get<bool>() ? std::move(c) : Condition::Not(std::move(c)));
    } else if (k == "geo_radius" || k == "geo_bounding_box" || k == "geo_polygon") {
      return Bad(fmt::format("{} conditions are not supported", k));
    } else {
      return Bad(fmt::format("unknown field condition \"{}\" on key \"{}\"", k, key));
    }
  }
  if (parts.empty())
    return Bad(fmt::format("the condition on \"{}\" has no match, range or other test", key));
  if (parts.size() == 1) return std::move(parts[0]);
  return Condition::And(std::move(parts));
}

Result<std::vector<Condition>> ConditionList(const json& v, int depth, std::string_view what) {
  std::vector<Condition> out;
  if (v.is_null()) return out;
  if (v.is_array()) {
    for (const auto& e : v) {
      STRATA_ASSIGN_OR_RETURN(Condition c, ConditionFromJson(e, depth + 1));
      out.push_back(std::move(c));
    }
  } else if (v.is_object()) {
    STRATA_ASSIGN_OR_RETURN(Condition c, ConditionFromJson(v, depth + 1));
    out.push_back(std::move(c));
  } else {
    return Bad(fmt::format("{} must be a condition or an array of conditions", what));
  }
  return out;
}

Result<Condition> FilterFromJson(const json& j, int depth) {
  if (depth > 64) return Bad("nested too deeply (more than 64 levels)");
  if (j.is_null()) return Condition::True();
  if (!j.is_object())
    return Bad(fmt::format("a filter must be an object, got {}", Dump(j).substr(0, 200)));
  std::vector<Condition> all;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "must") {
      STRATA_ASSIGN_OR_RETURN(auto cs, ConditionList(it.value(), depth, "must"));
      for (auto& c : cs) all.push_back(std::move(c));
    } else if (k == "should") {
      STRATA_ASSIGN_OR_RETURN(auto cs, ConditionList(it.value(), depth, "should"));
      if (!cs.empty()) all.push_back(Condition::Or(std::move(cs)));
    } else if (k == "must_not") {
      STRATA_ASSIGN_OR_RETURN(auto cs, ConditionList(it.value(), depth, "must_not"));
      for (auto& c : cs) all.push_back(Condition::Not(std::move(c)));
    } else if (k == "min_should") {
      const json& m = it.value();
      if (m.is_null()) continue;
      if (!m.is_object() || !m.contains("conditions") || !m.contains("min_count") ||
          !m["min_count"].is_number_unsigned()) {
        return Bad("min_should needs \"conditions\" and an unsigned \"min_count\"");
      }
      STRATA_ASSIGN_OR_RETURN(auto cs,
                              ConditionList(m["conditions"], depth, "min_should.conditions"));
      Condition c;
      c.kind = Condition::Kind::kMinShould;
      c.min_count = m["min_count"].get<uint32_t>();
      c.children = std::move(cs);
      all.push_back(std::move(c));
    } else {
      return Bad(
          fmt::format("unknown filter clause \"{}\" (use must, should, must_not, min_should)", k));
    }
  }
  if (all.empty()) return Condition::True();
  if (all.size() == 1) return std::move(all[0]);
  return Condition::And(std::move(all));
}

}  // namespace

Result<Filter> ParseQdrantFilter(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("not valid JSON");
  return FilterFromJson(j, 0);
}

// ---------------------------------------------------------------------------
// Milvus-style expressions

namespace {

struct Token {
  enum Type {
    kEnd,
    kIdent,
    kString,
    kInt,
    kFloat,
    kOp,
    kLParen,
    kRParen,
    kLBracket,
    kRBracket,
    kComma,
    kDot
  };
  Type type = kEnd;
  std::string text;  // identifier / operator / string contents
  int64_t i = 0;
  double d = 0;
  size_t pos = 0;
};

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Status Run(std::vector<Token>* out) {
    while (true) {
      while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
      Token t;
      t.pos = i_;
      if (i_ >= s_.size()) {
        out->push_back(t);
        return Status::Ok();
      }
      char c = s_[i_];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$') {
        size_t b = i_++;
        while (i_ < s_.size() &&
               (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
          ++i_;
        t.type = Token::kIdent;
        t.text = std::string(s_.substr(b, i_ - b));
      } else if (StartsNumber(i_)) {
        STRATA_RETURN_IF_ERROR(Number(&t));
      } else if (c == '-' && StartsNumber(i_ + 1)) {
        // No arithmetic in filters, so a minus before a number is its sign.
        ++i_;
        STRATA_RETURN_IF_ERROR(Number(&t));
        t.i = -t.i;
        t.d = -t.d;
        t.text = "-" + t.text;
      } else if (c == '"' || c == '\'') {
        STRATA_RETURN_IF_ERROR(String(&t));
      } else {
        ++i_;
        switch (c) {
          case '(':
            t.type = Token::kLParen;
            break;
          case ')':
            t.type = Token::kRParen;
            break;
          case '[':
            t.type = Token::kLBracket;
            break;
          case ']':
            t.type = Token::kRBracket;
            break;
          case ',':
            t.type = Token::kComma;
            break;
          case '.':
            t.type = Token::kDot;
            break;
          case '=':
          case '!':
          case '<':
          case '>':
            t.type = Token::kOp;
            t.text = std::string(1, c);
            if (i_ < s_.size() && s_[i_] == '=') t.text += s_[i_++];
            if (t.text == "=") t.text = "==";
            break;
          case '&':
          case '|':
            if (i_ < s_.size() && s_[i_] == c) {
              ++i_;
              t.type = Token::kOp;
              t.text = std::string(2, c);
              break;
            }
            [[fallthrough]];
          default:
            return Status::InvalidArgument(
                fmt::format("filter expression: unexpected '{}' at offset {}", c, t.pos));
        }
      }
      out->push_back(std::move(t));
    }
  }

 private:
  bool StartsNumber(size_t i) const {
    if (i >= s_.size()) return false;
    if (std::isdigit(static_cast<unsigned char>(s_[i]))) return true;
    return s_[i] == '.' && i + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i + 1]));
  }

  Status Number(Token* t) {
    size_t b = i_;
    bool is_float = false;
    if (s_[i_] == '0' && i_ + 1 < s_.size() && (s_[i_ + 1] == 'x' || s_[i_ + 1] == 'X')) {
      i_ += 2;
      size_t hb = i_;
      while (i_ < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(s_.data() + hb, s_.data() + i_, v, 16);
      if (ec != std::errc() || i_ == hb || v > uint64_t(INT64_MAX)) {
        return Status::InvalidArgument(
            fmt::format("filter expression: bad hex number at offset {}", b));
      }
      t->type = Token::kInt;
      t->i = int64_t(v);
      return Status::Ok();
    }
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (i_ < s_.size() && s_[i_] == '.') {
      is_float = true;
      ++i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      is_float = true;
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    std::string text(s_.substr(b, i_ - b));
    if (is_float) {
      char* end = nullptr;
      t->d = std::strtod(text.c_str(), &end);
      if (end != text.c_str() + text.size()) {
        return Status::InvalidArgument(
            fmt::format("filter expression: bad number \"{}\" at offset {}", text, b));
      }
      t->type = Token::kFloat;
    } else {
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), t->i);
      if (ec != std::errc()) {
        return Status::InvalidArgument(
            fmt::format("filter expression: integer \"{}\" is out of range", text));
      }
      t->type = Token::kInt;
    }
    t->text = text;
    return Status::Ok();
  }

  Status String(Token* t) {
    char q = s_[i_++];
    size_t b = i_ - 1;
    std::string out;
    while (true) {
      if (i_ >= s_.size()) {
        return Status::InvalidArgument(
            fmt::format("filter expression: unterminated string starting at offset {}", b));
      }
      char c = s_[i_++];
      if (c == q) break;
      if (c == '\\') {
        if (i_ >= s_.size()) continue;
        char e = s_[i_++];
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          default:
            out += e;
        }
      } else {
        out += c;
      }
    }
    t->type = Token::kString;
    t->text = std::move(out);
    return Status::Ok();
  }

  std::string_view s_;
  size_t i_ = 0;
};

bool IEq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

// An operand: a payload key, the point id, or a literal (possibly a list).
struct Operand {
  enum Kind { kKey, kId, kLiteral, kList } kind = kLiteral;
  std::string key;
  FilterValue value;
  std::vector<FilterValue> list;
};

class ExprParser {
 public:
  ExprParser(std::string_view src, std::vector<Token> toks) : src_(src), t_(std::move(toks)) {}

  Result<Condition> Parse() {
    if (Peek().type == Token::kEnd) return Err("the expression is empty");
    STRATA_ASSIGN_OR_RETURN(Condition c, Or());
    if (Peek().type != Token::kEnd) return Err(fmt::format("unexpected \"{}\"", Describe(Peek())));
    return c;
  }

 private:
  const Token& Peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  const Token& Next() { return t_[std::min(p_++, t_.size() - 1)]; }
  bool IsWord(const Token& t, std::string_view w) const {
    return t.type == Token::kIdent && IEq(t.text, w);
  }
  bool IsOp(const Token& t, std::string_view op) const {
    return t.type == Token::kOp && t.text == op;
  }

  std::string Describe(const Token& t) const {
    switch (t.type) {
      case Token::kEnd:
        return "end of expression";
      case Token::kString:
        return Dump(json(t.text));
      case Token::kLParen:
        return "(";
      case Token::kRParen:
        return ")";
      case Token::kLBracket:
        return "[";
      case Token::kRBracket:
        return "]";
      case Token::kComma:
        return ",";
      case Token::kDot:
        return ".";
      default:
        return t.text;
    }
  }
  Status Err(std::string msg) const {
    return Status::InvalidArgument(
        fmt::format("filter expression: {} at offset {} in \"{}\"", msg, Peek().pos, src_));
  }

  Result<Condition> Or() {
    STRATA_ASSIGN_OR_RETURN(Condition left, And());
    std::vector<Condition> parts;
    parts.push_back(std::move(left));
    while (IsWord(Peek(), "or") || IsOp(Peek(), "||")) {
      Next();
      STRATA_ASSIGN_OR_RETURN(Condition r, And());
      parts.push_back(std::move(r));
    }
    if (parts.size() == 1) return std::move(parts[0]);
    return Condition::Or(std::move(parts));
  }

  Result<Condition> And() {
    STRATA_ASSIGN_OR_RETURN(Condition left, Unary());
    std::vector<Condition> parts;
    parts.push_back(std::move(left));
    while (IsWord(Peek(), "and") || IsOp(Peek(), "&&")) {
      Next();
      STRATA_ASSIGN_OR_RETURN(Condition r, Unary());
      parts.push_back(std::move(r));
    }
    if (parts.size() == 1) return std::move(parts[0]);
    return Condition::And(std::move(parts));
  }

  Result<Condition> Unary() {
    if (++depth_ > 200) return Err("the expression nests too deeply");
    struct DepthGuard {
      int& d;
      ~DepthGuard() { --d; }
    } guard{depth_};
    if (IsWord(Peek(), "not") || IsOp(Peek(), "!")) {
      Next();
      STRATA_ASSIGN_OR_RETURN(Condition c, Unary());
      return Condition::Not(std::move(c));
    }
    if (Peek().type == Token::kLParen) {
      Next();
      STRATA_ASSIGN_OR_RETURN(Condition c, Or());
      if (Peek().type != Token::kRParen)
        return Err(fmt::format("expected \")\", found \"{}\"", Describe(Peek())));
      Next();
      return c;
    }
    if (IsWord(Peek(), "exists") && Peek(1).type == Token::kIdent) {
      Next();
      STRATA_ASSIGN_OR_RETURN(Operand k, ParseOperand());
      if (k.kind != Operand::kKey) return Err("exists needs a field name");
      return Condition::Not(Condition::IsEmpty(k.key));
    }
    if (Peek().type == Token::kIdent && Peek(1).type == Token::kLParen) return Function();
    return Predicate();
  }

  Result<Condition> Function() {
    std::string name = ToLowerAscii(Next().text);
    Next();  // (
    STRATA_ASSIGN_OR_RETURN(Operand field, ParseOperand());
    if (field.kind != Operand::kKey) return Err(fmt::format("{} needs a field name first", name));
    if (Peek().type != Token::kComma) return Err(fmt::format("{} takes two arguments", name));
    Next();
    STRATA_ASSIGN_OR_RETURN(Operand arg, ParseOperand());
    if (Peek().type != Token::kRParen)
      return Err(fmt::format("expected \")\" after the arguments of {}", name));
    Next();
    if (name == "array_contains" || name == "json_contains") {
      if (arg.kind != Operand::kLiteral) return Err(fmt::format("{} needs a single value", name));
      return Condition::Match(field.key, arg.value);
    }
    if (name == "array_contains_any" || name == "json_contains_any") {
      if (arg.kind != Operand::kList) return Err(fmt::format("{} needs a list", name));
      return Condition::MatchAny(field.key, arg.list);
    }
    if (name == "array_contains_all" || name == "json_contains_all") {
      if (arg.kind != Operand::kList) return Err(fmt::format("{} needs a list", name));
      std::vector<Condition> all;
      for (auto& v : arg.list) all.push_back(Condition::Match(field.key, v));
      return Condition::And(std::move(all));
    }
    return Err(
        fmt::format("unknown function \"{}\" (supported: array_contains, array_contains_any, "
                    "array_contains_all)",
                    name));
  }

  static std::string ToLowerAscii(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  Result<FilterValue> Literal() {
    const Token& t = Next();
    switch (t.type) {
      case Token::kString:
        return FilterValue::String(t.text);
      case Token::kInt:
        return FilterValue::Int(t.i);
      case Token::kFloat:
        return FilterValue::Double(t.d);
      case Token::kIdent:
        if (IEq(t.text, "true")) return FilterValue::Bool(true);
        if (IEq(t.text, "false")) return FilterValue::Bool(false);
        break;
      default:
        break;
    }
    --p_;
    return Err(fmt::format("expected a value, found \"{}\"", Describe(t)));
  }

  Result<Operand> ParseOperand() {
    Operand o;
    const Token& t = Peek();
    if (t.type == Token::kLBracket) {
      Next();
      o.kind = Operand::kList;
      if (Peek().type != Token::kRBracket) {
        while (true) {
          STRATA_ASSIGN_OR_RETURN(FilterValue v, Literal());
          o.list.push_back(std::move(v));
          if (Peek().type == Token::kComma) {
            Next();
            if (Peek().type == Token::kRBracket) break;  // trailing comma
            continue;
          }
          break;
        }
      }
      if (Peek().type != Token::kRBracket)
        return Err(fmt::format("expected \"]\", found \"{}\"", Describe(Peek())));
      Next();
      return o;
    }
    if (t.type == Token::kIdent && !IEq(t.text, "true") && !IEq(t.text, "false")) {
      std::string key = Next().text;
      bool meta = key == "$meta";
      if (key == "$id" || key == "$pk") {
        o.kind = Operand::kId;
        return o;
      }
      while (true) {
        if (Peek().type == Token::kDot && Peek(1).type == Token::kIdent) {
          Next();
          key += "." + Next().text;
        } else if (Peek().type == Token::kLBracket && Peek(1).type == Token::kString &&
                   Peek(2).type == Token::kRBracket) {
          Next();
          std::string part = Next().text;
          Next();
          key = meta ? part : key + "." + part;
          meta = false;
        } else if (Peek().type == Token::kLBracket && Peek(1).type == Token::kRBracket) {
          Next();
          Next();
          key += "[]";
        } else {
          break;
        }
      }
      if (meta) return Err("$meta needs a key, as $meta[\"name\"]");
      o.kind = Operand::kKey;
      o.key = std::move(key);
      return o;
    }
    STRATA_ASSIGN_OR_RETURN(o.value, Literal());
    o.kind = Operand::kLiteral;
    return o;
  }

  static bool IsCmp(const Token& t) {
    return t.type == Token::kOp && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                    t.text == "<=" || t.text == ">" || t.text == ">=");
  }

  static std::string Flip(const std::string& op) {
    if (op == "<") return ">";
    if (op == "<=") return ">=";
    if (op == ">") return "<";
    if (op == ">=") return "<=";
    return op;
  }

  Result<double> Bound(const FilterValue& v, bool* datetime) {
    if (v.type == FilterValue::Type::kInt) return double(v.i);
    if (v.type == FilterValue::Type::kDouble) return v.d;
    if (v.type == FilterValue::Type::kString) {
      auto t = ParseTimestamp(v.s);
      if (t) {
        *datetime = true;
        return *t;
      }
      return Err(
          fmt::format("\"{}\" is not a number or an RFC 3339 timestamp; < <= > >= compare numbers "
                      "and timestamps",
                      v.s));
    }
    return Err("< <= > >= compare numbers and timestamps, not booleans");
  }

  // key OP value (op already oriented as key-on-the-left).
  Result<Condition> Compare(const Operand& k, const std::string& op, const FilterValue& v) {
    if (k.kind == Operand::kId) {
      STRATA_ASSIGN_OR_RETURN(PointId id, IdFromValue(v));
      if (op == "==") return Condition::HasId({id});
      if (op == "!=") return Condition::Not(Condition::HasId({id}));
      return Err("$id supports ==, !=, in and not in");
    }
    if (op == "==") return Condition::Match(k.key, v);
    if (op == "!=") return Condition::MatchExcept(k.key, {v});
    bool dt = false;
    STRATA_ASSIGN_OR_RETURN(double b, Bound(v, &dt));
    Condition c = Condition::Range(k.key, {}, {}, {}, {});
    c.datetime = dt;
    if (op == "<") c.lt = b;
    if (op == "<=") c.lte = b;
    if (op == ">") c.gt = b;
    if (op == ">=") c.gte = b;
    return c;
  }

  Result<PointId> IdFromValue(const FilterValue& v) {
    if (v.type == FilterValue::Type::kInt && v.i >= 0) return PointId::Number(uint64_t(v.i));
    if (v.type == FilterValue::Type::kString) {
      auto id = PointId::Parse(v.s);
      if (id) return *id;
    }
    return Err("$id takes unsigned integers or UUID strings");
  }

  Result<Condition> Predicate() {
    if (IsWord(Peek(), "true") && !IsCmp(Peek(1))) {
      Next();
      return Condition::True();
    }
    if (IsWord(Peek(), "false") && !IsCmp(Peek(1))) {
      Next();
      return Condition::Or({});
    }
    STRATA_ASSIGN_OR_RETURN(Operand left, ParseOperand());
    if (left.kind == Operand::kList) return Err("a list cannot start a comparison");
    if (left.kind == Operand::kLiteral) {
      // lit OP key [OP lit]
      if (!IsCmp(Peek()))
        return Err(
            fmt::format("expected a comparison after the value, found \"{}\"", Describe(Peek())));
      std::string op1 = Next().text;
      STRATA_ASSIGN_OR_RETURN(Operand k, ParseOperand());
      if (k.kind != Operand::kKey && k.kind != Operand::kId)
        return Err("a comparison needs a field name on one side");
      STRATA_ASSIGN_OR_RETURN(Condition c1, Compare(k, Flip(op1), left.value));
      if (!IsCmp(Peek())) return c1;
      std::string op2 = Next().text;
      STRATA_ASSIGN_OR_RETURN(FilterValue v2, Literal());
      STRATA_ASSIGN_OR_RETURN(Condition c2, Compare(k, op2, v2));
      if (c1.kind == Condition::Kind::kRange && c2.kind == Condition::Kind::kRange) {
        c1.gt = c1.gt ? c1.gt : c2.gt;
        c1.gte = c1.gte ? c1.gte : c2.gte;
        c1.lt = c1.lt ? c1.lt : c2.lt;
        c1.lte = c1.lte ? c1.lte : c2.lte;
        c1.datetime = c1.datetime || c2.datetime;
        return c1;
      }
      return Condition::And({std::move(c1), std::move(c2)});
    }
    // key ...
    if (IsCmp(Peek())) {
      std::string op = Next().text;
      STRATA_ASSIGN_OR_RETURN(Operand right, ParseOperand());
      if (right.kind != Operand::kLiteral)
        return Err("compare a field with a value (field-to-field comparisons are not supported)");
      return Compare(left, op, right.value);
    }
    bool negate = false;
    if (IsWord(Peek(), "not") && (IsWord(Peek(1), "in") || IsWord(Peek(1), "like"))) {
      Next();
      negate = true;
    }
    if (IsWord(Peek(), "in")) {
      Next();
      STRATA_ASSIGN_OR_RETURN(Operand list, ParseOperand());
      if (list.kind != Operand::kList) return Err("in needs a list, as in [1, 2, 3]");
      if (left.kind == Operand::kId) {
        std::vector<PointId> ids;
        for (const auto& v : list.list) {
          STRATA_ASSIGN_OR_RETURN(PointId id, IdFromValue(v));
          ids.push_back(id);
        }
        Condition c = Condition::HasId(std::move(ids));
        return negate ? Condition::Not(std::move(c)) : c;
      }
      return negate ? Condition::MatchExcept(left.key, list.list)
                    : Condition::MatchAny(left.key, list.list);
    }
    if (IsWord(Peek(), "like")) {
      Next();
      if (left.kind != Operand::kKey) return Err("like needs a field name");
      if (Peek().type != Token::kString) return Err("like needs a string pattern, as \"pre%\"");
      Condition c;
      c.kind = Condition::Kind::kLike;
      c.key = left.key;
      c.pattern = Next().text;
      return negate ? Condition::Not(std::move(c)) : c;
    }
    if (IsWord(Peek(), "is")) {
      Next();
      bool is_not = false;
      if (IsWord(Peek(), "not")) {
        Next();
        is_not = true;
      }
      if (!IsWord(Peek(), "null")) return Err("expected null after is");
      Next();
      if (left.kind != Operand::kKey) return Err("is null needs a field name");
      Condition c = Condition::IsEmpty(left.key);
      return is_not ? Condition::Not(std::move(c)) : c;
    }
    return Err(fmt::format("expected a comparison, in, like or is after \"{}\", found \"{}\"",
                           left.kind == Operand::kId ? "$id" : left.key, Describe(Peek())));
  }

  std::string_view src_;
  std::vector<Token> t_;
  size_t p_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<Filter> ParseFilterExpression(std::string_view expr) {
  std::vector<Token> toks;
  STRATA_RETURN_IF_ERROR(Lexer(expr).Run(&toks));
  ExprParser p(expr, std::move(toks));
  return p.Parse();
}

}  // namespace strata::vector
