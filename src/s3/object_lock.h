// S3 Object Lock, the rules without the HTTP: a bucket's lock configuration
// (enabled, default retention), an object version's retention (GOVERNANCE or
// COMPLIANCE until a date) and legal hold, and the decisions S3 makes with
// them: may this version be deleted now, may its retention be changed so.
// The handlers are in object_lock_handlers.cc.
//
// Where it is kept: the bucket config "object-lock" ("Enabled", or
// "Enabled GOVERNANCE 30d" / "Enabled COMPLIANCE 2y" with a default rule), and
// per version the ObjectMeta::internal entries "lock-mode", "lock-until"
// (Unix nanoseconds) and "legal-hold" ("ON" or "OFF").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <strata/core/result.h>
#include <strata/objstore/local_engine.h>

namespace strata::s3 {

inline constexpr char kObjectLockConfig[] = "object-lock";
inline constexpr char kLockModeMeta[] = "lock-mode";
inline constexpr char kLockUntilMeta[] = "lock-until";
inline constexpr char kLegalHoldMeta[] = "legal-hold";

enum class LockMode { kNone, kGovernance, kCompliance };

std::string_view LockModeName(LockMode m);  // "GOVERNANCE", "COMPLIANCE", ""
// "GOVERNANCE" / "COMPLIANCE" (as S3, upper case only); kNone otherwise.
LockMode ParseLockMode(std::string_view s);

struct ObjectLockConfig {
  LockMode mode = LockMode::kNone;  // the default rule's; kNone: no default retention
  uint32_t days = 0;                // exactly one of days and years when mode is set
  uint32_t years = 0;
};

// <ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>
// <Rule><DefaultRetention><Mode/><Days/>|<Years/></DefaultRetention></Rule>?</...>
Result<ObjectLockConfig> ParseObjectLockXml(std::string_view xml);
std::string ObjectLockXml(const ObjectLockConfig& c);
std::string EncodeObjectLock(const ObjectLockConfig& c);
// nullopt: not a stored configuration (the caller treats the bucket as locked
// with no default rule, the safe reading).
std::optional<ObjectLockConfig> DecodeObjectLock(std::string_view stored);
// When the default rule's retention of a version written at from_ns ends
// (years are calendar years, as S3 counts them).
int64_t DefaultRetainUntil(const ObjectLockConfig& c, int64_t from_ns);

struct Retention {
  LockMode mode = LockMode::kNone;
  int64_t until_ns = 0;
};

// <Retention><Mode/><RetainUntilDate/></Retention>; both absent: no retention
// (a request to remove it).
Result<Retention> ParseRetentionXml(std::string_view xml);
std::string RetentionXml(const Retention& r);
// <LegalHold><Status>ON|OFF</Status></LegalHold>
Result<bool> ParseLegalHoldXml(std::string_view xml);
std::string LegalHoldXml(bool on);

// A version's lock state as stored (kNone / nullopt when never set).
Retention RetentionOf(const objstore::ObjectMeta& m);
std::optional<bool> LegalHoldOf(const objstore::ObjectMeta& m);
void SetRetention(objstore::ObjectMeta& m, const Retention& r);  // kNone removes it
void SetLegalHold(objstore::ObjectMeta& m, bool on);

// Whether the version may be removed at now_ns: OK, or AccessDenied when a
// legal hold is on, a COMPLIANCE retention has not ended, or a GOVERNANCE one
// has not ended and the caller did not bypass it.
Status CheckVersionDeletable(const objstore::ObjectMeta& m, int64_t now_ns, bool bypass_governance);
// Whether `next` may replace the version's retention `cur` at now_ns. An
// active retention may be extended, and GOVERNANCE turned into COMPLIANCE;
// shortening, removing or COMPLIANCE -> GOVERNANCE is refused (AccessDenied)
// for COMPLIANCE always, for GOVERNANCE unless bypassed. `next` must end in
// the future (InvalidArgument) unless it removes the retention.
Status CheckRetentionChange(const Retention& cur, const Retention& next, int64_t now_ns,
                            bool bypass_governance);

}  // namespace strata::s3
