// Encryption at rest for a Strata FS volume (`strata fs format
// --encrypt-key-file FILE`): every block object is sealed with AES-256-GCM
// before it leaves the mount.
//
// The key file: exactly 32 bytes is a raw key; anything else is a passphrase
// (one trailing newline ignored, at least 8 bytes) stretched with
// PBKDF2-HMAC-SHA256 (kPbkdf2Iterations, a random 16-byte salt kept in the
// volume's format). From that master key come two independent keys, both
// HMAC-SHA256(master, label || volume uuid): the block key, and the check key
// whose HMAC of a constant is stored in the format as `encrypt_check`, so a
// wrong key is refused at mount and the stored value reveals nothing about
// the block key. The key itself is never stored.
//
// A sealed block object is nonce (12 random bytes) || ciphertext || tag (16),
// with the object's key as associated data: a block copied or renamed to
// another key does not open. Blocks are compressed first (if the volume
// compresses), then sealed.
#pragma once

#include <string>
#include <string_view>

#include <strata/core/result.h>
#include <strata/fsmeta/meta_engine.h>

namespace strata::fs {

inline constexpr std::string_view kEncryptAes256Gcm = "aes-256-gcm";
inline constexpr int kPbkdf2Iterations = 200000;
inline constexpr size_t kSealOverhead = 12 + 16;  // nonce + tag

// The contents of a key file (unchanged; NotFound / IOError if unreadable).
Result<std::string> ReadKeyFile(const std::string& path);

// Format: records in `f` (whose uuid must be set) that the volume is
// encrypted with `material` (a key file's contents): algorithm, salt, check.
Status SetupEncryption(std::string_view material, fsmeta::Format* f);

// Mount: the 32-byte block key of volume `f` from `material`;
// PermissionDenied when it is not the volume's key, InvalidArgument when the
// volume is not encrypted.
Result<std::string> DeriveBlockKey(const fsmeta::Format& f, std::string_view material);

// Seals `plain` under `key` with associated data `aad` (the object key):
// nonce || ciphertext || tag.
Result<std::string> SealBlock(std::string_view key, std::string_view aad, std::string_view plain);
// Opens what SealBlock made; Corruption when it does not verify (wrong key,
// altered bytes, another object's key as aad, too short).
Result<std::string> OpenBlock(std::string_view key, std::string_view aad, std::string_view sealed);

}  // namespace strata::fs
