// Views of a part of a tensor: rows or columns [begin, begin + count) of
// its stored matrix, sharing its memory (grouped GEMMs' groups, a grouped
// layer's experts).
#pragma once

#include <cstdint>
#include <string>

#include "tensor/tensor.hpp"

namespace octet::core {

// The view of rows (along_rows) or columns [begin, begin + count) of t's
// stored matrix [rows, cols] as a 2-D tensor: both copies and their scales,
// sharing t's memory (and its per-tensor scalars). A block-scaled slice must
// start on a block boundary of each copy it cuts, and a packed FP4 copy cut
// along its rows' bytes has no view (that copy is left out); `what` names the
// slice in the error.
TensorState slice(const TensorState& t, bool along_rows, int64_t begin, int64_t count, const std::string& what);

}  // namespace octet::core
