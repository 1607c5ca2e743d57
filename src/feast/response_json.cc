// The JSON of a get-online-features answer, written directly: a 100-entity x
// 50-feature answer is 15,000 JSON values, too many for a DOM on the serving
// path. Feast's column-oriented shape: {"metadata": {"feature_names": [...]},
// "results": [{"values", "statuses", "event_timestamps"}, ...]}.
#include "feast/response_json.h"

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <strata/core/strings.h>
#include <strata/features/table.h>

namespace strata::feast {
namespace {

using features::OnlineResponse;
using features::OnlineValue;
using features::TimeUnit;

std::string IsoUtc(int64_t us) {
  std::string s = features::FormatTimestamp(us, TimeUnit::kMicro, false);
  s[10] = 'T';
  return s + "Z";
}

// IsoUtc without fmt or temporaries: it runs for every feature value of a
// response (5,000 in a 100 x 50 answer).
void AppendIsoUtc(std::string* out, int64_t us) {
  int64_t secs = us / 1000000, frac = us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  int64_t days = secs / 86400, rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    days -= 1;
  }
  int64_t y;
  unsigned m, d;
  strata::CivilFromDays(days, &y, &m, &d);
  if (y < 0 || y > 9999) {
    *out += IsoUtc(us);
    return;
  }
  char b[32];
  auto two = [](char* p, unsigned v) {
    p[0] = static_cast<char>('0' + v / 10);
    p[1] = static_cast<char>('0' + v % 10);
  };
  two(b, static_cast<unsigned>(y / 100));
  two(b + 2, static_cast<unsigned>(y % 100));
  b[4] = '-';
  two(b + 5, m);
  b[7] = '-';
  two(b + 8, d);
  b[10] = 'T';
  two(b + 11, static_cast<unsigned>(rem / 3600));
  b[13] = ':';
  two(b + 14, static_cast<unsigned>(rem / 60 % 60));
  b[16] = ':';
  two(b + 17, static_cast<unsigned>(rem % 60));
  size_t n = 19;
  if (frac) {
    b[n++] = '.';
    int digits = 6;
    while (frac % 10 == 0) {
      frac /= 10;
      --digits;
    }
    for (int i = digits - 1; i >= 0; --i) {
      b[n + static_cast<size_t>(i)] = static_cast<char>('0' + frac % 10);
      frac /= 10;
    }
    n += static_cast<size_t>(digits);
  }
  b[n++] = 'Z';
  out->append(b, n);
}

void JsonString(std::string* out, std::string_view v) {
  out->push_back('"');
  for (unsigned char c : v) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20) {
          *out += fmt::format("\\u{:04x}", c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

// std::to_chars: no format-string parsing per value (a 100 x 50 answer has 5,000).
template <class T>
void AppendNumber(std::string* out, T v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, static_cast<size_t>(r.ptr - buf));
}

void JsonValue(std::string* out, const OnlineValue& v) {
  switch (v.kind) {
    case OnlineValue::kNull:
      *out += "null";
      break;
    case OnlineValue::kBool:
      *out += v.i ? "true" : "false";
      break;
    case OnlineValue::kInt:
      AppendNumber(out, v.i);
      break;
    case OnlineValue::kDouble:
      if (std::isfinite(v.d)) {
        AppendNumber(out, v.d);  // shortest round-trip form, as fmt's "{}"
      } else {
        *out += "null";
      }
      break;
    case OnlineValue::kString:
      JsonString(out, v.s);
      break;
    case OnlineValue::kBytes:
      JsonString(out, Base64Encode(v.s));
      break;
    case OnlineValue::kTimestamp:
      out->push_back('"');
      AppendIsoUtc(out, v.i);
      out->push_back('"');
      break;
  }
}

}  // namespace

// The column-oriented response, written directly: a 100-entity x 50-feature
// answer is 15,000 JSON values, too many for a DOM on the serving path.
std::string ResponseJson(const OnlineResponse& r) {
  std::string out;
  const size_t rows = r.columns.empty() ? 0 : r.columns[0].values.size();
  out.reserve(64 + r.columns.size() * rows * 64);  // ~18 bytes of value, 10 of status, 24 of time
  struct RowTs {
    int64_t us = 0;
    std::string text;  // one allocation per row, reused across the view's columns
  };
  std::vector<RowTs> row_ts(rows);
  out += "{\"metadata\":{\"feature_names\":[";
  for (size_t i = 0; i < r.names.size(); ++i) {
    if (i) out.push_back(',');
    JsonString(&out, r.names[i]);
  }
  out += "]},\"results\":[";
  for (size_t c = 0; c < r.columns.size(); ++c) {
    const OnlineResponse::Column& col = r.columns[c];
    out += c ? ",{\"values\":[" : "{\"values\":[";
    for (size_t i = 0; i < col.values.size(); ++i) {
      if (i) out.push_back(',');
      JsonValue(&out, col.values[i]);
    }
    out += "],\"statuses\":[";
    for (size_t i = 0; i < col.statuses.size(); ++i) {
      if (i) out.push_back(',');
      out.push_back('"');
      out += col.statuses[i];
      out.push_back('"');
    }
    out += "],\"event_timestamps\":[";
    for (size_t i = 0; i < col.event_ts_us.size(); ++i) {
      if (i) out.push_back(',');
      // The features of a view share each row's timestamp: format it once per row.
      RowTs& cached = row_ts[i];
      if (cached.us != col.event_ts_us[i] || cached.text.empty()) {
        cached.us = col.event_ts_us[i];
        cached.text.clear();
        AppendIsoUtc(&cached.text, cached.us);
      }
      out.push_back('"');
      out += cached.text;
      out.push_back('"');
    }
    out += "]}";
  }
  out += "]}";
  return out;
}

}  // namespace strata::feast
