// The CORS configuration parser and matcher (src/s3/cors.h), from the S3
// API reference (PutBucketCors, CORSRule) and the user guide's "How does
// Amazon S3 evaluate the CORS configuration on a bucket?".
#include "s3/cors.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "s3/errors.h"
#include "s3/frontend_fixture.h"

namespace strata::s3 {
namespace {

std::string Doc(const std::string& rules) {
  return "<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" + rules +
         "</CORSConfiguration>";
}

std::string Rule(const std::string& body) { return "<CORSRule>" + body + "</CORSRule>"; }

std::string CodeOf(const Result<CorsConfig>& r) {
  return r.ok() ? std::string("OK") : ToS3Error(r.error()).code;
}

// The AWS user guide's example configuration.
const char* const kGuideExample =
    "<CORSConfiguration>"
    "<CORSRule><ID>rule-1</ID><AllowedOrigin>http://www.example1.com</AllowedOrigin>"
    "<AllowedMethod>PUT</AllowedMethod><AllowedMethod>POST</AllowedMethod>"
    "<AllowedMethod>DELETE</AllowedMethod><AllowedHeader>*</AllowedHeader></CORSRule>"
    "<CORSRule><AllowedOrigin>http://*.example2.com</AllowedOrigin>"
    "<AllowedMethod>PUT</AllowedMethod><AllowedHeader>x-amz-*</AllowedHeader>"
    "<AllowedHeader>Content-Type</AllowedHeader>"
    "<ExposeHeader>x-amz-server-side-encryption</ExposeHeader><ExposeHeader>ETag</ExposeHeader>"
    "<MaxAgeSeconds>3000</MaxAgeSeconds></CORSRule>"
    "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>"
    "</CORSConfiguration>";

TEST(CorsTest, ParsesTheGuideExampleAndRoundTrips) {
  auto r = ParseCorsConfig(kGuideExample);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->rules.size(), 3u);
  EXPECT_EQ(r->rules[0].id, "rule-1");
  EXPECT_EQ(r->rules[0].methods, (std::vector<std::string>{"PUT", "POST", "DELETE"}));
  EXPECT_EQ(r->rules[1].expose_headers,
            (std::vector<std::string>{"x-amz-server-side-encryption", "ETag"}));
  EXPECT_EQ(r->rules[1].max_age_seconds, 3000);
  EXPECT_FALSE(r->rules[2].max_age_seconds.has_value());
  // What GetBucketCors answers parses to the same rules.
  auto again = ParseCorsConfig(CorsConfigXml(*r));
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  ASSERT_EQ(again->rules.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(again->rules[i].id, r->rules[i].id);
    EXPECT_EQ(again->rules[i].origins, r->rules[i].origins);
    EXPECT_EQ(again->rules[i].methods, r->rules[i].methods);
    EXPECT_EQ(again->rules[i].allowed_headers, r->rules[i].allowed_headers);
    EXPECT_EQ(again->rules[i].expose_headers, r->rules[i].expose_headers);
    EXPECT_EQ(again->rules[i].max_age_seconds, r->rules[i].max_age_seconds);
  }
}

TEST(CorsTest, SchemaViolationsAreMalformedXml) {
  const std::string ok_rule =
      Rule("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>");
  EXPECT_EQ(CodeOf(ParseCorsConfig("")), "MalformedXML");
  EXPECT_EQ(CodeOf(ParseCorsConfig("<CORSConfiguration>")), "MalformedXML");
  EXPECT_EQ(CodeOf(ParseCorsConfig(Doc(""))), "MalformedXML");  // no rule
  EXPECT_EQ(CodeOf(ParseCorsConfig("<Other>" + ok_rule + "</Other>")), "MalformedXML");
  EXPECT_EQ(CodeOf(ParseCorsConfig(Doc(Rule("<AllowedMethod>GET</AllowedMethod>")))),
            "MalformedXML");  // no origin
  EXPECT_EQ(CodeOf(ParseCorsConfig(Doc(Rule("<AllowedOrigin>*</AllowedOrigin>")))),
            "MalformedXML");  // no method
  EXPECT_EQ(CodeOf(ParseCorsConfig(Doc(
                Rule("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><Foo/>")))),
            "MalformedXML");
  EXPECT_EQ(
      CodeOf(ParseCorsConfig(Doc(Rule("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET"
                                      "</AllowedMethod><MaxAgeSeconds>soon</MaxAgeSeconds>")))),
      "MalformedXML");
  std::string many;
  for (int i = 0; i < 100; ++i) many += ok_rule;
  EXPECT_EQ(CodeOf(ParseCorsConfig(Doc(many))), "OK");
  EXPECT_EQ(CodeOf(ParseCorsConfig(Doc(many + ok_rule))), "MalformedXML");  // 101 rules
  std::string big =
      Doc(Rule("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>" +
               std::string("<AllowedHeader>") + std::string(70000, 'h') + "</AllowedHeader>"));
  EXPECT_EQ(CodeOf(ParseCorsConfig(big)), "MalformedXML");  // over 64 KB
}

TEST(CorsTest, RefusedValuesAreInvalidRequest) {
  auto with = [](const std::string& extra, const std::string& method = "GET") {
    return ParseCorsConfig(Doc(Rule("<AllowedOrigin>http://a.com</AllowedOrigin><AllowedMethod>" +
                                    method + "</AllowedMethod>" + extra)));
  };
  auto bad_method = with("", "PATCH");
  EXPECT_EQ(CodeOf(bad_method), "InvalidRequest");
  EXPECT_NE(bad_method.error().message().find("Unsupported method is PATCH"), std::string::npos);
  EXPECT_EQ(CodeOf(with("", "get")), "InvalidRequest");  // methods are upper case
  EXPECT_EQ(CodeOf(with("", "OPTIONS")), "InvalidRequest");
  EXPECT_EQ(CodeOf(with("<AllowedOrigin>http://*.*.com</AllowedOrigin>")), "InvalidRequest");
  EXPECT_EQ(CodeOf(with("<AllowedHeader>x-*-*</AllowedHeader>")), "InvalidRequest");
  EXPECT_EQ(CodeOf(with("<ExposeHeader>*</ExposeHeader>")), "InvalidRequest");
  EXPECT_EQ(CodeOf(with("<ID>" + std::string(256, 'i') + "</ID>")), "InvalidRequest");
  EXPECT_EQ(CodeOf(with("<ID>" + std::string(255, 'i') + "</ID>")), "OK");
  for (const char* m : {"GET", "PUT", "POST", "DELETE", "HEAD"})
    EXPECT_EQ(CodeOf(with("", m)), "OK");
}

TEST(CorsTest, PatternsHoldOneWildcard) {
  EXPECT_TRUE(CorsPatternMatch("*", "", false));
  EXPECT_TRUE(CorsPatternMatch("*", "http://x.com", false));
  EXPECT_TRUE(CorsPatternMatch("http://*.example.com", "http://a.b.example.com", false));
  EXPECT_FALSE(CorsPatternMatch("http://*.example.com", "http://example.com", false));
  EXPECT_FALSE(CorsPatternMatch("http://*.example.com", "https://a.example.com", false));
  EXPECT_TRUE(CorsPatternMatch("https://a.com:*", "https://a.com:8443", false));
  EXPECT_FALSE(CorsPatternMatch("http://a.com", "http://A.com", false));  // origins: exact case
  EXPECT_TRUE(CorsPatternMatch("X-Amz-*", "x-amz-date", true));           // headers: any case
  EXPECT_FALSE(CorsPatternMatch("ab*ba", "aba", false));  // head and tail may not overlap
}

TEST(CorsTest, TheFirstRuleThatAllowsTheRequestWins) {
  auto cfg = ParseCorsConfig(kGuideExample);
  ASSERT_TRUE(cfg.ok());
  const std::vector<std::string> none;
  const std::vector<std::string> amz = SplitHeaderList(" X-Amz-Date , content-type,");
  EXPECT_EQ(amz, (std::vector<std::string>{"x-amz-date", "content-type"}));
  EXPECT_EQ(MatchCorsRule(*cfg, "http://www.example1.com", "PUT", &amz), &cfg->rules[0]);
  EXPECT_EQ(MatchCorsRule(*cfg, "http://app.example2.com", "PUT", &amz), &cfg->rules[1]);
  // A header rule 2 does not allow; no other rule allows PUT from there.
  const std::vector<std::string> other = {"x-custom"};
  EXPECT_EQ(MatchCorsRule(*cfg, "http://app.example2.com", "PUT", &other), nullptr);
  // Actual requests: headers are not checked.
  EXPECT_EQ(MatchCorsRule(*cfg, "http://app.example2.com", "PUT", nullptr), &cfg->rules[1]);
  // GET from anywhere (rule 3), without request headers; with one, no AllowedHeader matches.
  EXPECT_EQ(MatchCorsRule(*cfg, "http://evil.org", "GET", &none), &cfg->rules[2]);
  EXPECT_EQ(MatchCorsRule(*cfg, "http://evil.org", "GET", &amz), nullptr);
  EXPECT_EQ(MatchCorsRule(*cfg, "http://evil.org", "DELETE", &none), nullptr);
  EXPECT_EQ(MatchCorsRule(*cfg, "http://www.example1.com", "HEAD", &none), nullptr);
  EXPECT_EQ(MatchCorsRule(*cfg, "http://www.example1.com", "put", &none), nullptr);
}

TEST(CorsTest, ResponseHeaders) {
  auto cfg = ParseCorsConfig(kGuideExample);
  ASSERT_TRUE(cfg.ok());
  auto find = [](const HeaderList& h, const std::string& name) -> std::string {
    for (const auto& [n, v] : h)
      if (n == name) return v;
    return "<absent>";
  };
  const std::vector<std::string> req = {"x-amz-date", "content-type"};
  HeaderList h = CorsResponseHeaders(cfg->rules[1], "http://app.example2.com", &req);
  EXPECT_EQ(find(h, "Access-Control-Allow-Origin"), "http://app.example2.com");
  EXPECT_EQ(find(h, "Access-Control-Allow-Credentials"), "true");
  EXPECT_EQ(find(h, "Access-Control-Allow-Methods"), "PUT");
  EXPECT_EQ(find(h, "Access-Control-Allow-Headers"), "x-amz-date, content-type");
  EXPECT_EQ(find(h, "Access-Control-Expose-Headers"), "x-amz-server-side-encryption, ETag");
  EXPECT_EQ(find(h, "Access-Control-Max-Age"), "3000");
  EXPECT_NE(find(h, "Vary").find("Origin"), std::string::npos);
  // A "*" origin answers "*", without credentials; an actual request gets no Allow-Headers.
  h = CorsResponseHeaders(cfg->rules[2], "http://evil.org", nullptr);
  EXPECT_EQ(find(h, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(find(h, "Access-Control-Allow-Credentials"), "<absent>");
  EXPECT_EQ(find(h, "Access-Control-Allow-Headers"), "<absent>");
  EXPECT_EQ(find(h, "Access-Control-Max-Age"), "<absent>");
}

// The handlers through the frontend (no socket): a refused document keeps the
// stored one; preflights are anonymous; actual requests and their errors carry
// the headers.
class CorsFrontendTest : public s3test::FrontendTest {};

TEST_F(CorsFrontendTest, PreflightAndActualRequests) {
  CreateBucket("web");
  auto none = Get("/web?cors");
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(s3test::First(none.body, "Code"), "NoSuchCORSConfiguration");
  const std::string doc =
      Doc(Rule("<AllowedOrigin>https://*.app.test</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
               "<AllowedHeader>x-amz-*</AllowedHeader><ExposeHeader>ETag</ExposeHeader>"));
  ASSERT_EQ(Put("/web?cors", doc).status, 200);
  auto bad = Put("/web?cors", Doc(Rule("<AllowedOrigin>*</AllowedOrigin>"
                                       "<AllowedMethod>TRACE</AllowedMethod>")));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(s3test::First(bad.body, "Code"), "InvalidRequest");
  auto got = Get("/web?cors");
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(s3test::First(got.body, "AllowedOrigin"), "https://*.app.test") << got.body;

  Call pre{"OPTIONS",
           "/web/k",
           {{"Origin", "https://ui.app.test"},
            {"Access-Control-Request-Method", "GET"},
            {"Access-Control-Request-Headers", "x-amz-date"}}};
  pre.access_key = "";
  auto ok = Send(pre);
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(s3test::Header(ok, "Access-Control-Allow-Origin"), "https://ui.app.test");
  EXPECT_EQ(s3test::Header(ok, "Access-Control-Allow-Headers"), "x-amz-date");
  pre.headers[1].second = "PUT";
  auto refused = Send(pre);
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(s3test::First(refused.body, "Code"), "AccessForbidden");

  auto missing = Get("/web/nothing", {{"Origin", "https://ui.app.test"}});
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(s3test::Header(missing, "Access-Control-Allow-Origin"), "https://ui.app.test");
  EXPECT_EQ(s3test::Header(missing, "Access-Control-Expose-Headers"), "ETag");
  auto other = Get("/web/nothing", {{"Origin", "https://evil.test"}});
  EXPECT_EQ(s3test::Header(other, "Access-Control-Allow-Origin"), "");

  ASSERT_EQ(Send({"DELETE", "/web?cors"}).status, 204);
  auto gone = Send(pre);
  EXPECT_EQ(gone.status, 403);
  EXPECT_NE(gone.body.find("CORS is not enabled"), std::string::npos) << gone.body;
}

}  // namespace
}  // namespace strata::s3
