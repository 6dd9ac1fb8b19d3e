// Section (d) of `octet conformance`: the backend-vs-reference fuzzer
// (fuzz/backend_vs_reference.hpp, the properties tests/fuzz runs) on a
// bounded number of random programs drawn from a seed, as the fuzz
// target's replay draws them (replay_main.cpp: up to 512 bytes each). The
// first input whose property fails ends the section, with its index and
// bytes, so it can be replayed.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "conformance/sections.hpp"
#include "fuzz/backend_vs_reference.hpp"

namespace octet_cli {

Section check_fuzz(const std::string& backend, uint64_t seed, uint64_t inputs) {
  Section s;
  s.id = "fuzz";
  s.title = "the backend-vs-reference fuzzer: " + std::to_string(inputs) + " random programs (seed " +
            std::to_string(seed) + ")";
  octet_context* probe = octet_fuzz::make_backend_context(backend.c_str());
  if (probe == nullptr) {
    s.add("context create", Outcome::Fail, octet_last_error_message());
    return s;
  }
  octet_context_destroy(probe);
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes;
  constexpr uint64_t kMaxLen = 512;
  for (uint64_t n = 0; n < inputs; ++n) {
    bytes.resize(size_t(rng() % (kMaxLen + 1)));
    for (uint8_t& b : bytes) b = uint8_t(rng());
    try {
      octet_fuzz::check_backend_vs_reference(backend.c_str(), bytes.data(), bytes.size());
    } catch (const std::exception& e) {
      std::string hex;
      for (uint8_t b : bytes) {
        char buf[3];
        std::snprintf(buf, sizeof buf, "%02x", b);
        hex += buf;
      }
      s.add("input " + std::to_string(n), Outcome::Fail, std::string(e.what()) + "; input bytes (hex): " + hex);
      return s;
    }
  }
  s.add(std::to_string(inputs) + " inputs", Outcome::Pass, "every property held");
  return s;
}

}  // namespace octet_cli
