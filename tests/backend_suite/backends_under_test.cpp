// The backends the plugin-table suites of this folder run on, one GoogleTest
// instantiation each (BackendTable/<suite>.<test>/<backend>): the embedded
// reference, then every plugin this build has, by file. A plugin this build
// does not have is listed too, and its tests skip saying how to build it; a
// backend whose memory is on the device skips in the fixture
// (backend_table.cpp). What each backend does not join is stated here, with
// the reason.
#include <string>
#include <vector>

#include "backend_factory.hpp"
#include "octet_reference/reference_backend.h"

namespace octet::test {
namespace {

const char* const kNoScaleUpdates =
    "its table leaves scale_from_amax, delayed_scaling_update and amax_record NULL: the core keeps the "
    "scaling state on the host (docs/abi.md)";

BackendFactory reference_backend() {
  BackendFactory factory;
  factory.name = "reference";
  factory.entry = [](std::string*) -> octet_backend_entry_fn { return &octet_reference_backend_entry; };
  return factory;
}

// `path` when the build has the plugin (a non-empty path), else a factory
// whose tests skip, naming the option that builds it.
BackendFactory plugin_or_unbuilt(const char* name, const char* path, const char* option) {
  if (path[0] != '\0') return plugin_backend(name, path);
  return unbuilt_backend(name, std::string("not built in this tree (configure with -D") + option + "=ON)");
}

}  // namespace

const std::vector<BackendFactory>& backends_under_test() {
  static const std::vector<BackendFactory> backends = [] {
    std::vector<BackendFactory> b;
    b.push_back(reference_backend());

    BackendFactory cpu = plugin_or_unbuilt("cpu", OCTET_TEST_CPU_PLUGIN, "OCTET_WITH_ONEDNN");
    cpu.not_joined = {
        {"GemmKernels",
         "its GEMMs sum in their own order, within numerics.md section 8's bound, not the reference's bits "
         "(tests/cpu_backend/gemm_vs_reference_test.cpp checks the bound)"},
        {"ScaleUpdateKernels", kNoScaleUpdates},
    };
    b.push_back(cpu);

    b.push_back(plugin_or_unbuilt("kokkos", OCTET_TEST_KOKKOS_PLUGIN, "OCTET_WITH_KOKKOS"));

    // The template has convert, amax, quantize (rowwise) and dequantize: the
    // tests of the other entries skip, naming the entry (OCTET_REQUIRE_ENTRY).
    BackendFactory templ = plugin_or_unbuilt("template", OCTET_TEST_TEMPLATE_PLUGIN, "OCTET_BUILD_TESTS");
    templ.not_joined = {
        {"ScaleUpdateKernels", kNoScaleUpdates},
        {"ScalingKernels.QuantizesRowwiseColumnwiseOrBoth",
         "it quantizes rowwise only (no transpose, no fused cast+transpose: plugins/template/README.md)"},
        // The core checks views before a plugin sees them; the template's own
        // checks are fewer and worded otherwise than the reference's.
        {"BadArguments.ConvertRefusesNullUnknownDtypeLdAndShape",
         "its convert accepts a view the reference refuses (the core refuses it first)"},
        {"BadArguments.QuantizeRefusesEachBrokenRule",
         "its quantize names its rules in words of its own (\"args->out_dtype must be E4M3 or E5M2\")"},
    };
    b.push_back(templ);

    b.push_back(plugin_or_unbuilt("opencl", OCTET_TEST_OPENCL_PLUGIN, "OCTET_WITH_OPENCL"));

    BackendFactory cuda = plugin_or_unbuilt("cuda", OCTET_TEST_CUDA_PLUGIN, "OCTET_WITH_CUDA");
    cuda.needs_device = true;
    b.push_back(cuda);
    return b;
  }();
  return backends;
}

}  // namespace octet::test
