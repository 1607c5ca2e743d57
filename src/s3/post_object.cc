// PostObject: the browser-based upload (an HTML form POSTed to the bucket as
// multipart/form-data). The form's fields carry the key, the object's
// metadata, a base64 JSON policy (expiration and conditions) and a SigV4
// signature of that policy made with the signing key of the access key named
// in x-amz-credential; the field named "file" carries the object's bytes and
// must come last (fields after it are ignored, as S3 does). The fields before
// the file are read into memory (at most kMaxPreFileBytes); the file part is
// streamed to the engine, never buffered whole.
//
// The rules follow the Amazon S3 API Reference: "Browser-Based Uploads Using
// POST (AWS Signature Version 4)" and "Creating a POST Policy". Each field in
// the form but x-amz-signature, file, policy and x-ignore-* must be named by a
// condition of the policy; conditions on "key" see the key after ${filename}
// is replaced. Fields that ask for something Strata does not do (server-side
// encryption, storage classes, canned ACLs other than private, object lock,
// checksums, session tokens, Signature Version 2) answer NotImplemented and
// store nothing.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/clock.h>
#include <strata/core/etag.h>
#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/sigv4.h"
#include "s3/xml.h"

namespace strata::s3 {

namespace {

using objstore::ObjectMeta;
using objstore::PutOptions;

// The form fields before the file, their part headers included (S3's limit:
// MaxPostPreDataLengthExceededError beyond it).
constexpr size_t kMaxPreFileBytes = 20 * 1024;
// A part's header block, and the preamble before the first boundary.
constexpr size_t kMaxPartHeaderBytes = 8 * 1024;
// What is read from the socket at once.
constexpr size_t kReadChunk = 256 * 1024;
// Bytes after the file part (the closing boundary, ignored fields) read and
// dropped so the connection can serve the next request; beyond it, close it.
constexpr size_t kMaxTrailingBytes = 64 * 1024;
// After an error, at most this much of the unread body is read and dropped.
constexpr size_t kMaxDrainOnError = 8 << 20;

Status Malformed(std::string_view why) {
  return MakeError("MalformedPOSTRequest",
                   fmt::format("The body of your POST request is not well-formed "
                               "multipart/form-data: {}.",
                               why));
}

// The boundary parameter of a multipart/form-data Content-Type; nullopt if the
// type is another one or has no boundary.
std::optional<std::string> FormBoundary(std::string_view content_type) {
  std::vector<std::string_view> parts = Split(content_type, ';');
  if (parts.empty() || !IEquals(Trim(parts[0]), "multipart/form-data")) return std::nullopt;
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string_view p = Trim(parts[i]);
    size_t eq = p.find('=');
    if (eq == std::string_view::npos || !IEquals(Trim(p.substr(0, eq)), "boundary")) continue;
    std::string_view v = Trim(p.substr(eq + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    // RFC 2046: 1 to 70 characters.
    if (v.empty() || v.size() > 70) return std::nullopt;
    return std::string(v);
  }
  return std::nullopt;
}

// A parameter of a Content-Disposition value (name="key"; filename="a.txt"),
// quoted or not. Browsers do not backslash-escape inside the quotes (the HTML
// form encoding percent-encodes '"' instead), so a backslash is a character.
std::optional<std::string> DispositionParam(std::string_view v, std::string_view param) {
  size_t i = v.find(';');
  while (i != std::string_view::npos && i < v.size()) {
    ++i;
    while (i < v.size() && (v[i] == ' ' || v[i] == '\t')) ++i;
    size_t eq = v.find('=', i);
    if (eq == std::string_view::npos) return std::nullopt;
    std::string_view name = Trim(v.substr(i, eq - i));
    size_t j = eq + 1;
    while (j < v.size() && (v[j] == ' ' || v[j] == '\t')) ++j;
    std::string value;
    if (j < v.size() && v[j] == '"') {
      ++j;
      while (j < v.size() && v[j] != '"') value += v[j++];
      if (j < v.size()) ++j;  // closing quote
      i = v.find(';', j);
    } else {
      size_t end = v.find(';', j);
      value =
          std::string(Trim(v.substr(j, end == std::string_view::npos ? v.size() - j : end - j)));
      i = end;
    }
    if (IEquals(name, param)) return value;
  }
  return std::nullopt;
}

struct PartHead {
  std::string name;                     // the form field's name, as sent
  std::optional<std::string> filename;  // present on file parts
  std::string content_type;             // the part's own Content-Type
};

// A streaming multipart/form-data reader over the request body: part headers,
// then each part's content up to the next "\r\n--boundary". The buffer holds at
// most a read chunk plus a delimiter's length.
class FormReader {
 public:
  FormReader(http::Request& req, std::string_view boundary)
      : req_(req), delim_("\r\n--" + std::string(boundary)) {
    // The first boundary line has no CRLF before it; the body begins as if
    // after one, so every delimiter looks alike.
    buf_ = "\r\n";
  }

  // The next part's headers; false after the closing delimiter.
  Result<bool> NextPart(PartHead& out, size_t& budget) {
    if (finished_) return false;
    if (!started_) {
      // Skip the preamble (bounded) up to the first delimiter.
      for (;;) {
        size_t at = buf_.find(delim_, pos_);
        if (at != std::string::npos) {
          pos_ = at;
          break;
        }
        if (buf_.size() - pos_ > kMaxPartHeaderBytes) return Malformed("no opening boundary");
        STRATA_ASSIGN_OR_RETURN(bool more, Fill());
        if (!more) return Malformed("no opening boundary");
      }
      started_ = true;
      STRATA_RETURN_IF_ERROR(ConsumeDelimiter());
      if (finished_) return false;
    } else if (!part_done_) {
      return Status::Internal("FormReader: the previous part was not read to its end");
    }
    // Headers: lines up to an empty one.
    size_t end;
    for (;;) {
      if (buf_.size() - pos_ >= 2 && buf_.compare(pos_, 2, "\r\n") == 0) {
        end = pos_;
        break;
      }
      end = buf_.find("\r\n\r\n", pos_);
      if (end != std::string::npos) {
        end += 2;  // keep the last header line's CRLF inside the block
        break;
      }
      if (buf_.size() - pos_ > kMaxPartHeaderBytes)
        return Malformed("a part's headers are too long");
      STRATA_ASSIGN_OR_RETURN(bool more, Fill());
      if (!more) return Malformed("the body ended inside a part's headers");
    }
    std::string_view block(buf_.data() + pos_, end - pos_);
    if (block.size() > budget)
      return MakeError("MaxPostPreDataLengthExceededError",
                       "Your POST request fields preceding the upload file were too large.");
    budget -= block.size();
    out = PartHead{};
    bool has_disposition = false;
    for (std::string_view line : Split(block, '\n')) {
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      size_t colon = line.find(':');
      if (colon == std::string_view::npos) return Malformed("a part header has no ':'");
      std::string_view hname = Trim(line.substr(0, colon));
      std::string_view hvalue = Trim(line.substr(colon + 1));
      if (IEquals(hname, "content-disposition")) {
        std::vector<std::string_view> kind = Split(hvalue, ';');
        if (kind.empty() || !IEquals(Trim(kind[0]), "form-data"))
          return Malformed("a part's Content-Disposition is not form-data");
        auto name = DispositionParam(hvalue, "name");
        if (!name) return Malformed("a part's Content-Disposition has no name");
        out.name = *name;
        out.filename = DispositionParam(hvalue, "filename");
        has_disposition = true;
      } else if (IEquals(hname, "content-type")) {
        out.content_type = std::string(hvalue);
      }
    }
    if (!has_disposition) return Malformed("a part has no Content-Disposition header");
    pos_ = end + 2;
    part_done_ = false;
    scan_from_ = pos_;
    return true;
  }

  // Reads the current part's content; 0 at its end.
  Result<size_t> Read(char* out, size_t n) {
    while (!part_done_) {
      size_t at = buf_.find(delim_, std::max(pos_, scan_from_));
      if (at != std::string::npos) {
        if (at == pos_) {
          part_done_ = true;
          STRATA_RETURN_IF_ERROR(ConsumeDelimiter());
          return size_t{0};
        }
        size_t k = std::min(n, at - pos_);
        std::memcpy(out, buf_.data() + pos_, k);
        pos_ += k;
        return k;
      }
      // No delimiter starts before the last delim_.size()-1 bytes.
      size_t avail = buf_.size() - pos_;
      size_t safe = avail >= delim_.size() ? avail - (delim_.size() - 1) : 0;
      scan_from_ = pos_ + safe;
      if (safe > 0) {
        size_t k = std::min(n, safe);
        std::memcpy(out, buf_.data() + pos_, k);
        pos_ += k;
        return k;
      }
      STRATA_ASSIGN_OR_RETURN(bool more, Fill());
      if (!more) return Malformed("the body ended inside a part");
    }
    return size_t{0};
  }

  // The current part's content as a string of at most `budget` bytes.
  Result<std::string> ReadValue(size_t& budget) {
    std::string v;
    char tmp[4096];
    for (;;) {
      STRATA_ASSIGN_OR_RETURN(size_t k, Read(tmp, sizeof(tmp)));
      if (k == 0) break;
      if (k > budget)
        return MakeError("MaxPostPreDataLengthExceededError",
                         "Your POST request fields preceding the upload file were too large.");
      budget -= k;
      v.append(tmp, k);
    }
    return v;
  }

  // Reads and drops what is left of the body, up to `max` bytes; false if more
  // was left (the connection must then close).
  bool DrainUpTo(size_t max) {
    size_t dropped = buf_.size() - pos_;
    buf_.clear();
    pos_ = 0;
    char tmp[16384];
    while (!req_.body_done()) {
      if (dropped > max) return false;
      Result<size_t> r = req_.ReadBody(tmp, sizeof(tmp));
      if (!r.ok()) return false;
      if (*r == 0) break;
      dropped += *r;
    }
    return true;
  }

 private:
  // Appends the next read to the buffer (dropping consumed bytes first);
  // false at the end of the body.
  Result<bool> Fill() {
    if (eof_) return false;
    if (pos_ > 0 && pos_ >= buf_.size() / 2) {
      buf_.erase(0, pos_);
      scan_from_ = scan_from_ > pos_ ? scan_from_ - pos_ : 0;
      pos_ = 0;
    }
    size_t old = buf_.size();
    buf_.resize(old + kReadChunk);
    Result<size_t> r = req_.ReadBody(buf_.data() + old, kReadChunk);
    if (!r.ok()) {
      buf_.resize(old);
      if (r.error().code() == StatusCode::kIOError)
        return MakeError("IncompleteBody",
                         "You did not provide the number of bytes specified by the "
                         "Content-Length HTTP header (" +
                             r.error().message() + ")");
      return r.error();
    }
    buf_.resize(old + *r);
    if (*r == 0) eof_ = true;
    return *r > 0;
  }

  // At a delimiter: steps over it and the rest of its line; the closing one
  // ("--" after it) ends the form.
  Status ConsumeDelimiter() {
    while (buf_.size() - pos_ < delim_.size() + 2) {
      STRATA_ASSIGN_OR_RETURN(bool more, Fill());
      if (!more) break;
    }
    pos_ += delim_.size();
    if (buf_.size() - pos_ >= 2 && buf_.compare(pos_, 2, "--") == 0) {
      finished_ = true;
      pos_ += 2;
      return Status::Ok();
    }
    // Transport padding (spaces, tabs) may precede the CRLF.
    for (;;) {
      while (pos_ < buf_.size() && (buf_[pos_] == ' ' || buf_[pos_] == '\t')) ++pos_;
      if (buf_.size() - pos_ >= 2) break;
      if (buf_.size() - pos_ > kMaxPartHeaderBytes) break;
      STRATA_ASSIGN_OR_RETURN(bool more, Fill());
      if (!more) return Malformed("the body ended after a boundary");
    }
    if (buf_.compare(pos_, 2, "\r\n") != 0) return Malformed("a boundary line has trailing bytes");
    pos_ += 2;
    return Status::Ok();
  }

  http::Request& req_;
  const std::string delim_;  // "\r\n--" + boundary
  std::string buf_;
  size_t pos_ = 0;        // first unconsumed byte of buf_
  size_t scan_from_ = 0;  // no delimiter starts in [pos_, scan_from_)
  bool eof_ = false;
  bool started_ = false;
  bool part_done_ = true;
  bool finished_ = false;
};

// The file part as the engine's ByteSource, enforcing the policy's
// content-length-range and the server's largest object while it streams.
class FilePartSource final : public objstore::ByteSource {
 public:
  FilePartSource(FormReader& r, uint64_t min, uint64_t max) : r_(r), min_(min), max_(max) {}

  Result<size_t> Read(char* buf, size_t n) override {
    STRATA_ASSIGN_OR_RETURN(size_t k, r_.Read(buf, n));
    total_ += k;
    if (total_ > max_)
      return MakeError("EntityTooLarge",
                       fmt::format("Your proposed upload exceeds the maximum allowed size "
                                   "({} bytes)",
                                   max_));
    if (k == 0 && total_ < min_)
      return MakeError("EntityTooSmall",
                       fmt::format("Your proposed upload is smaller than the minimum allowed "
                                   "size ({} bytes)",
                                   min_));
    return k;
  }
  uint64_t total() const { return total_; }

 private:
  FormReader& r_;
  const uint64_t min_;
  const uint64_t max_;
  uint64_t total_ = 0;
};

Status PolicyFailed(std::string_view why) {
  return MakeError("AccessDenied", fmt::format("Invalid according to Policy: {}", why));
}

Status BadPolicy(std::string_view why) {
  return MakeError("InvalidPolicyDocument", fmt::format("Invalid Policy: {}", why));
}

using Fields = std::map<std::string, std::string>;  // lower-case name -> value

struct PolicyLimits {
  uint64_t min_size = 0;
  uint64_t max_size = UINT64_MAX;
};

// A condition's value: S3 accepts JSON strings; numbers are taken as their text.
std::optional<std::string> ConditionString(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return std::nullopt;
}

std::optional<uint64_t> ConditionSize(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    int64_t s = v.get<int64_t>();
    if (s < 0) return std::nullopt;
    return static_cast<uint64_t>(s);
  }
  if (v.is_string()) return ParseUint64(v.get<std::string>());
  return std::nullopt;
}

// Checks the decoded policy against the form (values: the fields with "bucket"
// and the expanded "key" filled in). Returns the content-length-range.
Result<PolicyLimits> CheckPolicy(std::string_view policy_json, const Fields& form,
                                 const Fields& values, int64_t now_ns) {
  nlohmann::json doc = nlohmann::json::parse(policy_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return BadPolicy("the policy is not a JSON object.");
  auto exp = doc.find("expiration");
  if (exp == doc.end()) return BadPolicy("Policy missing expiration.");
  if (!exp->is_string()) return BadPolicy("Invalid 'expiration' value.");
  auto exp_ns = ParseIso8601(exp->get<std::string>());
  if (!exp_ns) return BadPolicy("Invalid 'expiration' value: '" + exp->get<std::string>() + "'.");
  auto conds = doc.find("conditions");
  if (conds == doc.end()) return BadPolicy("Policy missing conditions.");
  if (!conds->is_array()) return BadPolicy("Invalid 'conditions' value.");
  if (now_ns > *exp_ns) return PolicyFailed("Policy expired.");

  auto value_of = [&](const std::string& name) {
    auto it = values.find(name);
    return it == values.end() ? std::string() : it->second;
  };
  std::set<std::string> named;  // fields some condition speaks of
  PolicyLimits limits;
  for (const nlohmann::json& c : *conds) {
    if (c.is_object()) {
      // {"field": "value"}: exact match (one or more pairs).
      for (auto it = c.begin(); it != c.end(); ++it) {
        std::string field = ToLower(it.key());
        auto want = ConditionString(it.value());
        if (!want) return BadPolicy("Invalid condition value for '" + it.key() + "'.");
        named.insert(field);
        if (value_of(field) != *want)
          return PolicyFailed(
              fmt::format("Policy Condition failed: [\"eq\", \"${}\", \"{}\"]", it.key(), *want));
      }
      continue;
    }
    if (!c.is_array() || c.empty() || !c[0].is_string())
      return BadPolicy("a condition is neither an object nor an array.");
    const std::string op = ToLower(c[0].get<std::string>());
    if (op == "content-length-range") {
      if (c.size() != 3) return BadPolicy("content-length-range takes two values.");
      auto lo = ConditionSize(c[1]), hi = ConditionSize(c[2]);
      if (!lo || !hi || *lo > *hi) return BadPolicy("Invalid content-length-range values.");
      limits.min_size = std::max(limits.min_size, *lo);
      limits.max_size = std::min(limits.max_size, *hi);
      continue;
    }
    if (op != "eq" && op != "starts-with")
      return BadPolicy("Invalid condition operator '" + c[0].get<std::string>() + "'.");
    if (c.size() != 3 || !c[1].is_string())
      return BadPolicy("'" + op + "' takes a field name and a value.");
    std::string ref = c[1].get<std::string>();
    if (ref.empty() || ref[0] != '$')
      return BadPolicy("the field name '" + ref + "' must start with '$'.");
    auto want = ConditionString(c[2]);
    if (!want) return BadPolicy("Invalid condition value for '" + ref + "'.");
    std::string field = ToLower(ref.substr(1));
    named.insert(field);
    std::string have = value_of(field);
    bool ok;
    if (op == "eq") {
      ok = have == *want;
    } else if (field == "content-type") {
      // Content-Type may list several types: each must start with the prefix.
      ok = true;
      for (std::string_view t : Split(have, ',')) ok = ok && StartsWith(Trim(t), *want);
    } else {
      ok = StartsWith(have, *want);
    }
    if (!ok)
      return PolicyFailed(
          fmt::format("Policy Condition failed: [\"{}\", \"{}\", \"{}\"]", op, ref, *want));
  }
  // Every field the form carries must be spoken of by a condition.
  std::vector<std::string> extra;
  for (const auto& [name, v] : form) {
    (void)v;
    if (name == "x-amz-signature" || name == "policy" || name == "file" ||
        StartsWith(name, "x-ignore-"))
      continue;
    if (!named.count(name)) extra.push_back(name);
  }
  if (!extra.empty()) {
    std::string list;
    for (const std::string& e : extra) list += (list.empty() ? "" : ", ") + e;
    return PolicyFailed("Extra input fields: " + list);
  }
  return limits;
}

// "AK/20130524/us-east-1/s3/aws4_request"
struct CredentialScope {
  std::string access_key, date, region, service;
};

Result<CredentialScope> ParseCredential(std::string_view v) {
  std::vector<std::string_view> p = Split(v, '/');
  if (p.size() != 5 || p[0].empty() || p[1].size() != 8 || p[2].empty() || p[4] != "aws4_request")
    return MakeError("InvalidArgument",
                     "x-amz-credential must be <access key>/<date>/<region>/s3/aws4_request");
  if (p[3] != "s3")
    return MakeError("InvalidArgument",
                     fmt::format("x-amz-credential names service '{}'; POST uploads are signed "
                                 "for 's3'",
                                 p[3]));
  return CredentialScope{std::string(p[0]), std::string(p[1]), std::string(p[2]),
                         std::string(p[3])};
}

// Fields Strata stores with the object, as PutObject's headers.
constexpr const char* kStoredFields[] = {"cache-control", "content-disposition", "content-encoding",
                                         "expires", "content-language"};

// Fields that ask for what Strata does not do on POST uploads: refused, never
// accepted and dropped.
bool UnsupportedField(std::string_view name) {
  return StartsWith(name, "x-amz-server-side-encryption") ||
         StartsWith(name, "x-amz-object-lock-") || StartsWith(name, "x-amz-checksum-") ||
         name == "x-amz-website-redirect-location" || name == "x-amz-security-token";
}

std::string QueryEscape(std::string_view s) { return UriEncode(s, false); }

// Authentication: the policy's signature, with the signing key of the access
// key in x-amz-credential, then the policy itself. Without a policy the
// request is anonymous (no limits). Sets c.user when the signature holds.
Result<PolicyLimits> AuthenticateForm(Frontend::Impl& impl, Ctx& c, const Fields& fields,
                                      const std::string& key) {
  auto policy_it = fields.find("policy");
  if (policy_it == fields.end()) return PolicyLimits{};
  auto field = [&](const char* name) -> std::optional<std::string> {
    auto it = fields.find(name);
    if (it == fields.end()) return std::nullopt;
    return it->second;
  };
  auto alg = field("x-amz-algorithm");
  auto cred = field("x-amz-credential");
  auto date = field("x-amz-date");
  auto sig = field("x-amz-signature");
  if (!alg || !cred || !date || !sig)
    return MakeError("InvalidArgument",
                     "A POST with a policy must carry x-amz-algorithm, x-amz-credential, "
                     "x-amz-date and x-amz-signature");
  if (*alg != "AWS4-HMAC-SHA256")
    return MakeError(
        "InvalidArgument",
        fmt::format("x-amz-algorithm '{}' is not supported; use AWS4-HMAC-SHA256", *alg));
  STRATA_ASSIGN_OR_RETURN(CredentialScope scope, ParseCredential(*cred));
  auto user = c.users->by_key.find(scope.access_key);
  if (user == c.users->by_key.end())
    return MakeError("InvalidAccessKeyId",
                     "The AWS Access Key Id you provided does not exist in our records.");
  const std::string signing_key =
      DeriveSigningKey(user->second->user.secret_key, scope.date, scope.region, scope.service);
  const std::string want = SignHex(signing_key, policy_it->second);
  if (!ConstantTimeEquals(want, ToLower(*sig)))
    return MakeError("SignatureDoesNotMatch",
                     "The request signature we calculated does not match the signature you "
                     "provided. Check your key and signing method.");
  auto policy = Base64Decode(Trim(policy_it->second));
  if (!policy) return BadPolicy("the policy is not valid base64.");
  Fields values = fields;
  values["bucket"] = c.bucket;
  values["key"] = key;
  STRATA_ASSIGN_OR_RETURN(PolicyLimits limits,
                          CheckPolicy(*policy, fields, values, NowUnixNanos()));
  c.user = &user->second->user;
  c.user_policy = user->second->policy.get();
  c.auth.access_key = scope.access_key;
  return limits;
}

// The answer to a stored upload: a 303 redirect, a 201 PostResponse, 200 or 204.
Status SendPostResponse(Frontend::Impl& impl, Ctx& c, const Fields& fields, const ObjectMeta& r) {
  const std::string etag = QuoteETag(r.etag);
  const std::string host(c.H("host").value_or("localhost"));
  const std::string location = fmt::format("{}://{}/{}/{}", c.req.tls ? "https" : "http", host,
                                           c.bucket, UriEncode(c.key, true));
  c.w.AddHeader("ETag", etag);
  std::string redirect;
  if (auto it = fields.find("success_action_redirect"); it != fields.end())
    redirect = it->second;
  else if (auto old = fields.find("redirect"); old != fields.end())
    redirect = old->second;
  if (StartsWith(redirect, "http://") || StartsWith(redirect, "https://")) {
    c.w.AddHeader("Location",
                  fmt::format("{}{}bucket={}&key={}&etag={}", redirect,
                              redirect.find('?') == std::string::npos ? "?" : "&",
                              QueryEscape(c.bucket), QueryEscape(c.key), QueryEscape(etag)));
    c.w.SetStatus(303);
    return c.w.Send("");
  }
  c.w.AddHeader("Location", location);
  std::string status;
  if (auto it = fields.find("success_action_status"); it != fields.end()) status = it->second;
  if (status == "201") {
    XmlWriter x("PostResponse");
    x.Elem("Location", location).Elem("Bucket", c.bucket).Elem("Key", c.key).Elem("ETag", etag);
    impl.SendXml(c, 201, x.Finish());
    return Status::Ok();
  }
  c.w.SetStatus(status == "200" ? 200 : 204);
  return c.w.Send("");
}

// The form's fields, its authentication and policy, then the file.
Status PostForm(Frontend::Impl& impl, Ctx& c, FormReader& form) {
  Fields fields;
  PartHead file;
  size_t budget = kMaxPreFileBytes;
  for (;;) {
    PartHead head;
    STRATA_ASSIGN_OR_RETURN(bool more, form.NextPart(head, budget));
    if (!more)
      return MakeError("InvalidArgument",
                       "POST requires exactly one file upload per request (a field named "
                       "'file', after the other fields).");
    std::string name = ToLower(head.name);
    if (name == "file") {
      file = std::move(head);
      break;
    }
    STRATA_ASSIGN_OR_RETURN(std::string value, form.ReadValue(budget));
    if (fields.count(name))
      return MakeError("InvalidArgument",
                       fmt::format("The form field '{}' appears more than once.", head.name));
    fields.emplace(std::move(name), std::move(value));
  }

  // Refuse what is not kept before anything else is looked at.
  for (const auto& [name, v] : fields) {
    if (name == "awsaccesskeyid" || name == "signature")
      return MakeError("NotImplemented",
                       "POST uploads signed with Signature Version 2 are not supported; sign "
                       "the policy with AWS4-HMAC-SHA256");
    if (UnsupportedField(name))
      return MakeError("NotImplemented",
                       fmt::format("The form field '{}' is not supported on POST uploads", name));
    if (name == "acl" && v != "private")
      return MakeError("NotImplemented",
                       fmt::format("Canned ACL '{}' on POST uploads is not supported (only "
                                   "private)",
                                   v));
    if (name == "x-amz-storage-class" && v != "STANDARD")
      return MakeError("InvalidStorageClass",
                       "The storage class you specified is not valid (Strata stores STANDARD)");
  }

  auto key_it = fields.find("key");
  if (key_it == fields.end())
    return MakeError("InvalidArgument",
                     "Bucket POST must contain a field named 'key'.  If it is specified, please "
                     "check the order of the fields.");
  std::string key = key_it->second;
  if (size_t at = key.find("${filename}"); at != std::string::npos) {
    key.replace(at, 11, file.filename.value_or(""));
  }
  if (key.empty())
    return MakeError("InvalidArgument", "User key must have a length greater than 0.");
  if (key.size() > kMaxKeyBytes)
    return MakeError("KeyTooLongError", "Your key is too long (the limit is 1024 bytes)");
  if (!IsValidUtf8(key)) return MakeError("InvalidArgument", "object keys must be valid UTF-8");
  c.key = key;
  c.has_key = true;

  STRATA_ASSIGN_OR_RETURN(PolicyLimits limits, AuthenticateForm(impl, c, fields, key));
  STRATA_RETURN_IF_ERROR(impl.Authorize(c, true));
  STRATA_RETURN_IF_ERROR(impl.CheckBucket(c));

  PutOptions o;
  ObjectMeta& m = o.meta;
  m.owner = c.user != nullptr ? c.user->access_key : "";
  size_t meta_bytes = 0;
  for (const auto& [name, v] : fields) {
    if (StartsWith(name, "x-amz-meta-") && name.size() > 11) {
      m.user_meta[name.substr(11)] = v;
      meta_bytes += name.size() + v.size();
    }
  }
  if (meta_bytes > 2048)
    return MakeError("MetadataTooLarge",
                     "Your metadata headers exceed the maximum allowed metadata size (2 KiB)");
  if (auto ct = fields.find("content-type"); ct != fields.end()) m.content_type = ct->second;
  for (const char* name : kStoredFields)
    if (auto it = fields.find(name); it != fields.end()) m.headers[name] = it->second;
  if (auto t = fields.find("tagging"); t != fields.end()) {
    STRATA_ASSIGN_OR_RETURN(m.tags, ParseTagging(t->second));
  }

  // The form's own SSE fields answer NotImplemented above; the bucket's
  // default encryption applies as to any PutObject.
  STRATA_RETURN_IF_ERROR(impl.SseForWrite(c, o));
  FilePartSource src(form, limits.min_size,
                     std::min<uint64_t>(limits.max_size, impl.opts.max_put_size));
  STRATA_ASSIGN_OR_RETURN(ObjectMeta r, impl.engine->PutObject(c.bucket, c.key, src, std::move(o)));
  impl.SseResponseHeaders(c, r);
  impl.bytes_in->Inc(r.size);
  // Fields after the file are ignored; the rest of the body is dropped.
  if (!form.DrainUpTo(kMaxTrailingBytes)) c.w.CloseAfter();

  return SendPostResponse(impl, c, fields, r);
}

}  // namespace

Status Frontend::Impl::PostObject(Ctx& c) {
  auto boundary = FormBoundary(c.H("content-type").value_or(""));
  if (!boundary)
    return MakeError("PreconditionFailed",
                     "Bucket POST must be of the enclosure-type multipart/form-data");
  if (c.req.content_length && *c.req.content_length > opts.max_put_size + (1u << 20))
    return MakeError("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size");

  // The form authenticates the request (or leaves it anonymous), whatever the
  // HTTP layer carried: its body is not what a header signature covers.
  c.user = nullptr;
  c.user_policy = nullptr;
  c.auth = AuthResult{};
  FormReader form(c.req, *boundary);
  Status st = PostForm(*this, c, form);
  // A refused form is answered after the rest of a modest body is read:
  // clients (fetch, browsers) still sending it fail on a closed connection
  // instead of seeing the error.
  if (!st.ok() && !c.w.headers_sent()) (void)form.DrainUpTo(kMaxDrainOnError);
  return st;
}

}  // namespace strata::s3
