"""Warnings when a module's per-tensor FP8 quantize loses much: a share of
the non-zero values flushed to zero, or saturated (docs/pytorch.md,
"Nothing degrades silently")."""

import math
import os
import warnings

import torch

from .._dtypes import _FLUSH_LIMIT, _FP8_MAX, _OVERFLOWS, _lib_dtype_name

ENVIRONMENT_VARIABLE = "OCTET_TORCH_WARN_FRACTION"
_DEFAULT_FRACTION = 0.05
_fraction = None  # None: the environment variable's, else the default
_PER_TENSOR_KINDS = ("delayed", "current", "static")
_SAMPLE = 1 << 20  # values counted per check; larger tensors are sampled


class FP8PrecisionWarning(RuntimeWarning):
    """A module's FP8 quantize of one role flushed or saturated more than
    the threshold's share of the tensor's non-zero values."""


def warning_fraction():
    """The share of non-zero values (flushed, or saturated) beyond which a
    module warns: set_warning_fraction()'s, else the environment variable
    OCTET_TORCH_WARN_FRACTION, else 0.05."""
    if _fraction is not None:
        return _fraction
    text = os.environ.get(ENVIRONMENT_VARIABLE)
    if text is None:
        return _DEFAULT_FRACTION
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{ENVIRONMENT_VARIABLE}={text!r}: must be a number in [0, 1]")
    return value


def set_warning_fraction(fraction):
    """Sets the share of non-zero values (in [0, 1]; 1 turns the warnings
    off) that a quantize may flush or saturate without a warning; None goes
    back to OCTET_TORCH_WARN_FRACTION / 0.05."""
    global _fraction
    if fraction is not None:
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be a number in [0, 1] or None; got {fraction!r}")
        fraction = float(fraction)
    _fraction = fraction


class Monitor:
    """Per module: which (linear, role) pairs warned, and how many quantizes
    each had. A role is checked at its 1st, 2nd, 4th, 8th, ... quantize
    (a pass over at most 2^20 of the tensor's values, evenly strided; the
    other quantizes cost nothing) until it warned once."""

    def __init__(self, owner):
        self.owner = owner  # () -> the module's description
        self.warned = set()
        self.calls = {}

    def due(self, key):
        if key in self.warned or warning_fraction() >= 1.0:
            return False
        n = self.calls.get(key, 0) + 1
        self.calls[key] = n
        return n & (n - 1) == 0

    def check(self, key, tensor, quantizer, recipe):
        """tensor: what the quantizer quantized (high precision); quantizer:
        its octet Quantizer after the quantize; recipe: the Recipe in effect."""
        if recipe is None:
            return
        info = quantizer.info()
        if info.recipe_kind not in _PER_TENSOR_KINDS:
            return  # block and per-row scales: each block takes its own scale
        dtype = recipe.tensor_format(quantizer.role)[0]
        if dtype not in _FP8_MAX:
            return
        with torch.no_grad():
            flat = tensor.detach().reshape(-1)
            if flat.numel() > _SAMPLE:  # an evenly strided sample: a pass over 2^20 values, whatever the size
                flat = flat[::flat.numel() // _SAMPLE]
            a = flat.abs().float()
            nonzero = int(torch.count_nonzero(a))
            if nonzero == 0:
                return
            amax = info.amax  # the quantizer's record of the step (reduced over processes where they reduce)
            if not (math.isfinite(amax) and amax > 0):
                amax = float(a.max())
            if info.recipe_kind == "current":
                scale = _FP8_MAX[dtype] / amax if math.isfinite(amax) and amax > 0 else 1.0
            else:
                scale = info.scale
            y = a * scale
            flushed = int(torch.count_nonzero((y <= _FLUSH_LIMIT[dtype]) & (a > 0)))
            saturated = int(torch.count_nonzero(_OVERFLOWS[dtype](y))) if info.recipe_kind != "current" else 0
        sampled = " sampled" if tensor.numel() > _SAMPLE else ""
        fraction = warning_fraction()
        linear, role = key
        where = f"{self.owner()}, linear {linear}, {role}"
        name = _lib_dtype_name(dtype).upper()
        if flushed > fraction * nonzero:
            self.warned.add(key)
            limit = _FP8_MAX[dtype] / amax
            advice = {
                "static": f"a scale up to {limit:.6g} (fp8_max / amax) keeps more (octet.StaticScaling(scale=...)), "
                          "or octet.CurrentScaling() / octet.DelayedScaling(), which choose the scale per tensor",
                "delayed": "delayed scaling uses the amaxes of earlier steps (scale 1 until the first update, at the "
                           f"end of the first autocast block); this tensor's amax asks for up to {limit:.6g}: "
                           "octet.CurrentScaling() takes it from the data",
                "current": "the tensor's range is wider than the format's: E5M2 (format='hybrid' for gradients) or a "
                           "block recipe (octet.MXFP8Scaling(), octet.BlockScaling()) keeps more",
            }[info.recipe_kind]
            warnings.warn(f"{where}: the FP8 quantize ({name}, {info.recipe_kind} scaling, scale {scale:.6g}) flushed "
                          f"{flushed} of {nonzero}{sampled} non-zero values ({flushed / nonzero:.1%}) to zero; {advice} "
                          f"(warned once per module and role above a share of {fraction:g}: "
                          f"octet.torch.set_warning_fraction)", FP8PrecisionWarning, stacklevel=4)
        elif saturated > fraction * nonzero:
            self.warned.add(key)
            warnings.warn(f"{where}: the FP8 quantize ({name}, {info.recipe_kind} scaling, scale {scale:.6g}) "
                          f"saturated {saturated} of {nonzero}{sampled} non-zero values ({saturated / nonzero:.1%}) to "
                          f"+-{_FP8_MAX[dtype]:g}; a scale of at most {_FP8_MAX[dtype] / amax:.6g} (fp8_max / amax) "
                          "avoids it, as octet.CurrentScaling() takes from the data (warned once per module and "
                          f"role above a share of {fraction:g}: octet.torch.set_warning_fraction)",
                          FP8PrecisionWarning, stacklevel=4)
