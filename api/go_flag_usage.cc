#include "api/go_flag_usage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "api/go_duration.h"
#include "api/go_quote.h"
#include "gflags/gflags.h"

namespace ndr {
namespace {

// A Go duration with its unit ("1s", "0s", "2m"; "0" alone could be any number).
bool IsGoDuration(const std::string& text) {
  if (text.empty() || !(text[0] >= '0' && text[0] <= '9')) return false;
  const char last = text.back();
  if (!((last >= 'a' && last <= 'z') || last == '\xb5')) return false;
  return ParseGoDuration(text, "x").ok();
}

// flag.PrintDefaults for one flag.
std::string Describe(const gflags::CommandLineFlagInfo& flag) {
  const std::string name = absl::StrReplaceAll(flag.name, {{"_", "-"}});
  std::string type, default_text;
  const std::string& value = flag.default_value;
  if (flag.type == "bool") {
    if (value == "true") default_text = "true";
  } else if (flag.type == "string") {
    const bool duration = IsGoDuration(value);
    type = duration ? "duration" : "string";
    if (duration) {
      if (*ParseGoDuration(value, "x") != absl::ZeroDuration()) default_text = value;
    } else if (!value.empty()) {
      default_text = GoQuote(value);
    }
  } else if (flag.type == "double") {
    type = "float";
    if (value != "0") default_text = value;
  } else {
    type = flag.type.rfind("uint", 0) == 0 ? "uint" : "int";
    if (value != "0") default_text = value;
  }
  // flag.UnquoteUsage: a `back-quoted` word in the description names the value's type.
  std::string description = flag.description;
  if (const size_t open = description.find('`'); open != std::string::npos) {
    if (const size_t close = description.find('`', open + 1); close != std::string::npos) {
      type = description.substr(open + 1, close - open - 1);
      description.erase(close, 1);
      description.erase(open, 1);
    }
  }
  std::string line = absl::StrCat("  -", name);
  if (!type.empty()) absl::StrAppend(&line, " ", type);
  absl::StrAppend(&line, "\n    \t", absl::StrReplaceAll(description, {{"\n", "\n    \t"}}));
  if (!default_text.empty()) absl::StrAppend(&line, " (default ", default_text, ")");
  return line + "\n";
}

}  // namespace

bool HelpRequested(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--") == 0) return false;
    for (const char* help : {"-h", "-help", "--help", "--h"}) {
      if (strcmp(argv[i], help) == 0) return true;
    }
  }
  return false;
}

std::string GoFlagUsage(const std::string& usage, const std::vector<FlagSection>& sections) {
  std::string out = usage;
  if (!out.empty() && out.back() != '\n') out += "\n";
  for (const FlagSection& section : sections) {
    if (!section.heading.empty()) absl::StrAppend(&out, "\n", section.heading, "\n");
    for (const std::string& name : section.flags) {
      gflags::CommandLineFlagInfo info;
      if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
        // A section naming a flag nobody defined is this program's mistake, not the user's.
        fprintf(stderr, "internal error: the usage names --%s, which no part defines\n",
                name.c_str());
        abort();
      }
      absl::StrAppend(&out, Describe(info));
    }
  }
  return out;
}

std::vector<std::string> LoggingFlagNames() {
  return {"logging_format",          "log_flush_frequency",
          "log_text_split_stream",   "log_text_info_buffer_size",
          "log_json_split_stream",   "log_json_info_buffer_size",
          "v",                       "vmodule"};
}

}  // namespace ndr
