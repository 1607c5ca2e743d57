// KeyManager: the local key management behind S3 server-side encryption.
//
// One 256-bit master key, kept in a file (64 hex characters; created 0600 by
// Open when missing). Every key-encryption key is derived from it with
// HMAC-SHA256: one for SSE-S3, one per named SSE-KMS key ("kms:" + id). Named
// keys must be declared (KmsOptions::key_ids) so that a mistyped key id is an
// error instead of a new key. Data keys are random per object (per upload for
// multipart) and wrapped with AES-256-GCM: the wrapped form is
// iv (12) | ciphertext (32) | tag (16), its AAD binds the scheme, the key id and
// the encryption context, so a wrapped key cannot be replayed under another.
//
// Thread-safety: immutable after Open; every method is const and thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>

namespace strata::s3 {

struct KmsOptions {
  std::string master_key_file;       // required; created 0600 when missing
  std::vector<std::string> key_ids;  // named SSE-KMS keys
  std::string default_key_id;        // aws:kms without a key id; "" = the first of key_ids,
                                     // or "aws/s3" (always declared) when none
};

class KeyManager {
 public:
  static Result<std::shared_ptr<const KeyManager>> Open(const KmsOptions& options);
  // For tests: a master key given as 32 raw bytes.
  static Result<std::shared_ptr<const KeyManager>> FromMasterKey(std::string master,
                                                                 const KmsOptions& options);

  // The id an SSE-KMS request without a key id uses.
  const std::string& default_key_id() const { return default_key_id_; }
  // Accepts "NAME" and "arn:aws:kms:REGION:ACCOUNT:key/NAME" (or alias/NAME);
  // returns NAME when declared, "" otherwise.
  std::string Resolve(std::string_view key_id) const;

  // A fresh random 32-byte data key.
  static std::string NewDataKey();
  // Wraps/unwraps under the SSE-S3 key (key_id "") or a declared KMS key.
  Result<std::string> Wrap(std::string_view key_id, std::string_view data_key,
                           std::string_view aad) const;
  Result<std::string> Unwrap(std::string_view key_id, std::string_view wrapped,
                             std::string_view aad) const;
  // Under a key the caller holds (SSE-C: the customer's key, never stored).
  static Result<std::string> WrapWith(std::string_view kek, std::string_view data_key,
                                      std::string_view aad);
  // kPermissionDenied when kek is not the key that wrapped it.
  static Result<std::string> UnwrapWith(std::string_view kek, std::string_view wrapped,
                                        std::string_view aad);

 private:
  KeyManager() = default;
  std::string Kek(std::string_view key_id) const;
  std::string master_;
  std::vector<std::string> key_ids_;
  std::string default_key_id_;
};

}  // namespace strata::s3
