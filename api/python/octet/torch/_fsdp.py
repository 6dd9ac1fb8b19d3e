"""FP8 all-gather of weights under FSDP2 (torch.distributed.fsdp.fully_shard).

octet.torch.enable_fp8_all_gather(model) wraps each weight Parameter of the
model's octet.torch modules in ShardedWeight, a tensor subclass over the
high-precision data that FSDP2 shards like any tensor and whose FSDP2
extension hooks gather FP8 codes instead of the weights:

- fsdp_pre_all_gather quantizes this rank's shard with one scale for the
  whole weight: current scaling of the weight, fp8_max / amax with the
  amax all-reduced (MAX) over the shard group, so every rank encodes with
  the same scale (1 for an all-zero weight); the codes are Octet's
  (octet_quantize), one byte per element;
- fsdp_post_all_gather wraps the gathered codes and the scale in
  GatheredWeight, which the module lends to its layer as a per-tensor FP8
  weight (octet_layer_set_weight, users' ABI 1.8): forward and dgrad run
  on those codes, never quantizing the weight again, and the weight
  gradient comes back in high precision for FSDP's reduce-scatter.

The modules need their own per-tensor FP8 recipe (convert(model, recipe=
octet.CurrentScaling()) or recipe= on the module) with fprop and dgrad in
FP8: enable_fp8_all_gather refuses the others, naming them."""

import math

import torch
import torch.distributed as dist
from torch.utils._pytree import tree_map

from .._core import ROWWISE, Context
from .._dtypes import _FP8_MAX
from . import _ops

aten = torch.ops.aten
_PER_TENSOR = ("delayed", "current", "static")
# Ops whose result is the same weight (a view, a copy, a new buffer of its
# kind): the result stays a ShardedWeight, so FSDP2's shards keep the hooks.
_KEEP = {aten.detach.default, aten.view.default, aten._unsafe_view.default, aten.as_strided.default,
         aten.slice.Tensor, aten.split.Tensor, aten.split_with_sizes.default, aten.chunk.default,
         aten.narrow.default, aten.clone.default, aten.empty_like.default, aten.new_zeros.default,
         aten.new_empty.default, aten.zeros_like.default, aten.alias.default, aten._to_copy.default}


class ShardedWeight(torch.Tensor):
    """A weight's high-precision data with FSDP2's all-gather hooks; every
    op runs on the data (views and copies stay ShardedWeight, in-place ops
    return this tensor)."""

    @staticmethod
    def __new__(cls, data, fmt):
        self = torch.Tensor._make_wrapper_subclass(cls, data.shape, strides=data.stride(),
                                                   storage_offset=data.storage_offset(), dtype=data.dtype,
                                                   device=data.device, requires_grad=data.requires_grad)
        self._data = data
        self._fmt = fmt  # (octet FP8 dtype, backend name of the context that encodes)
        return self

    def __repr__(self):
        return f"ShardedWeight({self._data!r})"

    def __tensor_flatten__(self):
        return ["_data"], self._fmt

    @staticmethod
    def __tensor_unflatten__(inner, fmt, outer_size, outer_stride):
        return ShardedWeight(inner["_data"], fmt)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        fmt = None

        def unwrap(t):
            nonlocal fmt
            if isinstance(t, ShardedWeight):
                fmt = t._fmt
                return t._data
            return t

        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
        if func._schema.is_mutable and args and isinstance(args[0], ShardedWeight):
            return args[0]  # an in-place update (optimizer step, copy_): the data changed underneath
        if func in _KEEP:
            return tree_map(lambda t: ShardedWeight(t, fmt) if isinstance(t, torch.Tensor) else t, out)
        return out

    def fsdp_pre_all_gather(self, mesh, outer_size, outer_stride, module, mp_policy):
        dtype, backend = self._fmt
        data = self._data.detach()
        amax = data.abs().amax().float().reshape(1) if data.numel() else torch.zeros(1)
        dist.all_reduce(amax, op=dist.ReduceOp.MAX, group=mesh.get_group())
        amax = float(amax)
        scale = _FP8_MAX[dtype] / amax if math.isfinite(amax) and amax > 0 else 1.0
        codes = torch.empty(data.shape, dtype=torch.uint8, device=data.device)
        if data.numel():
            ctx = _context(backend)
            q = ctx.quantize(ctx.from_dlpack(data.float().contiguous()), dtype, scale=scale, usages=ROWWISE)
            codes.copy_(torch.from_dlpack(q.dlpack_component()).view(torch.uint8))
        return (codes,), (scale,)

    def fsdp_post_all_gather(self, outputs, metadata, param_dtype, *, out=None):
        (codes,), (scale,) = outputs, metadata
        if out is not None:  # later steps: the same buffer, a new scale
            out._scale = scale
            return None
        gathered = GatheredWeight(codes, scale, self._fmt[0], param_dtype or self.dtype)
        return gathered, (codes,)


class GatheredWeight(torch.Tensor):
    """A gathered FP8 weight: its codes (uint8, the weight's shape) and its
    scale; reports the high-precision dtype, which its gradient has. Only
    views and the octet.torch operators take it."""

    @staticmethod
    def __new__(cls, codes, scale, fp8_dtype, dtype):
        self = torch.Tensor._make_wrapper_subclass(cls, codes.shape, strides=codes.stride(),
                                                   storage_offset=codes.storage_offset(), dtype=dtype,
                                                   device=codes.device, requires_grad=False)
        self._codes = codes
        self._scale = scale
        self._fp8_dtype = fp8_dtype
        return self

    def __repr__(self):
        return f"GatheredWeight(shape={list(self.shape)}, scale={self._scale})"

    def __tensor_flatten__(self):
        return ["_codes"], (self._scale, self._fp8_dtype, self.dtype)

    @staticmethod
    def __tensor_unflatten__(inner, meta, outer_size, outer_stride):
        return GatheredWeight(inner["_codes"], *meta)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if func is torch.ops.octet.layer_forward.default:
            return _ops._module(args[0])._octet_forward(*args[1:])
        if func is torch.ops.octet.layer_backward.default:
            return _ops._module(args[0])._octet_backward(*args[1:])
        if func in (aten.detach.default, aten.view.default, aten.as_strided.default, aten.alias.default,
                    aten._unsafe_view.default):
            me = args[0]
            rest = args[1:]
            return GatheredWeight(func(me._codes, *rest, **(kwargs or {})), me._scale, me._fp8_dtype, me.dtype)
        raise TypeError(f"an FP8-gathered weight (octet.torch.enable_fp8_all_gather) reaches {func}: only the "
                        "octet.torch modules it belongs to can use it")

    def octet_tensor(self, ctx):
        """A per-tensor FP8 octet Tensor of these codes and scale (a copy of the codes)."""
        q = ctx.empty(tuple(self.shape), self._fp8_dtype, ROWWISE)
        torch.from_dlpack(q.dlpack_component()).view(torch.uint8).copy_(self._codes.reshape(self.shape))
        q.set_scale(self._scale)
        return q


_contexts = {}


def _context(backend):
    if backend not in _contexts:
        _contexts[backend] = Context(backend)
    return _contexts[backend]


def enable_fp8_all_gather(model):
    """Makes FSDP2 gather the weights of the octet.torch modules under model
    (model included) as FP8 codes (the module docstring). Call it before
    fully_shard and before making the optimizer (the weight Parameters are
    replaced). Returns the count of weights wrapped. A module without its
    own per-tensor FP8 recipe raises ValueError naming it."""
    count = 0
    for name, m in model.named_modules():
        if not hasattr(m, "_octet_names"):  # not an octet.torch module
            continue
        recipe = m._octet_options.get("recipe")
        kind = recipe.info()["kind"] if recipe is not None else None
        info = recipe.info() if recipe is not None else {}
        if kind not in _PER_TENSOR or info.get("override_fprop") or info.get("override_dgrad"):
            raise ValueError(f"octet.torch.enable_fp8_all_gather: module {name or type(m).__name__!r} needs its own "
                             "per-tensor FP8 recipe with fprop and dgrad in FP8 (convert(model, recipe="
                             f"octet.CurrentScaling()) or recipe=); it has {recipe!r}")
        dtype = recipe.tensor_format("weight")[0]
        for pname in m._octet_names:
            if pname.endswith("weight") and not pname.startswith("norm_"):
                p = getattr(m, pname)
                if isinstance(p, ShardedWeight):
                    continue
                wrapped = ShardedWeight(p.detach(), (dtype, m.context.info()["name"]))
                setattr(m, pname, torch.nn.Parameter(wrapped, requires_grad=p.requires_grad))
                count += 1
    return count

