"""octet.torch: Octet's layers as torch.nn.Modules (docs/pytorch.md).

    import torch, octet, octet.torch
    model = torch.nn.Sequential(octet.torch.LayerNormMLP(64, 256), octet.torch.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with octet.torch.autocast(octet.DelayedScaling()):     # FP8 GEMMs; outside: FP32
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
    opt.step()

Forward and backward run Octet's layers (octet.layers) through a
torch.autograd.Function: the forward's saved handle lives on the autograd
context until the backward consumes it. Nothing is copied on the way in or
out for contiguous CPU tensors of the module's dtype: the input, the output
and the input gradient are shared with Octet through DLPack, and the
parameters ARE the Octet layer's parameter memory (torch.nn.Parameters over
it), so an optimizer's in-place step is what the next forward reads. The
parameter gradients are copied once out of the layer's gradient buffers
(autograd owns and accumulates .grad). A second backward through the same
graph (retain_graph=True, gradcheck) runs the forward again from the input
the autograd context keeps, then its backward.

Importing octet does not import torch; this module does (import octet.torch,
or the first use of the attribute octet.torch).
"""

import threading as _threading

import torch as _torch

from . import layers as _layers
from ._core import BF16, FP32, Context
from .autocast import Autocast
from .recipes import Recipe

__all__ = ["Linear", "LayerNormLinear", "LayerNormMLP", "autocast", "default_context"]

_DTYPES = {_torch.float32: FP32, _torch.bfloat16: BF16}
_LAYER_FEATURES = (1 << 11) | (1 << 12) | (1 << 13) | (1 << 14)  # NORM, ACTIVATION, BIAS_GRADIENT, ACCUMULATE
_ROLES = ("input", "weight", "gradient")
_EXTRA_STATE_FORMAT = "octet.torch quantizers 1"

_default_lock = _threading.Lock()
_default = None
_scopes = _threading.local()  # .contexts: the contexts of the open octet.torch.autocast blocks, innermost last


def default_context():
    """The context the modules use when none is given, created on first use
    and shared by the process (a context is used by one thread at a time,
    docs/abi.md): the first available host backend that has every layer
    kernel (norm, activation, bias gradient, accumulate), in the order
    "auto" tries them; the reference has them all."""
    global _default
    with _default_lock:
        if _default is None:
            from ._core import backends
            names = [b["name"] for b in backends()
                     if b["available"] and b["memory"] == "host" and b["features"] & _LAYER_FEATURES == _LAYER_FEATURES]
            plugins = [n for n in names if n != "reference"]
            _default = Context(plugins[0] if plugins else "reference")
        return _default


class autocast:
    """`with octet.torch.autocast(recipe):` runs the octet.torch modules of
    `context` (default: default_context()) in FP8 under `recipe` (an octet
    Recipe: DelayedScaling, CurrentScaling, ...): an Octet autocast scope
    (docs/recipes.md) on that context. Scopes nest; the end of the outermost
    one updates the delayed-scaling scales of the quantizers used inside it.
    Put the backward inside the block too, so the gradient quantizers' amaxes
    are part of that update (a backward after the block still runs in FP8,
    with the forward's recipe, and its amaxes count at the next block's end).
    Outside any block the modules compute in high precision, unless they
    were given their own recipe=."""

    def __init__(self, recipe, *, context=None):
        if not isinstance(recipe, Recipe):
            raise TypeError(f"octet.torch.autocast needs an octet Recipe (octet.DelayedScaling(), ...); "
                            f"got {type(recipe).__name__}")
        if context is not None and not isinstance(context, Context):
            raise TypeError(f"context must be an octet.Context or None; got {type(context).__name__}")
        self.recipe = recipe
        self.context = context
        self._scope = None

    def __enter__(self):
        if self._scope is not None:
            raise ValueError("this octet.torch.autocast block is already open")
        scope = Autocast(self.context or default_context(), self.recipe)
        scope.begin()
        self._scope = scope
        _open_contexts().append(scope.context)
        return self

    def __exit__(self, exc_type, exc, tb):
        scope, self._scope = self._scope, None
        _open_contexts().pop()
        return scope.__exit__(exc_type, exc, tb)


def _open_contexts():
    contexts = getattr(_scopes, "contexts", None)
    if contexts is None:
        contexts = _scopes.contexts = []
    return contexts


class _LayerFunction(_torch.autograd.Function):
    """y = layer(x) with Octet's forward and backward; the parameters are
    inputs so that autograd gives them gradients (the layer reads them from
    its own memory, which they share)."""

    @staticmethod
    def forward(ctx, module, x, *params):
        y, saved = module._run_forward(x, training=True)
        ctx.octet_module = module
        ctx.octet_saved = saved
        ctx.save_for_backward(x)  # a reference (as torch.nn.Linear keeps), for a second backward only
        return y

    @staticmethod
    @_torch.autograd.function.once_differentiable
    def backward(ctx, dy):
        module, saved = ctx.octet_module, ctx.octet_saved
        ctx.octet_saved = None
        (x,) = ctx.saved_tensors
        if saved is None or saved.consumed:  # retain_graph: Octet's handle went to the first backward
            saved = module._run_forward(x, training=True)[1]
        return (None, *module._run_backward(saved, dy, x.shape, ctx.needs_input_grad))


class _Module(_torch.nn.Module):
    """Common part of the modules: an Octet layer whose parameters are
    registered as torch.nn.Parameters sharing its memory."""

    _layer_options = ("recipe", "save_original_input", "minimize_memory", "weight_cache")

    def _create(self, layer_class, args, dtype, context, seed, options):
        unknown = sorted(set(options) - set(self._layer_options))
        if unknown:
            raise TypeError(f"unknown option(s) {', '.join(unknown)} for octet.torch.{type(self).__name__}; "
                            f"the layer options are {', '.join(self._layer_options)} "
                            "(FP8-only weights and lent weights have no torch Parameters)")
        if dtype not in _DTYPES:
            raise TypeError(f"dtype must be torch.float32 or torch.bfloat16 (Octet's parameter dtypes); got {dtype}")
        if context is None:
            context = default_context()
        elif not isinstance(context, Context):
            raise TypeError(f"context must be an octet.Context or None; got {type(context).__name__}")
        self.dtype = dtype
        self.context = context
        self._device = "cpu" if context.info()["memory"] == "host" else "cuda"
        self._alignment = int(context.info()["alignment"])
        self._weight_cache = bool(options.get("weight_cache"))
        layer = layer_class(context, *args, params_dtype=_DTYPES[dtype], seed=seed, **options)
        self._octet_layer = layer
        self.in_features, self.out_features = layer.in_features, layer.out_features
        if isinstance(layer, _layers.LayerNormMLP):
            self.ffn_features = layer.ffn_features
        self._linear_count = 2 if isinstance(layer, _layers.LayerNormMLP) else 1
        self._storage = {}
        self._weight_versions = None
        for name in layer.parameter_names:
            view = self._layer_view(name)
            self.register_parameter(name, _torch.nn.Parameter(view))
            self._storage[name] = view.data_ptr()

    @property
    def octet_layer(self):
        """The octet.layers layer underneath (its quantizers: .quantizer(role, linear))."""
        return self._octet_layer

    def _layer_view(self, name):
        return _torch.from_dlpack(self._octet_layer.parameter(name))

    # -- parameters ------------------------------------------------------------

    def _linked_parameters(self):
        """The Parameters, each over the layer's memory. One whose .data was
        replaced (param.data = t, module.share_memory(), load of a pickled
        module) has its values copied into the layer and is pointed at the
        layer's memory again; a dtype, shape or device change is refused."""
        params = []
        for name in self._octet_layer.parameter_names:
            p = getattr(self, name)
            if not isinstance(p, _torch.nn.Parameter):
                raise TypeError(f"octet.torch.{type(self).__name__}.{name} must stay a torch.nn.Parameter; "
                                f"got {type(p).__name__}")
            if p.data_ptr() != self._storage[name]:
                view = self._layer_view(name)
                if p.dtype != view.dtype or p.shape != view.shape or p.device != view.device:
                    raise ValueError(f"parameter {name!r} is now {p.dtype} {list(p.shape)} on {p.device}; the Octet "
                                     f"layer holds {view.dtype} {list(view.shape)} on {view.device} (octet.torch "
                                     "modules do not change dtype or device: make a new module and "
                                     "load_state_dict)")
                with _torch.no_grad():
                    view.copy_(p.data)
                p.data = view
            params.append(p)
        if self._weight_cache:  # the optimizer stepped (in place) since the cached FP8 weights were made
            versions = tuple(p._version for p in params)
            if versions != self._weight_versions:
                self._octet_layer.new_step()
                self._weight_versions = versions
        return params

    # -- forward and backward --------------------------------------------------

    def forward(self, x):
        """y = layer(x); x: [..., in_features], contiguous, of the module's
        dtype and device. In FP8 inside octet.torch.autocast (or with the
        module's own recipe=)."""
        self._check_input(x)
        params = self._linked_parameters()
        contexts = _open_contexts()
        if contexts and self.context not in contexts and self._octet_layer.recipe is None:
            raise ValueError(f"octet.torch.{type(self).__name__} runs on another octet Context than the open "
                             "octet.torch.autocast block: pass context=module.context to autocast")
        if _torch.is_grad_enabled() and (x.requires_grad or any(p.requires_grad for p in params)):
            return _LayerFunction.apply(self, x, *params)
        return self._run_forward(x, training=False)

    def _check_input(self, x):
        name = f"octet.torch.{type(self).__name__}"
        if not isinstance(x, _torch.Tensor):
            raise TypeError(f"{name}: the input must be a torch.Tensor; got {type(x).__name__}")
        if x.dtype != self.dtype:
            raise TypeError(f"{name}: the input must be {self.dtype} (the module's dtype); got {x.dtype} "
                            f"(x.to({self.dtype}) converts it)")
        if x.device.type != self._device:
            raise ValueError(f"{name}: the input must be on {self._device} (the module's context "
                             f"{self.context.info()['name']!r}); got {x.device}")
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"{name}: the input must have shape [..., {self.in_features}]; got {list(x.shape)}")
        if x.numel() == 0:
            raise ValueError(f"{name}: the input has no elements (shape {list(x.shape)})")
        if not x.is_contiguous():
            raise ValueError(f"{name}: the input must be contiguous (Octet reads it in place, without a copy); "
                             "call x.contiguous() first")
        if x.data_ptr() % self._alignment:
            raise ValueError(f"{name}: the input's memory must be aligned to {self._alignment} bytes (Octet reads "
                             f"it in place); this one starts at an offset of {x.data_ptr() % self._alignment} bytes "
                             "(a view into a larger tensor): call x.clone() first")

    def _shared(self, t):
        """An Octet tensor over t's memory (t: contiguous, aligned)."""
        return self.context.from_dlpack(t.detach())

    def _run_forward(self, x, training):
        y = _torch.empty(tuple(x.shape[:-1]) + (self.out_features,), dtype=self.dtype, device=x.device)
        xt, yt = self._shared(x), self._shared(y)
        try:
            result = self._octet_layer.forward(xt, training=training, out=yt)
        finally:
            xt.close()  # a saved handle that still reads x keeps it (Tensor.close waits for it)
            yt.close()
        return (y, result[1]) if training else y

    def _gradient_source(self, dy):
        """dy as Octet reads it: contiguous and aligned (autograd may hand an
        expanded or offset view; that one is copied)."""
        if dy.dtype != self.dtype:
            dy = dy.to(self.dtype)
        if not dy.is_contiguous() or dy.data_ptr() % self._alignment:
            dy = dy.contiguous() if not dy.is_contiguous() else dy.clone()
        return dy

    def _run_backward(self, saved, dy, input_shape, needs_input_grad):
        dy = self._gradient_source(dy)
        dyt = self._shared(dy)
        dx = _torch.empty(input_shape, dtype=self.dtype, device=dy.device) if needs_input_grad[1] else None
        dxt = self._shared(dx) if dx is not None else None
        try:
            self._octet_layer.backward(saved, dyt, grad_input=dxt if dxt is not None else False)
        finally:
            dyt.close()
            if dxt is not None:
                dxt.close()
        grads = []
        for i, name in enumerate(self._octet_layer.parameter_names):
            if needs_input_grad[2 + i]:  # a copy: the layer's buffer is overwritten by the next backward
                grads.append(_torch.from_dlpack(self._octet_layer.gradient(name)).clone())
            else:
                grads.append(None)
        return (dx, *grads)

    # -- state ----------------------------------------------------------------

    def get_extra_state(self):
        """The quantizers' checkpoints (octet_quantizer_save bytes, docs/recipes.md
        "Checkpoint format") as uint8 tensors keyed "linear.role"
        ("0.input", ..., "1.gradient" for LayerNormMLP's FC2)."""
        quantizers = {}
        for linear in range(self._linear_count):
            for role in _ROLES:
                data = self._octet_layer.quantizer(role, linear).save()
                quantizers[f"{linear}.{role}"] = _torch.frombuffer(bytearray(data), dtype=_torch.uint8)
        return {"format": _EXTRA_STATE_FORMAT, "quantizers": quantizers}

    def set_extra_state(self, state):
        """Restores get_extra_state()'s quantizer checkpoints. A quantizer the
        saved module never used (its checkpoint holds no recipe state) is left
        as it is. A refused checkpoint raises OctetError naming the rule."""
        if not isinstance(state, dict) or state.get("format") != _EXTRA_STATE_FORMAT:
            raise ValueError(f"octet.torch.{type(self).__name__}: the extra state is not an octet.torch quantizer "
                             f"state (format {_EXTRA_STATE_FORMAT!r})")
        quantizers = state["quantizers"]
        expected = {f"{linear}.{role}" for linear in range(self._linear_count) for role in _ROLES}
        if set(quantizers) != expected:
            raise ValueError(f"octet.torch.{type(self).__name__}: the extra state has quantizers "
                             f"{sorted(quantizers)}; this module has {sorted(expected)}")
        for key, data in quantizers.items():
            data = bytes(data.numpy().tobytes()) if isinstance(data, _torch.Tensor) else bytes(data)
            unused = len(data) >= 24 and int.from_bytes(data[20:24], "little", signed=True) == -1
            if unused:
                continue
            linear, role = key.split(".")
            self._octet_layer.quantizer(role, int(linear)).load(data)

    def __deepcopy__(self, memo):
        raise TypeError(f"octet.torch.{type(self).__name__} cannot be deep-copied (its parameters are an Octet "
                        "layer's memory): make a new module and load_state_dict(module.state_dict())")

    def __reduce_ex__(self, protocol):
        raise TypeError(f"octet.torch.{type(self).__name__} cannot be pickled (its parameters are an Octet layer's "
                        "memory): save module.state_dict() instead")



class Linear(_Module):
    """y = x W^T + b, as torch.nn.Linear (parameters "weight" [out, in] and
    "bias" [out], initialised as torch.nn.Linear's from
    numpy.random.default_rng(seed)). dtype: torch.float32 or torch.bfloat16;
    context: an octet.Context (default_context()); further keywords are
    octet.Linear's options (recipe, save_original_input, minimize_memory,
    weight_cache)."""

    def __init__(self, in_features, out_features, bias=True, *, dtype=_torch.float32, context=None, seed=None,
                 **options):
        super().__init__()
        self._create(_layers.Linear, (in_features, out_features), dtype, context, seed, dict(options, bias=bias))

    _layer_options = _Module._layer_options + ("bias",)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={'bias' in self._storage}, " \
               f"dtype={self.dtype}"


class LayerNormLinear(_Module):
    """LayerNorm (or RMSNorm, norm="rmsnorm") over the last dimension, then
    Linear: parameters "norm_weight", "norm_bias" (LayerNorm only), "weight",
    "bias". eps: the norm's epsilon (None: Octet's 1e-5). Other keywords as
    Linear's."""

    def __init__(self, in_features, out_features, bias=True, *, norm="layernorm", eps=None, dtype=_torch.float32,
                 context=None, seed=None, **options):
        super().__init__()
        self._create(_layers.LayerNormLinear, (in_features, out_features), dtype, context, seed,
                     dict(options, bias=bias, norm=norm, epsilon=eps))

    _layer_options = _Module._layer_options + ("bias", "norm", "epsilon")

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype={self.dtype}"


class LayerNormMLP(_Module):
    """norm, FC1 (hidden -> ffn, 2 ffn for SwiGLU), activation ("gelu", tanh
    form, or "swiglu"), FC2 (ffn -> hidden): parameters "norm_weight",
    "norm_bias" (LayerNorm only), "fc1_weight", "fc1_bias", "fc2_weight",
    "fc2_bias". Other keywords as LayerNormLinear's."""

    def __init__(self, hidden_size, ffn_hidden_size, bias=True, *, norm="layernorm", eps=None, activation="gelu",
                 dtype=_torch.float32, context=None, seed=None, **options):
        super().__init__()
        self._create(_layers.LayerNormMLP, (hidden_size, ffn_hidden_size), dtype, context, seed,
                     dict(options, bias=bias, norm=norm, epsilon=eps, activation=activation))

    _layer_options = _Module._layer_options + ("bias", "norm", "epsilon", "activation")

    def extra_repr(self):
        return f"hidden_size={self.in_features}, ffn_hidden_size={self.ffn_features}, dtype={self.dtype}"

