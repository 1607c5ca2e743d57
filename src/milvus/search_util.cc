// Range bounds, expression templates, rankers and iterator tokens
// (search_util.h).
#include "milvus/search_util.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <numbers>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace strata::milvus {

namespace pbs = ::milvus::proto::schema;
using json = nlohmann::json;

Status CheckRange(const SearchParams& p, bool l2) {
  if (!p.radius || !p.range_filter) return Status::Ok();
  if (l2 && !(*p.range_filter < *p.radius)) {
    return Status::InvalidArgument(
        fmt::format("range_filter must be less than radius for L2: range_filter {}, radius {}",
                    *p.range_filter, *p.radius));
  }
  if (!l2 && !(*p.range_filter > *p.radius)) {
    return Status::InvalidArgument(fmt::format(
        "range_filter must be greater than radius for IP/COSINE: range_filter {}, radius {}",
        *p.range_filter, *p.radius));
  }
  return Status::Ok();
}

bool PastRadius(const SearchParams& p, float d, bool l2) {
  if (!p.radius) return false;
  return l2 ? d >= *p.radius : d <= *p.radius;
}

bool InRange(const SearchParams& p, float d, bool l2) {
  if (PastRadius(p, d, l2)) return false;
  if (!p.range_filter) return true;
  return l2 ? d >= *p.range_filter : d <= *p.range_filter;
}

namespace {

std::string QuoteString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Num(double v) {
  std::string s = fmt::format("{}", v);
  return s;
}

template <class T, class F>
std::string Join(const T& items, F&& f) {
  std::string out = "[";
  for (int i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += f(items.Get(i));
  }
  return out + "]";
}

Result<std::string> ArrayLiteral(const pbs::TemplateArrayValue& a, const std::string& name) {
  switch (a.data_case()) {
    case pbs::TemplateArrayValue::kBoolData:
      return Join(a.bool_data().data(), [](bool b) { return std::string(b ? "true" : "false"); });
    case pbs::TemplateArrayValue::kLongData:
      return Join(a.long_data().data(), [](int64_t v) { return std::to_string(v); });
    case pbs::TemplateArrayValue::kDoubleData:
      return Join(a.double_data().data(), [](double v) { return Num(v); });
    case pbs::TemplateArrayValue::kStringData:
      return Join(a.string_data().data(), [](const std::string& v) { return QuoteString(v); });
    case pbs::TemplateArrayValue::kArrayData: {
      std::string out = "[";
      for (int i = 0; i < a.array_data().data_size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(std::string e, ArrayLiteral(a.array_data().data(i), name));
        out += (i > 0 ? ", " : "") + e;
      }
      return out + "]";
    }
    case pbs::TemplateArrayValue::kJsonData:
      return Status::NotSupported(fmt::format(
          "expression template {}: arrays of JSON objects are not supported by Strata", name));
    default:
      return std::string("[]");
  }
}

Result<std::string> Literal(const pbs::TemplateValue& v, const std::string& name) {
  switch (v.val_case()) {
    case pbs::TemplateValue::kBoolVal:
      return std::string(v.bool_val() ? "true" : "false");
    case pbs::TemplateValue::kInt64Val:
      return std::to_string(v.int64_val());
    case pbs::TemplateValue::kFloatVal:
      return Num(v.float_val());
    case pbs::TemplateValue::kStringVal:
      return QuoteString(v.string_val());
    case pbs::TemplateValue::kArrayVal:
      return ArrayLiteral(v.array_val(), name);
    case pbs::TemplateValue::kBytesVal:
      return Status::NotSupported(fmt::format(
          "expression template {}: byte values (bloom filters) are not supported by Strata", name));
    default:
      return Status::InvalidArgument(fmt::format("expression template {} has no value", name));
  }
}

bool IdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

}  // namespace

Result<std::string> ApplyExprTemplate(const std::string& expr, const TemplateValues& values) {
  if (values.empty()) return expr;
  std::string out;
  size_t i = 0;
  while (i < expr.size()) {
    const char c = expr[i];
    if (c == '"' || c == '\'') {  // copy the string literal as is
      size_t j = i + 1;
      while (j < expr.size() && expr[j] != c) j += expr[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, expr.size());
      out.append(expr, i, j - i);
      i = j;
      continue;
    }
    size_t j = i + 1;
    while (c == '{' && j < expr.size() && IdentChar(expr[j])) ++j;
    if (c != '{' || j == i + 1 || j >= expr.size() || expr[j] != '}') {
      out += c;
      ++i;
      continue;
    }
    const std::string name = expr.substr(i + 1, j - i - 1);
    auto it = values.find(name);
    if (it == values.end()) {
      return Status::InvalidArgument(fmt::format(
          "the value of expression template variable name {{{}}} is not found: pass it in "
          "exprValues (expr_template_values)",
          name));
    }
    STRATA_ASSIGN_OR_RETURN(std::string lit, Literal(it->second, name));
    out += lit;
    i = j + 1;
  }
  return out;
}

Result<Ranker> ParseRankParams(const KvList& kv, size_t requests) {
  Ranker r;
  std::string strategy = "rrf";
  json params = json::object();
  for (const auto& e : kv) {
    const std::string& k = e.key();
    const std::string& v = e.value();
    int64_t n = 0;
    auto as_int = [&]() -> Status {
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || p != v.data() + v.size())
        return Status::InvalidArgument(fmt::format("rank param {} must be an integer", k));
      return Status::Ok();
    };
    if (k == "strategy") {
      strategy = v;
    } else if (k == "params") {
      params = json::parse(v, nullptr, false);
      if (!params.is_object())
        return Status::InvalidArgument("rank param \"params\" must be a JSON object");
    } else if (k == "limit" || k == "topk") {
      STRATA_RETURN_IF_ERROR(as_int());
      if (n <= 0 || n > 16384)
        return Status::InvalidArgument(
            fmt::format("limit [{}] is invalid, it should be in range [1, 16384]", n));
      r.limit = static_cast<size_t>(n);
    } else if (k == "offset") {
      STRATA_RETURN_IF_ERROR(as_int());
      if (n < 0) return Status::InvalidArgument("offset must not be negative");
      r.offset = static_cast<size_t>(n);
    } else if (k == "round_decimal") {
      STRATA_RETURN_IF_ERROR(as_int());
      if (n < -1 || n > 6) return Status::InvalidArgument("round_decimal must be in [-1, 6]");
      r.round_decimal = static_cast<int>(n);
    } else {
      return Status::InvalidArgument(fmt::format(
          "rank param \"{}\" is not supported (supported: strategy, params, limit, offset, "
          "round_decimal)",
          k));
    }
  }
  if (r.limit + r.offset > 16384) {
    return Status::InvalidArgument("limit + offset should be in range [1, 16384]");
  }
  if (strategy == "rrf") {
    r.kind = Ranker::kRrf;
    for (const auto& [k, v] : params.items()) {
      if (k != "k") return Status::InvalidArgument(fmt::format("rrf: unknown param \"{}\"", k));
      if (!v.is_number() || !(v.get<double>() > 0) || !(v.get<double>() < 16384))
        return Status::InvalidArgument("The rank params k should be in range (0, 16384)");
      r.k = v.get<double>();
    }
    return r;
  }
  if (strategy != "weighted") {
    return Status::InvalidArgument(
        fmt::format("rank strategy \"{}\" is not supported (supported: rrf, weighted)", strategy));
  }
  r.kind = Ranker::kWeighted;
  for (const auto& [k, v] : params.items()) {
    if (k == "weights") {
      if (!v.is_array()) return Status::InvalidArgument("weighted: weights must be an array");
      for (const auto& w : v) {
        if (!w.is_number() || w.get<double>() < 0 || w.get<double>() > 1)
          return Status::InvalidArgument("rank param weight should be in range [0, 1]");
        r.weights.push_back(w.get<double>());
      }
    } else if (k == "norm_score") {
      if (!v.is_boolean()) return Status::InvalidArgument("weighted: norm_score must be a bool");
      r.norm_score = v.get<bool>();
    } else {
      return Status::InvalidArgument(fmt::format("weighted: unknown param \"{}\"", k));
    }
  }
  if (r.weights.size() != requests) {
    return Status::InvalidArgument(
        fmt::format("the length of weights param mismatch with ann search requests: "
                    "invalid parameter[expected={}][actual={}]",
                    requests, r.weights.size()));
  }
  return r;
}

float NormalizeScore(float s, const std::string& metric) {
  if (metric == "COSINE") return (1.0f + s) * 0.5f;
  if (metric == "IP") return 0.5f + static_cast<float>(std::atan(s) / std::numbers::pi);
  return 1.0f - static_cast<float>(2.0 * std::atan(s) / std::numbers::pi);  // L2: closer is higher
}

std::vector<FusedHit> Fuse(const Ranker& r, const std::vector<std::vector<RankedHit>>& lists,
                           const std::vector<std::string>& metrics) {
  std::unordered_map<vector::PointId, size_t, vector::PointIdHash> at;
  std::vector<FusedHit> out;
  std::vector<double> sum;
  for (size_t li = 0; li < lists.size(); ++li) {
    for (size_t pos = 0; pos < lists[li].size(); ++pos) {
      const RankedHit& h = lists[li][pos];
      double add = 0;
      if (r.kind == Ranker::kRrf) {
        add = 1.0 / (r.k + static_cast<double>(pos + 1));
      } else {
        add = r.weights[li] * (r.norm_score ? NormalizeScore(h.score, metrics[li]) : h.score);
      }
      auto [it, fresh] = at.emplace(h.id, out.size());
      if (fresh) {
        out.push_back(FusedHit{li, pos, 0});
        sum.push_back(0);
      }
      sum[it->second] += add;
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].score = static_cast<float>(sum[i]);
  std::stable_sort(out.begin(), out.end(),
                   [](const FusedHit& a, const FusedHit& b) { return a.score > b.score; });
  return out;
}

std::string EncodeIterToken(const std::vector<vector::PointId>& at_bound) {
  std::string out = "strata-iter1:";
  for (size_t i = 0; i < at_bound.size(); ++i) {
    if (i > 0) out += ',';
    out += at_bound[i].ToString();
  }
  return out;
}

Result<std::vector<vector::PointId>> DecodeIterToken(const std::string& token) {
  constexpr std::string_view kPrefix = "strata-iter1:";
  if (token.rfind(kPrefix, 0) != 0) {
    return Status::InvalidArgument(
        "search_iter_id is not a token this server issued: start a new search iterator");
  }
  std::vector<vector::PointId> ids;
  std::string_view rest = std::string_view(token).substr(kPrefix.size());
  while (!rest.empty()) {
    size_t c = rest.find(',');
    auto id = vector::PointId::Parse(rest.substr(0, c));
    if (!id) {
      return Status::InvalidArgument(
          "search_iter_id is not a token this server issued: start a new search iterator");
    }
    ids.push_back(*id);
    rest = c == std::string_view::npos ? std::string_view() : rest.substr(c + 1);
  }
  return ids;
}

}  // namespace strata::milvus
