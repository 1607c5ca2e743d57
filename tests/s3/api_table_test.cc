// docs/s3.md's operations table against the routing table: every operation of
// the Amazon S3 API Reference is listed once as `supported` or
// `NotImplemented`; a supported one has a row that implements it; every row
// that implements an operation is listed as supported; a NotImplemented one
// has no implementing row. Other work adds rows and flips the doc's status in
// the same change, and this test keeps the two in step.
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/strings.h>

#include "s3/router.h"

namespace strata::s3 {
namespace {

// The "Amazon S3" operations of the API reference, AbortMultipartUpload to
// WriteGetObjectResponse.
const char* const kS3Operations[] = {
    "AbortMultipartUpload",
    "CompleteMultipartUpload",
    "CopyObject",
    "CreateBucket",
    "CreateBucketMetadataConfiguration",
    "CreateBucketMetadataTableConfiguration",
    "CreateMultipartUpload",
    "CreateSession",
    "DeleteBucket",
    "DeleteBucketAnalyticsConfiguration",
    "DeleteBucketCors",
    "DeleteBucketEncryption",
    "DeleteBucketIntelligentTieringConfiguration",
    "DeleteBucketInventoryConfiguration",
    "DeleteBucketLifecycle",
    "DeleteBucketMetadataConfiguration",
    "DeleteBucketMetadataTableConfiguration",
    "DeleteBucketMetricsConfiguration",
    "DeleteBucketOwnershipControls",
    "DeleteBucketPolicy",
    "DeleteBucketReplication",
    "DeleteBucketTagging",
    "DeleteBucketWebsite",
    "DeleteObject",
    "DeleteObjectTagging",
    "DeleteObjects",
    "DeletePublicAccessBlock",
    "GetBucketAbac",
    "GetBucketAccelerateConfiguration",
    "GetBucketAcl",
    "GetBucketAnalyticsConfiguration",
    "GetBucketCors",
    "GetBucketEncryption",
    "GetBucketIntelligentTieringConfiguration",
    "GetBucketInventoryConfiguration",
    "GetBucketLifecycle",
    "GetBucketLifecycleConfiguration",
    "GetBucketLocation",
    "GetBucketLogging",
    "GetBucketMetadataConfiguration",
    "GetBucketMetadataTableConfiguration",
    "GetBucketMetricsConfiguration",
    "GetBucketNotification",
    "GetBucketNotificationConfiguration",
    "GetBucketOwnershipControls",
    "GetBucketPolicy",
    "GetBucketPolicyStatus",
    "GetBucketReplication",
    "GetBucketRequestPayment",
    "GetBucketTagging",
    "GetBucketVersioning",
    "GetBucketWebsite",
    "GetObject",
    "GetObjectAcl",
    "GetObjectAttributes",
    "GetObjectLegalHold",
    "GetObjectLockConfiguration",
    "GetObjectRetention",
    "GetObjectTagging",
    "GetObjectTorrent",
    "GetPublicAccessBlock",
    "HeadBucket",
    "HeadObject",
    "ListBucketAnalyticsConfigurations",
    "ListBucketIntelligentTieringConfigurations",
    "ListBucketInventoryConfigurations",
    "ListBucketMetricsConfigurations",
    "ListBuckets",
    "ListDirectoryBuckets",
    "ListMultipartUploads",
    "ListObjectVersions",
    "ListObjects",
    "ListObjectsV2",
    "ListParts",
    "PutBucketAbac",
    "PutBucketAccelerateConfiguration",
    "PutBucketAcl",
    "PutBucketAnalyticsConfiguration",
    "PutBucketCors",
    "PutBucketEncryption",
    "PutBucketIntelligentTieringConfiguration",
    "PutBucketInventoryConfiguration",
    "PutBucketLifecycle",
    "PutBucketLifecycleConfiguration",
    "PutBucketLogging",
    "PutBucketMetricsConfiguration",
    "PutBucketNotification",
    "PutBucketNotificationConfiguration",
    "PutBucketOwnershipControls",
    "PutBucketPolicy",
    "PutBucketReplication",
    "PutBucketRequestPayment",
    "PutBucketTagging",
    "PutBucketVersioning",
    "PutBucketWebsite",
    "PutObject",
    "PutObjectAcl",
    "PutObjectLegalHold",
    "PutObjectLockConfiguration",
    "PutObjectRetention",
    "PutObjectTagging",
    "PutPublicAccessBlock",
    "RenameObject",
    "RestoreObject",
    "SelectObjectContent",
    "UpdateBucketMetadataInventoryTableConfiguration",
    "UpdateBucketMetadataJournalTableConfiguration",
    "UpdateObjectEncryption",
    "UploadPart",
    "UploadPartCopy",
    "WriteGetObjectResponse",
};

// Operations that are the same request as another (one row serves both).
const std::map<std::string, std::string> kSameRequestAs = {
    {"GetBucketLifecycle", "GetBucketLifecycleConfiguration"},
    {"PutBucketLifecycle", "PutBucketLifecycleConfiguration"},
};

// Operation -> status from the `| Operation | Status |` table.
std::map<std::string, std::string> ReadDocTable(std::vector<std::string>* duplicates) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/docs/s3.md");
  EXPECT_TRUE(in.good()) << "docs/s3.md not found under " << STRATA_SOURCE_DIR;
  std::map<std::string, std::string> out;
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    std::string_view l = Trim(line);
    if (!in_table) {
      in_table = l == "| Operation | Status |";
      continue;
    }
    if (!StartsWith(l, "|")) break;
    std::vector<std::string_view> cells = Split(l, '|');
    if (cells.size() < 3) continue;
    std::string op(Trim(cells[1])), status(Trim(cells[2]));
    if (op.empty() || StartsWith(op, "---") || StartsWith(op, ":-")) continue;
    if (!out.emplace(op, status).second) duplicates->push_back(op);
  }
  return out;
}

TEST(ApiTableTest, DocsListEveryS3OperationOnceWithAKnownStatus) {
  std::vector<std::string> dups;
  auto doc = ReadDocTable(&dups);
  ASSERT_FALSE(doc.empty()) << "no `| Operation | Status |` table in docs/s3.md";
  EXPECT_TRUE(dups.empty()) << "listed twice: " << dups.front();
  for (const char* op : kS3Operations) EXPECT_TRUE(doc.count(op)) << op << " is not listed";
  for (const auto& [op, status] : doc)
    EXPECT_TRUE(status == "supported" || status == "NotImplemented") << op << ": " << status;
}

TEST(ApiTableTest, DocsMatchTheRoutingTable) {
  std::vector<std::string> dups;
  auto doc = ReadDocTable(&dups);
  ASSERT_FALSE(doc.empty());
  std::set<std::string> implemented, named;
  for (const RouteRow& row : RouteTable()) {
    if (row.handler == &Frontend::Impl::MethodNotAllowed) continue;
    named.insert(row.op);
    if (!IsUnimplemented(row)) implemented.insert(row.op);
  }
  for (const std::string& op : implemented) {
    auto it = doc.find(op);
    ASSERT_NE(it, doc.end()) << op << " has a row but is not in docs/s3.md";
    EXPECT_EQ(it->second, "supported") << op << " is implemented by a row";
  }
  for (const std::string& op : named) EXPECT_TRUE(doc.count(op)) << op << " is not in docs/s3.md";
  for (const auto& [op, status] : doc) {
    auto alias = kSameRequestAs.find(op);
    const std::string& row_op = alias == kSameRequestAs.end() ? op : alias->second;
    if (status == "supported")
      EXPECT_TRUE(implemented.count(row_op))
          << op << " is marked supported but no row implements it";
    else
      EXPECT_FALSE(implemented.count(row_op))
          << op << " is marked NotImplemented but a row implements it";
  }
}

}  // namespace
}  // namespace strata::s3
