"""Layers: Linear, LayerNormLinear, LayerNormMLP (docs/layers.md).

    layer = octet.Linear(ctx, 64, 32, params_dtype=octet.FP32, seed=0)  # torch-like init
    layer.set_parameter("weight", w); layer.set_parameter("bias", b)     # optional
    with ctx.autocast(octet.DelayedScaling()):
        y, saved = layer.forward(x, training=True)
        dx = layer.backward(saved, dy)
    dw = layer.get_gradient("weight")

Options are keywords mirroring octet_linear_options (and the LayerNorm
structs); one left out (None) keeps the library's `_init` default.
Parameters start initialised as torch.nn.Linear/LayerNorm's
(Layer.reset_parameters; seed= makes it repeatable). Inputs and gradients
are host data (NumPy arrays or lists of real numbers, converted to float32
and then the parameter dtype; results come back as float32 arrays) or
Tensors of the layer's context in the parameter dtype (results come back
as Tensors).
"""

import ctypes as _c
import weakref as _weakref

import numpy as _np

from . import _lib
from ._core import _FROM_ML, BF16, FP32, Context, Tensor, _check, _Handle, _lib_dtype_name
from ._lib import lib as _libc
from .quantizers import Quantizer
from .recipes import Recipe, _enum, _role

NORM_LAYERNORM, NORM_RMSNORM = 0, 1
ACTIVATION_GELU, ACTIVATION_SWIGLU = 0, 1
WEIGHTS_HIGH_PRECISION, WEIGHTS_FP8_ONLY = 0, 1
_NORMS = {"layernorm": NORM_LAYERNORM, "rmsnorm": NORM_RMSNORM}
_ACTIVATIONS = {"gelu": ACTIVATION_GELU, "swiglu": ACTIVATION_SWIGLU}
_STORAGE = {"high_precision": WEIGHTS_HIGH_PRECISION, "fp8_only": WEIGHTS_FP8_ONLY}
_PARAMS_DTYPES = {"fp32": FP32, "bf16": BF16}

_LINEAR_KEYWORDS = ("bias", "params_dtype", "weight_storage", "recipe", "save_original_input", "minimize_memory",
                    "weight_cache", "skip_weight_allocation")


def _features(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, _np.integer)) or not 1 <= value < (1 << 63):
        raise ValueError(f"{what} must be a positive integer (below 2**63); got {value!r}")
    return int(value)


def _linear_options(in_features, out_features, options):
    unknown = sorted(set(options) - set(_LINEAR_KEYWORDS))
    if unknown:
        raise TypeError(f"unknown layer option(s) {', '.join(unknown)}; the options are {', '.join(_LINEAR_KEYWORDS)}")
    o = _lib.LinearOptions()
    _check(_libc.octet_linear_options_init(_c.byref(o)))
    o.in_features = in_features
    o.out_features = out_features
    recipe = options.get("recipe")
    if recipe is not None:
        if not isinstance(recipe, Recipe):
            raise TypeError(f"recipe must be an octet Recipe or None; got {type(recipe).__name__}")
        o.recipe = recipe.handle
    if options.get("params_dtype") is not None:
        o.params_dtype = _enum(options["params_dtype"], _PARAMS_DTYPES, "params_dtype")
    if options.get("weight_storage") is not None:
        o.weight_storage = _enum(options["weight_storage"], _STORAGE, "weight_storage")
    for name in ("bias", "save_original_input", "minimize_memory", "weight_cache", "skip_weight_allocation"):
        if options.get(name) is not None:
            setattr(o, name, int(bool(options[name])))
    return o


class Saved:
    """What a training forward kept for its backward (octet_saved). Consumed
    by Layer.backward; close() drops it without a backward."""

    _keep = None

    def __init__(self, layer, handle, input_shape, output_shape, keep):
        self._handle = handle
        self._layer = layer
        self.input_shape = input_shape
        self.output_shape = output_shape
        self._keep = tuple(keep)  # tensors the C side may read until backward: pinned (Tensor.close waits)
        for t in self._keep:
            t._pin()

    def _drop_keep(self):
        keep, self._keep = self._keep, None
        for t in keep or ():
            t._unpin()

    @property
    def consumed(self):
        return not self._handle.value

    def close(self):
        if self._handle.value:
            _libc.octet_saved_destroy(self._handle)
            self._handle = _c.c_void_p()
        self._drop_keep()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Layer(_Handle):
    """Common part of the layers (create one of the subclasses)."""

    def _create(self, ctx, create, options, recipe, linear_options, seed):
        self._handle = None
        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be an octet Context; got {type(ctx).__name__}")
        self.context = ctx
        self.recipe = recipe
        self._recipes = {id(recipe): recipe} if recipe is not None else {}
        self._borrowed = _weakref.WeakSet()
        self._lent = {}
        handle = _c.c_void_p()
        _check(create(ctx.handle, _c.byref(options), _c.byref(handle)))
        self._handle = handle
        count = _c.c_size_t()
        _check(_libc.octet_layer_parameter_count(handle, _c.byref(count)))
        names = []
        for i in range(count.value):
            name = _c.c_char_p()
            _check(_libc.octet_layer_parameter_name(handle, i, _c.byref(name)))
            names.append(name.value.decode())
        self.parameter_names = tuple(names)
        self._skip_weights = bool(linear_options.skip_weight_allocation)
        self._fp8_only = linear_options.weight_storage == WEIGHTS_FP8_ONLY
        self.reset_parameters(seed)

    def _fan_in(self, name):
        """in_features of the matrix a parameter belongs to (torch's fan_in)."""
        if name in ("fc2_weight", "fc2_bias"):
            return self.ffn_features
        return self.in_features

    def reset_parameters(self, seed=None):
        """Initialises the parameters as torch.nn.Linear and torch.nn.LayerNorm
        do, from numpy.random.default_rng(seed) (seed: None for fresh
        entropy, an int, or a numpy.random.Generator, used as is).

        In parameter_names order: each weight matrix [out, in] gets
        uniform(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform with a = sqrt(5)),
        each Linear bias uniform with the same bound (in = its weight's
        in_features), drawn as float64 by Generator.uniform, rounded to
        float32, then to params_dtype by the library (BF16: to nearest
        even); norm_weight is 1 and norm_bias 0 (nothing drawn). Weights the
        layer does not hold (skip_weight_allocation: set_weight lends them)
        are skipped, drawing nothing; FP8-only weights are quantized from
        the drawn matrix (load_weight). With the weight cache on, call
        new_step() afterwards."""
        if isinstance(seed, _np.random.Generator):
            rng = seed
        elif seed is None or (isinstance(seed, (int, _np.integer)) and not isinstance(seed, bool) and seed >= 0):
            rng = _np.random.default_rng(seed)
        else:
            raise TypeError(f"seed must be None, a non-negative int or a numpy.random.Generator; got {seed!r}")
        for name in self.parameter_names:
            is_weight = name.rstrip("0123456789").endswith("weight")
            if name.startswith("norm_"):
                shape = self.parameter(name).shape
                self.set_parameter(name, _np.full(shape, 1.0 if is_weight else 0.0, _np.float32))
                continue
            if is_weight and self._skip_weights:
                continue
            bound = 1.0 / _np.sqrt(self._fan_in(name))
            shape = self._weight_shape(name) if is_weight else self.parameter(name).shape
            values = rng.uniform(-bound, bound, size=shape).astype(_np.float32)
            if is_weight and self._fp8_only:
                self.load_weight(name, values)
            else:
                self.set_parameter(name, values)

    def _weight_shape(self, name):
        if name == "fc1_weight":
            rows = 2 * self.ffn_features if self.activation == ACTIVATION_SWIGLU else self.ffn_features
            return (rows, self.in_features)
        if name == "fc2_weight":
            return (self.out_features, self.ffn_features)
        return (self.out_features, self.in_features)

    _kind = "layer"

    def _release(self, handle):
        """Destroys the layer; its borrowed tensors and quantizers become
        unusable (saved handles stay valid to close)."""
        for borrowed in list(self._borrowed):
            borrowed._handle = None
        _libc.octet_layer_destroy(handle)
        lent, self._lent = self._lent, {}
        for weight in lent.values():
            weight._unpin()

    # -- parameters ---------------------------------------------------------

    def _index(self, name):
        if isinstance(name, str):
            if name not in self.parameter_names:
                raise KeyError(f"{type(self).__name__} has no parameter {name!r}; "
                               f"it has {', '.join(self.parameter_names)}")
            return self.parameter_names.index(name)
        if isinstance(name, (int, _np.integer)) and not isinstance(name, bool) and 0 <= name < len(self.parameter_names):
            return int(name)
        raise KeyError(f"parameter must be one of {', '.join(self.parameter_names)} (or its index); got {name!r}")

    def _borrow_tensor(self, getter, name):
        handle = _c.c_void_p()
        _check(getter(self.handle, self._index(name), _c.byref(handle)))
        t = Tensor._borrowed(self.context, handle, self)
        self._borrowed.add(t)
        return t

    def parameter(self, name):
        """The parameter tensor (borrowed: valid while the layer is open)."""
        return self._borrow_tensor(_libc.octet_layer_get_parameter, name)

    def gradient(self, name):
        """The parameter's gradient tensor (borrowed; zero-filled if asked
        before the first backward)."""
        return self._borrow_tensor(_libc.octet_layer_get_gradient, name)

    def get_parameter(self, name):
        """A float32 NumPy copy of the parameter."""
        return _host_float32(self.context, self.parameter(name))

    def get_gradient(self, name):
        """A float32 NumPy copy of the parameter's gradient."""
        return _host_float32(self.context, self.gradient(name))

    def set_parameter(self, name, values):
        """Copies values (array of the parameter's shape; floats are rounded
        to the parameter dtype) into the parameter. With the weight cache on,
        call new_step() afterwards."""
        target = self.parameter(name)
        source = _as_tensor(self.context, values, target.dtype, f"parameter {name!r}", target.shape)
        _check(_libc.octet_convert(self.context.handle, source.handle, target.handle, 1))  # same dtype: a copy

    def set_weight(self, name, weight):
        """skip_weight_allocation: lends `weight` (a Tensor [out, in] in the
        parameter dtype, or a per-tensor E4M3/E5M2 one that forward and dgrad
        use as it is, e.g. an FP8 all-gather of shards; users' ABI 1.8) as the
        weight matrix for the next forwards. The layer (and the saved handles
        of forwards using it) keep a reference."""
        if not isinstance(weight, Tensor):
            raise TypeError(f"weight must be an octet Tensor (it is borrowed, not copied); got {type(weight).__name__}")
        index = self._index(name)
        _check(_libc.octet_layer_set_weight(self.handle, index, weight.handle))
        previous = self._lent.get(index)
        weight._pin()  # close() waits until the layer lets go of it
        self._lent[index] = weight
        if previous is not None:
            previous._unpin()

    def _check_saved(self, saved):
        """A live saved handle of this layer's training forward, else a clear error."""
        if not isinstance(saved, Saved):
            raise TypeError(f"saved must be what forward(training=True) returned; got {type(saved).__name__}")
        if saved._layer is not self:
            raise ValueError("saved belongs to another layer")
        if saved.consumed:
            raise ValueError("saved was already consumed by a backward (or closed)")

    def set_saved_weight(self, saved, name, weight):
        """skip_weight_allocation (users' ABI 1.9): the high-precision weight
        `saved`'s backward reads in place of the one its forward was lent,
        whose memory has moved since (an FSDP weight gathered again). A Tensor
        of the weight's shape and parameter dtype holding the same values;
        kept (pinned) until that backward has run."""
        self._check_saved(saved)
        if not isinstance(weight, Tensor):
            raise TypeError(f"weight must be an octet Tensor (it is borrowed, not copied); got {type(weight).__name__}")
        index = self._index(name)
        _check(_libc.octet_layer_set_saved_weight(self.handle, saved._handle, index, weight.handle))
        weight._pin()
        saved._keep = saved._keep + (weight,)

    def load_weight(self, name, values):
        """FP8-only weights: quantizes a high-precision matrix (array or
        Tensor of the weight's shape) into the stored FP8 weight."""
        index = self._index(name)
        source = _as_tensor(self.context, values, self.params_dtype, f"weight {name!r}")
        _check(_libc.octet_layer_load_weight(self.handle, index, source.handle))

    def new_step(self):
        """The optimizer stepped: cached FP8 weights are quantized again."""
        _check(_libc.octet_layer_new_step(self.handle))

    _linears = 2  # quantizer(linear=) takes 0 and 1 (a Linear's 1 is refused by the library)

    def quantizer(self, role, linear=0):
        """The quantizer of `role` ("input", "weight", "gradient") of linear
        0 (the only one, or FC1) or 1 (FC2), or of expert `linear` of a
        GroupedLinear; borrowed."""
        if (isinstance(linear, bool) or not isinstance(linear, (int, _np.integer))
                or not 0 <= linear < self._linears):
            rule = "0 or 1" if self._linears == 2 else f"an expert index in [0, {self._linears})"
            raise ValueError(f"linear must be {rule}; got {linear!r}")
        handle = _c.c_void_p()
        _check(_libc.octet_layer_get_quantizer(self.handle, int(linear), _role(role), _c.byref(handle)))
        q = Quantizer._borrowed(handle, self, self._recipes)
        self._borrowed.add(q)
        return q

    # -- forward and backward -----------------------------------------------

    def _forward_call(self, xt, y, training, saved):
        return _libc.octet_layer_forward(self.handle, xt.handle, y.handle, training, saved)

    def forward(self, x, *, training=False, out=None):
        """y = layer(x). x: [..., in_features]. training=False returns y;
        training=True returns (y, saved) for backward. out: a Tensor to
        write y into (returned)."""
        ctx = self.context
        shape = _shape_of(x, "input")
        if len(shape) < 1 or shape[-1] != self.in_features:
            raise ValueError(f"input must have shape [..., {self.in_features}]; got {list(shape)}")
        xt = _as_tensor(ctx, x, self.params_dtype, "input")
        out_shape = tuple(shape[:-1]) + (self.out_features,)
        if out is None:
            y = ctx.empty(out_shape, self.params_dtype)
        elif not isinstance(out, Tensor):
            raise TypeError(f"out must be an octet Tensor; got {type(out).__name__}")
        else:
            y = out
        for recipe in ctx._scope_recipes_seen():
            self._recipes.setdefault(id(recipe), recipe)
        saved = _c.c_void_p()
        _check(self._forward_call(xt, y, int(bool(training)), _c.byref(saved) if training else None))
        result = y if isinstance(x, Tensor) or out is not None else _host_float32(ctx, y)
        if not training:
            return result
        return result, Saved(self, saved, shape, out_shape, (xt, *self._lent.values()))

    def backward(self, saved, grad_output, *, accumulate=False, grad_input=True):
        """Consumes `saved`. grad_output: dL/dy (the forward output's shape).
        Parameter gradients are overwritten (accumulate=False) or added to.
        Returns dL/dx (a float32 array, or a Tensor when grad_output is one);
        grad_input=False skips it (returns None); a Tensor is written."""
        self._check_saved(saved)
        shape = _shape_of(grad_output, "grad_output")
        if tuple(shape) != tuple(saved.output_shape):
            raise ValueError(f"grad_output must have the forward output's shape {list(saved.output_shape)}; "
                             f"got {list(shape)}")
        ctx = self.context
        dy = _as_tensor(ctx, grad_output, self.params_dtype, "grad_output")
        if isinstance(grad_input, Tensor):
            dx = grad_input
        elif grad_input is True:
            dx = ctx.empty(saved.input_shape, self.params_dtype)
        elif grad_input is False or grad_input is None:
            dx = None
        else:
            raise TypeError(f"grad_input must be True, False or a Tensor; got {type(grad_input).__name__}")
        try:
            _check(_libc.octet_layer_backward(self.handle, _c.byref(saved._handle), dy.handle,
                                              dx.handle if dx is not None else None, int(bool(accumulate))))
        finally:
            if saved.consumed:
                saved._drop_keep()
        if dx is None or isinstance(grad_input, Tensor) or isinstance(grad_output, Tensor):
            return dx
        return _host_float32(ctx, dx)


class Linear(Layer):
    """y = x W^T + b. Parameters "weight" [out, in], "bias" [out],
    initialised as torch.nn.Linear's (reset_parameters; seed= makes it
    repeatable)."""

    def __init__(self, ctx, in_features, out_features, *, bias=None, params_dtype=None, weight_storage=None,
                 recipe=None, save_original_input=None, minimize_memory=None, weight_cache=None,
                 skip_weight_allocation=None, seed=None):
        self._handle = None
        self.in_features = _features(in_features, "in_features")
        self.out_features = _features(out_features, "out_features")
        o = _linear_options(self.in_features, self.out_features, dict(
            bias=bias, params_dtype=params_dtype, weight_storage=weight_storage, recipe=recipe,
            save_original_input=save_original_input, minimize_memory=minimize_memory, weight_cache=weight_cache,
            skip_weight_allocation=skip_weight_allocation))
        self.params_dtype = o.params_dtype
        self._create(ctx, _libc.octet_layer_create_linear, o, recipe, o, seed)


class LayerNormLinear(Layer):
    """LayerNorm or RMSNorm over the last dimension, then Linear. Parameters
    "norm_weight", "norm_bias" (LayerNorm), "weight", "bias". norm:
    "layernorm" or "rmsnorm"; epsilon; the other keywords as Linear's."""

    def __init__(self, ctx, in_features, out_features, *, norm=None, epsilon=None, seed=None, **linear_options):
        self._handle = None
        self.in_features = _features(in_features, "in_features")
        self.out_features = _features(out_features, "out_features")
        lo = _linear_options(self.in_features, self.out_features, linear_options)
        o = _lib.LayerNormLinearOptions()
        _check(_libc.octet_layernorm_linear_options_init(_c.byref(o)))
        o.linear = _c.pointer(lo)
        if norm is not None:
            o.norm = _enum(norm, _NORMS, "norm")
        if epsilon is not None:
            o.epsilon = float(epsilon)
        self.params_dtype = lo.params_dtype
        self._create(ctx, _libc.octet_layer_create_layernorm_linear, o, linear_options.get("recipe"), lo, seed)


class LayerNormMLP(Layer):
    """norm, FC1 (hidden -> ffn, or 2 ffn for SwiGLU), activation, FC2 (ffn ->
    hidden). Parameters "norm_weight", "norm_bias" (LayerNorm), "fc1_weight",
    "fc1_bias", "fc2_weight", "fc2_bias". activation: "gelu" (tanh form) or
    "swiglu"; the other keywords as LayerNormLinear's."""

    def __init__(self, ctx, hidden_features, ffn_features, *, norm=None, epsilon=None, activation=None, seed=None,
                 **linear_options):
        self._handle = None
        self.in_features = self.out_features = _features(hidden_features, "hidden_features")
        self.ffn_features = _features(ffn_features, "ffn_features")
        lo = _linear_options(self.in_features, self.in_features, linear_options)
        o = _lib.LayerNormMLPOptions()
        _check(_libc.octet_layernorm_mlp_options_init(_c.byref(o)))
        o.linear = _c.pointer(lo)
        o.ffn_features = self.ffn_features
        if norm is not None:
            o.norm = _enum(norm, _NORMS, "norm")
        if epsilon is not None:
            o.epsilon = float(epsilon)
        if activation is not None:
            o.activation = _enum(activation, _ACTIVATIONS, "activation")
        self.activation = o.activation
        self.params_dtype = lo.params_dtype
        self._create(ctx, _libc.octet_layer_create_layernorm_mlp, o, linear_options.get("recipe"), lo, seed)


class GroupedLinear(Layer):
    """num_groups experts' Linears over one input whose rows are sorted by
    expert (docs/grouped_linear.md): forward(x, splits) sends rows
    [sum(splits[:g]), + splits[g]) through expert g. Parameters "weight0"
    [out, in], "bias0" [out], "weight1", ... (each initialised as a
    torch.nn.Linear's); quantizer(role, g) is expert g's, or with
    shared_quantizers=True one set every expert uses. The other keywords as
    Linear's (save_original_input excepted)."""

    def __init__(self, ctx, num_groups, in_features, out_features, *, shared_quantizers=False, seed=None,
                 **linear_options):
        self._handle = None
        self.num_groups = _features(num_groups, "num_groups")
        self.in_features = _features(in_features, "in_features")
        self.out_features = _features(out_features, "out_features")
        self.shared_quantizers = bool(shared_quantizers)
        self._linears = self.num_groups
        self._splits = None
        lo = _linear_options(self.in_features, self.out_features, linear_options)
        o = _lib.GroupedLinearOptions()
        _check(_libc.octet_grouped_linear_options_init(_c.byref(o)))
        o.linear = _c.pointer(lo)
        o.num_groups = self.num_groups
        o.shared_quantizers = int(self.shared_quantizers)
        self.params_dtype = lo.params_dtype
        self._create(ctx, _libc.octet_layer_create_grouped_linear, o, linear_options.get("recipe"), lo, seed)

    def _forward_call(self, xt, y, training, saved):
        splits = self._splits
        return _libc.octet_layer_forward_grouped(self.handle, xt.handle, len(splits), splits, y.handle, training,
                                                 saved)

    def forward(self, x, splits, *, training=False, out=None):
        """y = layer(x) with splits[g] rows (in order) going to expert g:
        num_groups non-negative ints adding up to x's rows (the product of
        its leading dimensions). As Linear.forward otherwise."""
        try:
            values = [int(v) for v in _np.asarray(splits).reshape(-1)]
        except (TypeError, ValueError):
            raise TypeError(f"splits must be a sequence of ints; got {type(splits).__name__}") from None
        if _np.asarray(splits).dtype.kind not in "iu" and len(values):
            raise TypeError(f"splits must hold integers; got {_np.asarray(splits).dtype}")
        if len(values) != self.num_groups:
            raise ValueError(f"splits must hold num_groups ({self.num_groups}) row counts; got {len(values)}")
        self._splits = (_c.c_int64 * len(values))(*values)
        try:
            return super().forward(x, training=training, out=out)
        finally:
            self._splits = None


# -- host data <-> tensors of the parameter dtype ------------------------------

def _host(x, what):
    """x as a NumPy array (lists and scalars through numpy.asarray)."""
    if isinstance(x, _np.ndarray):
        return x
    try:
        return _np.asarray(x)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a NumPy array, a (nested, not ragged) list of numbers or an octet "
                        f"Tensor; got {type(x).__name__}") from None


def _shape_of(x, what="input"):
    if isinstance(x, Tensor):
        return tuple(x.shape)
    return tuple(_host(x, what).shape)


def _as_tensor(ctx, x, dtype, what, shape=None):
    """x as a Tensor of `dtype` on ctx: Tensors must have that dtype; host
    data (NumPy arrays, lists) of real numbers is rounded to float32 by
    NumPy (float64: to nearest even), then to the parameter dtype by the
    library (BF16: to nearest even); an ml_dtypes array of the parameter
    dtype is taken as it is; uint16 arrays are taken as BF16 codes."""
    if shape is not None and tuple(_shape_of(x, what)) != tuple(shape):
        raise ValueError(f"{what} must have shape {list(shape)}; got {list(_shape_of(x, what))}")
    if isinstance(x, Tensor):
        if x.dtype != dtype:
            raise ValueError(f"{what} must be a {_lib_dtype_name(dtype)} tensor; got {_lib_dtype_name(x.dtype)} "
                             f"(ctx.convert(t, octet.{_lib_dtype_name(dtype).upper()}) converts it)")
        return x
    x = _host(x, what)
    if dtype == BF16 and x.dtype == _np.uint16:
        return ctx.tensor(x, dtype=BF16)
    if _FROM_ML.get(x.dtype) == dtype:
        return ctx.tensor(x)
    if x.dtype == object or x.dtype.kind not in "fiu" and x.dtype not in _FROM_ML:
        raise TypeError(f"{what} must hold real numbers (a float array, or uint16 BF16 codes for BF16); got {x.dtype}")
    if x.ndim < 1:
        raise ValueError(f"{what} must have at least one dimension")
    t = ctx.tensor(_np.ascontiguousarray(x, dtype=_np.float32))
    return t if dtype == FP32 else ctx.convert(t, dtype)


def _host_float32(ctx, t):
    return t.numpy() if t.dtype == FP32 else ctx.convert(t, FP32).numpy()
