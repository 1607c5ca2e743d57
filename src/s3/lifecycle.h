// Bucket lifecycle configurations (S3 API Reference, PutBucketLifecycleConfiguration):
// the parsed document, its validation with the errors S3 answers, the XML
// GetBucketLifecycleConfiguration returns, and the rule arithmetic shared by
// the background worker (lifecycle_worker.cc) and the x-amz-expiration header.
//
// Stored as the bucket config "lifecycle" (LocalEngine::SetBucketConfig) in the
// canonical form SerializeLifecycle writes, which ParseLifecycle reads back.
// Value types only; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <strata/core/result.h>

namespace strata::s3 {

inline constexpr char kLifecycleConfig[] = "lifecycle";
// The bucket config holding the versioning state ("Enabled"/"Suspended"; the
// engine reads it too).
inline constexpr char kVersioningConfig[] = "versioning";
inline constexpr int64_t kDayNanos = 86'400'000'000'000;

// Which objects a rule applies to. All conditions given must hold (And).
struct LifecycleFilter {
  enum class Form {
    kLegacyPrefix,  // <Rule><Prefix> (no <Filter>)
    kEmpty,         // <Filter/>: every object
    kPrefix,
    kTag,
    kSizeGreater,
    kSizeLess,
    kAnd,
  };
  Form form = Form::kEmpty;
  std::string prefix;
  std::vector<std::pair<std::string, std::string>> tags;
  std::optional<uint64_t> size_greater;  // ObjectSizeGreaterThan (strictly)
  std::optional<uint64_t> size_less;     // ObjectSizeLessThan (strictly)

  bool has_tags() const { return !tags.empty(); }
};

struct LifecycleRule {
  std::string id;
  bool enabled = false;
  LifecycleFilter filter;
  std::optional<int64_t> expiration_days;
  std::optional<int64_t> expiration_date_ns;  // midnight UTC
  std::optional<bool> expired_object_delete_marker;
  // NoncurrentVersionExpiration.
  std::optional<int64_t> noncurrent_days;
  std::optional<int64_t> newer_noncurrent_versions;
  // AbortIncompleteMultipartUpload.
  std::optional<int64_t> abort_days;

  bool has_expiration() const { return expiration_days || expiration_date_ns; }
  bool has_noncurrent() const { return noncurrent_days.has_value(); }
  // Actions that need a versioned bucket (noncurrent versions, delete markers).
  bool uses_versioning() const {
    return noncurrent_days || expired_object_delete_marker.value_or(false);
  }
};

struct LifecycleConfig {
  std::vector<LifecycleRule> rules;
};

// Parses and validates a <LifecycleConfiguration> as S3 does: MalformedXML for a
// document that does not follow the schema, InvalidArgument for out-of-range
// values (Days <= 0, a Date not at midnight UTC, duplicate or over-long IDs),
// InvalidRequest for combinations S3 refuses (no action, tags with
// AbortIncompleteMultipartUpload or ExpiredObjectDeleteMarker), NotImplemented
// for Transition / NoncurrentVersionTransition (storage classes).
Result<LifecycleConfig> ParseLifecycle(std::string_view xml);
// The document GetBucketLifecycleConfiguration returns (also the stored form).
std::string SerializeLifecycle(const LifecycleConfig& config);

// What the rule matching sees of one object.
struct LifecycleObject {
  std::string_view key;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  const std::map<std::string, std::string>* tags = nullptr;  // nullptr: none
};

bool FilterMatches(const LifecycleFilter& f, const LifecycleObject& o);

// S3's rounding: the object's time plus `days`, rounded up to the next midnight
// UTC (an object created 2014-01-15 10:30 with Days=3 expires 2014-01-19 00:00).
int64_t ExpiryAfterDays(int64_t since_ns, int64_t days);

// When the current version expires under a rule (nullopt: the rule does not
// expire it: disabled, not matching, or no Expiration Days/Date).
std::optional<int64_t> RuleExpiry(const LifecycleRule& r, const LifecycleObject& o);

// The earliest expiration of the object among the enabled rules, with the rule's ID.
struct ExpiryMatch {
  int64_t at_ns = 0;
  const LifecycleRule* rule = nullptr;
};
std::optional<ExpiryMatch> EarliestExpiry(const LifecycleConfig& c, const LifecycleObject& o);

// A noncurrent version as the store reports it (see LifecycleStore in
// <strata/s3/lifecycle.h>): newest first.
struct NoncurrentView {
  int64_t noncurrent_since_ns = 0;  // when a newer version replaced it
  LifecycleObject object;
};
// Indexes (into `versions`, newest first) that the rules expire at `now_ns`:
// a version older than NoncurrentDays (S3 rounding) beyond the
// NewerNoncurrentVersions newest ones kept.
std::vector<size_t> NoncurrentToExpire(const LifecycleConfig& c, std::string_view key,
                                       const std::vector<NoncurrentView>& versions, int64_t now_ns);

}  // namespace strata::s3
