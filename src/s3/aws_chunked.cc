#include "s3/aws_chunked.h"

#include <algorithm>
#include <cstring>

#include <strata/core/strings.h>

namespace strata::s3 {
namespace {

constexpr size_t kInputBuffer = 64 << 10;
constexpr std::string_view kTrailerSignature = "x-amz-trailer-signature";
constexpr std::string_view kChecksumPrefix = "x-amz-checksum-";

Status Incomplete(std::string_view text) {
  return Status::InvalidArgument("IncompleteBody: " + std::string(text));
}
Status BadFraming(std::string_view text) {
  return Status::InvalidArgument("InvalidRequest: malformed aws-chunked body: " +
                                 std::string(text));
}

size_t DigestSize(ChecksumAlgorithm a) {
  switch (a) {
    case ChecksumAlgorithm::kCrc32:
    case ChecksumAlgorithm::kCrc32c: return 4;
    case ChecksumAlgorithm::kCrc64Nvme: return 8;
    case ChecksumAlgorithm::kSha1: return 20;
    case ChecksumAlgorithm::kSha256: return 32;
    case ChecksumAlgorithm::kMd5: return 16;
    case ChecksumAlgorithm::kNone: return 0;
  }
  return 0;
}

bool IsHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

}  // namespace

AwsChunkedDecoder::AwsChunkedDecoder(Source source, const AuthResult& auth,
                                     AwsChunkedOptions options)
    : source_(std::move(source)), options_(std::move(options)) {
  signed_ = auth.payload_mode == PayloadMode::kStreamingSigned ||
            auth.payload_mode == PayloadMode::kStreamingSignedTrailer;
  signed_trailer_ = auth.payload_mode == PayloadMode::kStreamingSignedTrailer;
  if (signed_) {
    signing_key_ = auth.signing_key;
    scope_ = auth.scope;
    amz_date_ = auth.amz_date;
    prev_signature_ = ToLower(auth.seed_signature);
  }
  options_.max_line = std::min(options_.max_line, kInputBuffer);
  in_cap_ = kInputBuffer;
  in_ = std::make_unique_for_overwrite<char[]>(in_cap_);
}

AwsChunkedDecoder::~AwsChunkedDecoder() = default;

Status AwsChunkedDecoder::Fail(Status st) {
  state_ = State::kError;
  error_ = st;
  return st;
}

Status AwsChunkedDecoder::Fill() {
  if (in_pos_ == in_len_) {
    in_pos_ = in_len_ = 0;
  } else if (in_pos_ > 0 && in_len_ == in_cap_) {
    std::memmove(in_.get(), in_.get() + in_pos_, in_len_ - in_pos_);
    in_len_ -= in_pos_;
    in_pos_ = 0;
  }
  if (in_len_ == in_cap_ || source_eof_) return Status::Ok();
  Result<size_t> got = source_(in_.get() + in_len_, in_cap_ - in_len_);
  if (!got) return got.error();
  if (*got == 0) source_eof_ = true;
  in_len_ += *got;
  return Status::Ok();
}

Status AwsChunkedDecoder::ReadLine(std::string_view* line) {
  size_t scanned = 0;  // bytes of the unread region already searched
  for (;;) {
    const char* begin = in_.get() + in_pos_;
    const size_t avail = in_len_ - in_pos_;
    if (avail > scanned) {
      const void* nl = std::memchr(begin + scanned, '\n', avail - scanned);
      if (nl) {
        const size_t len = static_cast<const char*>(nl) - begin;
        if (len == 0 || begin[len - 1] != '\r') return BadFraming("line not terminated by CRLF");
        *line = std::string_view(begin, len - 1);
        in_pos_ += len + 1;
        return Status::Ok();
      }
      scanned = avail;
    }
    if (avail >= options_.max_line) {
      return BadFraming("chunk header or trailer line longer than " +
                        std::to_string(options_.max_line) + " bytes");
    }
    if (source_eof_) return Incomplete("the body ended inside a chunk header or trailer");
    // Make room so a line can always grow to max_line.
    if (in_pos_ > 0 && in_cap_ - in_pos_ < options_.max_line) {
      std::memmove(in_.get(), in_.get() + in_pos_, avail);
      in_len_ = avail;
      in_pos_ = 0;
    }
    STRATA_RETURN_IF_ERROR(Fill());
  }
}

Status AwsChunkedDecoder::ReadExact(char* dst, size_t n) {
  const size_t buffered = std::min(n, in_len_ - in_pos_);
  std::memcpy(dst, in_.get() + in_pos_, buffered);
  in_pos_ += buffered;
  size_t off = buffered;
  while (off < n) {
    Result<size_t> got = source_(dst + off, n - off);
    if (!got) return got.error();
    if (*got == 0) {
      source_eof_ = true;
      return Incomplete("the body ended inside chunk data");
    }
    off += *got;
  }
  return Status::Ok();
}

Status AwsChunkedDecoder::ExpectCrlf() {
  while (in_len_ - in_pos_ < 2) {
    if (source_eof_) return Incomplete("the body ended after chunk data, before its CRLF");
    STRATA_RETURN_IF_ERROR(Fill());
  }
  if (in_[in_pos_] != '\r' || in_[in_pos_ + 1] != '\n') {
    return BadFraming("chunk data is not followed by CRLF (chunk size does not match its data)");
  }
  in_pos_ += 2;
  return Status::Ok();
}

Status AwsChunkedDecoder::ParseChunkHeader(std::string_view line, uint64_t* size) {
  const size_t semi = line.find(';');
  const std::string_view hex = Trim(line.substr(0, semi));
  if (hex.empty() || hex.size() > 16 || !IsHex(hex)) {
    return BadFraming("invalid chunk size \"" + std::string(line.substr(0, 32)) + "\"");
  }
  uint64_t v = 0;
  for (char c : hex) {
    const int d = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *size = v;
  chunk_signature_.clear();
  bool have_sig = false;
  if (semi != std::string_view::npos) {
    for (std::string_view ext : Split(line.substr(semi + 1), ';')) {
      ext = Trim(ext);
      const size_t eq = ext.find('=');
      if (Trim(ext.substr(0, eq)) == "chunk-signature" && eq != std::string_view::npos) {
        chunk_signature_.assign(Trim(ext.substr(eq + 1)));
        have_sig = true;
      }
    }
  }
  if (signed_) {
    if (!have_sig) {
      return BadFraming("chunk " + std::to_string(chunk_index_) +
                        " has no chunk-signature, which a STREAMING-AWS4-HMAC-SHA256-PAYLOAD "
                        "body requires");
    }
    if (chunk_signature_.size() != 64 || !IsHex(chunk_signature_)) {
      return BadFraming("chunk-signature must be 64 hex characters");
    }
    if (v > options_.max_signed_chunk_size) {
      return Status::InvalidArgument(
          "InvalidChunkSizeError: chunk of " + std::to_string(v) + " bytes exceeds the " +
          std::to_string(options_.max_signed_chunk_size) + "-byte limit for signed chunks.");
    }
  }
  if (options_.expected_decoded_length && v > *options_.expected_decoded_length - decoded_) {
    return BadFraming("the chunks carry more than X-Amz-Decoded-Content-Length (" +
                      std::to_string(*options_.expected_decoded_length) + ") bytes");
  }
  return Status::Ok();
}

Status AwsChunkedDecoder::VerifyChunk(std::string_view data, std::string_view sig) {
  constexpr std::string_view kPrefix = "AWS4-HMAC-SHA256-PAYLOAD\n";
  sts_.clear();
  sts_.append(kPrefix).append(amz_date_).push_back('\n');
  sts_.append(scope_).push_back('\n');
  sts_.append(prev_signature_).push_back('\n');
  sts_.append(kEmptySha256Hex).push_back('\n');
  sts_.append(HexEncode(Sha256(data)));
  std::string computed = SignHex(signing_key_, sts_);
  if (!ConstantTimeEquals(computed, ToLower(sig))) {
    return Status::PermissionDenied(
        "SignatureDoesNotMatch: The chunk signature of chunk " + std::to_string(chunk_index_) +
        " does not match the signature we calculated; the body was altered or signed with a "
        "different key.");
  }
  prev_signature_ = std::move(computed);
  ++chunk_index_;
  return Status::Ok();
}

Status AwsChunkedDecoder::ReadTrailers() {
  std::optional<std::string> trailer_sig;
  for (;;) {
    // The closing empty line is required (the AWS example's Content-Length
    // counts it), so a body cut after the final chunk is reported, not accepted.
    std::string_view line;
    STRATA_RETURN_IF_ERROR(ReadLine(&line));
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return BadFraming("trailer \"" + std::string(line.substr(0, 64)) +
                        "\" is not name:value");
    }
    std::string name = ToLower(Trim(line.substr(0, colon)));
    std::string_view value = Trim(line.substr(colon + 1));
    if (name == kTrailerSignature) {
      trailer_sig.emplace(value);
      continue;
    }
    if (trailers_.size() >= options_.max_trailers) {
      return BadFraming("more than " + std::to_string(options_.max_trailers) + " trailers");
    }
    trailers_.emplace_back(std::move(name), std::string(value));
  }

  if (signed_trailer_) {
    if (!trailer_sig) {
      return Status::PermissionDenied(
          "SignatureDoesNotMatch: x-amz-trailer-signature is missing; a "
          "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER body must sign its trailers.");
    }
    std::string canonical;
    for (const auto& [k, v] : trailers_) canonical.append(k).append(":").append(v).append("\n");
    sts_.clear();
    sts_.append("AWS4-HMAC-SHA256-TRAILER\n").append(amz_date_).push_back('\n');
    sts_.append(scope_).push_back('\n');
    sts_.append(prev_signature_).push_back('\n');
    sts_.append(HexEncode(Sha256(canonical)));
    const std::string computed = SignHex(signing_key_, sts_);
    if (!ConstantTimeEquals(computed, ToLower(*trailer_sig))) {
      return Status::PermissionDenied(
          "SignatureDoesNotMatch: The trailer signature does not match the signature we "
          "calculated; the trailers were altered or signed with a different key.");
    }
  }

  for (const auto& [k, v] : trailers_) {
    if (!StartsWith(k, kChecksumPrefix)) continue;
    const ChecksumAlgorithm a = ParseChecksumAlgorithm(std::string_view(k).substr(
        kChecksumPrefix.size()));
    if (a == ChecksumAlgorithm::kNone) continue;
    if (checksum_trailer_) {
      return Status::InvalidArgument(
          "InvalidRequest: Expecting a single x-amz-checksum- trailer; got " +
          ChecksumHeaderName(checksum_trailer_->algorithm) + " and " + k + ".");
    }
    auto digest = Base64Decode(v);
    if (!digest || digest->size() != DigestSize(a)) {
      return Status::InvalidArgument("InvalidRequest: Value for " + k +
                                     " trailing header is invalid.");
    }
    checksum_trailer_ = ChecksumTrailer{a, v, std::move(*digest)};
  }

  if (in_pos_ != in_len_) return BadFraming("unexpected data after the final chunk");
  if (options_.expected_decoded_length && decoded_ != *options_.expected_decoded_length) {
    return Incomplete("the decoded body is " + std::to_string(decoded_) +
                      " bytes but X-Amz-Decoded-Content-Length is " +
                      std::to_string(*options_.expected_decoded_length) + ".");
  }
  return Status::Ok();
}

Result<size_t> AwsChunkedDecoder::Read(char* buf, size_t n) {
  if (state_ == State::kError) return error_;
  if (n == 0) return size_t{0};
  for (;;) {
    switch (state_) {
      case State::kChunkHeader: {
        std::string_view line;
        Status st = ReadLine(&line);
        if (!st.ok()) return Fail(std::move(st));
        uint64_t size = 0;
        st = ParseChunkHeader(line, &size);
        if (!st.ok()) return Fail(std::move(st));
        if (size == 0) {
          if (signed_) {
            st = VerifyChunk(std::string_view(), chunk_signature_);
            if (!st.ok()) return Fail(std::move(st));
          }
          state_ = State::kTrailers;
          continue;
        }
        if (!signed_) {
          chunk_remaining_ = size;
          state_ = State::kChunkData;
          continue;
        }
        // Signed: the whole chunk must be verified before any byte is released.
        // Straight into the caller's buffer when it fits, else into ours.
        const bool direct = n >= size;
        char* dst = buf;
        if (!direct) {
          if (chunk_cap_ < size) {
            chunk_ = std::make_unique_for_overwrite<char[]>(size);
            chunk_cap_ = size;
          }
          dst = chunk_.get();
        }
        st = ReadExact(dst, size);
        if (st.ok()) st = ExpectCrlf();
        if (st.ok()) st = VerifyChunk(std::string_view(dst, size), chunk_signature_);
        if (!st.ok()) return Fail(std::move(st));
        if (direct) {
          decoded_ += size;
          return static_cast<size_t>(size);
        }
        chunk_len_ = size;
        chunk_pos_ = 0;
        state_ = State::kServing;
        continue;
      }
      case State::kServing: {
        const size_t k = std::min(n, chunk_len_ - chunk_pos_);
        std::memcpy(buf, chunk_.get() + chunk_pos_, k);
        chunk_pos_ += k;
        decoded_ += k;
        if (chunk_pos_ == chunk_len_) state_ = State::kChunkHeader;
        return k;
      }
      case State::kChunkData: {
        size_t want = static_cast<size_t>(std::min<uint64_t>(n, chunk_remaining_));
        size_t k;
        if (in_pos_ < in_len_) {
          k = std::min(want, in_len_ - in_pos_);
          std::memcpy(buf, in_.get() + in_pos_, k);
          in_pos_ += k;
        } else {
          Result<size_t> got = source_(buf, want);
          if (!got) return Fail(got.error());
          if (*got == 0) {
            source_eof_ = true;
            return Fail(Incomplete("the body ended inside chunk data"));
          }
          k = *got;
        }
        chunk_remaining_ -= k;
        decoded_ += k;
        if (chunk_remaining_ == 0) state_ = State::kChunkDataEnd;
        return k;
      }
      case State::kChunkDataEnd: {
        Status st = ExpectCrlf();
        if (!st.ok()) return Fail(std::move(st));
        ++chunk_index_;
        state_ = State::kChunkHeader;
        continue;
      }
      case State::kTrailers: {
        Status st = ReadTrailers();
        if (!st.ok()) return Fail(std::move(st));
        state_ = State::kDone;
        continue;
      }
      case State::kDone: return size_t{0};
      case State::kError: return error_;
    }
  }
}

}  // namespace strata::s3
