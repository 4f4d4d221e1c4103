// Linked like every shipped program (static_cc_binary, static.specs): prints "ok" when the
// program has a PT_GNU_EH_FRAME header, an exception thrown three frames down is caught, and a
// backtrace of the unwinder reaches main; otherwise says what failed and exits 1.
#include <link.h>
#include <unwind.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

int HasEhFrameHeader(dl_phdr_info* info, size_t, void* found) {
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') return 0;  // the program only
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) *static_cast<bool*>(found) = true;
  }
  return 1;
}

[[gnu::noinline]] void Throw(int depth) {
  if (depth == 0) throw std::runtime_error("thrown");
  Throw(depth - 1);
  asm volatile("");  // not a tail call
}

_Unwind_Reason_Code CountFrame(_Unwind_Context*, void* frames) {
  ++*static_cast<int*>(frames);
  return _URC_NO_REASON;
}

[[gnu::noinline]] int Backtrace(int depth) {
  if (depth > 0) {
    const int frames = Backtrace(depth - 1);
    asm volatile("");
    return frames;
  }
  int frames = 0;
  _Unwind_Backtrace(CountFrame, &frames);
  return frames;
}

}  // namespace

int main() {
  bool header = false;
  dl_iterate_phdr(HasEhFrameHeader, &header);
  if (!header) {
    std::printf("no PT_GNU_EH_FRAME: the program was not linked with --eh-frame-hdr\n");
    return 1;
  }
  std::string caught;
  try {
    Throw(3);
  } catch (const std::runtime_error& e) {
    caught = e.what();
  }
  if (caught != "thrown") {
    std::printf("the exception was not caught\n");
    return 1;
  }
  // Backtrace(3), 3 more of it, main, and the C library's start: at least 6.
  if (const int frames = Backtrace(3); frames < 6) {
    std::printf("the unwinder saw %d frames, not the 6 or more on the stack\n", frames);
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
