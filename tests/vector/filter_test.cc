// Filters: both parsers (Qdrant JSON, Milvus expressions), their errors, the
// row-by-row semantics, and index-backed evaluation agreeing with it.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <strata/vector/collection.h>
#include <strata/vector/filter.h>

#include <nlohmann/json.hpp>
#include <random>

#include "testutil/testutil.h"
#include "vector/filter_eval.h"

namespace strata::vector {
namespace {

using json = nlohmann::json;

std::string Q(std::string_view text) {
  auto f = ParseQdrantFilter(text);
  EXPECT_TRUE(f.ok()) << text << ": " << f.error().ToString();
  return f.ok() ? f->ToString() : "";
}

std::string E(std::string_view text) {
  auto f = ParseFilterExpression(text);
  EXPECT_TRUE(f.ok()) << text << ": " << f.error().ToString();
  return f.ok() ? f->ToString() : "";
}

TEST(PointIdTest, ParseAndFormat) {
  ASSERT_OK_AND_ASSIGN(PointId a, PointId::Parse("42"));
  EXPECT_FALSE(a.is_uuid);
  EXPECT_EQ(42u, a.hi);
  ASSERT_OK_AND_ASSIGN(PointId u, PointId::Parse("550E8400-e29b-41d4-a716-446655440000"));
  EXPECT_TRUE(u.is_uuid);
  EXPECT_EQ("550e8400-e29b-41d4-a716-446655440000", u.ToString());
  ASSERT_OK_AND_ASSIGN(PointId u2, PointId::Parse("550e8400e29b41d4a716446655440000"));
  EXPECT_EQ(u, u2);
  EXPECT_LT(PointId::Number(~uint64_t{0}), u);  // numbers before UUIDs
  EXPECT_FALSE(PointId::Parse("-1").ok());
  EXPECT_FALSE(PointId::Parse("550e8400-e29b-41d4-a716-44665544000").ok());
  EXPECT_FALSE(PointId::Parse("hello").ok());
  EXPECT_FALSE(PointId::Parse("").ok());
}

TEST(FilterParseTest, QdrantJson) {
  EXPECT_EQ("source==\"arxiv\"", Q(R"({"must":[{"key":"source","match":{"value":"arxiv"}}]})"));
  // Clauses come in key order (must, must_not, should).
  EXPECT_EQ("and(a==1,not(d range{gte:1,lt:5}),or(b in [\"x\",\"y\"],c==true))",
            Q(R"({"must":[{"key":"a","match":{"value":1}}],
                 "should":[{"key":"b","match":{"any":["x","y"]}},{"key":"c","match":{"value":true}}],
                 "must_not":{"key":"d","range":{"gte":1,"lt":5}}})"));
  EXPECT_EQ("x except [1,2]", Q(R"({"must":{"key":"x","match":{"except":[1,2]}}})"));
  EXPECT_EQ("has_id[1,550e8400-e29b-41d4-a716-446655440000]",
            Q(R"({"must":[{"has_id":[1,"550e8400-e29b-41d4-a716-446655440000"]}]})"));
  EXPECT_EQ("and(a is empty,b is null)",
            Q(R"({"must":[{"is_empty":{"key":"a"}},{"is_null":{"key":"b"}}]})"));
  EXPECT_EQ("meta.lang==\"en\"", Q(R"({"must":[{"key":"meta.lang","match":{"value":"en"}}]})"));
  EXPECT_EQ("ts range(datetime){gte:1704067200}",
            Q(R"({"must":[{"key":"ts","range":{"gte":"2024-01-01T00:00:00Z"}}]})"));
  EXPECT_EQ(
      "nested(items,sku==\"a\")",
      Q(R"({"must":[{"nested":{"key":"items","filter":{"must":[{"key":"sku","match":{"value":"a"}}]}}}]})"));
  EXPECT_EQ(
      "min2(a==1,b==2,c==3)",
      Q(R"({"min_should":{"conditions":[{"key":"a","match":{"value":1}},{"key":"b","match":{"value":2}},
                  {"key":"c","match":{"value":3}}],"min_count":2}})"));
  EXPECT_EQ("true", Q("{}"));
  EXPECT_EQ("true", Q("null"));
  EXPECT_EQ("must==1", Q(R"({"must":[{"must":[{"key":"must","match":{"value":1}}]}]})"));
}

TEST(FilterParseTest, QdrantJsonErrors) {
  for (const char* bad : {
           "not json",
           "[1,2]",
           R"({"must":[{"key":"a"}]})",
           R"({"must":[{"key":"a","match":{}}]})",
           R"({"must":[{"key":"a","range":{"gt":"yesterday"}}]})",
           R"({"must":[{"key":"a","geo_radius":{"center":{"lon":1,"lat":2},"radius":5}}]})",
           R"({"must":[{"has_id":"1"}]})",
           R"({"must":[{"has_id":[-1]}]})",
           R"({"musst":[]})",
           R"({"must":[{"key":"a","match":{"value":[1]}}]})",
           R"({"must":[42]})",
       }) {
    auto f = ParseQdrantFilter(bad);
    EXPECT_FALSE(f.ok()) << bad << " parsed as " << (f.ok() ? f->ToString() : "");
    if (!f.ok()) {
      EXPECT_EQ(StatusCode::kInvalidArgument, f.error().code());
      EXPECT_FALSE(f.error().message().empty());
    }
  }
}

TEST(FilterParseTest, MilvusExpressions) {
  EXPECT_EQ("and(source==\"arxiv\",timestamp range{gt:100})",
            E(R"(source == "arxiv" and timestamp > 100)"));
  EXPECT_EQ("or(a==1,and(b==2,c==3))", E("a == 1 or b == 2 && c == 3"));
  EXPECT_EQ("and(or(a==1,b==2),c==3)", E("(a == 1 || b == 2) AND c == 3"));
  EXPECT_EQ("tag in [\"x\",\"y\"]", E(R"(tag in ["x", 'y'])"));
  EXPECT_EQ("tag except [1,2]", E("tag not in [1, 2]"));
  EXPECT_EQ("not(a==1)", E("not a == 1"));
  EXPECT_EQ("not(a==1)", E("!(a == 1)"));
  EXPECT_EQ("a except [\"x\"]", E(R"(a != "x")"));
  EXPECT_EQ("title like \"pre%\"", E(R"(title like "pre%")"));
  EXPECT_EQ("not(title like \"pre%\")", E(R"(title not like "pre%")"));
  EXPECT_EQ("x range{gt:1,lte:5}", E("1 < x <= 5"));
  EXPECT_EQ("x range{lt:-2.5}", E("x < -2.5"));
  EXPECT_EQ("x range{gte:3}", E("3 <= x"));
  EXPECT_EQ("x==-7", E("x == -7"));
  EXPECT_EQ("x==255", E("x == 0xff"));
  EXPECT_EQ("flag==true", E("flag == True"));
  EXPECT_EQ("meta.lang==\"en\"", E(R"(meta["lang"] == "en")"));
  EXPECT_EQ("lang==\"en\"", E(R"($meta["lang"] == "en")"));
  EXPECT_EQ("a.b.c==1", E("a.b.c == 1"));
  EXPECT_EQ("x is empty", E("x is null"));
  EXPECT_EQ("not(x is empty)", E("x IS NOT NULL"));
  EXPECT_EQ("not(x is empty)", E("exists x"));
  EXPECT_EQ("has_id[1,2]", E("$id in [1, 2]"));
  EXPECT_EQ("not(has_id[5])", E("$id != 5"));
  EXPECT_EQ("tags==\"a\"", E(R"(array_contains(tags, "a"))"));
  EXPECT_EQ("tags in [\"a\",\"b\"]", E(R"(array_contains_any(tags, ["a", "b"]))"));
  EXPECT_EQ("and(tags==\"a\",tags==\"b\")", E(R"(array_contains_all(tags, ["a", "b"]))"));
  EXPECT_EQ("ts range(datetime){gte:1704067200}", E(R"(ts >= "2024-01-01T00:00:00Z")"));
  EXPECT_EQ("true", E("true"));
  EXPECT_EQ("or()", E("false"));
}

TEST(FilterParseTest, MilvusErrors) {
  for (const char* bad : {
           "",
           "source ==",
           "source == \"arxiv",
           "(a == 1",
           "a == 1)",
           "a === 1",
           "a in 5",
           "a like 5",
           "a < \"not a time\"",
           "a == b",
           "1 == 2",
           "a and",
           "unknown_fn(a, 1)",
           "a == 1 b == 2",
           "a @ 1",
           "$id == -1",
       }) {
    auto f = ParseFilterExpression(bad);
    EXPECT_FALSE(f.ok()) << "\"" << bad << "\" parsed as " << (f.ok() ? f->ToString() : "");
    if (!f.ok()) {
      EXPECT_EQ(StatusCode::kInvalidArgument, f.error().code()) << bad;
    }
  }
  // Deep nesting is an error, not a stack overflow.
  std::string deep(10000, '(');
  deep += "a == 1";
  deep += std::string(10000, ')');
  EXPECT_FALSE(ParseFilterExpression(deep).ok());
}

// Strings in filters may hold any bytes; printing them (ToString, error
// messages naming a token) must not throw across the API, though the JSON
// library throws on invalid UTF-8 (fuzzer findings).
TEST(FilterParseTest, NonUtf8StringsPrintWithoutThrowing) {
  const std::string bad_bytes = "London\xfe\xff";
  std::string printed;
  ASSERT_OK_AND_ASSIGN(Filter f, ParseFilterExpression("city == \"" + bad_bytes + "\""));
  EXPECT_NO_THROW(printed = f.ToString());
  EXPECT_NE(std::string::npos, printed.find("city==")) << printed;
  EXPECT_NE(std::string::npos, printed.find("London")) << printed;
  ASSERT_OK_AND_ASSIGN(Filter like, ParseFilterExpression("city like \"" + bad_bytes + "%\""));
  EXPECT_NO_THROW(printed = like.ToString());
  // A parse error describing a non-UTF-8 string token.
  Result<Filter> r = Filter{};
  EXPECT_NO_THROW(r = ParseFilterExpression("a == 1 \"" + bad_bytes + "\""));
  EXPECT_FALSE(r.ok());
  EXPECT_NO_THROW(r = ParseFilterExpression("(a == 1 \"\xc3\""));
  EXPECT_FALSE(r.ok());
}

TEST(FilterParseTest, BothFormsAgree) {
  EXPECT_EQ(
      Q(R"({"must":[{"key":"source","match":{"value":"arxiv"}},{"key":"timestamp","range":{"gt":100}}]})"),
      E(R"(source == "arxiv" and timestamp > 100)"));
  EXPECT_EQ(Q(R"({"must":[{"key":"c","match":{"any":["a","b"]}}]})"), E(R"(c in ["a", "b"])"));
}

TEST(FilterParseTest, Timestamps) {
  EXPECT_EQ(1704067200.0, *ParseTimestamp("2024-01-01T00:00:00Z"));
  EXPECT_EQ(1704067200.0, *ParseTimestamp("2024-01-01"));
  EXPECT_EQ(1704067200.5, *ParseTimestamp("2024-01-01 00:00:00.5"));
  EXPECT_EQ(1704067200.0 - 3600, *ParseTimestamp("2024-01-01T00:00:00+01:00"));
  EXPECT_EQ(1704067200.0 + 5400, *ParseTimestamp("2024-01-01T00:00:00-0130"));
  EXPECT_FALSE(ParseTimestamp("2024-13-01").has_value());
  EXPECT_FALSE(ParseTimestamp("yesterday").has_value());
  EXPECT_FALSE(ParseTimestamp("2024-01-01T00:00:00Zjunk").has_value());
}

TEST(FilterEvalTest, RowSemantics) {
  using internal::RowMatches;
  const PointId id = PointId::Number(7);
  json p =
      json::parse(R"({"s":"arxiv","n":5,"f":2.5,"b":true,"tags":["a","b"],"nul":null,"empty":[],
                          "arr_null":[1,null],"meta":{"lang":"en"},"items":[{"sku":"x","q":1},{"sku":"y","q":2}],
                          "ts":"2024-01-02T00:00:00Z"})");
  auto m = [&](const char* expr) {
    auto f = ParseFilterExpression(expr);
    EXPECT_TRUE(f.ok()) << expr << ": " << f.error().ToString();
    return f.ok() && RowMatches(*f, p, id);
  };
  EXPECT_TRUE(m(R"(s == "arxiv")"));
  EXPECT_FALSE(m(R"(s == "web")"));
  EXPECT_TRUE(m("n == 5"));
  EXPECT_TRUE(m("n == 5.0"));
  EXPECT_TRUE(m("f == 2.5"));
  EXPECT_TRUE(m("b == true"));
  EXPECT_FALSE(m("b == 1"));
  EXPECT_TRUE(m(R"(tags == "b")"));  // any element
  EXPECT_TRUE(m(R"(tags in ["z", "a"])"));
  EXPECT_TRUE(m(R"(tags != "a")"));           // "b" is not "a"
  EXPECT_FALSE(m(R"(missing != "a")"));       // missing: false (Qdrant's except)
  EXPECT_TRUE(m(R"(not (missing == "a"))"));  // must_not is a complement
  EXPECT_TRUE(m("n > 4 and n <= 5"));
  EXPECT_FALSE(m("n > 5"));
  EXPECT_TRUE(m("2 < f < 3"));
  EXPECT_FALSE(m(R"(s > 1)"));  // strings are not numbers
  EXPECT_TRUE(m(R"(ts > "2024-01-01")"));
  EXPECT_FALSE(m(R"(ts > "2024-01-03")"));
  EXPECT_TRUE(m(R"(s like "arx%")"));
  EXPECT_TRUE(m(R"(s like "%xi_")"));
  EXPECT_FALSE(m(R"(s like "xiv%")"));
  EXPECT_TRUE(m(R"(meta.lang == "en")"));
  EXPECT_TRUE(m(R"(items[].sku == "y")"));
  EXPECT_TRUE(m(R"(items.sku == "y")"));
  EXPECT_TRUE(m("$id in [1, 7]"));
  EXPECT_FALSE(m("$id == 8"));

  auto q = [&](const char* j) {
    auto f = ParseQdrantFilter(j);
    EXPECT_TRUE(f.ok()) << j << ": " << f.error().ToString();
    return f.ok() && RowMatches(*f, p, id);
  };
  EXPECT_TRUE(q(R"({"must":[{"is_empty":{"key":"missing"}}]})"));
  EXPECT_TRUE(q(R"({"must":[{"is_empty":{"key":"nul"}}]})"));
  EXPECT_TRUE(q(R"({"must":[{"is_empty":{"key":"empty"}}]})"));
  EXPECT_FALSE(q(R"({"must":[{"is_empty":{"key":"arr_null"}}]})"));
  EXPECT_FALSE(q(R"({"must":[{"is_empty":{"key":"s"}}]})"));
  EXPECT_TRUE(q(R"({"must":[{"is_null":{"key":"nul"}}]})"));
  EXPECT_TRUE(q(R"({"must":[{"is_null":{"key":"arr_null"}}]})"));
  EXPECT_FALSE(q(R"({"must":[{"is_null":{"key":"missing"}}]})"));
  EXPECT_FALSE(q(R"({"must":[{"is_null":{"key":"empty"}}]})"));
  EXPECT_TRUE(q(R"({"must":[{"key":"tags","values_count":{"gte":2}}]})"));
  EXPECT_FALSE(q(R"({"must":[{"key":"tags","values_count":{"gt":2}}]})"));
  EXPECT_TRUE(
      q(R"({"must":[{"nested":{"key":"items","filter":{"must":[{"key":"sku","match":{"value":"x"}},
                 {"key":"q","match":{"value":1}}]}}}]})"));
  EXPECT_FALSE(
      q(R"({"must":[{"nested":{"key":"items","filter":{"must":[{"key":"sku","match":{"value":"x"}},
                 {"key":"q","match":{"value":2}}]}}}]})"));
  EXPECT_TRUE(q(R"({"must":[{"key":"s","match":{"text":"xi"}}]})"));
  EXPECT_TRUE(
      q(R"({"should":[{"key":"s","match":{"value":"no"}},{"key":"n","match":{"value":5}}]})"));
  EXPECT_FALSE(q(
      R"({"should":[{"key":"s","match":{"value":"no"}}],"must":[{"key":"n","match":{"value":5}}]})"));
  EXPECT_TRUE(q(
      R"({"min_should":{"conditions":[{"key":"s","match":{"value":"arxiv"}},{"key":"n","match":{"value":5}},
                 {"key":"b","match":{"value":false}}],"min_count":2}})"));
}

TEST(FilterEvalTest, LikeMatch) {
  using internal::LikeMatch;
  EXPECT_TRUE(LikeMatch("pre%", "prefix"));
  EXPECT_TRUE(LikeMatch("pre%", "pre"));
  EXPECT_FALSE(LikeMatch("pre%", "pr"));
  EXPECT_TRUE(LikeMatch("%fix", "prefix"));
  EXPECT_TRUE(LikeMatch("%e%i%", "prefix"));
  EXPECT_TRUE(LikeMatch("p_e%", "prefix"));
  EXPECT_FALSE(LikeMatch("p_e", "prefix"));
  EXPECT_TRUE(LikeMatch("100\\%", "100%"));
  EXPECT_FALSE(LikeMatch("100\\%", "1000"));
  EXPECT_TRUE(LikeMatch("%", ""));
  EXPECT_TRUE(LikeMatch("a%%b", "ab"));
}

// The same filters through payload indexes and through payload scans give
// the same rows, on growing and sealed segments, against a row-by-row oracle.
TEST(FilterEvalTest, IndexedAndScannedAgree) {
  testing::TempDir tmp;
  CollectionSchema schema;
  VectorFieldSchema vf;
  vf.index.type = IndexType::kFlat;
  vf.index.dim = 4;
  schema.vectors.push_back(vf);
  CollectionOptions opts;
  opts.background = false;
  opts.segment_rows = 700;  // a few sealed segments and a growing one
  opts.merge_small_rows = 0;
  ASSERT_OK_AND_ASSIGN(auto plain, Collection::Create(tmp.Join("plain"), "plain", schema, opts));
  CollectionSchema typed = schema;
  typed.payload = {{"kw", PayloadType::kKeyword, false},   {"n", PayloadType::kInteger, false},
                   {"f", PayloadType::kFloat, false},      {"b", PayloadType::kBool, false},
                   {"ts", PayloadType::kTimestamp, false}, {"tags", PayloadType::kKeyword, true}};
  ASSERT_OK_AND_ASSIGN(auto indexed,
                       Collection::Create(tmp.Join("indexed"), "indexed", typed, opts));

  std::mt19937 rng(5);
  std::vector<json> payloads;
  std::vector<Point> pts;
  const char* words[] = {"alpha", "beta", "gamma", "delta", "prefix-1", "prefix-2"};
  for (int i = 0; i < 2000; ++i) {
    json p = json::object();
    if (rng() % 10) p["kw"] = words[rng() % 6];
    if (rng() % 10) p["n"] = int(rng() % 100) - 50;
    if (rng() % 10) p["f"] = double(rng() % 1000) / 10.0;
    if (rng() % 10) p["b"] = bool(rng() % 2);
    if (rng() % 10) p["ts"] = fmt::format("2024-01-{:02d}T00:00:00Z", 1 + rng() % 28);
    if (rng() % 3) {
      json t = json::array();
      for (unsigned k = 0; k < rng() % 4; ++k) t.push_back(words[rng() % 6]);
      p["tags"] = t;
    }
    if (rng() % 7 == 0) p["kw"] = nullptr;
    payloads.push_back(p);
    Point pt;
    pt.id = PointId::Number(uint64_t(i));
    pt.vectors.push_back({"", {float(i), 1, 2, 3}});
    pt.payload = p.dump();
    pts.push_back(std::move(pt));
  }
  for (size_t i = 0; i < pts.size(); i += 300) {
    std::span<const Point> chunk(pts.data() + i, std::min<size_t>(300, pts.size() - i));
    ASSERT_OK(plain->Upsert(chunk));
    ASSERT_OK(indexed->Upsert(chunk));
  }
  // Some deletes, so the live bitmaps matter.
  std::vector<PointId> del;
  for (int i = 0; i < 2000; i += 13) del.push_back(PointId::Number(uint64_t(i)));
  ASSERT_OK(plain->Delete(del));
  ASSERT_OK(indexed->Delete(del));
  ASSERT_GE(indexed->Info().segments, 3u);

  const char* exprs[] = {
      R"(kw == "beta")",
      R"(kw in ["alpha", "gamma"])",
      R"(kw != "alpha")",
      R"(kw not in ["alpha", "beta"])",
      R"(kw like "prefix%")",
      R"(kw like "%a")",
      "n == 3",
      "n in [1, 2, 3]",
      "n > 10",
      "-5 <= n < 5",
      "n == 2.5",
      "f >= 50.5",
      "f == 10",
      "b == true",
      R"(ts >= "2024-01-10" and ts < "2024-01-20")",
      R"(tags == "beta")",
      R"(tags in ["delta", "prefix-2"])",
      R"(kw == "beta" and n > 0)",
      R"(kw == "beta" or f < 10)",
      R"(not (kw == "beta") and b == false)",
      R"((kw == "alpha" or kw == "beta") and not (n < 0 or f > 50))",
      "kw is null",
      "exists n",
      "$id in [1, 2, 3, 13, 1999] or n == 7",
      "false or n == 1",
  };
  for (const char* e : exprs) {
    ASSERT_OK_AND_ASSIGN(Filter f, ParseFilterExpression(e));
    size_t oracle = 0;
    for (int i = 0; i < 2000; ++i) {
      if (i % 13 == 0) continue;
      oracle += internal::RowMatches(f, payloads[i], PointId::Number(uint64_t(i)));
    }
    ASSERT_OK_AND_ASSIGN(size_t a, plain->Count(f));
    ASSERT_OK_AND_ASSIGN(size_t b, indexed->Count(f));
    EXPECT_EQ(oracle, a) << e;
    EXPECT_EQ(oracle, b) << e;
    ScrollRequest sr;
    sr.filter = f;
    sr.limit = 5000;
    ASSERT_OK_AND_ASSIGN(ScrollResult s1, plain->Scroll(sr));
    ASSERT_OK_AND_ASSIGN(ScrollResult s2, indexed->Scroll(sr));
    ASSERT_EQ(s1.points.size(), s2.points.size()) << e;
    for (size_t i = 0; i < s1.points.size(); ++i) EXPECT_EQ(s1.points[i].id, s2.points[i].id) << e;
  }
  // An index created later answers the same.
  ASSERT_OK(plain->CreatePayloadIndex("kw", PayloadType::kKeyword));
  ASSERT_OK_AND_ASSIGN(Filter f, ParseFilterExpression(R"(kw like "prefix%")"));
  ASSERT_OK_AND_ASSIGN(size_t a, plain->Count(f));
  ASSERT_OK_AND_ASSIGN(size_t b, indexed->Count(f));
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace strata::vector
