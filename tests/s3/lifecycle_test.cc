// Bucket lifecycle: the configuration's parsing and validation (AWS S3 API
// Reference, PutBucketLifecycleConfiguration, and the errors S3 answers), rule
// matching and S3's expiry rounding (User Guide, "Lifecycle rules: based on an
// object's age"), the worker over a real engine with a clock the test moves,
// the noncurrent-version step through a store that reports versions, and the
// S3 operations and x-amz-expiration header through the frontend.
#include "s3/lifecycle.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/checksum.h>
#include <strata/core/clock.h>
#include <strata/core/strings.h>
#include <strata/s3/lifecycle.h>

#include "s3/errors.h"
#include "s3/frontend_fixture.h"
#include "testutil/testutil.h"

namespace strata::s3 {
namespace {

using s3test::First;
using s3test::Header;

constexpr int64_t kDay = kDayNanos;
// 2014-01-15T10:30:00Z, the User Guide's example object.
const int64_t kJan15 = (DaysFromCivil(2014, 1, 15) * 86400 + 10 * 3600 + 30 * 60) * 1'000'000'000;

std::string Doc(const std::string& rules) {
  return "<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" + rules +
         "</LifecycleConfiguration>";
}

std::string Rule(const std::string& body, const std::string& id = "r1",
                 const std::string& status = "Enabled") {
  return "<Rule><ID>" + id + "</ID><Status>" + status + "</Status>" + body + "</Rule>";
}

// The S3 error code ParseLifecycle answers ("" when it accepts the document).
std::string CodeOf(const std::string& xml) {
  auto r = ParseLifecycle(xml);
  if (r.ok()) return "";
  return ToS3Error(r.error()).code;
}

TEST(LifecycleParseTest, EveryFilterFormRoundTrips) {
  const std::string xml =
      Doc(Rule("<Filter><Prefix>logs/</Prefix></Filter><Expiration><Days>30</Days></Expiration>",
               "prefix") +
          Rule("<Filter><Tag><Key>tier</Key><Value>tmp</Value></Tag></Filter>"
               "<Expiration><Date>2030-01-01T00:00:00.000Z</Date></Expiration>",
               "tag") +
          Rule("<Filter><ObjectSizeGreaterThan>1024</ObjectSizeGreaterThan></Filter>"
               "<Expiration><Days>1</Days></Expiration>",
               "big") +
          Rule("<Filter><And><Prefix>a/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>"
               "<ObjectSizeGreaterThan>10</ObjectSizeGreaterThan>"
               "<ObjectSizeLessThan>100</ObjectSizeLessThan></And></Filter>"
               "<Expiration><Days>2</Days></Expiration>",
               "and", "Disabled") +
          Rule("<Prefix>tmp/</Prefix><AbortIncompleteMultipartUpload><DaysAfterInitiation>7"
               "</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
               "legacy") +
          Rule("<Filter/><Expiration><Days>365</Days></Expiration>", "all"));
  ASSERT_OK_AND_ASSIGN(LifecycleConfig c, ParseLifecycle(xml));
  ASSERT_EQ(c.rules.size(), 6u);
  EXPECT_EQ(c.rules[0].filter.prefix, "logs/");
  EXPECT_EQ(*c.rules[0].expiration_days, 30);
  EXPECT_EQ(c.rules[1].filter.tags.at(0).second, "tmp");
  EXPECT_EQ(*c.rules[1].expiration_date_ns, DaysFromCivil(2030, 1, 1) * kDay);
  EXPECT_EQ(*c.rules[2].filter.size_greater, 1024u);
  EXPECT_FALSE(c.rules[3].enabled);
  EXPECT_EQ(*c.rules[3].filter.size_less, 100u);
  EXPECT_EQ(c.rules[4].filter.form, LifecycleFilter::Form::kLegacyPrefix);
  EXPECT_EQ(*c.rules[4].abort_days, 7);
  EXPECT_EQ(c.rules[5].filter.form, LifecycleFilter::Form::kEmpty);

  // What GetBucketLifecycleConfiguration returns reads back to the same rules.
  const std::string out = SerializeLifecycle(c);
  ASSERT_OK_AND_ASSIGN(LifecycleConfig again, ParseLifecycle(out));
  EXPECT_EQ(SerializeLifecycle(again), out);
  EXPECT_NE(out.find("<Date>2030-01-01T00:00:00.000Z</Date>"), std::string::npos) << out;
  EXPECT_NE(out.find("<Rule><ID>legacy</ID><Prefix>tmp/</Prefix>"), std::string::npos) << out;
  EXPECT_NE(out.find("<Filter></Filter>"), std::string::npos) << out;
}

TEST(LifecycleParseTest, RulesWithoutIdGetUniqueOnes) {
  ASSERT_OK_AND_ASSIGN(
      LifecycleConfig c,
      ParseLifecycle(Doc("<Rule><Status>Enabled</Status><Filter/><Expiration><Days>1</Days>"
                         "</Expiration></Rule>" +
                         Rule("<Filter/><Expiration><Days>2</Days></Expiration>", "rule-1"))));
  ASSERT_EQ(c.rules.size(), 2u);
  EXPECT_FALSE(c.rules[0].id.empty());
  EXPECT_NE(c.rules[0].id, c.rules[1].id);
}

TEST(LifecycleParseTest, ErrorsAsS3AnswersThem) {
  const std::string exp = "<Expiration><Days>1</Days></Expiration>";
  EXPECT_EQ(CodeOf("<LifecycleConfiguration>"), "MalformedXML");
  EXPECT_EQ(CodeOf("<Other/>"), "MalformedXML");
  EXPECT_EQ(CodeOf(Doc("")), "MalformedXML");  // no rule
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/>" + exp, "x", "On"))), "MalformedXML");
  EXPECT_EQ(CodeOf(Doc(Rule(exp))), "MalformedXML");  // neither Filter nor Prefix
  EXPECT_EQ(CodeOf(Doc(Rule("<Prefix>a</Prefix><Filter/>" + exp))), "MalformedXML");
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>"
                            "</Filter>" +
                            exp))),
            "MalformedXML");  // two conditions without <And>
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/><Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z"
                            "</Date></Expiration>"))),
            "MalformedXML");
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/><Expiration><Days>x</Days></Expiration>"))), "MalformedXML");
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/><Expiration><Days>0</Days></Expiration>"))),
            "InvalidArgument");
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/><Expiration><Days>-3</Days></Expiration>"))),
            "InvalidArgument");
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/><Expiration><Date>2030-01-01T12:00:00Z</Date>"
                            "</Expiration>"))),
            "InvalidArgument");  // not at midnight UTC
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/><Expiration><Date>2030-01-01T00:00:00+01:00</Date>"
                            "</Expiration>"))),
            "InvalidArgument");  // midnight, but not UTC
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/>" + exp, "same") + Rule("<Filter/>" + exp, "same"))),
            "InvalidArgument");
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/>" + exp, std::string(256, 'i')))), "InvalidArgument");
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/>"))), "InvalidRequest");  // no action
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>"
                            "<AbortIncompleteMultipartUpload><DaysAfterInitiation>1"
                            "</DaysAfterInitiation></AbortIncompleteMultipartUpload>"))),
            "InvalidRequest");
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/><AbortIncompleteMultipartUpload><DaysAfterInitiation>0"
                            "</DaysAfterInitiation></AbortIncompleteMultipartUpload>"))),
            "InvalidArgument");
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/><NoncurrentVersionExpiration><NoncurrentDays>0"
                            "</NoncurrentDays></NoncurrentVersionExpiration>"))),
            "InvalidArgument");
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter><And><ObjectSizeGreaterThan>100</ObjectSizeGreaterThan>"
                            "<ObjectSizeLessThan>100</ObjectSizeLessThan></And></Filter>" +
                            exp))),
            "InvalidArgument");
  EXPECT_EQ(CodeOf(Doc(Rule("<Filter/><Transition><Days>30</Days><StorageClass>GLACIER"
                            "</StorageClass></Transition>"))),
            "NotImplemented");
  std::string many;
  for (int i = 0; i < 1001; ++i) many += Rule("<Filter/>" + exp, "r" + std::to_string(i));
  EXPECT_EQ(CodeOf(Doc(many)), "MalformedXML");
  many.clear();
  for (int i = 0; i < 1000; ++i) many += Rule("<Filter/>" + exp, "r" + std::to_string(i));
  EXPECT_EQ(CodeOf(Doc(many)), "");
}

TEST(LifecycleMatchTest, ExpiryRoundsToTheNextMidnightUtc) {
  // The User Guide: created 2014-01-15 10:30 UTC with Days=3 expires 2014-01-19 00:00 UTC.
  EXPECT_EQ(ExpiryAfterDays(kJan15, 3), DaysFromCivil(2014, 1, 19) * kDay);
  EXPECT_EQ(ExpiryAfterDays(DaysFromCivil(2014, 1, 15) * kDay, 1),
            DaysFromCivil(2014, 1, 17) * kDay);
}

TEST(LifecycleMatchTest, FiltersByPrefixTagsAndSize) {
  std::map<std::string, std::string> tags = {{"tier", "tmp"}, {"team", "ml"}};
  LifecycleObject o{"logs/2024/a", 500, kJan15, &tags};
  LifecycleFilter f;
  f.prefix = "logs/";
  EXPECT_TRUE(FilterMatches(f, o));
  f.prefix = "log/x";
  EXPECT_FALSE(FilterMatches(f, o));
  f.prefix = "";
  f.tags = {{"tier", "tmp"}};
  EXPECT_TRUE(FilterMatches(f, o));
  f.tags = {{"tier", "tmp"}, {"team", "web"}};
  EXPECT_FALSE(FilterMatches(f, o));
  LifecycleObject untagged{"logs/b", 500, kJan15, nullptr};
  f.tags = {{"tier", "tmp"}};
  EXPECT_FALSE(FilterMatches(f, untagged));
  f.tags.clear();
  f.size_greater = 500;  // strictly greater
  EXPECT_FALSE(FilterMatches(f, o));
  f.size_greater = 499;
  f.size_less = 501;
  EXPECT_TRUE(FilterMatches(f, o));
  f.size_less = 500;
  EXPECT_FALSE(FilterMatches(f, o));
}

TEST(LifecycleMatchTest, EarliestEnabledRuleWins) {
  ASSERT_OK_AND_ASSIGN(
      LifecycleConfig c,
      ParseLifecycle(
          Doc(Rule("<Filter><Prefix>a/</Prefix></Filter><Expiration><Days>10</Days></Expiration>",
                   "ten") +
              Rule("<Filter><Prefix>a/</Prefix></Filter><Expiration><Days>2</Days></Expiration>",
                   "two-disabled", "Disabled") +
              Rule("<Filter/><Expiration><Days>5</Days></Expiration>", "five") +
              Rule("<Filter><Prefix>b/</Prefix></Filter><Expiration><Days>1</Days></Expiration>",
                   "b"))));
  LifecycleObject o{"a/x", 1, kJan15, nullptr};
  auto m = EarliestExpiry(c, o);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule->id, "five");
  EXPECT_EQ(m->at_ns, DaysFromCivil(2014, 1, 21) * kDay);
}

TEST(LifecycleMatchTest, NoncurrentKeepsTheNewestAndExpiresOldOnes) {
  ASSERT_OK_AND_ASSIGN(
      LifecycleConfig c,
      ParseLifecycle(Doc(Rule("<Filter><Prefix>m/</Prefix></Filter><NoncurrentVersionExpiration>"
                              "<NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>2"
                              "</NewerNoncurrentVersions></NoncurrentVersionExpiration>"))));
  const int64_t t0 = DaysFromCivil(2024, 3, 1) * kDay;
  std::vector<NoncurrentView> v;  // newest first, all noncurrent since day 0, 1, 2, 3
  for (int i = 0; i < 4; ++i) v.push_back({t0 - i * kDay, {"m/k", 10, 0, nullptr}});
  // Day 2: all are a day old or more; the two newest are kept.
  EXPECT_EQ(NoncurrentToExpire(c, "m/k", v, t0 + 2 * kDay), (std::vector<size_t>{2, 3}));
  // A version noncurrent for less than NoncurrentDays (rounded) stays.
  EXPECT_EQ(NoncurrentToExpire(c, "m/k", v, t0 - kDay / 2), (std::vector<size_t>{3}));
  EXPECT_TRUE(NoncurrentToExpire(c, "other/k", v, t0 + 9 * kDay).empty());
}

// ---- the worker over a real engine ------------------------------------------

class StringSource final : public objstore::ByteSource {
 public:
  explicit StringSource(std::string s) : s_(std::move(s)) {}
  Result<size_t> Read(char* buf, size_t n) override {
    n = std::min(n, s_.size() - pos_);
    std::copy_n(s_.data() + pos_, n, buf);
    pos_ += n;
    return n;
  }

 private:
  std::string s_;
  size_t pos_ = 0;
};

class LifecycleWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(engine_, s3test::OpenTestEngine(dir_.Join("data")));
    ASSERT_OK(engine_->CreateBucket("b", "owner"));
    store_ = NewEngineLifecycleStore(engine_.get());
  }
  void Put(const std::string& key, size_t size, std::map<std::string, std::string> tags = {}) {
    StringSource src(std::string(size, 'x'));
    objstore::PutOptions o;
    o.meta.tags = std::move(tags);
    ASSERT_OK(engine_->PutObject("b", key, src, std::move(o)));
  }
  bool Exists(const std::string& key) { return engine_->HeadObject("b", key).ok(); }
  void Configure(const std::string& rules) {
    ASSERT_OK_AND_ASSIGN(LifecycleConfig c, ParseLifecycle(Doc(rules)));
    ASSERT_OK(engine_->SetBucketConfig("b", kLifecycleConfig, SerializeLifecycle(c)));
  }
  LifecycleOptions Options() {
    LifecycleOptions o;
    o.page_keys = 2;  // several pages even for a handful of keys
    o.page_pause_ms = 0;
    o.max_actions_per_sec = 0;
    o.clock = [this] { return now_; };
    return o;
  }

  testing::TempDir dir_;
  std::unique_ptr<objstore::LocalEngine> engine_;
  std::unique_ptr<LifecycleStore> store_;
  int64_t now_ = NowUnixNanos();
};

TEST_F(LifecycleWorkerTest, ExpiresByPrefixTagAndSizeWhenTheClockPasses) {
  Put("logs/a", 10);
  Put("logs/b", 10);
  Put("keep/a", 10);
  Put("scratch/t", 10, {{"tier", "tmp"}});
  Put("scratch/u", 10, {{"tier", "gold"}});
  Put("big/x", 5000);
  Put("big/y", 50);
  Configure(Rule("<Filter><Prefix>logs/</Prefix></Filter><Expiration><Days>1</Days></Expiration>",
                 "logs") +
            Rule("<Filter><Tag><Key>tier</Key><Value>tmp</Value></Tag></Filter>"
                 "<Expiration><Days>1</Days></Expiration>",
                 "tmp") +
            Rule("<Filter><ObjectSizeGreaterThan>1000</ObjectSizeGreaterThan></Filter>"
                 "<Expiration><Days>1</Days></Expiration>",
                 "big") +
            Rule("<Filter><Prefix>keep/</Prefix></Filter><Expiration><Days>1</Days></Expiration>",
                 "off", "Disabled"));
  LifecycleWorker w(store_.get(), Options());
  ASSERT_OK(w.RunPass());
  EXPECT_EQ(w.stats().objects_expired, 0u);  // nothing is a day old yet
  EXPECT_EQ(w.stats().objects_scanned, 7u);
  now_ += 2 * kDay;
  ASSERT_OK(w.RunPass());
  EXPECT_FALSE(Exists("logs/a"));
  EXPECT_FALSE(Exists("logs/b"));
  EXPECT_FALSE(Exists("scratch/t"));
  EXPECT_FALSE(Exists("big/x"));
  EXPECT_TRUE(Exists("keep/a"));
  EXPECT_TRUE(Exists("scratch/u"));
  EXPECT_TRUE(Exists("big/y"));
  EXPECT_EQ(w.stats().objects_expired, 4u);
  EXPECT_EQ(w.stats().passes, 2u);
  EXPECT_EQ(w.stats().last_pass_unix_ns, now_);
  EXPECT_EQ(w.stats().errors, 0u);
}

TEST_F(LifecycleWorkerTest, DateRuleAndAbortOfIncompleteUploads) {
  Put("old/a", 1);
  ASSERT_OK_AND_ASSIGN(std::string up, engine_->CreateMultipartUpload("b", "tmp/big", {}));
  ASSERT_OK_AND_ASSIGN(std::string other, engine_->CreateMultipartUpload("b", "data/x", {}));
  const int64_t midnight = (now_ / kDay + 2) * kDay;
  Configure(Rule("<Filter><Prefix>old/</Prefix></Filter><Expiration><Date>" +
                     FormatIso8601(midnight) + "</Date></Expiration>",
                 "date") +
            Rule("<Filter><Prefix>tmp/</Prefix></Filter><AbortIncompleteMultipartUpload>"
                 "<DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
                 "abort"));
  LifecycleWorker w(store_.get(), Options());
  ASSERT_OK(w.RunPass());
  EXPECT_TRUE(Exists("old/a"));
  ASSERT_OK_AND_ASSIGN(auto ups, engine_->ListMultipartUploads("b", ""));
  EXPECT_EQ(ups.size(), 2u);
  now_ = midnight;
  ASSERT_OK(w.RunPass());
  EXPECT_FALSE(Exists("old/a"));
  ASSERT_OK_AND_ASSIGN(ups, engine_->ListMultipartUploads("b", ""));
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].upload_id, other);
  EXPECT_EQ(w.stats().uploads_aborted, 1u);
  (void)up;
}

TEST_F(LifecycleWorkerTest, AnOverwriteAfterTheListingIsNotLost) {
  Put("logs/a", 10);
  ASSERT_OK_AND_ASSIGN(objstore::ObjectMeta seen, engine_->HeadObject("b", "logs/a"));
  Put("logs/a", 20);  // a new PUT lands between the listing and the delete
  EXPECT_STATUS_CODE(store_->ExpireCurrent("b", seen), StatusCode::kPreconditionFailed);
  ASSERT_OK_AND_ASSIGN(objstore::ObjectMeta now, engine_->HeadObject("b", "logs/a"));
  EXPECT_EQ(now.size, 20u);
  EXPECT_OK(store_->ExpireCurrent("b", now));
  EXPECT_FALSE(Exists("logs/a"));
  EXPECT_OK(store_->ExpireCurrent("b", now));  // already gone: OK
}

TEST_F(LifecycleWorkerTest, StopInterruptsABackgroundPass) {
  for (int i = 0; i < 20; ++i) Put("k/" + std::to_string(i), 1);
  Configure(Rule("<Filter/><Expiration><Days>1</Days></Expiration>"));
  LifecycleOptions o = Options();
  o.page_pause_ms = 60'000;  // a pass would take minutes
  o.interval_ms = 60'000;
  LifecycleWorker w(store_.get(), o);
  w.Start();
  const int64_t start = MonotonicNanos();
  w.Stop();
  EXPECT_LT(MonotonicNanos() - start, 10'000'000'000);
}

TEST_F(LifecycleWorkerTest, DeletesArePacedToTheRate) {
  for (int i = 0; i < 6; ++i) Put("k/" + std::to_string(i), 1);
  Configure(Rule("<Filter/><Expiration><Days>1</Days></Expiration>"));
  LifecycleOptions o = Options();
  o.max_actions_per_sec = 20;  // one every 50 ms
  LifecycleWorker w(store_.get(), o);
  now_ += 3 * kDay;
  const int64_t start = MonotonicNanos();
  ASSERT_OK(w.RunPass());
  // Six deletes are five gaps apart: never sooner than 250 ms.
  EXPECT_GE(MonotonicNanos() - start, 240'000'000);
  EXPECT_EQ(w.stats().objects_expired, 6u);
}

// A store that reports noncurrent versions for keys (as a versioned engine
// will) over the real engine's current objects.
class VersionedFake final : public LifecycleStore {
 public:
  explicit VersionedFake(LifecycleStore* base) : base_(base) {}
  Result<std::vector<objstore::BucketInfo>> ListBuckets() override { return base_->ListBuckets(); }
  Result<LifecyclePage> ListCurrent(std::string_view b, std::string_view after, int n) override {
    return base_->ListCurrent(b, after, n);
  }
  Result<objstore::ObjectMeta> Head(std::string_view b, std::string_view k) override {
    return base_->Head(b, k);
  }
  Status ExpireCurrent(std::string_view b, const objstore::ObjectMeta& m) override {
    return base_->ExpireCurrent(b, m);
  }
  Result<std::vector<NoncurrentVersion>> NoncurrentVersions(std::string_view, std::string_view key,
                                                            bool) override {
    return versions[std::string(key)];
  }
  Status DeleteVersion(std::string_view, std::string_view key, std::string_view id,
                       int64_t) override {
    deleted.push_back(std::string(key) + "@" + std::string(id));
    return Status::Ok();
  }
  Result<std::vector<objstore::MultipartUpload>> ListUploads(std::string_view b) override {
    return base_->ListUploads(b);
  }
  Status AbortUpload(std::string_view b, std::string_view k, std::string_view id) override {
    return base_->AbortUpload(b, k, id);
  }
  std::map<std::string, std::vector<NoncurrentVersion>> versions;
  std::vector<std::string> deleted;

 private:
  LifecycleStore* base_;
};

TEST_F(LifecycleWorkerTest, NoncurrentVersionsGoThroughTheStore) {
  Put("m/k", 1);
  Put("n/k", 1);
  Configure(
      Rule("<Filter><Prefix>m/</Prefix></Filter><NoncurrentVersionExpiration>"
           "<NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>1"
           "</NewerNoncurrentVersions></NoncurrentVersionExpiration>"));
  VersionedFake fake(store_.get());
  for (const char* key : {"m/k", "n/k"}) {
    for (int i = 0; i < 3; ++i)
      fake.versions[key].push_back({"v" + std::to_string(i), now_ - i * kDay, 1, {}});
  }
  LifecycleWorker w(&fake, Options());
  now_ += 3 * kDay;
  ASSERT_OK(w.RunPass());
  EXPECT_EQ(fake.deleted, (std::vector<std::string>{"m/k@v1", "m/k@v2"}));
  EXPECT_EQ(w.stats().noncurrent_expired, 2u);
  EXPECT_TRUE(Exists("m/k"));  // the current version stays
}

// ---- the S3 operations ------------------------------------------------------

class LifecycleApiTest : public s3test::FrontendTest {
 protected:
  void SetUp() override {
    FrontendTest::SetUp();
    CreateBucket("bkt");
  }
  http::RecordedResponse PutConfig(const std::string& xml, bool md5 = true) {
    s3test::Headers h;
    if (md5) h.emplace_back("Content-MD5", Base64Encode(Md5(xml)));
    return Put("/bkt?lifecycle", xml, h);
  }
};

TEST_F(LifecycleApiTest, PutGetDelete) {
  auto none = Get("/bkt?lifecycle");
  ExpectError(none, 404, "NoSuchLifecycleConfiguration", "/bkt");
  const std::string xml = Doc(Rule(
      "<Filter><Prefix>logs/</Prefix></Filter><Expiration><Days>3</Days></Expiration>", "logs"));
  auto put = PutConfig(xml);
  ASSERT_EQ(put.status, 200) << put.body;
  auto get = Get("/bkt?lifecycle");
  ASSERT_EQ(get.status, 200) << get.body;
  EXPECT_EQ(First(get.body, "ID"), "logs");
  EXPECT_EQ(First(get.body, "Prefix"), "logs/");
  EXPECT_EQ(First(get.body, "Days"), "3");
  auto del = Send({.method = "DELETE", .target = "/bkt?lifecycle"});
  EXPECT_EQ(del.status, 204);
  ExpectError(Get("/bkt?lifecycle"), 404, "NoSuchLifecycleConfiguration", "/bkt");
  ExpectError(Get("/nobkt?lifecycle"), 404, "NoSuchBucket", "/nobkt");
}

TEST_F(LifecycleApiTest, RefusalsChangeNothing) {
  const std::string good =
      Doc(Rule("<Filter/><Expiration><Days>30</Days></Expiration>", "keep-me"));
  ASSERT_EQ(PutConfig(good).status, 200);
  // S3 requires an integrity header on this operation.
  ExpectError(PutConfig(Doc(Rule("<Filter/><Expiration><Days>1</Days></Expiration>")), false), 400,
              "InvalidRequest", "/bkt");
  ExpectError(PutConfig(Doc(Rule("<Filter/><Expiration><Days>0</Days></Expiration>"))), 400,
              "InvalidArgument", "/bkt");
  ExpectError(PutConfig("<LifecycleConfiguration><Rule>"), 400, "MalformedXML", "/bkt");
  ExpectError(PutConfig(Doc(Rule("<Filter/><Transition><Days>1</Days><StorageClass>GLACIER"
                                 "</StorageClass></Transition>"))),
              501, "NotImplemented", "/bkt");
  ExpectError(PutConfig(Doc(Rule("<Filter/><NoncurrentVersionExpiration><NoncurrentDays>0"
                                 "</NoncurrentDays></NoncurrentVersionExpiration>"))),
              400, "InvalidArgument", "/bkt");
  auto get = Get("/bkt?lifecycle");
  ASSERT_EQ(get.status, 200);
  EXPECT_EQ(First(get.body, "ID"), "keep-me") << get.body;
  EXPECT_EQ(First(get.body, "Days"), "30") << get.body;
}

// The actions on versions are kept as S3 keeps them (the worker applies them
// in versioned buckets; tests/integration/test_lifecycle.py versioned_bucket).
TEST_F(LifecycleApiTest, VersionActionsAreStored) {
  ASSERT_EQ(PutConfig(Doc(Rule("<Filter/><NoncurrentVersionExpiration><NoncurrentDays>7"
                               "</NoncurrentDays><NewerNoncurrentVersions>3"
                               "</NewerNoncurrentVersions></NoncurrentVersionExpiration>",
                               "nc") +
                          Rule("<Filter/><Expiration><ExpiredObjectDeleteMarker>true"
                               "</ExpiredObjectDeleteMarker></Expiration>",
                               "dm")))
                .status,
            200);
  auto get = Get("/bkt?lifecycle");
  ASSERT_EQ(get.status, 200);
  EXPECT_EQ(First(get.body, "NoncurrentDays"), "7") << get.body;
  EXPECT_EQ(First(get.body, "NewerNoncurrentVersions"), "3") << get.body;
  EXPECT_EQ(First(get.body, "ExpiredObjectDeleteMarker"), "true") << get.body;
}

TEST_F(LifecycleApiTest, ExpirationHeaderOnGetAndHead) {
  ASSERT_EQ(Put("/bkt/logs/a", "hello").status, 200);
  ASSERT_EQ(Put("/bkt/other", "hello").status, 200);
  EXPECT_FALSE(Get("/bkt/logs/a").Header("x-amz-expiration").has_value());
  ASSERT_EQ(PutConfig(Doc(Rule("<Filter><Prefix>logs/</Prefix></Filter><Expiration><Days>3"
                               "</Days></Expiration>",
                               "logs-rule")))
                .status,
            200);
  ASSERT_OK_AND_ASSIGN(objstore::ObjectMeta m, engine_->HeadObject("bkt", "logs/a"));
  const std::string want = "expiry-date=\"" + FormatHttpDate(ExpiryAfterDays(m.mtime_ns, 3)) +
                           "\", rule-id=\"logs-rule\"";
  EXPECT_EQ(Header(Get("/bkt/logs/a"), "x-amz-expiration"), want);
  EXPECT_EQ(Header(Send({.method = "HEAD", .target = "/bkt/logs/a"}), "x-amz-expiration"), want);
  EXPECT_NE(want.find(" 00:00:00 GMT"), std::string::npos) << want;
  EXPECT_FALSE(Get("/bkt/other").Header("x-amz-expiration").has_value());
}

}  // namespace
}  // namespace strata::s3
