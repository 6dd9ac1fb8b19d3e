// A test plugin: the reference's kernels behind the capabilities the cuda
// backend declares (device memory of its own, 256-byte alignment, fused
// cast+transpose, no FP8 GEMM output, the plugin ABI 1.3 scaling entries),
// recording every entry the core calls with its operands and the bytes of
// the matrices it reads and writes (tracing_backend.h). The reference's
// native profile has native columnwise access and every FP8 layout, so a
// context can present it hopper-like (TN only, transposed copies) or
// blackwell-like. linear_step_traffic_test.cpp reads the record through
// dlsym and compares one training step with the schedule it expects.
#include <octet/octet_backend.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "octet_reference/reference_backend.h"
#include "tracing_backend.h"

namespace {

std::mutex g_mutex;
std::vector<octet_test_trace_event> g_events;
std::map<void*, size_t> g_live;  // mem_alloc'd pointers and their sizes
const octet_backend_api* g_ref = nullptr;
uint64_t g_alloc_limit = 0;  // octet_test_trace_fail_allocations
bool g_null_success = false;
octet_backend_api g_api;

const char* dtype_text(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return "fp32";
    case OCTET_DTYPE_BF16: return "bf16";
    case OCTET_DTYPE_FP16: return "fp16";
    case OCTET_DTYPE_E4M3: return "e4m3";
    case OCTET_DTYPE_E5M2: return "e5m2";
    case OCTET_DTYPE_E8M0: return "e8m0";
    default: return "?";
  }
}

uint64_t dtype_bytes(int32_t dtype) {
  return dtype == OCTET_DTYPE_FP32 ? 4 : (dtype == OCTET_DTYPE_BF16 || dtype == OCTET_DTYPE_FP16) ? 2 : 1;
}

uint64_t view_bytes(const octet_matrix_view& v) { return uint64_t(v.rows) * uint64_t(v.cols) * dtype_bytes(v.dtype); }

std::string view_text(const octet_matrix_view& v) {
  std::string s = std::string(dtype_text(v.dtype)) + "[" + std::to_string(v.rows) + "x" + std::to_string(v.cols);
  if (v.ld != v.cols) s += " ld " + std::to_string(v.ld);
  return s + "]";
}

void record(const char* entry, const std::string& detail, uint64_t read, uint64_t written, uint64_t flops = 0,
            uint64_t alloc = 0) {
  octet_test_trace_event e{};
  std::snprintf(e.entry, sizeof e.entry, "%s", entry);
  std::snprintf(e.detail, sizeof e.detail, "%s", detail.c_str());
  e.bytes_read = read;
  e.bytes_written = written;
  e.flops = flops;
  e.alloc_bytes = alloc;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_events.push_back(e);
}

// ---- memory: the backend's own (as a device backend's), host malloc ----

int32_t t_mem_alloc(octet_backend_context*, size_t bytes, void** ptr) {
  if (ptr == nullptr) return OCTET_STATUS_INVALID_ARGUMENT;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_alloc_limit != 0 && bytes > g_alloc_limit) {
      if (!g_null_success) return OCTET_STATUS_OUT_OF_MEMORY;
      *ptr = nullptr;
      return OCTET_STATUS_SUCCESS;
    }
  }
  const size_t rounded = (bytes + 255) / 256 * 256;
  void* p = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
  if (p == nullptr) return OCTET_STATUS_OUT_OF_MEMORY;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_live[p] = bytes;
  }
  record("mem_alloc", std::to_string(bytes) + " B", 0, 0, 0, bytes);
  *ptr = p;
  return OCTET_STATUS_SUCCESS;
}

void t_mem_free(octet_backend_context*, void* ptr) {
  if (ptr == nullptr) return;
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_live.find(ptr);
    if (it != g_live.end()) {
      bytes = it->second;
      g_live.erase(it);
    }
  }
  record("mem_free", std::to_string(bytes) + " B", 0, 0);
  std::free(ptr);
}

int32_t t_copy_from_host(octet_backend_context*, void* dst, const void* src, size_t bytes) {
  record("copy_from_host", std::to_string(bytes) + " B", 0, 0);
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return OCTET_STATUS_SUCCESS;
}

int32_t t_copy_to_host(octet_backend_context*, void* dst, const void* src, size_t bytes) {
  record("copy_to_host", std::to_string(bytes) + " B", 0, 0);
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return OCTET_STATUS_SUCCESS;
}

int32_t t_synchronize(octet_backend_context*) {
  record("synchronize", "", 0, 0);
  return OCTET_STATUS_SUCCESS;
}

// ---- kernels: recorded, then run by the reference ----

int32_t t_convert(octet_backend_context* c, const octet_matrix_view* in, const octet_matrix_view* out, int32_t sat) {
  if (in != nullptr && out != nullptr)
    record("convert", view_text(*in) + " -> " + view_text(*out), view_bytes(*in), view_bytes(*out));
  return g_ref->convert(c, in, out, sat);
}

int32_t t_amax(octet_backend_context* c, const octet_matrix_view* in, float* amax_out) {
  if (in != nullptr) record("amax", view_text(*in), view_bytes(*in), 0);
  return g_ref->amax(c, in, amax_out);
}

std::string quantize_text(const octet_quantize_args& a, uint64_t* read, uint64_t* written) {
  const uint64_t n = uint64_t(a.input.rows) * uint64_t(a.input.cols);
  *read = view_bytes(a.input);
  *written = (a.rowwise_out ? n : 0) + (a.columnwise_out ? n : 0);
  std::string usages = a.rowwise_out && a.columnwise_out ? "rowwise+transposed"
                       : a.rowwise_out                   ? "rowwise"
                       : a.columnwise_out                ? "transposed"
                                                         : "no codes";
  return view_text(a.input) + " -> " + dtype_text(a.out_dtype) + " " + usages;
}

int32_t t_quantize(octet_backend_context* c, const octet_quantize_args* a) {
  if (a != nullptr) {
    uint64_t r = 0, w = 0;
    const std::string text = quantize_text(*a, &r, &w);
    record("quantize", text, r, w);
  }
  return g_ref->quantize(c, a);
}

int32_t t_quantize_with_statistics(octet_backend_context* c, const octet_quantize_args* a,
                                   octet_quantize_statistics* s) {
  if (a != nullptr) {
    uint64_t r = 0, w = 0;
    const std::string text = quantize_text(*a, &r, &w);
    record("quantize_with_statistics", text, r, w);
  }
  return g_ref->quantize_with_statistics(c, a, s);
}

int32_t t_transpose(octet_backend_context* c, const octet_matrix_view* in, const octet_matrix_view* out) {
  if (in != nullptr && out != nullptr)
    record("transpose", view_text(*in) + " -> " + view_text(*out), view_bytes(*in), view_bytes(*out));
  return g_ref->transpose(c, in, out);
}

int32_t t_dequantize(octet_backend_context* c, const octet_dequantize_args* a) {
  if (a != nullptr)
    record("dequantize", view_text(a->input) + " -> " + view_text(a->output), view_bytes(a->input),
           view_bytes(a->output));
  return g_ref->dequantize(c, a);
}

const char* layout_text(int32_t trans_a, int32_t trans_b) {
  if (!trans_a) return trans_b ? "NN" : "TN";
  return trans_b ? "NT" : "TT";
}

int32_t t_gemm(octet_backend_context* c, const octet_gemm_args* a) {
  if (a != nullptr) {
    std::string text = std::string(layout_text(a->trans_a, a->trans_b)) + " " + view_text(a->a) + " x " +
                       view_text(a->b) + " -> " + view_text(a->d);
    if (a->beta != 0.0f) text += " beta";
    if (a->bias.data != nullptr) text += " bias";
    if (a->epilogue != OCTET_EPILOGUE_NONE) text += " epilogue";
    if (a->struct_size >= sizeof(octet_gemm_args) && a->d_scale != nullptr) text += " fp8-out";
    const uint64_t d = view_bytes(a->d);
    record("gemm", text, view_bytes(a->a) + view_bytes(a->b) + (a->beta != 0.0f ? d : 0) + view_bytes(a->bias), d,
           2 * uint64_t(a->m) * uint64_t(a->n) * uint64_t(a->k));
  }
  return g_ref->gemm(c, a);
}

int32_t t_block_quantize(octet_backend_context* c, const octet_block_quantize_args* a) {
  if (a != nullptr)
    record("block_quantize", view_text(a->input) + (a->transposed ? " transposed" : ""), view_bytes(a->input),
           uint64_t(a->input.rows) * uint64_t(a->input.cols));
  return g_ref->block_quantize(c, a);
}

int32_t t_block_dequantize(octet_backend_context* c, const octet_block_dequantize_args* a) {
  if (a != nullptr) record("block_dequantize", view_text(a->input), view_bytes(a->input), view_bytes(a->output));
  return g_ref->block_dequantize(c, a);
}

int32_t t_block_gemm(octet_backend_context* c, const octet_block_gemm_args* a) {
  if (a != nullptr)
    record("block_gemm", view_text(a->a) + " x " + view_text(a->b) + " -> " + view_text(a->d),
           view_bytes(a->a) + view_bytes(a->b), view_bytes(a->d), 2 * uint64_t(a->m) * uint64_t(a->n) * uint64_t(a->k));
  return g_ref->block_gemm(c, a);
}

int32_t t_norm_forward(octet_backend_context* c, const octet_norm_forward_args* a) {
  if (a != nullptr) record("norm_forward", view_text(a->input) + (a->quantize ? " +quantize" : ""), view_bytes(a->input), view_bytes(a->output));
  return g_ref->norm_forward(c, a);
}

int32_t t_norm_backward(octet_backend_context* c, const octet_norm_backward_args* a) {
  if (a != nullptr)
    record("norm_backward", view_text(a->grad_output), view_bytes(a->input) + view_bytes(a->grad_output),
           view_bytes(a->grad_input));
  return g_ref->norm_backward(c, a);
}

int32_t t_activation_forward(octet_backend_context* c, const octet_activation_args* a) {
  if (a != nullptr) record("activation_forward", view_text(a->input), view_bytes(a->input), view_bytes(a->output));
  return g_ref->activation_forward(c, a);
}

int32_t t_activation_backward(octet_backend_context* c, const octet_activation_args* a) {
  if (a != nullptr)
    record("activation_backward", view_text(a->input), view_bytes(a->input) + view_bytes(a->grad_output),
           view_bytes(a->grad_input));
  return g_ref->activation_backward(c, a);
}

int32_t t_bias_gradient(octet_backend_context* c, const octet_bias_gradient_args* a) {
  if (a != nullptr)
    record("bias_gradient", view_text(a->grad_output) + (a->quantize ? " +quantize" : ""),
           view_bytes(a->grad_output), 0);
  return g_ref->bias_gradient(c, a);
}

int32_t t_accumulate(octet_backend_context* c, const octet_matrix_view* x, const octet_matrix_view* y, int32_t acc) {
  if (x != nullptr && y != nullptr)
    record("accumulate", view_text(*x) + " -> " + view_text(*y), view_bytes(*x) + (acc ? view_bytes(*y) : 0),
           view_bytes(*y));
  return g_ref->accumulate(c, x, y, acc);
}

int32_t t_scale_from_amax(octet_backend_context* c, const octet_scale_from_amax_args* a) {
  record("scale_from_amax", "", 0, 0);
  return g_ref->scale_from_amax(c, a);
}

int32_t t_delayed_scaling_update(octet_backend_context* c, const octet_delayed_scaling_update_args* a) {
  record("delayed_scaling_update", a != nullptr ? "history " + std::to_string(a->history_len) : "", 0, 0);
  return g_ref->delayed_scaling_update(c, a);
}

int32_t t_amax_record(octet_backend_context* c, const float* amax, float* slot) {
  record("amax_record", "", 0, 0);
  return g_ref->amax_record(c, amax, slot);
}

int32_t t_initialize(const octet_host_services* host, octet_backend_caps* caps) {
  const int32_t status = g_ref->initialize(host, caps);
  if (status != OCTET_STATUS_SUCCESS) return status;
  // What the cuda backend declares (docs/backends/cuda.md, "Capabilities"),
  // where it differs from the reference: its own memory, 256-byte alignment,
  // FP8 D composed by the host. The native profile keeps the reference's
  // native columnwise access and layouts, from which the hopper-like and
  // blackwell-like profiles are presented.
  caps->device = "reference kernels, traced, cuda-like capabilities";
  caps->memory_kind = OCTET_MEMORY_DEVICE;
  caps->alignment = 256;
  caps->fused_cast_transpose = 1;
  if (caps->struct_size >= offsetof(octet_backend_caps, fp8_gemm_output) + sizeof(int32_t)) caps->fp8_gemm_output = 0;
  return OCTET_STATUS_SUCCESS;
}

}  // namespace

extern "C" OCTET_BACKEND_EXPORT int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor,
                                                            const octet_backend_api** api_out) {
  const int32_t status = octet_reference_backend_entry(host_abi_major, host_abi_minor, &g_ref);
  if (status != OCTET_STATUS_SUCCESS) return status;
  g_api = *g_ref;
  g_api.name = "tracing";
  g_api.initialize = t_initialize;
  g_api.synchronize = t_synchronize;
  g_api.mem_alloc = t_mem_alloc;
  g_api.mem_free = t_mem_free;
  g_api.copy_from_host = t_copy_from_host;
  g_api.copy_to_host = t_copy_to_host;
  g_api.convert = t_convert;
  g_api.amax = t_amax;
  g_api.quantize = t_quantize;
  g_api.transpose = t_transpose;
  g_api.dequantize = t_dequantize;
  g_api.gemm = t_gemm;
  g_api.quantize_with_statistics = t_quantize_with_statistics;
  g_api.block_quantize = t_block_quantize;
  g_api.block_dequantize = t_block_dequantize;
  g_api.block_gemm = t_block_gemm;
  g_api.norm_forward = t_norm_forward;
  g_api.norm_backward = t_norm_backward;
  g_api.activation_forward = t_activation_forward;
  g_api.activation_backward = t_activation_backward;
  g_api.bias_gradient = t_bias_gradient;
  g_api.accumulate = t_accumulate;
  g_api.scale_from_amax = t_scale_from_amax;
  g_api.delayed_scaling_update = t_delayed_scaling_update;
  g_api.amax_record = t_amax_record;
  *api_out = &g_api;
  return OCTET_STATUS_SUCCESS;
}

extern "C" OCTET_BACKEND_EXPORT void octet_test_trace_clear(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_events.clear();
}

extern "C" OCTET_BACKEND_EXPORT size_t octet_test_trace_count(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_events.size();
}

extern "C" OCTET_BACKEND_EXPORT const octet_test_trace_event* octet_test_trace_events(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_events.data();
}

extern "C" OCTET_BACKEND_EXPORT void octet_test_trace_fail_allocations(uint64_t limit, int null_success) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_alloc_limit = limit;
  g_null_success = null_success != 0;
}
