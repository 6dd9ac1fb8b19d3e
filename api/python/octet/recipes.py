"""Scaling recipes (docs/recipes.md): how the scales of FP8 tensors are chosen.

    recipe = octet.DelayedScaling(margin=1, amax_history_len=16)
    recipe = octet.CurrentScaling(format="e4m3", reduce_amax=True)
    recipe = octet.StaticScaling(scale=4.0, observe=True)
    recipe = octet.MXFP8Scaling(rounding="floor")
    recipe = octet.BlockScaling(power_of_two_scales=True)
    recipe = octet.RowwiseScaling(high_precision_wgrad=True)
    recipe = octet.MXFP4Scaling(stochastic_rounding=True, seed=7)
    recipe = octet.NVFP4Scaling(weight_2d=False, hadamard_transform=False)

Every keyword mirrors the field of the C option struct of the same name; a
keyword left out (None) keeps the default the library's `_init` function
sets. Enumerations take a lowercase name ("hybrid", "max", "rceil") or the
library's integer. A recipe is immutable; it owns its handle (close(), a
`with` block or garbage collection release it; quantizers, layers and
autocast scopes keep what they need alive).
"""

import ctypes as _c

import numpy as _np

from . import _lib
from ._errors import _callback_failed, _check
from ._handle import _Handle
from ._lib import lib as _libc

# octet_recipe_kind
DELAYED, CURRENT, STATIC, MXFP8, BLOCK, ROWWISE, MXFP4, NVFP4 = 0, 1, 2, 3, 4, 5, 6, 7
_KIND_NAMES = {DELAYED: "delayed", CURRENT: "current", STATIC: "static", MXFP8: "mxfp8", BLOCK: "block",
               ROWWISE: "rowwise", MXFP4: "mxfp4", NVFP4: "nvfp4"}
# octet_fp8_format
FORMAT_E4M3, FORMAT_E5M2, FORMAT_HYBRID = 0, 1, 2
FORMAT_E4M3FNUZ, FORMAT_E5M2FNUZ, FORMAT_HYBRID_FNUZ = 3, 4, 5
# octet_recipe_info.format of the FP4 recipes (their elements are E2M1)
_FORMAT_FP4 = -1
# octet_tensor_role
ROLE_INPUT, ROLE_WEIGHT, ROLE_GRADIENT = 0, 1, 2
# octet_amax_compute_algo
AMAX_MOST_RECENT, AMAX_MAX, AMAX_CALLBACK = 0, 1, 2
# octet_mx_rounding
MX_ROUND_RCEIL, MX_ROUND_FLOOR = 0, 1

_FORMATS = {"e4m3": FORMAT_E4M3, "e5m2": FORMAT_E5M2, "hybrid": FORMAT_HYBRID, "e4m3fnuz": FORMAT_E4M3FNUZ,
            "e5m2fnuz": FORMAT_E5M2FNUZ, "hybrid_fnuz": FORMAT_HYBRID_FNUZ}
_ROLES = {"input": ROLE_INPUT, "weight": ROLE_WEIGHT, "gradient": ROLE_GRADIENT}
_ALGOS = {"most_recent": AMAX_MOST_RECENT, "max": AMAX_MAX, "callback": AMAX_CALLBACK}
_ROUNDINGS = {"rceil": MX_ROUND_RCEIL, "floor": MX_ROUND_FLOOR}


def _enum(value, names, what):
    """A lowercase name or one of the integers of `names` -> the integer."""
    if isinstance(value, str):
        if value.lower() in names:
            return names[value.lower()]
    elif isinstance(value, (int, _np.integer)) and not isinstance(value, bool) and int(value) in names.values():
        return int(value)
    choices = ", ".join(f"{k!r} ({v})" for k, v in names.items())
    raise ValueError(f"{what} must be one of {choices}; got {value!r}")


def _role(role):
    return _enum(role, _ROLES, "role")


def _number(value, what, kind=float):
    if isinstance(value, bool) or not isinstance(value, (int, float, _np.integer, _np.floating)):
        raise TypeError(f"{what} must be a number; got {type(value).__name__}")
    if kind is int and int(value) != value:
        raise ValueError(f"{what} must be an integer; got {value!r}")
    if kind is int and not -(1 << 31) <= int(value) < (1 << 31):  # the C fields are int32_t
        raise ValueError(f"{what} must fit in a 32-bit signed integer; got {value!r}")
    return kind(value)


def _seed(value, what="seed"):
    """A uint64_t field: an integer in [0, 2^64)."""
    if isinstance(value, bool) or not isinstance(value, (int, _np.integer)):
        raise TypeError(f"{what} must be an integer in [0, 2**64); got {type(value).__name__}")
    if not 0 <= int(value) < (1 << 64):  # the C field is uint64_t
        raise ValueError(f"{what} must be an integer in [0, 2**64) (a uint64_t); got {value!r}")
    return int(value)


def _apply(options, fields, values):
    """Writes the given (non-None) keyword values into the ctypes struct,
    converted per field: bool fields as 0/1, enum fields through _enum."""
    for name, value in values.items():
        if value is None:
            continue
        kind = fields[name]
        if kind is bool:
            value = int(bool(value))
        elif isinstance(kind, tuple):  # (names, what)
            value = _enum(value, *kind)
        elif kind is _seed:
            value = _seed(value, name)
        else:
            value = _number(value, name, kind)
        setattr(options, name, value)


def _read_back(options, fields):
    """The keyword values of a filled C option struct (what _apply wrote,
    and the defaults of the fields it left alone)."""
    values = {}
    for name, kind in fields.items():
        value = getattr(options, name)
        if kind is bool:
            value = bool(value)
        elif isinstance(kind, tuple):  # (names, what)
            value = {v: k for k, v in kind[0].items()}.get(value, value)
        values[name] = value
    return values


class Recipe(_Handle):
    """A scaling recipe (base class; create one of the subclasses)."""

    kind = None
    _FIELDS = {}
    _options = {}

    def __init__(self):
        raise TypeError("create a DelayedScaling, CurrentScaling, StaticScaling, MXFP8Scaling, BlockScaling, "
                        "RowwiseScaling, MXFP4Scaling or NVFP4Scaling")

    def _create(self, create, options, keepalive=()):
        self._handle = None
        # The callbacks the C recipe may call: kept as long as this object,
        # which every quantizer, layer and context using it references.
        self._keepalive = tuple(keepalive)
        handle = _c.c_void_p()
        _check(create(_c.byref(options), _c.byref(handle)))
        self._handle = handle
        self._options = _read_back(options, self._FIELDS)

    _kind = "recipe"
    _destroy = "octet_recipe_destroy"

    def __repr__(self):
        if not getattr(self, "_handle", None):
            return f"{type(self).__name__}(closed)"
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.options().items())})"

    def options(self):
        """The options the recipe was created with, as the C option struct
        held them (defaults included): {keyword: value}, enumerations as
        lowercase names, flags as bools."""
        return dict(self._options)

    def info(self):
        """{"kind", "format", "override_fprop", "override_dgrad", "override_wgrad"}
        (kind and format as lowercase names; format "e2m1" for the FP4
        recipes)."""
        info = _lib.RecipeInfo(struct_size=_c.sizeof(_lib.RecipeInfo))
        _check(_libc.octet_recipe_get_info(self.handle, _c.byref(info)))
        formats = {v: k for k, v in _FORMATS.items()}
        formats[_FORMAT_FP4] = "e2m1"
        return {
            "kind": _KIND_NAMES.get(info.kind, info.kind),
            "format": formats.get(info.format, info.format),
            "override_fprop": bool(info.override_fprop),
            "override_dgrad": bool(info.override_dgrad),
            "override_wgrad": bool(info.override_wgrad),
        }

    def tensor_format(self, role):
        """(dtype, scaling_mode) a quantized tensor of `role` ("input",
        "weight", "gradient" or ROLE_*) takes under this recipe: an FP8
        dtype (octet.E4M3, ...) or octet.E2M1, and one of octet.SCALING_*."""
        return _tensor_format(self.handle, _role(role))


def _tensor_format(handle, role):
    dtype, mode = _c.c_int32(), _c.c_int32()
    _check(_libc.octet_recipe_tensor_format(handle, role, _c.byref(dtype), _c.byref(mode)))
    return dtype.value, mode.value


def _amax_thunk(fn):
    """Wraps fn(history: float32 array, newest first) -> amax."""

    def thunk(history, length, amax, user_data):
        try:
            values = _np.ctypeslib.as_array(history, shape=(length,)).copy() if length else _np.zeros(0, _np.float32)
            amax[0] = float(fn(values))
            return 0
        except BaseException as exc:  # never across the C frames
            return _callback_failed(exc)

    return _lib.AMAX_COMPUTE_FN(thunk)


def _scale_thunk(fn):
    """Wraps fn(amax, old_scale, fp8_max, margin) -> new scale."""

    def thunk(amax, old_scale, fp8_max, margin, new_scale, user_data):
        try:
            new_scale[0] = float(fn(amax, old_scale, fp8_max, margin))
            return 0
        except BaseException as exc:
            return _callback_failed(exc)

    return _lib.SCALE_COMPUTE_FN(thunk)


class DelayedScaling(Recipe):
    """Delayed scaling: the scale comes from an amax history (numerics.md 14.2).

    amax_compute: a callable history -> amax (history: float32 array, newest
    first, history[0] the current step); giving it selects
    amax_compute_algo "callback". scale_compute: a callable
    (amax, old_scale, fp8_max, margin) -> new scale, replacing steps 2-4 of
    the update. A callback that raises aborts the update: the call that ran
    it raises OctetError (the Python exception as its __cause__) and the
    quantizer's state is unchanged."""

    kind = DELAYED
    _FIELDS = {
        "margin": int, "interval": int, "format": (_FORMATS, "format"), "amax_history_len": int,
        "amax_compute_algo": (_ALGOS, "amax_compute_algo"), "power_of_two_scales": bool,
        "override_fprop": bool, "override_dgrad": bool, "override_wgrad": bool, "reduce_amax": bool,
    }

    def __init__(self, *, margin=None, interval=None, format=None, amax_history_len=None, amax_compute_algo=None,
                 amax_compute=None, scale_compute=None, power_of_two_scales=None, override_fprop=None,
                 override_dgrad=None, override_wgrad=None, reduce_amax=None):
        options = _lib.DelayedScalingOptions()
        _check(_libc.octet_delayed_scaling_options_init(_c.byref(options)))
        values = dict(margin=margin, interval=interval, format=format, amax_history_len=amax_history_len,
                      amax_compute_algo=amax_compute_algo, power_of_two_scales=power_of_two_scales,
                      override_fprop=override_fprop, override_dgrad=override_dgrad, override_wgrad=override_wgrad,
                      reduce_amax=reduce_amax)
        keepalive = []
        for name, fn in (("amax_compute", amax_compute), ("scale_compute", scale_compute)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable; got {type(fn).__name__}")
        if amax_compute is not None:
            if amax_compute_algo is not None and _enum(amax_compute_algo, _ALGOS, "amax_compute_algo") != AMAX_CALLBACK:
                raise ValueError("amax_compute is given: amax_compute_algo must be 'callback' (or left out)")
            values["amax_compute_algo"] = AMAX_CALLBACK
            thunk = _amax_thunk(amax_compute)
            options.amax_compute_callback = thunk
            keepalive.append(thunk)
        if scale_compute is not None:
            thunk = _scale_thunk(scale_compute)
            options.scale_compute_callback = thunk
            keepalive.append(thunk)
        _apply(options, self._FIELDS, values)
        self._create(_libc.octet_recipe_create_delayed, options, keepalive + [amax_compute, scale_compute])


class CurrentScaling(Recipe):
    """Current scaling: scale = fp8_max / amax of the tensor being quantized
    (numerics.md 14.1). reduce_amax (ABI 1.5): all-reduce (MAX) each quantize's
    amax through the context's communicator first."""

    kind = CURRENT
    _FIELDS = {"format": (_FORMATS, "format"), "amax_epsilon": float, "power_of_two_scales": bool,
               "reduce_amax": bool}

    def __init__(self, *, format=None, amax_epsilon=None, power_of_two_scales=None, reduce_amax=None):
        options = _lib.CurrentScalingOptions()
        # The sized form: the exported unsized _init writes the 1.1-1.4 struct only.
        _check(_libc.octet_current_scaling_options_init_sized(_c.byref(options), _c.sizeof(options)))
        if reduce_amax is not None and options.struct_size < _c.sizeof(options):
            raise ValueError("reduce_amax needs liboctet with ABI >= 1.5")
        _apply(options, self._FIELDS, dict(format=format, amax_epsilon=amax_epsilon,
                                           power_of_two_scales=power_of_two_scales, reduce_amax=reduce_amax))
        self._create(_libc.octet_recipe_create_current, options)


class StaticScaling(Recipe):
    """Static scaling, the clip path: a fixed scale; observe=True counts
    saturated values (Quantizer.info())."""

    kind = STATIC
    _FIELDS = {"format": (_FORMATS, "format"), "scale": float, "observe": bool}

    def __init__(self, *, format=None, scale=None, observe=None):
        options = _lib.StaticScalingOptions()
        _check(_libc.octet_static_scaling_options_init(_c.byref(options)))
        _apply(options, self._FIELDS, dict(format=format, scale=scale, observe=observe))
        self._create(_libc.octet_recipe_create_static, options)


class MXFP8Scaling(Recipe):
    """MXFP8: 1x32 blocks with E8M0 scales; rounding "rceil" or "floor"."""

    kind = MXFP8
    _FIELDS = {"format": (_FORMATS, "format"), "rounding": (_ROUNDINGS, "rounding")}

    def __init__(self, *, format=None, rounding=None):
        options = _lib.MXFP8Options()
        _check(_libc.octet_mxfp8_options_init(_c.byref(options)))
        _apply(options, self._FIELDS, dict(format=format, rounding=rounding))
        self._create(_libc.octet_recipe_create_mxfp8, options)


class BlockScaling(Recipe):
    """Float8 block scaling: 1x128 blocks (input, gradient), 128x128 (weight)."""

    kind = BLOCK
    _FIELDS = {"format": (_FORMATS, "format"), "amax_epsilon": float, "power_of_two_scales": bool}

    def __init__(self, *, format=None, amax_epsilon=None, power_of_two_scales=None):
        options = _lib.BlockScalingOptions()
        _check(_libc.octet_block_scaling_options_init(_c.byref(options)))
        _apply(options, self._FIELDS, dict(format=format, amax_epsilon=amax_epsilon,
                                           power_of_two_scales=power_of_two_scales))
        self._create(_libc.octet_recipe_create_block, options)


class RowwiseScaling(Recipe):
    """Rowwise scaling, torchao's "rowwise" recipe: one FP32 scale per row of
    each stored copy (numerics.md section 16); high_precision_wgrad=True is
    "rowwise_with_gw_hp" (the weight-gradient GEMM in high precision)."""

    kind = ROWWISE
    _FIELDS = {"format": (_FORMATS, "format"), "amax_epsilon": float, "power_of_two_scales": bool,
               "high_precision_wgrad": bool}

    def __init__(self, *, format=None, amax_epsilon=None, power_of_two_scales=None, high_precision_wgrad=None):
        options = _lib.RowwiseScalingOptions()
        _check(_libc.octet_rowwise_scaling_options_init(_c.byref(options)))
        _apply(options, self._FIELDS, dict(format=format, amax_epsilon=amax_epsilon,
                                           power_of_two_scales=power_of_two_scales,
                                           high_precision_wgrad=high_precision_wgrad))
        self._create(_libc.octet_recipe_create_rowwise, options)


class MXFP4Scaling(Recipe):
    """MXFP4 (OCP): E2M1 elements with one E8M0 scale per 1x32 block, every
    role (numerics.md section 15). rounding "rceil" (default) or "floor" (the
    OCP MX rule); stochastic_rounding=True rounds the gradient role
    stochastically (numerics.md 15.1) with the random bits of `seed` (an
    integer in [0, 2**64))."""

    kind = MXFP4
    _FIELDS = {"rounding": (_ROUNDINGS, "rounding"), "stochastic_rounding": bool, "seed": _seed}

    def __init__(self, *, rounding=None, stochastic_rounding=None, seed=None):
        options = _lib.MXFP4Options()
        _check(_libc.octet_mxfp4_options_init(_c.byref(options)))
        _apply(options, self._FIELDS, dict(rounding=rounding, stochastic_rounding=stochastic_rounding, seed=seed))
        self._create(_libc.octet_recipe_create_mxfp4, options)


class NVFP4Scaling(Recipe):
    """NVFP4, Transformer Engine's recipe: E2M1 elements with one E4M3 scale
    per 1x16 block and one FP32 scale per tensor (numerics.md section 15).
    Defaults (the library's): weight_2d=True (16x16 blocks for the weight
    role), stochastic_rounding=True (the gradient role, numerics.md 15.1),
    hadamard_transform=True (the random Hadamard transform of the columnwise
    copies of the input and gradient roles, numerics.md 15.2), seed=0 (an
    integer in [0, 2**64): the random bits and the transform's signs)."""

    kind = NVFP4
    _FIELDS = {"weight_2d": bool, "stochastic_rounding": bool, "hadamard_transform": bool, "seed": _seed}

    def __init__(self, *, weight_2d=None, stochastic_rounding=None, hadamard_transform=None, seed=None):
        options = _lib.NVFP4Options()
        _check(_libc.octet_nvfp4_options_init(_c.byref(options)))
        _apply(options, self._FIELDS, dict(weight_2d=weight_2d, stochastic_rounding=stochastic_rounding,
                                           hadamard_transform=hadamard_transform, seed=seed))
        self._create(_libc.octet_recipe_create_nvfp4, options)
