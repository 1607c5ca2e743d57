// Small string helpers shared by every component. All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/clock.h>
#include <strata/core/result.h>

namespace strata {

std::string HexEncode(std::string_view bytes);                       // lower-case
std::optional<std::string> HexDecode(std::string_view hex);
std::string Base64Encode(std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view b64);       // strict; nullopt if malformed

// RFC 3986 percent-encoding as SigV4 wants it: unreserved chars kept, everything
// else %XX upper-case; '/' kept when keep_slash.
std::string UriEncode(std::string_view s, bool keep_slash);
// Decodes %XX (and '+' as space when plus_as_space); nullopt on a malformed escape.
std::optional<std::string> UriDecode(std::string_view s, bool plus_as_space = false);

std::string ToLower(std::string_view s);
bool IEquals(std::string_view a, std::string_view b);
std::string_view Trim(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
std::vector<std::string_view> Split(std::string_view s, char sep);
std::optional<uint64_t> ParseUint64(std::string_view s);
std::optional<int64_t> ParseInt64(std::string_view s);
// "100G", "512MiB", "4k", "1.5T", "123" (bytes): binary multiples, case-insensitive,
// rounded to a byte; InvalidArgument when malformed, of an unknown unit, or beyond 10^18.
Result<uint64_t> ParseByteSize(std::string_view s);
// Escapes &, <, >, ", ' for XML text and attributes.
std::string XmlEscape(std::string_view s);
bool IsValidUtf8(std::string_view s);

// Days since 1970-01-01 of a proleptic Gregorian date, and back (exact for any
// date: no time zone, no locale, no syscall).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d);
void CivilFromDays(int64_t days, int64_t* y, unsigned* m, unsigned* d);

// Times: Unix nanoseconds (NowUnixNanos in clock.h) <-> the formats S3 uses.
std::string FormatHttpDate(int64_t unix_nanos);   // "Tue, 15 Nov 1994 08:12:31 GMT"
std::string FormatIso8601(int64_t unix_nanos);    // "2024-01-02T03:04:05.000Z"
std::string FormatAmzDate(int64_t unix_nanos);    // "20240102T030405Z"
std::optional<int64_t> ParseHttpDate(std::string_view s);   // RFC 1123 / 850 / asctime
std::optional<int64_t> ParseAmzDate(std::string_view s);    // "20240102T030405Z"
std::optional<int64_t> ParseIso8601(std::string_view s);    // "2024-01-02T03:04:05(.fff)Z"

}  // namespace strata
