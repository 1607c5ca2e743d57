#include "s3/object_lock.h"

#include <fmt/format.h>
#include <pugixml.hpp>

#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/xml.h"

namespace strata::s3 {

using objstore::ObjectMeta;

namespace {

constexpr int64_t kNanosPerDay = 86400LL * 1'000'000'000;
// S3 caps a default retention period; more than this is refused.
constexpr uint64_t kMaxDays = 36500;
constexpr uint64_t kMaxYears = 100;

Status Locked() {
  return MakeError("AccessDenied", "Access Denied because object protected by object lock.");
}

}  // namespace

std::string_view LockModeName(LockMode m) {
  switch (m) {
    case LockMode::kGovernance:
      return "GOVERNANCE";
    case LockMode::kCompliance:
      return "COMPLIANCE";
    case LockMode::kNone:
      break;
  }
  return "";
}

LockMode ParseLockMode(std::string_view s) {
  if (s == "GOVERNANCE") return LockMode::kGovernance;
  if (s == "COMPLIANCE") return LockMode::kCompliance;
  return LockMode::kNone;
}

Result<ObjectLockConfig> ParseObjectLockXml(std::string_view xml) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node root, LoadRoot(doc, xml, "ObjectLockConfiguration"));
  if (Trim(Child(root, "ObjectLockEnabled").text().get()) != "Enabled")
    return MalformedXml("ObjectLockEnabled must be Enabled");
  ObjectLockConfig c;
  pugi::xml_node rule = Child(root, "Rule");
  if (!rule) return c;
  pugi::xml_node dr = Child(rule, "DefaultRetention");
  if (!dr) return MalformedXml("a Rule needs a DefaultRetention");
  c.mode = ParseLockMode(Trim(Child(dr, "Mode").text().get()));
  if (c.mode == LockMode::kNone) return MalformedXml("Mode must be GOVERNANCE or COMPLIANCE");
  pugi::xml_node days = Child(dr, "Days");
  pugi::xml_node years = Child(dr, "Years");
  if (static_cast<bool>(days) == static_cast<bool>(years))
    return MalformedXml("DefaultRetention takes exactly one of Days and Years");
  const std::string_view text = Trim((days ? days : years).text().get());
  const std::optional<uint64_t> n = ParseUint64(text);
  if (!n || *n == 0)
    return MakeError("InvalidArgument",
                     "Default retention period must be a positive integer value");
  if (*n > (days ? kMaxDays : kMaxYears))
    return MakeError("InvalidArgument",
                     fmt::format("Default retention period too large: at most {} days or {} years",
                                 kMaxDays, kMaxYears));
  (days ? c.days : c.years) = static_cast<uint32_t>(*n);
  return c;
}

std::string ObjectLockXml(const ObjectLockConfig& c) {
  XmlWriter x("ObjectLockConfiguration");
  x.Elem("ObjectLockEnabled", "Enabled");
  if (c.mode != LockMode::kNone) {
    x.Open("Rule").Open("DefaultRetention").Elem("Mode", LockModeName(c.mode));
    if (c.days != 0)
      x.Elem("Days", static_cast<uint64_t>(c.days));
    else
      x.Elem("Years", static_cast<uint64_t>(c.years));
    x.Close("DefaultRetention").Close("Rule");
  }
  return x.Finish();
}

std::string EncodeObjectLock(const ObjectLockConfig& c) {
  if (c.mode == LockMode::kNone) return "Enabled";
  return fmt::format("Enabled {} {}{}", LockModeName(c.mode), c.days != 0 ? c.days : c.years,
                     c.days != 0 ? 'd' : 'y');
}

std::optional<ObjectLockConfig> DecodeObjectLock(std::string_view stored) {
  std::vector<std::string_view> f = Split(stored, ' ');
  ObjectLockConfig c;
  if (f.empty() || f[0] != "Enabled") return std::nullopt;
  if (f.size() == 1) return c;
  if (f.size() != 3 || f[2].size() < 2) return std::nullopt;
  c.mode = ParseLockMode(f[1]);
  const char unit = f[2].back();
  const std::optional<uint64_t> n = ParseUint64(f[2].substr(0, f[2].size() - 1));
  if (c.mode == LockMode::kNone || !n || *n == 0 || (unit != 'd' && unit != 'y'))
    return std::nullopt;
  if (*n > (unit == 'd' ? kMaxDays : kMaxYears)) return std::nullopt;
  (unit == 'd' ? c.days : c.years) = static_cast<uint32_t>(*n);
  return c;
}

int64_t DefaultRetainUntil(const ObjectLockConfig& c, int64_t from_ns) {
  if (c.mode == LockMode::kNone) return 0;
  if (c.days != 0) return from_ns + static_cast<int64_t>(c.days) * kNanosPerDay;
  // Calendar years: the same day and time of day, `years` later (29 February
  // becomes 1 March in a year without it).
  int64_t day = from_ns >= 0 ? from_ns / kNanosPerDay : (from_ns - kNanosPerDay + 1) / kNanosPerDay;
  const int64_t in_day = from_ns - day * kNanosPerDay;
  int64_t y = 0;
  unsigned m = 0, d = 0;
  CivilFromDays(day, &y, &m, &d);
  y += c.years;
  int64_t out = DaysFromCivil(y, m, 1) + (d - 1);
  return out * kNanosPerDay + in_day;
}

Result<Retention> ParseRetentionXml(std::string_view xml) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node root, LoadRoot(doc, xml, "Retention"));
  pugi::xml_node mode = Child(root, "Mode");
  pugi::xml_node date = Child(root, "RetainUntilDate");
  Retention r;
  if (!mode && !date) return r;
  if (!mode || !date) return MalformedXml("Retention needs both Mode and RetainUntilDate");
  r.mode = ParseLockMode(Trim(mode.text().get()));
  if (r.mode == LockMode::kNone) return MalformedXml("Mode must be GOVERNANCE or COMPLIANCE");
  std::optional<int64_t> t = ParseIso8601(Trim(date.text().get()));
  if (!t) return MalformedXml("RetainUntilDate must be an ISO 8601 date and time");
  r.until_ns = *t;
  return r;
}

std::string RetentionXml(const Retention& r) {
  XmlWriter x("Retention");
  // No retention is the empty document, which ParseRetentionXml reads back as
  // none (a Mode of "" would not parse: a fuzzer found the round trip broken).
  if (r.mode == LockMode::kNone) return x.Finish();
  x.Elem("Mode", LockModeName(r.mode)).Elem("RetainUntilDate", FormatIso8601(r.until_ns));
  return x.Finish();
}

Result<bool> ParseLegalHoldXml(std::string_view xml) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node root, LoadRoot(doc, xml, "LegalHold"));
  const std::string_view s = Trim(Child(root, "Status").text().get());
  if (s == "ON") return true;
  if (s == "OFF") return false;
  return MalformedXml("LegalHold Status must be ON or OFF");
}

std::string LegalHoldXml(bool on) {
  XmlWriter x("LegalHold");
  x.Elem("Status", on ? "ON" : "OFF");
  return x.Finish();
}

Retention RetentionOf(const ObjectMeta& m) {
  Retention r;
  auto mode = m.internal.find(kLockModeMeta);
  auto until = m.internal.find(kLockUntilMeta);
  if (mode == m.internal.end() || until == m.internal.end()) return r;
  const std::optional<int64_t> t = ParseInt64(until->second);
  r.mode = ParseLockMode(mode->second);
  // An unreadable entry reads as a retention that never ends: kept, not freed.
  if (r.mode == LockMode::kNone) r.mode = LockMode::kCompliance;
  r.until_ns = t ? *t : INT64_MAX;
  return r;
}

std::optional<bool> LegalHoldOf(const ObjectMeta& m) {
  auto it = m.internal.find(kLegalHoldMeta);
  if (it == m.internal.end()) return std::nullopt;
  return it->second != "OFF";  // unreadable: on
}

void SetRetention(ObjectMeta& m, const Retention& r) {
  if (r.mode == LockMode::kNone) {
    m.internal.erase(kLockModeMeta);
    m.internal.erase(kLockUntilMeta);
    return;
  }
  m.internal[kLockModeMeta] = std::string(LockModeName(r.mode));
  m.internal[kLockUntilMeta] = std::to_string(r.until_ns);
}

void SetLegalHold(ObjectMeta& m, bool on) { m.internal[kLegalHoldMeta] = on ? "ON" : "OFF"; }

Status CheckVersionDeletable(const ObjectMeta& m, int64_t now_ns, bool bypass_governance) {
  if (LegalHoldOf(m).value_or(false)) return Locked();
  const Retention r = RetentionOf(m);
  if (r.mode == LockMode::kNone || r.until_ns <= now_ns) return Status::Ok();
  if (r.mode == LockMode::kGovernance && bypass_governance) return Status::Ok();
  return Locked();
}

Status CheckRetentionChange(const Retention& cur, const Retention& next, int64_t now_ns,
                            bool bypass_governance) {
  if (next.mode != LockMode::kNone && next.until_ns <= now_ns)
    return MakeError("InvalidArgument", "The retain until date must be in the future!");
  if (cur.mode == LockMode::kNone || cur.until_ns <= now_ns) return Status::Ok();
  const bool weakens = next.mode == LockMode::kNone || next.until_ns < cur.until_ns ||
                       (cur.mode == LockMode::kCompliance && next.mode != LockMode::kCompliance);
  if (!weakens) return Status::Ok();
  if (cur.mode == LockMode::kGovernance && bypass_governance) return Status::Ok();
  return Locked();
}

}  // namespace strata::s3
