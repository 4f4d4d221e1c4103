#include "api/go_quote.h"

#include "absl/strings/str_format.h"

namespace ndr {
namespace {

// The length of the valid UTF-8 sequence at the start of `s`, or 0.
size_t Utf8Length(absl::string_view s) {
  const unsigned char c = s[0];
  size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (length == 0 || c > 0xF4 || length > s.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((static_cast<unsigned char>(s[k]) & 0xC0) != 0x80) return 0;
  }
  const unsigned char c1 = s[1];
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
      (c == 0xF4 && c1 > 0x8F)) {
    return 0;
  }
  return length;
}

uint32_t Rune(absl::string_view s, size_t length) {
  const unsigned char c = s[0];
  uint32_t rune = length == 2 ? c & 0x1F : length == 3 ? c & 0x0F : c & 0x07;
  for (size_t k = 1; k < length; ++k) rune = (rune << 6) | (static_cast<unsigned char>(s[k]) & 0x3F);
  return rune;
}

}  // namespace

std::string GoQuote(absl::string_view s) {
  std::string out = "\"";
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\a': out += "\\a"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\v': out += "\\v"; break;
        default:
          if (c < 0x20 || c == 0x7F) {
            absl::StrAppendFormat(&out, "\\x%02x", c);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    const size_t length = Utf8Length(s.substr(i));
    if (length == 0) {
      absl::StrAppendFormat(&out, "\\x%02x", c);
      ++i;
      continue;
    }
    const uint32_t rune = Rune(s.substr(i), length);
    if ((rune >= 0x80 && rune < 0xA0) || rune == 0x2028 || rune == 0x2029 || rune == 0xFEFF) {
      absl::StrAppendFormat(&out, "\\u%04x", rune);
    } else {
      out.append(s.data() + i, length);
    }
    i += length;
  }
  out += "\"";
  return out;
}

void AppendGoJsonString(absl::string_view s, GoJsonStyle style, std::string* out) {
  const bool html = style == GoJsonStyle::kEncodingJson;
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      switch (c) {
        case '"': *out += "\\\""; break;
        case '\\': *out += "\\\\"; break;
        case '\n': *out += "\\n"; break;
        case '\r': *out += "\\r"; break;
        case '\t': *out += "\\t"; break;
        default:
          if (c < 0x20 || (html && (c == '<' || c == '>' || c == '&'))) {
            absl::StrAppendFormat(out, "\\u%04x", c);
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    const size_t length = Utf8Length(s.substr(i));
    if (length == 0) {  // each byte of invalid UTF-8
      *out += "\\ufffd";
      ++i;
      continue;
    }
    const uint32_t rune = Rune(s.substr(i), length);
    if (html && (rune == 0x2028 || rune == 0x2029)) {
      absl::StrAppendFormat(out, "\\u%04x", rune);
    } else {
      out->append(s.data() + i, length);
    }
    i += length;
  }
  out->push_back('"');
}

}  // namespace ndr
