"""The octet.torch modules' forward and backward as torch custom operators
(torch.library), with fake implementations and an autograd formula, so that
torch.compile traces a module as one node without a graph break, and eager
mode runs the very same code.

    octet::layer_forward(int module, Tensor x, Tensor[] params, bool training, ScalarType out_dtype)
        -> (Tensor y, Tensor token)
    octet::layer_backward(int module, Tensor token, Tensor dy, Tensor x, Tensor[] params, bool[] needs)
        -> Tensor[]   (dx, then one gradient per parameter; an empty tensor where not needed)

`module` is the module's key in a registry of live modules; `token` is an
int64 tensor naming the forward's saved handle (Octet's octet_saved), which
lives as long as the token does (so a graph freed without its backward
frees it).

    octet::grouped_forward / octet::grouped_backward: a GroupedLinear's, the
    same with `Tensor splits` (int64, on the CPU) after x."""

import itertools
import weakref
from typing import List, Tuple

import torch

_modules = weakref.WeakValueDictionary()
_keys = itertools.count(1)


def register(module):
    key = next(_keys)
    _modules[key] = module
    return key


def _module(key):
    module = _modules.get(key)
    if module is None:
        raise RuntimeError(f"octet.torch: module {key} no longer exists (a compiled graph outlived its module)")
    return module


@torch.library.custom_op("octet::layer_forward", mutates_args=())
def layer_forward(module: int, x: torch.Tensor, params: List[torch.Tensor], training: bool,
                  out_dtype: torch.dtype) -> Tuple[torch.Tensor, torch.Tensor]:
    return _module(module)._octet_forward(x, params, training, out_dtype)


@layer_forward.register_fake
def _layer_forward_fake(module, x, params, training, out_dtype):
    m = _module(module)
    y = x.new_empty(tuple(x.shape[:-1]) + (m.out_features,), dtype=out_dtype)
    return y, x.new_empty((1,), dtype=torch.int64)


@torch.library.custom_op("octet::layer_backward", mutates_args=())
def layer_backward(module: int, token: torch.Tensor, dy: torch.Tensor, x: torch.Tensor, params: List[torch.Tensor],
                   needs: List[bool]) -> List[torch.Tensor]:
    return _module(module)._octet_backward(token, dy, x, params, needs)


@layer_backward.register_fake
def _layer_backward_fake(module, token, dy, x, params, needs):
    return [torch.empty_like(t) if need else t.new_empty((0,)) for t, need in zip([x, *params], needs)]


def _setup_context(ctx, inputs, output):
    module, x, params, training, out_dtype = inputs
    ctx.octet_module = module
    ctx.save_for_backward(output[1], x, *params)
    ctx.mark_non_differentiable(output[1])


def _backward(ctx, dy, _dtoken):
    token, x, *params = ctx.saved_tensors
    needs = [bool(ctx.needs_input_grad[1])] + [bool(n) for n in ctx.needs_input_grad[2]]
    grads = layer_backward(ctx.octet_module, token, dy, x, params, needs)
    grads = [g if need else None for g, need in zip(grads, needs)]
    return None, grads[0], grads[1:], None, None


torch.library.register_autograd("octet::layer_forward", _backward, setup_context=_setup_context)


# A GroupedLinear's forward and backward: the same, with the rows per expert
# (an int64 tensor on the CPU) beside x.
@torch.library.custom_op("octet::grouped_forward", mutates_args=())
def grouped_forward(module: int, x: torch.Tensor, splits: torch.Tensor, params: List[torch.Tensor], training: bool,
                    out_dtype: torch.dtype) -> Tuple[torch.Tensor, torch.Tensor]:
    return _module(module)._octet_forward(x, params, training, out_dtype, splits=splits.tolist())


@grouped_forward.register_fake
def _grouped_forward_fake(module, x, splits, params, training, out_dtype):
    return _layer_forward_fake(module, x, params, training, out_dtype)


@torch.library.custom_op("octet::grouped_backward", mutates_args=())
def grouped_backward(module: int, token: torch.Tensor, dy: torch.Tensor, x: torch.Tensor, splits: torch.Tensor,
                     params: List[torch.Tensor], needs: List[bool]) -> List[torch.Tensor]:
    return _module(module)._octet_backward(token, dy, x, params, needs, splits=splits.tolist())


@grouped_backward.register_fake
def _grouped_backward_fake(module, token, dy, x, splits, params, needs):
    return _layer_backward_fake(module, token, dy, x, params, needs)


def _grouped_setup_context(ctx, inputs, output):
    module, x, splits, params, training, out_dtype = inputs
    ctx.octet_module = module
    ctx.save_for_backward(output[1], x, splits, *params)
    ctx.mark_non_differentiable(output[1])


def _grouped_backward(ctx, dy, _dtoken):
    token, x, splits, *params = ctx.saved_tensors
    needs = [bool(ctx.needs_input_grad[1])] + [bool(n) for n in ctx.needs_input_grad[3]]
    grads = grouped_backward(ctx.octet_module, token, dy, x, splits, params, needs)
    grads = [g if need else None for g, need in zip(grads, needs)]
    return None, grads[0], None, grads[1:], None, None


torch.library.register_autograd("octet::grouped_forward", _grouped_backward, setup_context=_grouped_setup_context)
