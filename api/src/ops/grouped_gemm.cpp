// octet_grouped_gemm: G GEMMs in one call (docs/grouped_gemm.md). Each group
// becomes views of its operands (a slice of a stacked tensor, a matrix of a
// 3-D one, or a tensor of a list) that prepare_gemm takes exactly as it takes
// the tensors of octet_gemm, so every group is octet_gemm on its operands.
// The prepared calls then go to the backend's grouped_gemm, one call for the
// plain groups and one for the block-scaled ones, or group by group through
// gemm / block_gemm / fp4_gemm.
#include <octet/octet.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "ops/gemm.hpp"
#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"
#include "tensor/dtype.hpp"
#include "tensor/tensor.hpp"
#include "tensor/tensor_slice.hpp"

namespace octet::core {
namespace {

octet_grouped_gemm_options grouped_defaults() {
  octet_grouped_gemm_options o{};
  o.struct_size = sizeof(o);
  o.alpha = 1.0f;
  o.split = OCTET_GROUP_SPLIT_M;
  return o;
}

// What an operand is given as, for every group.
struct OperandGroups {
  const char* name;                         // "a", "b", "d"
  std::vector<const TensorState*> tensors;  // 1 or group_count
};

// Group g's tensor of a list, or the part of a shared one: the g-th matrix
// of a 3-D tensor (per_group) or the split's rows/columns of a stacked one.
TensorState group_view(const OperandGroups& op, size_t g, bool split_operand, bool along_rows, int64_t begin,
                       int64_t count) {
  const std::string what = concat("group ", g, ": tensor '", op.name, "'");
  if (op.tensors.size() != 1) {
    const TensorState& t = *op.tensors[g];
    // The whole tensor, as a view (the same memory, dense).
    return slice(t, true, 0, t.rows, what);
  }
  const TensorState& t = *op.tensors[0];
  if (split_operand) return slice(t, along_rows, begin, count, what);
  const int64_t per = t.ndim == 3 ? t.shape[1] : 0;
  return slice(t, true, int64_t(g) * per, per, what);
}

void check_shared_3d(const OperandGroups& op, size_t groups) {
  if (op.tensors.size() != 1) return;
  const TensorState& t = *op.tensors[0];
  require(t.ndim == 3 && t.shape[0] == int64_t(groups), "tensor '", op.name, "' is one tensor of shape ", shape_text(t),
          " for ", groups, " groups: a tensor the groups do not split must be 3-D [", groups,
          ", rows, cols] (group g's matrix at index g), or be passed as one tensor per group");
}

// The extent along the split of a stacked operand, and which stored axis it is.
struct SplitAxis {
  bool along_rows;
  int64_t extent;
};
SplitAxis split_axis(const TensorState& t, bool stored_rows) { return {stored_rows, stored_rows ? t.rows : t.cols}; }

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" OCTET_API octet_status octet_grouped_gemm_options_init_sized(octet_grouped_gemm_options* options,
                                                                        size_t struct_size) {
  return guarded("octet_grouped_gemm_options_init_sized",
                 [&] { init_sized(options, grouped_defaults(), struct_size); });
}

extern "C" OCTET_API octet_status octet_grouped_gemm(octet_context* context, size_t group_count, const int64_t* splits,
                                                     const octet_tensor* const* a, size_t a_count,
                                                     const octet_tensor* const* b, size_t b_count,
                                                     octet_tensor* const* d, size_t d_count,
                                                     const octet_grouped_gemm_options* options) {
  return guarded("octet_grouped_gemm", [&] {
    const ContextState& ctx = context_arg(context);
    const std::shared_ptr<ContextState>& state = context->state;
    const octet_grouped_gemm_options o = read_versioned(options, grouped_defaults(), "options");
    require(group_count >= 1, "group_count is 0: a grouped GEMM has at least one group");
    require(splits != nullptr, "argument 'splits' is NULL: it must hold group_count (", group_count, ") extents");
    require(o.split == OCTET_GROUP_SPLIT_M || o.split == OCTET_GROUP_SPLIT_K, "options->split (", o.split,
            ") must be OCTET_GROUP_SPLIT_M or OCTET_GROUP_SPLIT_K");
    require(o.reserved == 0, "options->reserved (", o.reserved, ") must be 0");
    require(o.trans_a == 0 || o.trans_a == 1, "options->trans_a (", o.trans_a, ") must be 0 or 1");
    require(o.trans_b == 0 || o.trans_b == 1, "options->trans_b (", o.trans_b, ") must be 0 or 1");
    int64_t total = 0;
    for (size_t g = 0; g < group_count; ++g) {
      require(splits[g] >= 0, "splits[", g, "] (", splits[g], ") must be >= 0");
      require(total <= INT64_MAX - splits[g], "the splits overflow int64");
      total += splits[g];
    }
    auto operand = [&](const char* name, const octet_tensor* const* list, size_t count) {
      require(list != nullptr, "argument '", name, "' is NULL");
      require(count == 1 || count == group_count, "argument '", name, "_count' (", count,
              ") must be 1 (one tensor the groups share) or group_count (", group_count, ")");
      OperandGroups op{name, {}};
      for (size_t i = 0; i < count; ++i) {
        const std::string item = concat(name, "[", i, "]");
        const TensorState& t = tensor_arg(list[i], ctx, item.c_str());
        require(t.ndim <= 3, "tensor '", item, "' has ", t.ndim, " dimensions; a grouped GEMM takes 2-D tensors, ",
                "or 3-D ones [groups, rows, cols]");
        op.tensors.push_back(&t);
      }
      return op;
    };
    OperandGroups ga = operand("a", a, a_count);
    OperandGroups gb = operand("b", b, b_count);
    OperandGroups gd = operand("d", const_cast<const octet_tensor* const*>(d), d_count);
    for (const TensorState* t : gd.tensors)
      require(is_high_precision(t->dtype) && !t->quantized(), "tensor 'd' (", dtype_name(t->dtype),
              ") must be a plain FP32, BF16 or FP16 tensor: grouped GEMMs write no FP8 output");
    for (const OperandGroups* op : {&ga, &gb})
      for (const TensorState* t : op->tensors) {
        require_allowed_scalar(*t, kScaleInv, op->name);
        if (op->tensors.size() == 1 && t->ndim == 3 && t->block_scaled() && !t->axiswise())
          require(t->shape[1] % t->block_rows == 0, "tensor '", op->name, "' (", shape_text(*t), ") is 3-D with ",
                  t->block_rows, "x", t->block_cols, " blocks: each group's rows (", t->shape[1],
                  ") must be a multiple of the block rows, or pass one tensor per group");
      }

    const bool split_m = o.split == OCTET_GROUP_SPLIT_M;
    // The operands the split cuts, and the stored axis it cuts: A's M (rows
    // of op(A)) or K, B's K, D's rows.
    const bool a_rows = split_m ? !o.trans_a : o.trans_a;
    const bool b_rows = o.trans_b != 0;  // SPLIT_K only
    if (split_m) {
      check_shared_3d(gb, group_count);
    } else {
      check_shared_3d(gd, group_count);
    }
    for (const OperandGroups* op :
         split_m ? std::vector<const OperandGroups*>{&ga, &gd} : std::vector<const OperandGroups*>{&ga, &gb}) {
      const bool rows = op == &gd ? true : op == &ga ? a_rows : b_rows;
      if (op->tensors.size() == 1) {
        const TensorState& t = *op->tensors[0];
        require(t.ndim == 2, "tensor '", op->name, "' (", shape_text(t),
                ") is stacked along the split: it must be 2-D");
        const SplitAxis axis = split_axis(t, rows);
        require(axis.extent == total, "tensor '", op->name, "' (", shape_text(t), ") has ", axis.extent, " ",
                (rows ? "rows" : "columns"), " along the split but the splits add up to ", total);
      } else {
        for (size_t g = 0; g < group_count; ++g) {
          const TensorState& t = *op->tensors[g];
          require(t.ndim == 2, "tensor '", op->name, "[", g, "]' (", shape_text(t), ") must be 2-D");
          const int64_t extent = rows ? t.rows : t.cols;
          require(extent == splits[g] || splits[g] == 0, "tensor '", op->name, "[", g, "]' (", shape_text(t), ") has ",
                  extent, " ", (rows ? "rows" : "columns"), " along the split but splits[", g, "] is ", splits[g]);
        }
      }
    }

    // Every group prepared (and so checked) before any runs.
    std::vector<TensorState> views;
    views.reserve(3 * group_count + 2);
    std::vector<PreparedGemm> prepared;
    prepared.reserve(group_count);
    std::vector<size_t> owner;  // the group of each prepared call
    int64_t begin = 0;
    for (size_t g = 0; g < group_count; ++g) {
      const int64_t count = splits[g];
      octet_gemm_options go{};
      go.struct_size = sizeof(go);
      go.trans_a = o.trans_a;
      go.trans_b = o.trans_b;
      go.alpha = o.alpha;
      go.beta = o.beta;
      go.epilogue = o.epilogue;
      go.fast_accumulation = o.fast_accumulation;
      go.saturate_output = 1;
      go.bias = o.bias != nullptr ? o.bias[g] : nullptr;
      try {
        TensorState va = group_view(ga, g, true, a_rows, begin, count);
        TensorState vb = group_view(gb, g, !split_m, b_rows, begin, count);
        TensorState vd = group_view(gd, g, split_m, true, begin, count);
        if (count == 0 && split_m) {
          // No rows: nothing to compute; the other dimensions still agree.
          const int64_t k = o.trans_a ? va.rows : va.cols;
          const int64_t kb = o.trans_b ? vb.rows : vb.cols;
          const int64_t n = o.trans_b ? vb.cols : vb.rows;
          require(k == kb, "inner dimensions differ: 'a' gives K = ", k, ", 'b' gives K = ", kb);
          require(vd.cols == n, "tensor 'd' has ", vd.cols, " columns but 'b' gives N = ", n);
          bias_view(ctx, go, n);
        } else if (count == 0) {
          // An empty sum: D_g = epilogue(beta * D_g + bias_g), as the GEMM of
          // one zero column of FP32 zeros gives it.
          const int64_t m = o.trans_a ? va.cols : va.rows;
          const int64_t n = o.trans_b ? vb.cols : vb.rows;
          octet_tensor_desc desc{};
          desc.struct_size = sizeof(desc);
          desc.dtype = OCTET_DTYPE_FP32;
          desc.ndim = 2;
          desc.shape[1] = 1;
          std::vector<float> zeros = host_array<float>(size_t(m > n ? m : n), "a zero operand");
          desc.shape[0] = m;
          std::unique_ptr<octet_tensor> za = create_tensor(state, desc, OCTET_MEMORY_WORKSPACE);
          za->state.data.copy_from_host(zeros.data(), size_t(m) * sizeof(float));
          desc.shape[0] = n;
          std::unique_ptr<octet_tensor> zb = create_tensor(state, desc, OCTET_MEMORY_WORKSPACE);
          zb->state.data.copy_from_host(zeros.data(), size_t(n) * sizeof(float));
          octet_gemm_options zo = go;
          zo.trans_a = 0;
          zo.trans_b = 0;
          views.push_back(std::move(za->state));
          views.push_back(std::move(zb->state));
          const TensorState& zav = views[views.size() - 2];
          const TensorState& zbv = views.back();
          views.push_back(std::move(vd));
          prepared.push_back(prepare_gemm(state, zav, zbv, views.back(), zo));
          owner.push_back(g);
        } else {
          views.push_back(std::move(va));
          views.push_back(std::move(vb));
          views.push_back(std::move(vd));
          const size_t at = views.size() - 3;
          const TensorState& fa = views[at];
          const TensorState& fb = views[at + 1];
          TensorState& fd = views[at + 2];
          // The copy an FP4 operand is read from (K-contiguous) has no view
          // when the split cuts its packed rows.
          auto require_fp4_view = [&](const OperandGroups& op, const TensorState& view, int32_t trans) {
            if (view.dtype != OCTET_DTYPE_E2M1) return;
            const TensorState& whole = *op.tensors[op.tensors.size() == 1 ? 0 : g];
            const bool had = trans ? bool(whole.columnwise) : bool(whole.data);
            const bool has = trans ? bool(view.columnwise) : bool(view.data);
            require(!had || has, "tensor '", op.name, "' is FP4 and stacked along K: its packed rows cannot be ",
                    "cut between groups; pass it as one tensor per group");
          };
          require_fp4_view(ga, fa, o.trans_a);
          require_fp4_view(gb, fb, o.trans_b);
          prepared.push_back(prepare_gemm(state, fa, fb, fd, go));
          owner.push_back(g);
        }
      } catch (const Failure& failure) {
        fail(failure.status(), "group ", g, ": ", failure.what());
      }
      begin += count;
    }

    // Run: the plain and the block-scaled groups each in one grouped call
    // where the backend has one; else (and FP4 always) group by group.
    const bool grouped = (ctx.backend->features & OCTET_FEATURE_GROUPED_GEMM) != 0;
    std::vector<const octet_gemm_args*> plain;
    std::vector<const octet_block_gemm_args*> blocks;
    for (const PreparedGemm& p : prepared) {
      if (grouped && p.entry == PreparedGemm::Entry::Gemm) {
        plain.push_back(&p.gemm);
      } else if (grouped && p.entry == PreparedGemm::Entry::BlockGemm) {
        blocks.push_back(&p.block);
      } else {
        run_prepared(ctx, p);
      }
    }
    auto run_grouped = [&](const octet_gemm_args* const* g, const octet_block_gemm_args* const* bg, size_t count) {
      if (count == 0) return;
      octet_grouped_gemm_args args{};
      args.struct_size = sizeof(args);
      args.group_count = int64_t(count);
      args.gemms = g;
      args.block_gemms = bg;
      call_backend(ctx, "grouped_gemm", [&] { return ctx.api().grouped_gemm(ctx.handle, &args); });
    };
    run_grouped(plain.data(), nullptr, plain.size());
    run_grouped(nullptr, blocks.data(), blocks.size());
  });
}
