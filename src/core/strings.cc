#include <strata/core/strings.h>

#include <time.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

#include <charconv>
#include <cstring>

namespace strata {
// H. Hinnant's days_from_civil / civil_from_days.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t yy = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yy + (*m <= 2);
}

namespace {

constexpr char kHexLower[] = "0123456789abcdef";
constexpr char kHexUpper[] = "0123456789ABCDEF";
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

inline int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

inline char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

inline bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

struct B64DecodeTable {
  int8_t v[256];
  constexpr B64DecodeTable() : v() {
    for (int i = 0; i < 256; ++i) v[i] = -1;
    for (int i = 0; i < 64; ++i) v[static_cast<unsigned char>(kB64[i])] = static_cast<int8_t>(i);
  }
};
constexpr B64DecodeTable kB64Dec;

// ---- calendar arithmetic (H. Hinnant's civil-date algorithms): exact for any
// proleptic Gregorian date, no time zone, no locale, no syscall.

constexpr int64_t kNanosPerSec = 1'000'000'000;

struct Civil {
  int64_t year;
  unsigned month, day, hour, minute, second, weekday;  // weekday 0 = Sunday
  int64_t nanos;
};

Civil CivilFromUnixNanos(int64_t unix_nanos) {
  int64_t secs = unix_nanos / kNanosPerSec;
  int64_t nanos = unix_nanos % kNanosPerSec;
  if (nanos < 0) {
    nanos += kNanosPerSec;
    --secs;
  }
  int64_t days = secs / 86400;
  int64_t sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    --days;
  }
  Civil c;
  c.nanos = nanos;
  c.hour = static_cast<unsigned>(sod / 3600);
  c.minute = static_cast<unsigned>(sod % 3600 / 60);
  c.second = static_cast<unsigned>(sod % 60);
  c.weekday = static_cast<unsigned>(((days + 4) % 7 + 7) % 7);  // 1970-01-01 was a Thursday
  CivilFromDays(days, &c.year, &c.month, &c.day);
  return c;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned DaysInMonth(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// Validates fields and converts to Unix nanoseconds. Seconds may be 60 (a leap
// second, as HTTP dates allow); it rolls into the next minute.
std::optional<int64_t> ToUnixNanos(int64_t y, unsigned mo, unsigned d, unsigned h, unsigned mi,
                                   unsigned s, int64_t nanos) {
  if (y < 1 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 ||
      mi > 59 || s > 60) {
    return std::nullopt;
  }
  const int64_t days = DaysFromCivil(y, mo, d);
  // Years 1..9999 are valid dates but int64 nanoseconds only span 1677..2262:
  // dates outside that range are refused rather than wrapped (UBSan caught it).
  const int64_t secs = days * 86400 + h * 3600 + mi * 60 + s;
  int64_t out;
  if (__builtin_mul_overflow(secs, kNanosPerSec, &out) ||
      __builtin_add_overflow(out, nanos, &out)) {
    return std::nullopt;
  }
  return out;
}

constexpr const char* kWeekdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* kWeekdaysLong[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                         "Thursday", "Friday", "Saturday"};
constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void Put2(char* p, unsigned v) {
  p[0] = static_cast<char>('0' + v / 10 % 10);
  p[1] = static_cast<char>('0' + v % 10);
}
void Put4(char* p, int64_t v) {
  // Years outside 0..9999 are clamped: none of these formats can express them.
  if (v < 0) v = 0;
  if (v > 9999) v = 9999;
  const unsigned u = static_cast<unsigned>(v);
  p[0] = static_cast<char>('0' + u / 1000);
  p[1] = static_cast<char>('0' + u / 100 % 10);
  p[2] = static_cast<char>('0' + u / 10 % 10);
  p[3] = static_cast<char>('0' + u % 10);
}

// A tiny cursor for the date parsers.
struct Cursor {
  std::string_view s;
  size_t i = 0;

  bool AtEnd() const { return i >= s.size(); }
  bool Lit(char c) {
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  void SkipSpaces() {
    while (i < s.size() && s[i] == ' ') ++i;
  }
  // Exactly n digits.
  bool Digits(size_t n, unsigned* out) {
    if (i + n > s.size()) return false;
    unsigned v = 0;
    for (size_t k = 0; k < n; ++k) {
      const char c = s[i + k];
      if (c < '0' || c > '9') return false;
      v = v * 10 + static_cast<unsigned>(c - '0');
    }
    i += n;
    *out = v;
    return true;
  }
  // min..max digits.
  bool DigitsRange(size_t min, size_t max, unsigned* out) {
    size_t n = 0;
    unsigned v = 0;
    while (n < max && i + n < s.size() && s[i + n] >= '0' && s[i + n] <= '9') {
      v = v * 10 + static_cast<unsigned>(s[i + n] - '0');
      ++n;
    }
    if (n < min) return false;
    i += n;
    *out = v;
    return true;
  }
  bool Word(std::string_view* out) {
    const size_t start = i;
    while (i < s.size() && ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z'))) ++i;
    *out = s.substr(start, i - start);
    return i > start;
  }
};

bool ParseMonth(std::string_view w, unsigned* m) {
  for (unsigned k = 0; k < 12; ++k) {
    if (IEquals(w, kMonths[k])) {
      *m = k + 1;
      return true;
    }
  }
  return false;
}

bool IsWeekday(std::string_view w) {
  for (int k = 0; k < 7; ++k) {
    if (IEquals(w, kWeekdays[k]) || IEquals(w, kWeekdaysLong[k])) return true;
  }
  return false;
}

bool ParseHms(Cursor& c, unsigned* h, unsigned* mi, unsigned* s) {
  return c.Digits(2, h) && c.Lit(':') && c.Digits(2, mi) && c.Lit(':') && c.Digits(2, s);
}

bool ParseGmtZone(Cursor& c) {
  c.SkipSpaces();
  std::string_view rest = c.s.substr(c.i);
  while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
  return rest == "GMT" || rest == "UTC" || rest == "+0000" || rest == "Z";
}

}  // namespace

std::string HexEncode(std::string_view bytes) {
  std::string out(bytes.size() * 2, '\0');
  char* o = out.data();
  for (unsigned char c : bytes) {
    *o++ = kHexLower[c >> 4];
    *o++ = kHexLower[c & 15];
  }
  return out;
}

std::optional<std::string> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = HexVal(hex[2 * i]), lo = HexVal(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>((hi << 4) | lo);
  }
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out((bytes.size() + 2) / 3 * 4, '\0');
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size(), o = 0;
  while (n >= 3) {
    const uint32_t v = (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
    out[o++] = kB64[v >> 18];
    out[o++] = kB64[(v >> 12) & 63];
    out[o++] = kB64[(v >> 6) & 63];
    out[o++] = kB64[v & 63];
    p += 3;
    n -= 3;
  }
  if (n == 1) {
    const uint32_t v = uint32_t{p[0]} << 16;
    out[o++] = kB64[v >> 18];
    out[o++] = kB64[(v >> 12) & 63];
    out[o++] = '=';
    out[o++] = '=';
  } else if (n == 2) {
    const uint32_t v = (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8);
    out[o++] = kB64[v >> 18];
    out[o++] = kB64[(v >> 12) & 63];
    out[o++] = kB64[(v >> 6) & 63];
    out[o++] = '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view b64) {
  // Strict RFC 4648: standard alphabet, padded to a multiple of 4, '=' only as
  // the last one or two characters, no whitespace.
  if (b64.size() % 4 != 0) return std::nullopt;
  size_t pad = 0;
  if (!b64.empty() && b64.back() == '=') {
    pad = 1;
    if (b64[b64.size() - 2] == '=') pad = 2;
  }
  std::string out;
  out.reserve(b64.size() / 4 * 3);
  const size_t full = b64.size() - (pad ? 4 : 0);  // groups without padding
  for (size_t i = 0; i < full; i += 4) {
    const int a = kB64Dec.v[static_cast<unsigned char>(b64[i])];
    const int b = kB64Dec.v[static_cast<unsigned char>(b64[i + 1])];
    const int c = kB64Dec.v[static_cast<unsigned char>(b64[i + 2])];
    const int d = kB64Dec.v[static_cast<unsigned char>(b64[i + 3])];
    if ((a | b | c | d) < 0) return std::nullopt;
    const uint32_t v = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | uint32_t(d);
    out.push_back(static_cast<char>(v >> 16));
    out.push_back(static_cast<char>(v >> 8));
    out.push_back(static_cast<char>(v));
  }
  if (pad) {
    const size_t i = full;
    const int a = kB64Dec.v[static_cast<unsigned char>(b64[i])];
    const int b = kB64Dec.v[static_cast<unsigned char>(b64[i + 1])];
    if ((a | b) < 0) return std::nullopt;
    uint32_t v = (uint32_t(a) << 18) | (uint32_t(b) << 12);
    if (pad == 1) {
      const int c = kB64Dec.v[static_cast<unsigned char>(b64[i + 2])];
      if (c < 0) return std::nullopt;
      v |= uint32_t(c) << 6;
      out.push_back(static_cast<char>(v >> 16));
      out.push_back(static_cast<char>(v >> 8));
    } else {
      out.push_back(static_cast<char>(v >> 16));
    }
  }
  return out;
}

std::string UriEncode(std::string_view s, bool keep_slash) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  for (unsigned char c : s) {
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHexUpper[c >> 4]);
      out.push_back(kHexUpper[c & 15]);
    }
  }
  return out;
}

std::optional<std::string> UriDecode(std::string_view s, bool plus_as_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = HexVal(s[i + 1]), lo = HexVal(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>((hi << 4) | lo));
      i += 2;
    } else if (c == '+' && plus_as_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = AsciiLower(c);
  return out;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  auto ws = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
  };
  size_t b = 0, e = s.size();
  while (b < e && ws(s[b])) ++b;
  while (e > b && ws(s[e - 1])) --e;
  return s.substr(b, e - b);
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::optional<uint64_t> ParseUint64(std::string_view s) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> ParseInt64(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const size_t first = s[0] == '-' ? 1 : 0;
  if (first >= s.size() || s[first] < '0' || s[first] > '9') return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

Result<uint64_t> ParseByteSize(std::string_view s) {
  const std::string_view t = Trim(s);
  const Status bad = Status::InvalidArgument("\"" + std::string(s) + "\" is not a size (try 100G, 512MiB)");
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  if (i == 0) return bad;
  const std::string number(t.substr(0, i));
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size()) return bad;
  std::string unit = ToLower(Trim(t.substr(i)));
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  double mult = 1;
  if (unit.empty()) mult = 1;
  else if (unit == "k") mult = 1024.0;
  else if (unit == "m") mult = 1024.0 * 1024;
  else if (unit == "g") mult = 1024.0 * 1024 * 1024;
  else if (unit == "t") mult = 1024.0 * 1024 * 1024 * 1024;
  else return Status::InvalidArgument("\"" + std::string(s) + "\": unknown unit (use K, M, G or T)");
  const double bytes = v * mult;
  if (bytes < 0 || bytes > 1e18) return bad;
  return static_cast<uint64_t>(std::llround(bytes));
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // Fast path over ASCII, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;  // continuation byte, overlong 2-byte lead (C0/C1), or > U+10FFFF lead
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

std::string FormatHttpDate(int64_t unix_nanos) {
  const Civil c = CivilFromUnixNanos(unix_nanos);
  // "Tue, 15 Nov 1994 08:12:31 GMT"
  std::string out(29, ' ');
  char* p = out.data();
  std::memcpy(p, kWeekdays[c.weekday], 3);
  p[3] = ',';
  Put2(p + 5, c.day);
  std::memcpy(p + 8, kMonths[c.month - 1], 3);
  Put4(p + 12, c.year);
  Put2(p + 17, c.hour);
  p[19] = ':';
  Put2(p + 20, c.minute);
  p[22] = ':';
  Put2(p + 23, c.second);
  std::memcpy(p + 26, "GMT", 3);
  return out;
}

std::string FormatIso8601(int64_t unix_nanos) {
  const Civil c = CivilFromUnixNanos(unix_nanos);
  // "2024-01-02T03:04:05.000Z"
  std::string out(24, '\0');
  char* p = out.data();
  Put4(p, c.year);
  p[4] = '-';
  Put2(p + 5, c.month);
  p[7] = '-';
  Put2(p + 8, c.day);
  p[10] = 'T';
  Put2(p + 11, c.hour);
  p[13] = ':';
  Put2(p + 14, c.minute);
  p[16] = ':';
  Put2(p + 17, c.second);
  p[19] = '.';
  const unsigned ms = static_cast<unsigned>(c.nanos / 1'000'000);
  p[20] = static_cast<char>('0' + ms / 100);
  Put2(p + 21, ms % 100);
  p[23] = 'Z';
  return out;
}

std::string FormatAmzDate(int64_t unix_nanos) {
  const Civil c = CivilFromUnixNanos(unix_nanos);
  // "20240102T030405Z"
  std::string out(16, '\0');
  char* p = out.data();
  Put4(p, c.year);
  Put2(p + 4, c.month);
  Put2(p + 6, c.day);
  p[8] = 'T';
  Put2(p + 9, c.hour);
  Put2(p + 11, c.minute);
  Put2(p + 13, c.second);
  p[15] = 'Z';
  return out;
}

std::optional<int64_t> ParseHttpDate(std::string_view s) {
  s = Trim(s);
  Cursor c{s};
  std::string_view word;
  if (!c.Word(&word) || !IsWeekday(word)) return std::nullopt;
  unsigned y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (c.Lit(',')) {
    c.SkipSpaces();
    std::string_view mon;
    if (!c.DigitsRange(1, 2, &d)) return std::nullopt;
    if (c.Lit('-')) {
      // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
      if (!c.Word(&mon) || !ParseMonth(mon, &mo) || !c.Lit('-')) return std::nullopt;
      const size_t start = c.i;
      if (!c.DigitsRange(2, 4, &y)) return std::nullopt;
      if (c.i - start == 2) y += y < 70 ? 2000 : 1900;  // RFC 6265's two-digit rule
      else if (c.i - start != 4) return std::nullopt;
    } else {
      // RFC 1123: "Sun, 06 Nov 1994 08:49:37 GMT"
      if (!c.Lit(' ')) return std::nullopt;
      c.SkipSpaces();
      if (!c.Word(&mon) || !ParseMonth(mon, &mo) || !c.Lit(' ')) return std::nullopt;
      c.SkipSpaces();
      if (!c.Digits(4, &y)) return std::nullopt;
    }
    if (!c.Lit(' ')) return std::nullopt;
    c.SkipSpaces();
    if (!ParseHms(c, &h, &mi, &sec) || !ParseGmtZone(c)) return std::nullopt;
  } else {
    // asctime: "Sun Nov  6 08:49:37 1994"
    std::string_view mon;
    if (!c.Lit(' ')) return std::nullopt;
    c.SkipSpaces();
    if (!c.Word(&mon) || !ParseMonth(mon, &mo) || !c.Lit(' ')) return std::nullopt;
    c.SkipSpaces();
    if (!c.DigitsRange(1, 2, &d) || !c.Lit(' ')) return std::nullopt;
    c.SkipSpaces();
    if (!ParseHms(c, &h, &mi, &sec) || !c.Lit(' ')) return std::nullopt;
    c.SkipSpaces();
    if (!c.Digits(4, &y)) return std::nullopt;
    c.SkipSpaces();
    if (!c.AtEnd()) return std::nullopt;
  }
  return ToUnixNanos(y, mo, d, h, mi, sec, 0);
}

std::optional<int64_t> ParseAmzDate(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z') return std::nullopt;
  Cursor c{s};
  unsigned y, mo, d, h, mi, sec;
  if (!c.Digits(4, &y) || !c.Digits(2, &mo) || !c.Digits(2, &d) || !c.Lit('T') ||
      !c.Digits(2, &h) || !c.Digits(2, &mi) || !c.Digits(2, &sec)) {
    return std::nullopt;
  }
  return ToUnixNanos(y, mo, d, h, mi, sec, 0);
}

std::optional<int64_t> ParseIso8601(std::string_view s) {
  Cursor c{s};
  unsigned y, mo, d, h, mi, sec;
  if (!c.Digits(4, &y) || !c.Lit('-') || !c.Digits(2, &mo) || !c.Lit('-') || !c.Digits(2, &d) ||
      !(c.Lit('T') || c.Lit('t')) || !ParseHms(c, &h, &mi, &sec)) {
    return std::nullopt;
  }
  int64_t nanos = 0;
  if (c.Lit('.')) {
    int64_t scale = 100'000'000;
    size_t digits = 0;
    while (!c.AtEnd() && s[c.i] >= '0' && s[c.i] <= '9') {
      nanos += (s[c.i] - '0') * scale;  // digits beyond nanoseconds are dropped
      scale /= 10;
      ++c.i;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
  }
  int64_t offset_secs = 0;
  if (c.Lit('Z') || c.Lit('z')) {
  } else if (!c.AtEnd() && (s[c.i] == '+' || s[c.i] == '-')) {
    const bool neg = s[c.i] == '-';
    ++c.i;
    unsigned oh, om;
    if (!c.Digits(2, &oh) || !c.Lit(':') || !c.Digits(2, &om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_secs = (neg ? -1 : 1) * static_cast<int64_t>(oh * 3600 + om * 60);
  } else {
    return std::nullopt;
  }
  if (!c.AtEnd()) return std::nullopt;
  auto t = ToUnixNanos(y, mo, d, h, mi, sec, nanos);
  if (!t) return std::nullopt;
  int64_t out;  // the zone offset can push an in-range local time out of range
  if (__builtin_sub_overflow(*t, offset_secs * kNanosPerSec, &out)) return std::nullopt;
  return out;
}

}  // namespace strata
