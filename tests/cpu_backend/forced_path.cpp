#include "forced_path.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

namespace cpu_test {
namespace {

// The ISA extensions each level of dispatch/isa.hpp needs (AVX2 stands for AVX2 +
// FMA + F16C, AVX-512 for F/BW/VL/DQ).
std::set<std::string> extensions_of(const std::string& level) {
  if (level == "avx2") return {"AVX2"};
  if (level == "avx512") return {"AVX2", "AVX-512"};
  if (level == "avx512_vbmi") return {"AVX2", "AVX-512", "AVX512_VBMI"};
  if (level == "avx512_bf16") return {"AVX2", "AVX-512", "AVX512_BF16"};
  if (level == "avx512_bf16_vbmi") return {"AVX2", "AVX-512", "AVX512_BF16", "AVX512_VBMI"};
  if (level == "amx") return {"AVX2", "AVX-512", "AVX512_BF16", "AVX512_VBMI", "AMX"};
  return {};
}

// The level named after "isa " in the device string, or "".
std::string level_in(const std::string& device) {
  const std::size_t at = device.find("isa ");
  if (at == std::string::npos) return "";
  const std::size_t begin = at + 4;
  const std::size_t end = device.find_first_of(";) ", begin);
  return device.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

std::string joined(const std::set<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : " and ") + n;
  return s;
}

bool set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0';
}

class SkipWhenNothingAdded : public ::testing::Environment {
 public:
  SkipWhenNothingAdded(std::function<std::string()> device, std::function<std::string()> default_device)
      : device_(std::move(device)), default_device_(std::move(default_device)) {}
  void SetUp() override {
    const char* disabled = std::getenv("OCTET_CPU_DISABLE_SIMD");
    const bool portable = disabled != nullptr && disabled[0] != '\0' && std::strcmp(disabled, "0") != 0;
    if (!portable && !set("OCTET_CPU_ISA") && !set("OCTET_CPU_FP8_GEMM")) return;
    const std::string default_device = default_device_();  // first: before this process loads the plugin
    const std::string device = device_();
    if (!portable) {
      const std::string why =
          forced_path_missing(device, std::getenv("OCTET_CPU_ISA"), std::getenv("OCTET_CPU_FP8_GEMM"));
      if (!why.empty()) GTEST_SKIP() << why;
    }
    const std::string why = forced_path_redundant(device, default_device);
    if (!why.empty()) GTEST_SKIP() << why;
  }

 private:
  std::function<std::string()> device_, default_device_;
};

}  // namespace

std::string forced_path_missing(const std::string& device, const char* level, const char* engine) {
  const std::string running = level_in(device);
  if (running.empty()) return "";  // no device string: the tests fail on their own
  std::string forced_level = level != nullptr ? level : "";
  if (forced_level == "avx512bf16") forced_level = "avx512_bf16";
  if (!forced_level.empty() && forced_level != running) {
    // A level above what the CPU has runs the best one below it.
    const std::set<std::string> have = extensions_of(running);
    std::set<std::string> lacking;
    for (const std::string& e : extensions_of(forced_level)) {
      if (have.count(e) == 0) lacking.insert(e);
    }
    if (!lacking.empty()) {
      return "needs " + joined(lacking) + ": OCTET_CPU_ISA=" + forced_level + ", but this CPU runs level " + running;
    }
  }
  const std::string forced_engine = engine != nullptr ? engine : "";
  const char* shown = forced_engine == "bf16"          ? "GEMM vdpbf16ps"
                      : forced_engine == "onednn_bf16" ? "GEMM oneDNN bf16 matmul"
                      : forced_engine == "amx"         ? "GEMM amx tdpbf16ps"
                                                       : nullptr;
  if (shown != nullptr && device.find(shown) == std::string::npos) {
    return std::string(forced_engine == "amx" ? "needs AMX" : "needs AVX512_BF16") +
           ": OCTET_CPU_FP8_GEMM=" + forced_engine + ", but this CPU runs level " + running + " (device: " + device +
           ")";
  }
  return "";
}

std::string forced_path_redundant(const std::string& device, const std::string& default_device) {
  if (device.empty() || device != default_device) return "";
  return "the forced path is this CPU's default path (device: " + device +
         "), which the run without OCTET_CPU_ISA, OCTET_CPU_FP8_GEMM and OCTET_CPU_DISABLE_SIMD tests";
}

void skip_all_when_forced_path_adds_nothing(std::function<std::string()> device,
                                            std::function<std::string()> default_device) {
  ::testing::AddGlobalTestEnvironment(new SkipWhenNothingAdded(std::move(device), std::move(default_device)));
}

}  // namespace cpu_test
