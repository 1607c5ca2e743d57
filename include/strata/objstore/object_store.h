// ObjectStore: the one interface through which every upper layer (filesystem,
// cache, checkpoints, feature store, transfers) touches bytes.
//
// A store is one bucket (and optionally a key prefix inside it), named by a URL:
//   file:///var/lib/strata/store?bucket=NAME   the local engine in-process (no HTTP)
//   s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1
//   mem://name                                 in-memory, for tests
// Keys passed to and returned by a store are relative to its prefix.
//
// Bodies stream: Put takes a ByteSource, Get hands bytes to a sink; nothing
// buffers a whole object that can be gigabytes, except the explicit
// whole-object helpers (PutBytes/GetBytes).
//
// Thread-safety: every implementation is safe for concurrent use.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/result.h>
#include <strata/objstore/engine.h>

namespace strata::objstore {

struct ObjectInfo {
  std::string key;              // relative to the store's prefix
  uint64_t size = 0;
  std::string etag;             // no quotes
  int64_t mtime_ns = 0;
  std::string content_type;
  std::map<std::string, std::string> user_meta;
  ChecksumAlgorithm checksum_algorithm = ChecksumAlgorithm::kNone;
  std::string checksum;         // base64 ("" if none / not returned)
};

struct WriteOptions {
  std::string content_type;
  std::map<std::string, std::string> user_meta;
  // Computed while sending and checked by the server (S3: x-amz-checksum-*).
  ChecksumAlgorithm checksum = ChecksumAlgorithm::kCrc32c;
  bool if_none_match_star = false;           // create only
  std::optional<std::string> if_match;       // replace only this version
  std::optional<uint64_t> size;              // known body size (needed by some backends)
};

struct ReadOptions {
  uint64_t offset = 0;
  std::optional<uint64_t> length;            // nullopt = to the end
  std::optional<std::string> if_match;       // fail with kPreconditionFailed if the object changed
};

// Receives bytes of a GET in order.
using ByteSink = std::function<Status(const char* data, size_t n)>;

struct ListPage {
  std::vector<ObjectInfo> objects;           // key, size, etag, mtime
  std::vector<std::string> common_prefixes;
  std::string next_token;                    // "" when this is the last page
};

struct UploadedPart {
  int number = 0;
  std::string etag;
  uint64_t size = 0;
  std::string checksum;                      // base64, "" if none
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // The URL this store was opened from (credentials removed).
  virtual std::string url() const = 0;

  virtual Result<ObjectInfo> Put(std::string_view key, ByteSource& body,
                                 const WriteOptions& options = {}) = 0;
  virtual Result<ObjectInfo> PutBytes(std::string_view key, std::string_view data,
                                      const WriteOptions& options = {});
  virtual Status Get(std::string_view key, const ReadOptions& options, const ByteSink& sink) = 0;
  virtual Result<std::string> GetBytes(std::string_view key, const ReadOptions& options = {});
  // kNotFound when absent.
  virtual Result<ObjectInfo> Head(std::string_view key) = 0;
  // Deleting a missing key is OK.
  virtual Status Delete(std::string_view key) = 0;
  // Batched delete (S3 DeleteObjects, 1000 per request); one Status per key.
  virtual Result<std::vector<Status>> DeleteMany(const std::vector<std::string>& keys);
  // One page; pass the previous page's next_token to continue. max_keys <= 1000.
  virtual Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                                std::string_view token, int max_keys = 1000) = 0;
  // Every object under prefix (no delimiter), page by page.
  Status ListAll(std::string_view prefix, const std::function<Status(const ObjectInfo&)>& fn);

  // Multipart.
  virtual Result<std::string> CreateMultipart(std::string_view key, const WriteOptions& options = {}) = 0;
  virtual Result<UploadedPart> UploadPart(std::string_view key, std::string_view upload_id,
                                          int part_number, ByteSource& body, uint64_t size) = 0;
  virtual Result<ObjectInfo> CompleteMultipart(std::string_view key, std::string_view upload_id,
                                               const std::vector<UploadedPart>& parts) = 0;
  virtual Status AbortMultipart(std::string_view key, std::string_view upload_id) = 0;
  virtual Result<std::vector<UploadedPart>> ListParts(std::string_view key,
                                                      std::string_view upload_id) = 0;

  // Server-side copy within this store.
  virtual Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key) = 0;
  // Atomic rename where the backend has it; kNotSupported otherwise.
  virtual Status Rename(std::string_view src_key, std::string_view dst_key);
};

// Opens a store from a URL (see the top of this file). For s3:// URLs,
// credentials come from the URL query (access_key, secret_key), then
// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, then AWS_PROFILE
// (default "default") in ~/.aws/credentials and ~/.aws/config (endpoint_url).
Result<std::unique_ptr<ObjectStore>> OpenObjectStore(std::string_view url);

// A bucket of an open LocalEngine as an ObjectStore (no HTTP). The engine must outlive it.
std::unique_ptr<ObjectStore> NewLocalObjectStore(LocalEngine* engine, std::string bucket,
                                                 std::string prefix = "");
// An in-memory store, for tests.
std::unique_ptr<ObjectStore> NewMemObjectStore(std::string name = "mem");

}  // namespace strata::objstore
