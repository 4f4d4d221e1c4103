// Runs a fuzz target over every file of its seed corpus, so that the normal test suite (built
// with gcc, without libFuzzer) checks what the fuzzer has found. Usage: replay CORPUS_DIR.
// Writes JUnit XML, one case per file, when Bazel asks for it.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " CORPUS_DIR" << std::endl;
    return 2;
  }
  std::vector<std::string> files;
  if (DIR* d = opendir(argv[1])) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') files.push_back(std::string(argv[1]) + "/" + e->d_name);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cerr << "no corpus in " << argv[1] << std::endl;
    return 1;
  }
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    const std::string input = buffer.str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
    std::cout << "ok " << file << std::endl;  // a crash would have ended the program
  }
  if (const char* xml = getenv("XML_OUTPUT_FILE")) {
    std::ofstream out(xml);
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"" << files.size()
        << "\" failures=\"0\" disabled=\"0\" errors=\"0\">\n<testsuite name=\"corpus\" tests=\""
        << files.size() << "\">\n";
    for (const std::string& file : files) out << "<testcase name=\"" << file << "\"/>\n";
    out << "</testsuite></testsuites>\n";
  }
  return 0;
}
