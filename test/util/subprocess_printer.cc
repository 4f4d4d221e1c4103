// At each failing assertion of a test, prints what every live child process said: its state and
// the tail of its log. Linked into every test through //test/util:testing (alwayslink).
#include <algorithm>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/util/subprocess.h"

namespace ndr::testing {
namespace {

// A description printed once in a test is not printed again for a later failure unless
// something changed (more output, the process ended).
class ProcessLogPrinter final : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo&) override { shown_.clear(); }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    WithLiveSubprocesses([&](const std::vector<Subprocess*>& live) {
      // At most this many, so that a test with 200 children stays readable; ended ones first,
      // since a process that exited is the usual culprit.
      constexpr int kMaxShown = 10;
      std::vector<Subprocess*> order = live;
      std::stable_partition(order.begin(), order.end(),
                            [](Subprocess* p) { return !p->Running(); });
      int printed = 0, skipped = 0;
      for (Subprocess* p : order) {
        std::string description = p->Describe();
        if (!shown_.insert(description).second) continue;
        if (printed == kMaxShown) {
          ++skipped;
          continue;
        }
        ++printed;
        std::cout << "--- child process " << description << "--- end of "
                  << description.substr(0, description.find(',')) << ")\n";
      }
      if (skipped > 0) std::cout << "--- " << skipped << " more child processes not shown\n";
      std::cout << std::flush;
    });
  }

 private:
  std::set<std::string> shown_;
};

const bool kPrinterInstalled = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ProcessLogPrinter());
  return true;
}();

}  // namespace
}  // namespace ndr::testing
