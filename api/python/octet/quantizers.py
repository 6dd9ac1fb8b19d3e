"""Quantizers: the scaling state of one tensor role (docs/recipes.md).

    q = octet.Quantizer(octet.CurrentScaling(), "input")
    fp8 = q.quantize(ctx, x)              # a quantized Tensor of the recipe's format
    q.info().scale, q.save()

A quantizer is not tied to a context; its state (scale, amax history, update
count, observations) lives with it and is portable across backends.
"""

import ctypes as _c
import dataclasses as _dataclasses

import numpy as _np

from . import _lib
from ._context import ContextBase
from ._dtypes import BOTH
from ._errors import _check
from ._handle import _Handle
from ._lib import lib as _libc
from ._tensor import Tensor
from .recipes import _KIND_NAMES, Recipe, _role, _tensor_format


@_dataclasses.dataclass(frozen=True)
class QuantizerInfo:
    """octet_quantizer_info. recipe_kind is None while a quantizer that follows
    autocast was never used; saturated_fraction = observed_saturated /
    observed_total (static recipe with observe)."""

    role: int
    recipe_kind: object
    scale: float
    scale_inv: float
    amax: float
    amax_history_len: int
    update_count: int
    observed_amax: float
    observed_saturated: int
    observed_total: int
    saturated_fraction: float


def _stats_dict(stats):
    return {name: getattr(stats, name) for name, _ in _lib.QuantizeStats._fields_ if name != "struct_size"}


class Quantizer(_Handle):
    """Scaling state of one role ("input", "weight", "gradient") under a
    recipe; recipe None follows the innermost autocast scope of the context
    it quantizes on."""

    def __init__(self, recipe, role):
        self._handle = None
        self._owner = None
        if recipe is not None and not isinstance(recipe, Recipe):
            raise TypeError(f"recipe must be an octet Recipe or None; got {type(recipe).__name__}")
        self.role = _role(role)
        self.recipe = recipe
        self._recipes = {id(recipe): recipe} if recipe is not None else {}
        handle = _c.c_void_p()
        _check(_libc.octet_quantizer_create(recipe.handle if recipe is not None else None, self.role,
                                            _c.byref(handle)))
        self._handle = handle

    @classmethod
    def _borrowed(cls, handle, owner, recipes):
        """A quantizer owned by a layer (owner): not destroyed by close()."""
        self = cls.__new__(cls)
        self._handle = handle
        self._owner = owner
        self.recipe = None
        self._recipes = recipes  # the owner's: shared, so scopes seen are kept
        self.role = self.info().role
        return self

    _destroy = "octet_quantizer_destroy"

    @property
    def _kind(self):
        return "quantizer" if self._owner is None else "quantizer's layer"

    def _format(self, ctx):
        if self.recipe is not None:
            return self.recipe.tensor_format(self.role)
        depth, scope = _c.c_int32(), _c.c_void_p()
        _check(_libc.octet_autocast_get_state(ctx.handle, _c.byref(depth), _c.byref(scope)))
        if depth.value == 0:
            raise ValueError("this quantizer follows autocast (no recipe): quantize inside "
                             "`with ctx.autocast(recipe):`, or pass out=")
        return _tensor_format(scope, self.role)

    def _note_scope_recipe(self, ctx):
        # A recipe-less quantizer updates with the recipe it was last used
        # with: keep that recipe's callbacks alive as long as the quantizer.
        for recipe in ctx._scope_recipes_seen():
            self._recipes.setdefault(id(recipe), recipe)

    def quantize(self, ctx, x, out=None, *, usages=BOTH, saturate=True, stats=False):
        """Quantizes x (NumPy array or high-precision Tensor) with the
        recipe. out: a quantized Tensor of the recipe's format, or None to
        create one (`usages` of it). Returns out, or (out, stats dict) with
        stats=True (nan/saturated/flushed/total counts and amax)."""
        if not isinstance(ctx, ContextBase):
            raise TypeError(f"ctx must be an octet Context; got {type(ctx).__name__}")
        if out is not None and not isinstance(out, Tensor):
            raise TypeError(f"out must be an octet Tensor; got {type(out).__name__}")
        x = ctx._as_tensor(x)
        if out is None:
            dtype, mode = self._format(ctx)
            out = ctx.empty(x.shape, dtype, usages, mode)
        options = _lib.QuantizeOptions()
        _check(_libc.octet_quantize_options_init_sized(_c.byref(options), _c.sizeof(options)))
        options.saturate = int(bool(saturate))
        counts = _lib.QuantizeStats(struct_size=_c.sizeof(_lib.QuantizeStats)) if stats else None
        self._note_scope_recipe(ctx)
        _check(_libc.octet_quantizer_quantize(ctx.handle, self.handle, x.handle, out.handle, _c.byref(options),
                                              _c.byref(counts) if stats else None))
        return (out, _stats_dict(counts)) if stats else out

    def record_amax(self, amax):
        """Records an amax measured elsewhere, as a quantize would (NaN is
        ignored; a negative amax raises OctetError)."""
        _check(_libc.octet_quantizer_record_amax(self.handle, float(amax)))

    def update_scale(self):
        """Applies the recipe's scale update (delayed scaling: numerics.md 14.2)."""
        _check(_libc.octet_quantizer_update_scale(self.handle))

    def set_scale(self, scale):
        """Sets the scale (and scale_inv = 1/scale)."""
        _check(_libc.octet_quantizer_set_scale(self.handle, float(scale)))

    def info(self):
        info = _lib.QuantizerInfo(struct_size=_c.sizeof(_lib.QuantizerInfo))
        _check(_libc.octet_quantizer_get_info(self.handle, _c.byref(info)))
        values = {name: getattr(info, name) for name, _ in _lib.QuantizerInfo._fields_ if name != "struct_size"}
        values["recipe_kind"] = _KIND_NAMES.get(info.recipe_kind)
        return QuantizerInfo(**values)

    def amax_history(self):
        """The amax history, newest first (float32 array of amax_history_len)."""
        out = _np.zeros(self.info().amax_history_len, dtype=_np.float32)
        _check(_libc.octet_quantizer_get_amax_history(self.handle, out.ctypes.data, out.size))
        return out

    def save(self):
        """The checkpoint bytes (docs/recipes.md, "Checkpoint format")."""
        size = _c.c_size_t()
        _check(_libc.octet_quantizer_save(self.handle, None, 0, _c.byref(size)))
        buffer = _c.create_string_buffer(size.value)
        _check(_libc.octet_quantizer_save(self.handle, buffer, size.value, _c.byref(size)))
        return buffer.raw[:size.value]

    def load(self, data):
        """Restores a checkpoint written by save() (same role, recipe kind and
        history length); changes nothing if the bytes are refused."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes; got {type(data).__name__}")
        data = bytes(data)
        _check(_libc.octet_quantizer_load(self.handle, data, len(data)))
