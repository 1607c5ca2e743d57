#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/vector/bm25.h>

namespace strata::vector {
namespace {

bool WordByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

bool StopWord(std::string_view t) {
  static const std::set<std::string_view> kStop = {
      "a",   "an",    "and",  "are",   "as",    "at",   "be",   "but", "by",  "for",  "if",
      "in",  "into",  "is",   "it",    "no",    "not",  "of",   "on",  "or",  "such", "that",
      "the", "their", "then", "there", "these", "they", "this", "to",  "was", "will", "with"};
  return kStop.count(t) > 0;
}

SparseVector FromCounts(const std::map<uint32_t, float>& m) {
  SparseVector v;
  for (const auto& [id, w] : m) {
    v.indices.push_back(id);
    v.values.push_back(w);
  }
  return v;
}

}  // namespace

std::vector<std::string> Bm25Tokenize(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty() && !StopWord(cur)) out.push_back(cur);
    cur.clear();
  };
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (!WordByte(c)) {
      flush();
      continue;
    }
    cur.push_back(c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : ch);
  }
  flush();
  return out;
}

uint32_t Bm25TermId(std::string_view token) {
  uint32_t h = 2166136261u;
  for (char c : token) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

SparseVector Bm25QueryVector(std::string_view text) {
  std::map<uint32_t, float> m;
  for (const auto& t : Bm25Tokenize(text)) m[Bm25TermId(t)] = 1.0f;
  return FromCounts(m);
}

SparseVector Bm25DocumentVector(std::string_view text, double avg_len, const Bm25Options& o) {
  const auto tokens = Bm25Tokenize(text);
  std::map<uint32_t, float> tf;
  for (const auto& t : tokens) tf[Bm25TermId(t)] += 1.0f;
  const double len = double(tokens.size());
  const double norm = o.k1 * (1.0 - o.b + o.b * (avg_len > 0 ? len / avg_len : 1.0));
  for (auto& [id, f] : tf) f = float(f * (o.k1 + 1.0) / (f + norm));
  return FromCounts(tf);
}

Result<Bm25IndexResult> Bm25IndexField(Collection& c, const std::string& text_field,
                                       const std::string& sparse_name, const Bm25Options& o,
                                       const WriteOptions& wo) {
  const auto& sp = c.schema().sparse;
  if (std::none_of(sp.begin(), sp.end(), [&](const auto& f) { return f.name == sparse_name; })) {
    return Status::InvalidArgument(fmt::format(
        "collection \"{}\" has no sparse vector named \"{}\"; declare it in sparse_vectors "
        "(with modifier \"idf\" for BM25) first",
        c.name(), sparse_name));
  }
  if (text_field.empty()) return Status::InvalidArgument("BM25 needs the name of a text field");
  if (o.k1 < 0 || o.b < 0 || o.b > 1)
    return Status::InvalidArgument("BM25 needs k1 >= 0 and 0 <= b <= 1");
  std::vector<std::pair<PointId, std::string>> texts;
  ScrollRequest sr;
  sr.limit = 4096;
  sr.with_payload = true;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(ScrollResult page, c.Scroll(sr));
    for (const auto& r : page.points) {
      auto pj = nlohmann::json::parse(r.payload, nullptr, false);
      if (!pj.is_object()) continue;
      auto it = pj.find(text_field);
      if (it == pj.end() || !it->is_string()) continue;
      texts.emplace_back(r.id, it->get<std::string>());
    }
    if (!page.next_offset) break;
    sr.offset = page.next_offset;
  }
  Bm25IndexResult out;
  double total = 0;
  std::vector<size_t> lens(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    lens[i] = Bm25Tokenize(texts[i].second).size();
    total += double(lens[i]);
  }
  out.avg_len = texts.empty() ? 0 : total / double(texts.size());
  PointUpdate u;
  u.kind = PointUpdate::Kind::kUpdateVectors;
  std::vector<PointId> ids;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (lens[i] == 0) continue;
    u.sparse[texts[i].first].push_back(
        NamedSparseVector{sparse_name, Bm25DocumentVector(texts[i].second, out.avg_len, o)});
    ids.push_back(texts[i].first);
  }
  if (o.after_read) o.after_read();
  // A point deleted since the scroll makes the update refuse the whole batch
  // (kNotFound, nothing applied): drop the ids that are gone and retry. Each
  // retry follows a concurrent delete, so a few rounds settle.
  for (int attempt = 0;; ++attempt) {
    if (ids.empty()) return out;
    size_t updated = 0;
    Status st = c.UpdatePoints(ids, u, wo, &updated, &out.operation);
    if (st.ok()) {
      out.points = updated;
      return out;
    }
    if (!st.IsNotFound() || attempt == 8) return st;
    STRATA_ASSIGN_OR_RETURN(std::vector<Record> live, c.Get(ids, false, false));
    std::set<PointId> present;
    for (const auto& r : live) present.insert(r.id);
    std::erase_if(ids, [&](const PointId& id) { return !present.count(id); });
    std::erase_if(u.sparse, [&](const auto& kv) { return !present.count(kv.first); });
  }
}

}  // namespace strata::vector
