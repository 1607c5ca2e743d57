// Object Lock rules, from the S3 User Guide ("Locking objects with Object
// Lock": retention modes, legal holds, extending and shortening retention
// periods) and the API Reference (PutObjectLockConfiguration,
// PutObjectRetention, PutObjectLegalHold): the documents, the stored forms,
// and which deletes and retention changes S3 refuses.
#include "s3/object_lock.h"

#include <string>

#include <gtest/gtest.h>

#include <strata/core/strings.h>

#include "s3/errors.h"

namespace strata::s3 {
namespace {

constexpr int64_t kDay = 86400LL * 1'000'000'000;
constexpr int64_t kNow = 1'800'000'000LL * 1'000'000'000;  // 2027-01-15

std::string Code(const Status& st) { return ToS3Error(st).code; }

TEST(ObjectLockConfigTest, ParsesTheDocumentsOfTheApiReference) {
  auto c = ParseObjectLockXml(
      "<ObjectLockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>"
      "<Mode>COMPLIANCE</Mode><Days>30</Days></DefaultRetention></Rule>"
      "</ObjectLockConfiguration>");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->mode, LockMode::kCompliance);
  EXPECT_EQ(c->days, 30u);
  EXPECT_EQ(c->years, 0u);
  auto y = ParseObjectLockXml(
      "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>"
      "<DefaultRetention><Mode>GOVERNANCE</Mode><Years>2</Years></DefaultRetention></Rule>"
      "</ObjectLockConfiguration>");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->mode, LockMode::kGovernance);
  EXPECT_EQ(y->years, 2u);
  auto bare = ParseObjectLockXml(
      "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>"
      "</ObjectLockConfiguration>");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->mode, LockMode::kNone);
}

TEST(ObjectLockConfigTest, RefusesWhatS3Refuses) {
  auto bad = [](const std::string& inner) {
    auto c = ParseObjectLockXml("<ObjectLockConfiguration>" + inner + "</ObjectLockConfiguration>");
    return c.ok() ? std::string("ok") : Code(c.error());
  };
  const std::string en = "<ObjectLockEnabled>Enabled</ObjectLockEnabled>";
  EXPECT_EQ(bad(""), "MalformedXML");  // ObjectLockEnabled is required
  EXPECT_EQ(bad("<ObjectLockEnabled>Disabled</ObjectLockEnabled>"), "MalformedXML");
  EXPECT_EQ(bad(en + "<Rule></Rule>"), "MalformedXML");
  EXPECT_EQ(bad(en + "<Rule><DefaultRetention><Mode>STRICT</Mode><Days>1</Days>"
                     "</DefaultRetention></Rule>"),
            "MalformedXML");
  EXPECT_EQ(bad(en + "<Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days>"
                     "<Years>1</Years></DefaultRetention></Rule>"),
            "MalformedXML");
  EXPECT_EQ(bad(en + "<Rule><DefaultRetention><Mode>GOVERNANCE</Mode></DefaultRetention></Rule>"),
            "MalformedXML");
  EXPECT_EQ(bad(en + "<Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>0</Days>"
                     "</DefaultRetention></Rule>"),
            "InvalidArgument");
  EXPECT_EQ(bad(en + "<Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>-3</Days>"
                     "</DefaultRetention></Rule>"),
            "InvalidArgument");
  EXPECT_EQ(bad("<Wrong/>"), "MalformedXML");
}

TEST(ObjectLockConfigTest, StoredFormRoundTrips) {
  for (const ObjectLockConfig& c :
       {ObjectLockConfig{}, ObjectLockConfig{LockMode::kGovernance, 30, 0},
        ObjectLockConfig{LockMode::kCompliance, 0, 5}}) {
    auto d = DecodeObjectLock(EncodeObjectLock(c));
    ASSERT_TRUE(d.has_value()) << EncodeObjectLock(c);
    EXPECT_EQ(d->mode, c.mode);
    EXPECT_EQ(d->days, c.days);
    EXPECT_EQ(d->years, c.years);
    auto again = ParseObjectLockXml(ObjectLockXml(c));
    ASSERT_TRUE(again.ok()) << ObjectLockXml(c);
    EXPECT_EQ(again->mode, c.mode);
  }
  EXPECT_FALSE(DecodeObjectLock("").has_value());
  EXPECT_FALSE(DecodeObjectLock("Enabled FOO 3d").has_value());
  EXPECT_FALSE(DecodeObjectLock("Enabled GOVERNANCE 0d").has_value());
}

TEST(ObjectLockConfigTest, DefaultRetentionCountsDaysAndCalendarYears) {
  const int64_t t = *ParseIso8601("2024-02-29T10:00:00Z");
  EXPECT_EQ(DefaultRetainUntil({LockMode::kGovernance, 1, 0}, t),
            *ParseIso8601("2024-03-01T10:00:00Z"));
  EXPECT_EQ(DefaultRetainUntil({LockMode::kGovernance, 0, 1}, t),
            *ParseIso8601("2025-03-01T10:00:00Z"));  // no 29 February in 2025
  EXPECT_EQ(DefaultRetainUntil({LockMode::kCompliance, 0, 4}, t),
            *ParseIso8601("2028-02-29T10:00:00Z"));
  EXPECT_EQ(DefaultRetainUntil({}, t), 0);
}

TEST(RetentionTest, DocumentsParse) {
  auto r = ParseRetentionXml(
      "<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2030-01-01T00:00:00.000Z"
      "</RetainUntilDate></Retention>");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mode, LockMode::kGovernance);
  EXPECT_EQ(r->until_ns, *ParseIso8601("2030-01-01T00:00:00Z"));
  auto empty = ParseRetentionXml("<Retention/>");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->mode, LockMode::kNone);
  EXPECT_FALSE(ParseRetentionXml("<Retention><Mode>GOVERNANCE</Mode></Retention>").ok());
  EXPECT_FALSE(ParseRetentionXml("<Retention><Mode>X</Mode><RetainUntilDate>2030-01-01T00:00:00Z"
                                 "</RetainUntilDate></Retention>")
                   .ok());
  EXPECT_FALSE(ParseRetentionXml("<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>soon"
                                 "</RetainUntilDate></Retention>")
                   .ok());
  // Written documents parse back to the same retention, "none" included.
  for (const Retention& in :
       {Retention{}, Retention{LockMode::kCompliance, *ParseIso8601("2262-04-11T23:47:16Z")}}) {
    auto back = ParseRetentionXml(RetentionXml(in));
    ASSERT_TRUE(back.ok()) << RetentionXml(in);
    EXPECT_EQ(back->mode, in.mode);
    if (in.mode != LockMode::kNone) EXPECT_EQ(back->until_ns, in.until_ns);
  }
  auto hold = ParseLegalHoldXml("<LegalHold><Status>ON</Status></LegalHold>");
  ASSERT_TRUE(hold.ok());
  EXPECT_TRUE(*hold);
  EXPECT_FALSE(*ParseLegalHoldXml("<LegalHold><Status>OFF</Status></LegalHold>"));
  EXPECT_FALSE(ParseLegalHoldXml("<LegalHold><Status>on</Status></LegalHold>").ok());
}

TEST(RetentionTest, DeletesRefusedWhileLocked) {
  objstore::ObjectMeta m;
  EXPECT_TRUE(CheckVersionDeletable(m, kNow, false).ok());  // never locked
  SetRetention(m, {LockMode::kGovernance, kNow + kDay});
  EXPECT_EQ(Code(CheckVersionDeletable(m, kNow, false)), "AccessDenied");
  EXPECT_TRUE(CheckVersionDeletable(m, kNow, true).ok());          // governance: bypass lifts it
  EXPECT_TRUE(CheckVersionDeletable(m, kNow + kDay, false).ok());  // ended
  SetRetention(m, {LockMode::kCompliance, kNow + kDay});
  EXPECT_EQ(Code(CheckVersionDeletable(m, kNow, true)), "AccessDenied");  // no bypass of compliance
  EXPECT_TRUE(CheckVersionDeletable(m, kNow + 2 * kDay, false).ok());
  SetLegalHold(m, true);
  EXPECT_EQ(Code(CheckVersionDeletable(m, kNow + 2 * kDay, true)), "AccessDenied");
  SetLegalHold(m, false);
  EXPECT_TRUE(CheckVersionDeletable(m, kNow + 2 * kDay, true).ok());
  SetRetention(m, {});
  EXPECT_EQ(RetentionOf(m).mode, LockMode::kNone);
  // An entry that does not read back is a lock that never ends.
  m.internal[kLockModeMeta] = "COMPLIANCE";
  m.internal[kLockUntilMeta] = "garbage";
  EXPECT_EQ(Code(CheckVersionDeletable(m, kNow + 1000 * kDay, true)), "AccessDenied");
}

TEST(RetentionTest, ChangesFollowTheModes) {
  const Retention gov{LockMode::kGovernance, kNow + 10 * kDay};
  const Retention comp{LockMode::kCompliance, kNow + 10 * kDay};
  const Retention none{};
  auto change = [](const Retention& cur, const Retention& next, bool bypass) {
    Status st = CheckRetentionChange(cur, next, kNow, bypass);
    return st.ok() ? std::string("ok") : Code(st);
  };
  // Extending is always allowed; a new retention must end in the future.
  EXPECT_EQ(change(none, gov, false), "ok");
  EXPECT_EQ(change(none, {LockMode::kGovernance, kNow - 1}, false), "InvalidArgument");
  EXPECT_EQ(change(gov, {LockMode::kGovernance, kNow + 20 * kDay}, false), "ok");
  EXPECT_EQ(change(comp, {LockMode::kCompliance, kNow + 20 * kDay}, false), "ok");
  EXPECT_EQ(change(gov, comp, false), "ok");  // governance -> compliance strengthens
  // Governance: shortening, removing, needs the bypass.
  EXPECT_EQ(change(gov, {LockMode::kGovernance, kNow + kDay}, false), "AccessDenied");
  EXPECT_EQ(change(gov, {LockMode::kGovernance, kNow + kDay}, true), "ok");
  EXPECT_EQ(change(gov, none, false), "AccessDenied");
  EXPECT_EQ(change(gov, none, true), "ok");
  // Compliance: never shortened, removed or turned into governance.
  EXPECT_EQ(change(comp, {LockMode::kCompliance, kNow + kDay}, true), "AccessDenied");
  EXPECT_EQ(change(comp, none, true), "AccessDenied");
  EXPECT_EQ(change(comp, {LockMode::kGovernance, kNow + 20 * kDay}, true), "AccessDenied");
  // An ended retention is no longer a lock.
  EXPECT_EQ(change({LockMode::kCompliance, kNow - 1}, none, false), "ok");
}

}  // namespace
}  // namespace strata::s3
