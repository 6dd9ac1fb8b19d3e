// Recipes: immutable descriptions of how scales are chosen. Only the core
// reads them; backends get plain numbers (block shape, rounding rule).
#pragma once

#include <octet/octet.h>

#include <cstdint>
#include <memory>

#include "ops/block_params.hpp"
#include "runtime/handle.hpp"

namespace octet::core {

struct ContextState;

struct RecipeState {
  int32_t kind = OCTET_RECIPE_DELAYED;
  int32_t format = OCTET_FORMAT_HYBRID;
  // Only the options of `kind` are meaningful.
  octet_delayed_scaling_options delayed{};
  octet_current_scaling_options current{};
  octet_static_scaling_options fixed{};
  octet_mxfp8_options mx{};
  octet_block_scaling_options block{};
  octet_rowwise_scaling_options rowwise{};
  octet_mxfp4_options mxfp4{};
  octet_nvfp4_options nvfp4{};

  octet_dtype dtype_for(int32_t role) const;
  int32_t scaling_mode_for(int32_t role) const;
  BlockParams block_params() const;
  bool fp4() const { return kind == OCTET_RECIPE_MXFP4 || kind == OCTET_RECIPE_NVFP4; }
  // The FP4 options of a quantize of `role` drawing from stream `offset`
  // (numerics.md 15.5); rows: the tensor's row count (the transform needs a
  // multiple of 16).
  Fp4Params fp4_params(int32_t role, uint64_t offset, int64_t rows) const;
  bool per_tensor() const { return kind <= OCTET_RECIPE_STATIC; }
  // Static scaling with observe = 1: every quantize of new data counts its
  // statistics into the quantizer (numerics.md section 10).
  bool observes() const { return kind == OCTET_RECIPE_STATIC && fixed.observe != 0; }
};

// Largest finite value of an FP8 dtype (448, 57344 or 240).
float fp8_max_of(octet_dtype dtype);
const char* recipe_kind_name(int32_t kind);
void require_role(int32_t role);
// UNSUPPORTED, naming `where`, the role, the dtype or scaling mode and the
// backend, unless ctx's backend declares every dtype and scaling mode the
// recipe uses.
void require_recipe_on_backend(const RecipeState& r, const ContextState& ctx, const char* where);

}  // namespace octet::core

struct octet_recipe {
  std::shared_ptr<const octet::core::RecipeState> state;
  OCTET_POOLED_HANDLE(octet::core::HandleKind::Recipe)
};
