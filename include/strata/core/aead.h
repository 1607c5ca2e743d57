// AES-256-GCM (OpenSSL EVP underneath) and a CSPRNG, for encryption at rest:
// the object engine seals data blocks with it and the S3 key manager wraps
// data keys with it. Stateless functions, safe to call from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <strata/core/status.h>

namespace strata::crypto {

inline constexpr size_t kAes256KeyBytes = 32;
inline constexpr size_t kGcmIvBytes = 12;
inline constexpr size_t kGcmTagBytes = 16;

using GcmIv = std::array<uint8_t, kGcmIvBytes>;

// Seals n bytes of `in` under key (32 bytes) and iv: writes n bytes of
// ciphertext then the 16-byte tag to out (n + 16 bytes). An iv must never be
// used twice with one key.
Status AesGcmSeal(std::string_view key, const GcmIv& iv, std::string_view aad, const char* in,
                  size_t n, char* out);
// Opens n bytes of `in` (ciphertext followed by its tag, n >= 16) into out
// (n - 16 bytes). A tag that does not verify (wrong key, iv, aad, or altered
// bytes) is kPermissionDenied and leaves out unspecified: the caller must not
// use it.
Status AesGcmOpen(std::string_view key, const GcmIv& iv, std::string_view aad, const char* in,
                  size_t n, char* out);

// Cryptographically strong random bytes (OpenSSL RAND_bytes).
Status RandomBytes(void* out, size_t n);
// n random bytes as a string; aborts on RNG failure (there is no safe fallback).
std::string RandomString(size_t n);

}  // namespace strata::crypto
