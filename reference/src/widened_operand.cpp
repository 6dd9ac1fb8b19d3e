#include "widened_operand.hpp"

#include "argument_checks.hpp"
#include "host_errors.hpp"
#include "octet_reference/codecs.hpp"

namespace octet::ref {

std::vector<float> widened_operand(const octet_matrix_view& view, bool transposed, int64_t outer, int64_t k) {
  std::vector<float> widened = host_vector<float>(static_cast<std::size_t>(outer * k));
  for (int64_t i = 0; i < outer; ++i) {
    for (int64_t kk = 0; kk < k; ++kk) {
      const std::size_t index = transposed ? element_index(view, kk, i) : element_index(view, i, kk);
      load_element(view.data, view.dtype, index, &widened[static_cast<std::size_t>(i * k + kk)]);
    }
  }
  return widened;
}

}  // namespace octet::ref
