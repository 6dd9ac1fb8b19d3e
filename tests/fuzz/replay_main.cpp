// main() for the fuzz targets where libFuzzer is not used (any compiler: the
// regular test suite, the sanitizer build, the GPU machine). It runs each
// input file named on the command line (a folder: every file in it) once,
// then --random=N inputs of random bytes drawn from --seed=S (default 1),
// of up to --max-len=L bytes (default 512). No coverage guidance: the
// committed corpus and the random inputs are a repeatable regression run,
// the coverage-guided search is .ci/fuzz's.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return true;
}

uint64_t number_after(const char* arg, const char* flag) { return std::strtoull(arg + std::strlen(flag), nullptr, 10); }

}  // namespace

int main(int argc, char** argv) {
  uint64_t random_inputs = 0, seed = 1, max_len = 512, files = 0;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strncmp(arg, "--random=", 9) == 0) {
      random_inputs = number_after(arg, "--random=");
    } else if (std::strncmp(arg, "--seed=", 7) == 0) {
      seed = number_after(arg, "--seed=");
    } else if (std::strncmp(arg, "--max-len=", 10) == 0) {
      max_len = number_after(arg, "--max-len=");
    } else if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (!entry.is_regular_file()) continue;
        if (!run_file(entry.path())) return 2;
        ++files;
      }
    } else {
      if (!run_file(arg)) return 2;
      ++files;
    }
  }
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes;
  for (uint64_t n = 0; n < random_inputs; ++n) {
    bytes.resize(size_t(rng() % (max_len + 1)));
    for (uint8_t& b : bytes) b = uint8_t(rng());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("replay: %llu files and %llu random inputs (seed %llu), every property held\n",
              (unsigned long long)files, (unsigned long long)random_inputs, (unsigned long long)seed);
  return 0;
}
