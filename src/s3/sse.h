// Server-side encryption at the S3 edge: the SSE request headers parsed and
// checked, data keys made, wrapped and unwrapped (KeyManager, include/strata/s3/kms.h),
// the S3 response headers, and the bucket default (Put/Get/DeleteBucketEncryption).
// The engine seals the bytes (PutOptions::data_key, OpenObject's DataKeyFn).
//
// What an encrypted object keeps in ObjectMeta::internal (never the key):
//   sse             "AES256" (SSE-S3), "aws:kms" (SSE-KMS) or "SSE-C"
//   sse-key         base64 of the wrapped data key (KeyManager's format)
//   sse-kms-key-id  SSE-KMS: the key id
//   sse-context     SSE-KMS: the encryption context as the client sent it (base64)
//   sse-bucket-key  "true" when x-amz-server-side-encryption-bucket-key-enabled was set
// SSE-C wraps the data key under the customer's key: a wrong key fails the
// GCM tag of the wrapped key, which is how it is refused (403) without
// storing anything derived from the key alone.
#pragma once

#include <string>
#include <string_view>

#include <strata/core/result.h>
#include <strata/objstore/local_engine.h>

namespace strata::s3 {

struct Ctx;

// SSE-C headers of a request: the plain ones, or the x-amz-copy-source-* ones.
struct CustomerKey {
  bool present = false;
  std::string key;  // 32 raw bytes
  std::string md5;  // base64, as sent (checked)
};
Result<CustomerKey> ParseCustomerKey(const Ctx& c, bool copy_source);

// True when the request carries any SSE header for the object it writes.
bool HasSseHeaders(const Ctx& c);

}  // namespace strata::s3
