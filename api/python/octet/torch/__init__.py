"""octet.torch: Octet's layers as torch.nn.Modules (docs/pytorch.md).

    import torch, octet, octet.torch
    model = octet.torch.convert(model)                    # every nn.Linear -> octet.torch.Linear, same Parameters
    opt = torch.optim.AdamW(model.parameters())
    with octet.torch.autocast(octet.DelayedScaling()):    # FP8 GEMMs; outside: high precision
        loss = loss_fn(model(x))
        loss.backward()
    opt.step()

The modules' Parameters are ordinary torch tensors; the Octet layer
underneath borrows the weights (no copy) and runs forward and backward as
torch custom operators (octet::layer_forward / layer_backward), the same
in eager mode and under torch.compile. Importing octet does not import
torch; this package does (import octet.torch, or the first use of the
attribute octet.torch).
"""

from . import _ops  # noqa: F401  (registers the custom operators)
from ._autocast import autocast, release_process_group
from ._checkpoint import load_quantizer_state_dict, quantizer_state_dict
from ._convert import convert, revert
from ._defaults import default_context, set_default_backend
from ._float8 import from_float8, to_float8
from ._fsdp import enable_fp8_all_gather
from ._health import FP8PrecisionWarning, set_warning_fraction, warning_fraction
from ._modules import GroupedLinear, LayerNormLinear, LayerNormMLP, Linear

__all__ = ["Linear", "LayerNormLinear", "LayerNormMLP", "GroupedLinear", "autocast", "convert", "revert", "default_context",
           "set_default_backend", "quantizer_state_dict", "load_quantizer_state_dict", "release_process_group",
           "FP8PrecisionWarning", "set_warning_fraction", "warning_fraction", "enable_fp8_all_gather",
           "from_float8", "to_float8"]
