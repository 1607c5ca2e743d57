// Server-side encryption handlers and hooks (see sse.h).
#include "s3/sse.h"

#include <pugixml.hpp>

#include <strata/core/aead.h>
#include <strata/core/checksum.h>
#include <strata/core/strings.h>
#include <strata/s3/kms.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/xml.h"

namespace strata::s3 {

using objstore::ObjectMeta;
using objstore::PutOptions;

namespace {

constexpr char kSse[] = "sse";
constexpr char kSseKey[] = "sse-key";
constexpr char kSseKmsKeyId[] = "sse-kms-key-id";
constexpr char kSseContext[] = "sse-context";
constexpr char kSseBucketKey[] = "sse-bucket-key";
constexpr char kSseS3[] = "AES256";
constexpr char kSseKms[] = "aws:kms";
constexpr char kSseC[] = "SSE-C";

constexpr char kHdrSse[] = "x-amz-server-side-encryption";
constexpr char kHdrKmsKeyId[] = "x-amz-server-side-encryption-aws-kms-key-id";
constexpr char kHdrContext[] = "x-amz-server-side-encryption-context";
constexpr char kHdrBucketKey[] = "x-amz-server-side-encryption-bucket-key-enabled";
constexpr char kHdrCustAlg[] = "x-amz-server-side-encryption-customer-algorithm";
constexpr char kHdrCustKey[] = "x-amz-server-side-encryption-customer-key";
constexpr char kHdrCustMd5[] = "x-amz-server-side-encryption-customer-key-MD5";

// The AAD of a wrapped data key: binds the scheme, key id and context.
std::string WrapAad(const std::map<std::string, std::string>& internal) {
  auto get = [&](const char* k) {
    auto it = internal.find(k);
    return it == internal.end() ? std::string() : it->second;
  };
  return "strata-sse-v1\n" + get(kSse) + "\n" + get(kSseKmsKeyId) + "\n" + get(kSseContext);
}

const std::string* Find(const std::map<std::string, std::string>& m, const char* k) {
  auto it = m.find(k);
  return it == m.end() ? nullptr : &it->second;
}

Status NeedsKms() {
  return MakeError("NotImplemented",
                   "server-side encryption with SSE-S3 or SSE-KMS needs the server's key manager, "
                   "which this frontend was started without");
}

Status UnknownKmsKey(std::string_view id) {
  return MakeError("KMS.NotFoundException", "Invalid keyId \"" + std::string(id) +
                                                "\": no such KMS key is declared on "
                                                "this server (strata server --kms-key NAME)");
}

// Unwraps under the server's keys; a key id no longer declared (the server
// restarted without its --kms-key) is the KMS error, not a missing object.
Result<std::string> KmsUnwrap(const KeyManager& kms, const std::string* id,
                              std::string_view wrapped, std::string_view aad) {
  Result<std::string> key = kms.Unwrap(id ? *id : "", wrapped, aad);
  if (!key.ok() && key.error().code() == StatusCode::kNotFound) return UnknownKmsKey(*id);
  return key;
}

Status NotApplicable() {
  return MakeError("InvalidRequest",
                   "The encryption parameters are not applicable to this object.");
}

// The requested scheme of a write (after the bucket default).
struct SseWrite {
  std::string scheme;  // "", kSseS3, kSseKms, kSseC
  std::string kms_key_id;
  std::string context;
  bool bucket_key = false;
  CustomerKey customer;
};

// Parses the bucket's stored default: "ALG\nKEYID\nBUCKETKEY".
SseWrite ParseDefault(const std::string& doc) {
  SseWrite w;
  std::vector<std::string> f = {"", "", ""};
  size_t i = 0;
  for (char ch : doc) {
    if (ch == '\n') {
      if (++i == f.size()) break;
    } else {
      f[i].push_back(ch);
    }
  }
  w.scheme = f[0];
  w.kms_key_id = f[1];
  w.bucket_key = f[2] == "true";
  return w;
}

}  // namespace

Result<CustomerKey> ParseCustomerKey(const Ctx& c, bool copy_source) {
  // x-amz-server-side-encryption-customer-* or x-amz-copy-source-server-side-encryption-customer-*.
  auto name = [copy_source](std::string_view h) {
    return copy_source ? "x-amz-copy-source-" + std::string(h.substr(6)) : std::string(h);
  };
  auto alg = c.H(name(kHdrCustAlg));
  auto key = c.H(name(kHdrCustKey));
  auto md5 = c.H(name(kHdrCustMd5));
  CustomerKey out;
  if (!alg && !key && !md5) return out;
  if (!alg || Trim(*alg) != "AES256")
    return MakeError("InvalidArgument",
                     "Requests specifying Server Side Encryption with Customer provided keys must "
                     "provide a valid encryption algorithm (AES256).");
  if (!key)
    return MakeError("InvalidArgument",
                     "Requests specifying Server Side Encryption with Customer provided keys must "
                     "provide an appropriate secret key.");
  if (!md5)
    return MakeError("InvalidArgument",
                     "Requests specifying Server Side Encryption with Customer provided keys must "
                     "provide the client calculated MD5 of the secret key.");
  std::optional<std::string> raw = Base64Decode(Trim(*key));
  if (!raw || raw->size() != crypto::kAes256KeyBytes)
    return MakeError("InvalidArgument", "The secret key was invalid for the specified algorithm.");
  if (Base64Encode(Md5(*raw)) != Trim(*md5))
    return MakeError(
        "InvalidArgument",
        "The calculated MD5 hash of the key did not match the hash that was provided.");
  out.present = true;
  out.key = std::move(*raw);
  out.md5 = std::string(Trim(*md5));
  return out;
}

bool HasSseHeaders(const Ctx& c) {
  for (const char* h : {kHdrSse, kHdrKmsKeyId, kHdrContext, kHdrCustAlg, kHdrCustKey, kHdrCustMd5})
    if (c.H(h)) return true;
  return false;
}

Status Frontend::Impl::SseForWrite(Ctx& c, PutOptions& o) {
  SseWrite w;
  STRATA_ASSIGN_OR_RETURN(w.customer, ParseCustomerKey(c, false));
  auto sse = c.H(kHdrSse);
  auto kms_id = c.H(kHdrKmsKeyId);
  auto context = c.H(kHdrContext);
  if (sse && w.customer.present)
    return MakeError("InvalidArgument",
                     "Server Side Encryption with Customer provided key is incompatible with the "
                     "encryption method specified");
  if (sse) {
    std::string_view v = Trim(*sse);
    if (v == kSseS3) {
      w.scheme = kSseS3;
    } else if (v == kSseKms) {
      w.scheme = kSseKms;
    } else if (v == "aws:kms:dsse") {
      return MakeError("NotImplemented", "Dual-layer SSE-KMS (aws:kms:dsse) is not supported");
    } else {
      return MakeError("InvalidArgument", "The encryption method specified is not supported");
    }
  }
  if ((kms_id || context) && w.scheme != kSseKms)
    return MakeError("InvalidArgument",
                     "Server Side Encryption with AWS KMS managed key requires HTTP header "
                     "x-amz-server-side-encryption : aws:kms");
  if (w.customer.present) w.scheme = kSseC;
  if (w.scheme == kSseKms) {
    if (kms_id) w.kms_key_id = std::string(Trim(*kms_id));
    if (context) {
      std::string ctx(Trim(*context));
      auto json = Base64Decode(ctx);
      if (!json || json->empty() || (*json)[0] != '{')
        return MakeError("InvalidArgument",
                         "The header 'x-amz-server-side-encryption-context' must be a base64 "
                         "encoded JSON object");
      w.context = std::move(ctx);
    }
    if (auto bk = c.H(kHdrBucketKey)) w.bucket_key = IEquals(Trim(*bk), "true");
  }
  if (w.scheme.empty()) {
    // No SSE headers: the bucket's default encryption, if any.
    STRATA_ASSIGN_OR_RETURN(const objstore::BucketInfo* b, RequestBucket(c));
    if (const std::string* doc = b->Config("encryption")) w = ParseDefault(*doc);
  }

  std::map<std::string, std::string> sse_meta;
  std::string data_key;
  if (!w.scheme.empty()) {
    sse_meta[kSse] = w.scheme;
    if (w.scheme == kSseKms) {
      if (!opts.kms) return NeedsKms();
      std::string id =
          w.kms_key_id.empty() ? opts.kms->default_key_id() : opts.kms->Resolve(w.kms_key_id);
      if (id.empty()) return UnknownKmsKey(w.kms_key_id);
      sse_meta[kSseKmsKeyId] = id;
      if (!w.context.empty()) sse_meta[kSseContext] = w.context;
      if (w.bucket_key) sse_meta[kSseBucketKey] = "true";
    }
    data_key = KeyManager::NewDataKey();
    const std::string aad = WrapAad(sse_meta);
    Result<std::string> wrapped = Status::Internal("unset");
    if (w.scheme == kSseC) {
      wrapped = KeyManager::WrapWith(w.customer.key, data_key, aad);
    } else {
      if (!opts.kms) return NeedsKms();
      wrapped = opts.kms->Wrap(w.scheme == kSseKms ? sse_meta[kSseKmsKeyId] : "", data_key, aad);
    }
    if (!wrapped.ok()) return wrapped.error();
    sse_meta[kSseKey] = Base64Encode(*wrapped);
  }
  // Unencrypted writes that are not copies keep their path unchanged.
  if (sse_meta.empty() && !c.H("x-amz-copy-source")) return Status::Ok();
  // The SSE entries replace whatever the metadata carried (a copy's source).
  auto apply = [sse_meta](ObjectMeta& meta) {
    std::erase_if(meta.internal, [](const auto& kv) { return StartsWith(kv.first, "sse"); });
    for (const auto& kv : sse_meta) meta.internal.insert(kv);
  };
  apply(o.meta);
  // S3: the ETag of an SSE-C or SSE-KMS object is not the MD5 of its data. Ours
  // is a keyed digest of it (HMAC under the data key), so it still changes with
  // the content and If-Match works, but reveals nothing about the plaintext.
  const bool keyed_etag = w.scheme == kSseC || w.scheme == kSseKms;
  o.before_commit = [prev = std::move(o.before_commit), apply, keyed_etag, data_key](
                        const objstore::WriteDigest& d, ObjectMeta& meta) -> Status {
    if (prev) STRATA_RETURN_IF_ERROR(prev(d, meta));
    apply(meta);
    if (keyed_etag) meta.etag = HexEncode(HmacSha256(data_key, "etag\n" + d.md5)).substr(0, 32);
    return Status::Ok();
  };
  o.data_key = std::move(data_key);
  return Status::Ok();
}

Status Frontend::Impl::SseForPart(Ctx& c, const PutOptions& upload, PutOptions& o) {
  STRATA_ASSIGN_OR_RETURN(CustomerKey ck, ParseCustomerKey(c, false));
  const std::map<std::string, std::string>& in = upload.meta.internal;
  const std::string* scheme = Find(in, kSse);
  if (scheme == nullptr) {
    if (ck.present || c.H(kHdrSse))
      return MakeError("InvalidRequest",
                       "The encryption parameters are not applicable to this multipart upload: it "
                       "was not created with SSE-C");
    return Status::Ok();
  }
  const std::string* wrapped_b64 = Find(in, kSseKey);
  std::optional<std::string> wrapped = wrapped_b64 ? Base64Decode(*wrapped_b64) : std::nullopt;
  if (!wrapped) return Status::Corruption("the upload's wrapped data key is missing");
  Result<std::string> key = Status::Internal("unset");
  if (*scheme == kSseC) {
    if (!ck.present)
      return MakeError("InvalidRequest",
                       "The multipart upload initiate requested encryption. Subsequent part "
                       "requests must include the appropriate encryption parameters.");
    key = KeyManager::UnwrapWith(ck.key, *wrapped, WrapAad(in));
    if (!key.ok() && key.error().code() == StatusCode::kPermissionDenied)
      return MakeError(
          "AccessDenied",
          "The SSE-C key does not match the key the multipart upload was created with");
  } else {
    if (ck.present) return NotApplicable();
    if (!opts.kms) return NeedsKms();
    const std::string* id = Find(in, kSseKmsKeyId);
    key = KmsUnwrap(*opts.kms, id, *wrapped, WrapAad(in));
  }
  if (!key.ok()) return key.error();
  o.data_key = std::move(*key);
  return Status::Ok();
}

objstore::DataKeyFn Frontend::Impl::SseReader(Ctx& c, bool copy_source) {
  return [this, &c, copy_source](const ObjectMeta& m) -> Result<std::string> {
    STRATA_ASSIGN_OR_RETURN(CustomerKey ck, ParseCustomerKey(c, copy_source));
    const std::string* scheme = Find(m.internal, kSse);
    if (scheme == nullptr) {
      if (ck.present) return NotApplicable();
      return std::string();
    }
    const std::string* wrapped_b64 = Find(m.internal, kSseKey);
    std::optional<std::string> wrapped = wrapped_b64 ? Base64Decode(*wrapped_b64) : std::nullopt;
    if (!wrapped) return Status::Corruption("the object's wrapped data key is missing");
    if (*scheme == kSseC) {
      if (!ck.present)
        return MakeError("InvalidRequest",
                         "The object was stored using a form of Server Side Encryption. The "
                         "correct parameters must be provided to retrieve the object.");
      Result<std::string> key = KeyManager::UnwrapWith(ck.key, *wrapped, WrapAad(m.internal));
      if (!key.ok() && key.error().code() == StatusCode::kPermissionDenied)
        return MakeError("AccessDenied",
                         "The SSE-C key does not match the key the object was stored with");
      return key;
    }
    if (ck.present) return NotApplicable();
    if (!opts.kms) return NeedsKms();
    const std::string* id = Find(m.internal, kSseKmsKeyId);
    return KmsUnwrap(*opts.kms, id, *wrapped, WrapAad(m.internal));
  };
}

void Frontend::Impl::SseResponseHeaders(Ctx& c, const ObjectMeta& m) {
  const std::string* scheme = Find(m.internal, kSse);
  if (scheme == nullptr) return;
  if (*scheme == kSseC) {
    c.w.AddHeader(kHdrCustAlg, "AES256");
    if (auto md5 = c.H(kHdrCustMd5)) c.w.AddHeader(kHdrCustMd5, Trim(*md5));
    return;
  }
  c.w.AddHeader(kHdrSse, *scheme);
  if (*scheme == kSseKms) {
    if (const std::string* id = Find(m.internal, kSseKmsKeyId)) c.w.AddHeader(kHdrKmsKeyId, *id);
    if (Find(m.internal, kSseBucketKey)) c.w.AddHeader(kHdrBucketKey, "true");
  }
}

// ---- bucket default encryption ----------------------------------------------

Status Frontend::Impl::PutBucketEncryption(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size()))
    return MakeError("MalformedXML", "The XML you provided was not well-formed");
  pugi::xml_node root = doc.child("ServerSideEncryptionConfiguration");
  if (!root) return MakeError("MalformedXML", "expected <ServerSideEncryptionConfiguration>");
  std::vector<pugi::xml_node> rules;
  for (pugi::xml_node r : root.children("Rule")) rules.push_back(r);
  if (rules.size() != 1)
    return MakeError("MalformedXML", "a ServerSideEncryptionConfiguration holds exactly one Rule");
  pugi::xml_node by_default = rules[0].child("ApplyServerSideEncryptionByDefault");
  if (!by_default)
    return MakeError("MalformedXML", "the Rule needs ApplyServerSideEncryptionByDefault");
  std::string alg(Trim(by_default.child_value("SSEAlgorithm")));
  std::string key_id(Trim(by_default.child_value("KMSMasterKeyID")));
  std::string bucket_key(Trim(rules[0].child_value("BucketKeyEnabled")));
  if (alg == "aws:kms:dsse")
    return MakeError("NotImplemented", "Dual-layer SSE-KMS (aws:kms:dsse) is not supported");
  if (alg != kSseS3 && alg != kSseKms)
    return MakeError("MalformedXML", "SSEAlgorithm must be AES256 or aws:kms");
  if (!key_id.empty() && alg != kSseKms)
    return MakeError("InvalidArgument", "a KMSMasterKeyID is only allowed with aws:kms");
  if (!bucket_key.empty() && bucket_key != "true" && bucket_key != "false")
    return MakeError("MalformedXML", "BucketKeyEnabled must be true or false");
  if (!opts.kms) return NeedsKms();
  if (!key_id.empty()) {
    std::string id = opts.kms->Resolve(key_id);
    if (id.empty()) return UnknownKmsKey(key_id);
    key_id = id;
  }
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(
      c.bucket, "encryption", alg + "\n" + key_id + "\n" + (bucket_key == "true" ? "true" : "")));
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::GetBucketEncryption(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(objstore::BucketInfo b, engine->GetBucket(c.bucket));
  const std::string* doc = b.Config("encryption");
  if (doc == nullptr)
    return MakeError("ServerSideEncryptionConfigurationNotFoundError",
                     "The server side encryption configuration was not found");
  SseWrite w = ParseDefault(*doc);
  XmlWriter x("ServerSideEncryptionConfiguration");
  x.Open("Rule").Open("ApplyServerSideEncryptionByDefault").Elem("SSEAlgorithm", w.scheme);
  if (!w.kms_key_id.empty()) x.Elem("KMSMasterKeyID", w.kms_key_id);
  x.Close("ApplyServerSideEncryptionByDefault")
      .Elem("BucketKeyEnabled", w.bucket_key)
      .Close("Rule");
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::DeleteBucketEncryption(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, "encryption", std::nullopt));
  c.w.SetStatus(204);
  return Status::Ok();
}

}  // namespace strata::s3
