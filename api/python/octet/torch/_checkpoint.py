"""The quantizer state of every octet.torch module of a model as tensors,
for checkpoints that hold tensors only (safetensors, save_pretrained)."""

import torch

from ._modules import _Module


def quantizer_state_dict(model):
    """{"<module name>.<linear>.<role>": uint8 tensor of the
    octet_quantizer_save bytes} for every quantizer used so far in the
    octet.torch modules under model (model itself included)."""
    out = {}
    for name, module in model.named_modules():
        if isinstance(module, _Module):
            for key, data in module.quantizer_state().items():
                out[f"{name}.{key}" if name else key] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return out


def load_quantizer_state_dict(model, state):
    """Restores quantizer_state_dict()'s tensors into the modules of the
    same names; a key naming no octet.torch module raises KeyError."""
    modules = {name: m for name, m in model.named_modules() if isinstance(m, _Module)}
    grouped = {}
    for key, value in state.items():
        parts = key.split(".")
        name, quantizer = ".".join(parts[:-2]), ".".join(parts[-2:])
        if len(parts) < 2 or name not in modules:
            raise KeyError(f"quantizer state {key!r} names no octet.torch module of the model")
        grouped.setdefault(name, {})[quantizer] = value
    for name, values in grouped.items():
        modules[name].load_quantizer_state(values)
