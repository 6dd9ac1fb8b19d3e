"""octet.torch.convert / revert: swap a model's torch.nn.Linear modules for
octet.torch.Linear and back, keeping the very Parameter objects."""

import torch

from .._core import Context
from ..recipes import Recipe
from ._modules import Linear

_SKIPPED = (torch.nn.modules.linear.NonDynamicallyQuantizableLinear,)  # read by their owner, never called


def _check_filter(filter):
    if filter is not None and not callable(filter):
        raise TypeError(f"filter must be callable as filter(name, module) -> bool, or None; got {type(filter).__name__}")


def _swap(model, make, accept):
    """Replaces each module m under model (not model itself) with make(m)
    where accept(name, m); returns the count."""
    count = 0
    for parent_name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            name = f"{parent_name}.{child_name}" if parent_name else child_name
            if accept(name, child):
                replacement = make(child)
                replacement.octet_name = name
                setattr(parent, child_name, replacement)
                count += 1
    return count


def _from_torch(linear, recipe, context, options):
    if isinstance(linear.weight, torch.nn.parameter.UninitializedParameter):
        raise ValueError("octet.torch.convert: a torch.nn.LazyLinear has no shape yet: run one forward first")
    parameters = {"weight": linear.weight}
    if linear.bias is not None:
        parameters["bias"] = linear.bias
    module = Linear(linear.in_features, linear.out_features, bias=linear.bias is not None, context=context,
                    recipe=recipe, _parameters=parameters, **options)
    module.train(linear.training)
    return module


def convert(model, recipe=None, filter=None, *, context=None, **options):
    """Replaces every torch.nn.Linear under `model` that filter(name,
    module) accepts (all, by default) by an octet.torch.Linear holding the
    same Parameter objects (an optimizer made before keeps working; tied
    weights stay tied), in place; returns the model (a model that is itself
    a torch.nn.Linear comes back converted). recipe: each module's own
    recipe (FP8 always, as torchao's convert_to_float8_training), or None
    to follow octet.torch.autocast blocks. context: the modules' context
    (None: the default). options: octet.torch.Linear's (weight_cache, ...).
    Left out: torch.nn.MultiheadAttention's out_proj (its owner reads the
    weight without calling it). Hooks on a replaced module do not move to
    its replacement."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    if recipe is not None and not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be an octet Recipe or None; got {type(recipe).__name__}")
    if context is not None and not isinstance(context, Context):
        raise TypeError(f"context must be an octet.Context or None; got {type(context).__name__}")
    _check_filter(filter)

    def accept(name, m):
        return (isinstance(m, torch.nn.Linear) and not isinstance(m, _SKIPPED)
                and (filter is None or bool(filter(name, m))))

    def make(m):
        return _from_torch(m, recipe, context, options)

    if accept("", model):
        return make(model)
    _swap(model, make, accept)
    return model


def _to_torch(module):
    linear = torch.nn.Linear(module.in_features, module.out_features, bias="bias" in module._octet_names,
                             device="meta")
    linear.weight = module.weight
    if "bias" in module._octet_names:
        linear.bias = module.bias
    linear.train(module.training)
    return linear


def revert(model, filter=None):
    """Replaces every octet.torch.Linear under `model` (that filter(name,
    module) accepts) by a torch.nn.Linear holding the same Parameter
    objects, in place; returns the model (an octet.torch.Linear itself comes
    back as a torch.nn.Linear). The quantizer state is dropped.
    LayerNormLinear and LayerNormMLP have no single torch counterpart and
    stay."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    _check_filter(filter)

    def accept(name, m):
        return isinstance(m, Linear) and (filter is None or bool(filter(name, m)))

    if accept("", model):
        return _to_torch(model)
    _swap(model, _to_torch, accept)
    return model
