// Parsing the command line with gflags, so that a flag error is also the termination message.
//
// gflags writes its own errors (an unknown flag, a value its type does not take) to stderr and
// exits at once, out of reach of the program's code. ParseFlags keeps what gflags writes while it
// parses, gives it back to stderr unchanged, and on an error also writes it as the container's
// termination message (program/termination_message.h) before exiting 1, as gflags would.
#ifndef NDR_PROGRAM_PARSE_FLAGS_H_
#define NDR_PROGRAM_PARSE_FLAGS_H_

#include <string>

namespace ndr::program {

// gflags::ParseCommandLineFlags(argc, argv, true), as described above. `termination_message_path`,
// when given, is the flag naming the file (SetTerminationMessagePath): gflags has set every flag it
// could parse before it reports an error, so the file is the one the command line names. Call
// before any thread starts: standard error is redirected meanwhile.
void ParseFlags(int* argc, char*** argv, const std::string* termination_message_path = nullptr);

}  // namespace ndr::program

#endif  // NDR_PROGRAM_PARSE_FLAGS_H_
