// Views of a part of a tensor (tensor_slice.hpp): the copies' memory in
// place, and the scale grids of block-scaled copies (whole grid rows in
// place, grid columns copied).
#include "tensor/tensor_slice.hpp"

#include <cstring>
#include <vector>

#include "runtime/error.hpp"
#include "tensor/dtype.hpp"

namespace octet::core {
namespace {

// Bytes from the start of a copy [rows, cols] to its row `row` (E2M1 rows
// are packed on their own bytes).
size_t row_offset(octet_dtype dtype, int64_t row, int64_t cols) {
  return size_t(row) * dtype_bytes(dtype, size_t(cols));
}

// The scale grid of one copy of a block-scaled slice. `copy_rows` x
// `copy_cols` is the stored copy, `block` its block shape; the slice keeps
// [begin, begin + count) of the copy's rows (along_rows) or columns.
void slice_grid(const TensorState& t, bool columnwise_copy, bool along_rows, int64_t begin, int64_t count, Buffer& out,
                const std::string& what) {
  const Buffer& grid = columnwise_copy ? t.columnwise_scale_inv : t.rowwise_scale_inv;
  if (!grid) return;
  const int64_t copy_rows = columnwise_copy ? t.cols : t.rows, copy_cols = columnwise_copy ? t.rows : t.cols;
  const TensorState::BlockShape block = t.block_shape(columnwise_copy);
  const int64_t extent = along_rows ? block.rows : block.cols;
  const int64_t copy_extent = along_rows ? copy_rows : copy_cols;
  const size_t esize = dtype_size(t.scale_inv_dtype());
  const int64_t grid_cols = (copy_cols + block.cols - 1) / block.cols;
  const int64_t grid_rows = (copy_rows + block.rows - 1) / block.rows;
  // The whole copy (a tensor of a list): its grid as it is.
  if (begin == 0 && count == copy_extent) {
    out = Buffer::wrap(t.ctx, grid.data(), grid.bytes());
    return;
  }
  // A per-row or per-column block spans the whole copy along this axis: every
  // slice reads the same scales.
  if (t.axiswise() && extent >= copy_extent) {
    out = Buffer::wrap(t.ctx, grid.data(), grid.bytes());
    return;
  }
  require(begin % extent == 0, what, " starts at ", begin, " along the ", (along_rows ? "rows" : "columns"), " of its ",
          (columnwise_copy ? "columnwise" : "rowwise"), " copy, which has ", block.rows, "x", block.cols, " blocks (",
          scaling_mode_name(t.scaling_mode), "): a group must start on a block boundary of a stacked ",
          "block-scaled operand; pass this operand as one tensor per group instead");
  const int64_t first = begin / extent;
  const int64_t last = count == 0 ? first : (begin + count + extent - 1) / extent;
  if (along_rows) {
    // Whole grid rows: a range of the grid in place.
    char* base = static_cast<char*>(grid.data()) + size_t(first * grid_cols) * esize;
    out = Buffer::wrap(t.ctx, base, size_t((last - first) * grid_cols) * esize);
    return;
  }
  // Grid columns [first, last) of every grid row: copied (scales are a
  // block's worth of the data, and a backend reads a grid densely).
  const int64_t width = last - first;
  std::vector<unsigned char> whole = host_array<unsigned char>(grid.bytes(), "a scale grid");
  grid.copy_to_host(whole.data(), grid.bytes());
  std::vector<unsigned char> part = host_array<unsigned char>(size_t(grid_rows * width) * esize + 1, "a scale grid");
  for (int64_t r = 0; r < grid_rows; ++r)
    std::memcpy(part.data() + size_t(r * width) * esize, whole.data() + size_t(r * grid_cols + first) * esize,
                size_t(width) * esize);
  out = Buffer(t.ctx, part.size(), OCTET_MEMORY_WORKSPACE);
  out.copy_from_host(part.data(), part.size());
}

}  // namespace

// The view of rows (along_rows) or columns [begin, begin + count) of t's
// stored matrix [rows, cols] as a tensor: both copies and their scales,
// sharing t's memory (and its per-tensor scalars).
TensorState slice(const TensorState& t, bool along_rows, int64_t begin, int64_t count, const std::string& what) {
  TensorState s;
  s.ctx = t.ctx;
  s.dtype = t.dtype;
  s.ndim = 2;
  s.rows = along_rows ? count : t.rows;
  s.cols = along_rows ? t.cols : count;
  s.shape[0] = s.rows;
  s.shape[1] = s.cols;
  s.usages = t.usages;
  s.scaling_mode = t.scaling_mode;
  s.block_rows = t.block_rows;
  s.block_cols = t.block_cols;
  const bool packed = t.dtype == OCTET_DTYPE_E2M1;
  const size_t esize = packed ? 0 : dtype_size(t.dtype);
  // A copy sliced along its rows stays dense; along its columns it keeps the
  // whole copy's row stride (packed FP4 rows cannot be cut: no view).
  auto view = [&](const Buffer& copy, int64_t copy_cols, bool copy_rows_sliced, int64_t& ld) {
    if (!copy) return Buffer();
    if (!copy_rows_sliced && begin == 0 && count == copy_cols) {
      return Buffer::wrap(t.ctx, copy.data(), copy.bytes());  // every column: the copy as it is
    }
    if (copy_rows_sliced) {
      char* base = static_cast<char*>(copy.data()) + row_offset(t.dtype, begin, copy_cols);
      return Buffer::wrap(t.ctx, base, row_offset(t.dtype, count, copy_cols));
    }
    if (packed) return Buffer();
    ld = copy_cols;
    return Buffer::wrap(t.ctx, static_cast<char*>(copy.data()) + size_t(begin) * esize, copy.bytes());
  };
  s.data = view(t.data, t.cols, along_rows, s.rowwise_ld);
  s.columnwise = view(t.columnwise, t.rows, !along_rows, s.columnwise_ld);
  if (t.quantized()) s.scalars = Buffer::wrap(t.ctx, t.scalars.data(), t.scalars.bytes());
  if (t.block_scaled() && count > 0) {
    if (s.data) slice_grid(t, false, along_rows, begin, count, s.rowwise_scale_inv, what);
    if (s.columnwise) slice_grid(t, true, !along_rows, begin, count, s.columnwise_scale_inv, what);
  }
  return s;
}

}  // namespace octet::core
