"""octet.torch.Linear, LayerNormLinear, LayerNormMLP: torch.nn.Modules whose
forward and backward are Octet's layers (docs/pytorch.md)."""

import copy
import itertools
import weakref

import torch

from .. import layers as _layers
from .._core import BF16, FP32, Context
from . import _defaults, _ops
from ._engine import Engine, engine_dtype, linear_count
from ._fsdp import GatheredWeight, ShardedWeight
from ._health import Monitor

_QUANTIZER_METADATA = "octet_quantizers"  # key of the quantizer checkpoints in state_dict()._metadata
_saved_keys = itertools.count(1)
_LAYER_OPTIONS = ("recipe", "save_original_input", "minimize_memory", "weight_cache")


class _Module(torch.nn.Module):
    """Common part of the modules (create one of the subclasses)."""

    _kind = None
    _extra_options = ()

    def _setup(self, args, options, *, dtype, device, context, seed, parameters=None):
        allowed = _LAYER_OPTIONS + self._extra_options
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            raise TypeError(f"unknown option(s) {', '.join(unknown)} for octet.torch.{type(self).__name__}; "
                            f"the options are {', '.join(allowed)} (FP8-only weights and lent weights have no "
                            "torch Parameters)")
        if context is not None and not isinstance(context, Context):
            raise TypeError(f"context must be an octet.Context or None; got {type(context).__name__}")
        if dtype is None:
            dtype = torch.float32
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point or dtype.itemsize < 2:
            raise TypeError(f"dtype must be a floating torch dtype (float32, bfloat16, float16, float64); got {dtype}")
        self._octet_args = tuple(args)
        self._octet_options = dict(options)
        self._octet_context = context
        self._octet_init()
        if parameters is None:
            parameters = self._initial_parameters(seed)
        for name, value in parameters.items():
            if not isinstance(value, torch.nn.Parameter):
                value = torch.nn.Parameter(value.to(dtype))
            self.register_parameter(name, value)
        self._octet_names = tuple(parameters)
        if device is not None:
            self.to(device)

    def _octet_init(self):
        """The state that is not parameters: made anew by construction,
        deepcopy and unpickling."""
        self._octet_key = _ops.register(self)
        self._octet_engine = None
        self._octet_pending = {}  # quantizer checkpoints waiting for the next engine
        self._octet_saved = {}  # token -> (engine, octet Saved)
        self._octet_monitor = Monitor(self._octet_description)

    def _octet_description(self):
        name = getattr(self, "octet_name", None)  # convert() sets the module's name in its model
        where = f" {name!r}" if name else ""
        return f"octet.torch.{type(self).__name__}{where} ({self.in_features} -> {self.out_features})"

    def _initial_parameters(self, seed):
        """torch.nn.Linear's / LayerNorm's initialisation, as octet.layers
        draws it from numpy.random.default_rng(seed), in FP32."""
        layer = _ops_layer_class(self._kind)(self.context, *self._octet_args, params_dtype=FP32,
                                            seed=seed, **self._layer_kwargs())
        try:
            return {name: torch.from_dlpack(layer.parameter(name)).clone() for name in layer.parameter_names}
        finally:
            layer.close()

    def _layer_kwargs(self):
        return {k: v for k, v in self._octet_options.items() if v is not None}

    # -- what runs where ----------------------------------------------------------

    @property
    def context(self):
        """The octet.Context the module runs on: its own (context=), else
        octet.torch.default_context()."""
        return self._octet_context or _defaults.default_context()

    @property
    def dtype(self):
        """The dtype of the weight Parameter (the output's dtype outside torch.autocast)."""
        return self._octet_weight().dtype

    @property
    def octet_layer(self):
        """The octet.layers layer the module runs on now (its quantizers:
        .quantizer(role, linear)); made on first use."""
        return self._engine(self._octet_params()).layer

    def _octet_weight(self):
        return getattr(self, {"LayerNormMLP": "fc1_weight", "GroupedLinear": "weight0"}.get(self._kind, "weight"))

    def _octet_params(self):
        return [getattr(self, name) for name in self._octet_names]

    def _engine(self, params):
        context = self.context
        dtype = engine_dtype(self._octet_weight().dtype)
        engine = self._octet_engine
        if engine is not None and engine.context is context and engine.dtype == dtype:
            return engine
        device = params[0].device.type
        expected = "cpu" if context.info()["memory"] == "host" else "cuda"
        if device != expected:
            raise ValueError(f"octet.torch.{type(self).__name__}: the parameters are on {device}, but the module's "
                             f"context ({context.info()['name']!r}) runs on {expected}: pass context= an octet."
                             f"Context of a backend for {device} (or move the module to {expected})")
        state = engine.save_quantizers() if engine is not None else {}
        state.update(self._octet_pending)
        engine = Engine(self._kind, self._octet_args, self._layer_kwargs(), context, dtype)
        engine.load_quantizers(state)
        self._octet_engine, self._octet_pending = engine, {}
        return engine

    # -- forward and backward -----------------------------------------------------------

    def forward(self, x):
        """y = layer(x) for x [..., in_features] of any floating dtype and
        strides (a copy where Octet cannot read x in place: another dtype
        than the weight's, not contiguous, not 64-byte aligned). The output
        has x's dtype, or torch.autocast's where it is on. FP8 inside
        octet.torch.autocast (or with the module's own recipe=)."""
        name = f"octet.torch.{type(self).__name__}"
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name}: the input must be a torch.Tensor; got {type(x).__name__}")
        if not x.is_floating_point():
            raise TypeError(f"{name}: the input must be a floating tensor; got {x.dtype}")
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"{name}: the input must have shape [..., {self.in_features}]; got {list(x.shape)}")
        params = self._octet_params()
        device = x.device.type
        if device != params[0].device.type:
            raise ValueError(f"{name}: the input is on {x.device}, the parameters on {params[0].device}")
        out_dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype
        if x.numel() == 0:  # nothing to compute; gradients of zeros, as torch.nn.Linear gives
            zero = sum(p.sum() for p in params) * 0 + x.sum() * 0
            return zero.to(out_dtype).expand(tuple(x.shape[:-1]) + (self.out_features,))
        training = torch.is_grad_enabled() and (x.requires_grad or any(p.requires_grad for p in params))
        return torch.ops.octet.layer_forward(self._octet_key, x, params, training, out_dtype)[0]

    def _check_scope(self, engine):
        contexts = _defaults.open_contexts()
        if contexts and engine.context not in contexts and engine.layer.recipe is None:
            raise ValueError(f"octet.torch.{type(self).__name__} runs on another octet Context than the open "
                             "octet.torch.autocast block: pass context=module.context to autocast")

    def _octet_forward(self, x, params, training, out_dtype, splits=None):
        """octet::layer_forward's implementation (octet::grouped_forward's
        with splits): (y, token)."""
        engine = self._engine(params)
        self._check_scope(engine)
        engine.sync(params)
        y, saved, xr = engine.forward(x, training, splits)
        self._watch_forward(engine, xr)
        if y.dtype != out_dtype:
            y = y.to(out_dtype)
        if not training:
            return y, torch.zeros(1, dtype=torch.int64)
        key = next(_saved_keys)
        self._octet_saved[key] = (engine, saved, _memory_of(params))
        token = torch.tensor([key], dtype=torch.int64)
        weakref.finalize(token, _drop_saved, self, key)  # the module lives while a graph holds its token
        return y, token

    def _octet_backward(self, token, dy, x, params, needs, splits=None):
        """octet::layer_backward's implementation (octet::grouped_backward's
        with splits): [dx, *parameter gradients]."""
        engine, saved, memory = self._octet_saved.pop(int(token), (None, None, None))
        # The forward again, from x, where Octet's saved handle cannot serve:
        # retain_graph (the first backward took it).
        if saved is None or saved.consumed:
            if saved is not None:
                saved.close()
            engine = self._engine(params)
            engine.sync(params)
            saved = engine.forward(x, True, splits)[1]
            memory = None
        # A weight whose memory moved since the forward (FSDP frees the
        # gathered weights after the forward and gathers them again for the
        # backward, maybe elsewhere): the saved handle reads it where it is
        # now. Never the forward again: that would update the quantizers
        # twice, and its amax all-reduce would run on the ranks where the
        # address changed only.
        lent = engine.relend_moved(saved, params, memory)
        try:
            self._watch_backward(engine, dy)
            dx, grads = engine.backward(saved, dy, tuple(x.shape), needs[0], needs[1:])
        finally:
            for t in lent:
                t.close()
        out = [dx.to(x.dtype) if dx is not None else x.new_empty((0,))]
        for g, p in zip(grads, params):
            out.append(g.to(p.dtype) if g is not None else p.new_empty((0,)))
        return out


    # -- nothing degrades silently ------------------------------------------------

    def _watch_forward(self, engine, x):
        recipe = None
        weights = {"LayerNormMLP": ("fc1_weight", "fc2_weight"),
                   "GroupedLinear": tuple(f"weight{g}" for g in range(linear_count(self._kind, self._octet_args)))
                   }.get(self._kind, ("weight",))
        for linear, weight in enumerate(weights):
            w = getattr(self, weight)
            roles = [] if isinstance(w, GatheredWeight) else [("weight", w)]  # FP8 already, scaled by its amax
            if self._kind == "Linear":  # the others quantize a norm's or activation's output, not x
                roles.insert(0, ("input", x))
            for role, tensor in roles:
                key = (linear, role)
                if self._octet_monitor.due(key):
                    recipe = recipe or engine.recipe()
                    self._octet_monitor.check(key, tensor, engine.layer.quantizer(role, linear), recipe)

    def _watch_backward(self, engine, dy):
        if self._kind == "GroupedLinear":  # dy's rows belong to several experts' quantizers
            return
        key = (engine.linear_count - 1, "gradient")
        if self._octet_monitor.due(key):
            self._octet_monitor.check(key, dy, engine.layer.quantizer("gradient", key[0]), engine.recipe())

    # -- dtype, device, copies, pickling --------------------------------------------

    _TRANSIENT = ("_octet_engine", "_octet_key", "_octet_saved", "_octet_monitor", "_octet_pending",
                  "_octet_context")

    def _plain_state(self):
        state = {k: v for k, v in self.__dict__.items() if k not in self._TRANSIENT}
        return state, self.quantizer_state()

    def __getstate__(self):
        """Pickling: the Parameters, the options (a recipe by its class and
        options), the quantizer checkpoints and the context's backend name
        (unpickling opens a context on it; None: the default context)."""
        state, quantizers = self._plain_state()
        options = dict(state["_octet_options"])
        if options.get("recipe") is not None:
            options["recipe"] = _recipe_spec(options["recipe"])
        state["_octet_options"] = options
        state["_octet_quantizer_state"] = quantizers
        context = self._octet_context
        state["_octet_context_backend"] = context.info()["name"] if context is not None else None
        return state

    def __setstate__(self, state):
        state = dict(state)
        backend = state.pop("_octet_context_backend", None)
        quantizers = state.pop("_octet_quantizer_state", {})
        options = dict(state["_octet_options"])
        if isinstance(options.get("recipe"), tuple):
            options["recipe"] = _recipe_from_spec(options["recipe"])
        state["_octet_options"] = options
        super().__setstate__(state)
        self._octet_context = Context(backend) if backend is not None else None
        self._octet_init()
        self._octet_pending = dict(quantizers)

    def __deepcopy__(self, memo):
        """A module with copies of the Parameters and of the quantizer state,
        on the same context with the same recipe objects (shared, not
        copied)."""
        state, quantizers = self._plain_state()
        recipe = state["_octet_options"].get("recipe")
        if recipe is not None:
            memo.setdefault(id(recipe), recipe)
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        torch.nn.Module.__setstate__(new, copy.deepcopy(state, memo))
        new._octet_context = self._octet_context
        new._octet_init()
        new._octet_pending = dict(quantizers)
        return new

    # -- checkpoints ---------------------------------------------------------------

    def quantizer_state(self):
        """{"linear.role": octet_quantizer_save bytes} of the quantizers that
        were used (recipes.md, "Checkpoint format")."""
        if self._octet_engine is None:
            return dict(self._octet_pending)
        return {**self._octet_engine.save_quantizers(), **self._octet_pending}

    def load_quantizer_state(self, state):
        """Restores quantizer_state()'s checkpoints (bytes, or uint8
        tensors), now if the module has run, else at its first forward. A
        checkpoint Octet refuses raises OctetError naming the rule."""
        if not isinstance(state, dict):
            raise TypeError(f"the quantizer state must be a dict; got {type(state).__name__}")
        keys = {f"{linear}.{role}" for linear in range(linear_count(self._kind, self._octet_args))
                for role in ("input", "weight", "gradient")}
        unknown = sorted(set(state) - keys)
        if unknown:
            raise ValueError(f"octet.torch.{type(self).__name__}: unknown quantizer(s) {unknown}; this module has "
                             f"{sorted(keys)}")
        data = {k: (v.numpy().tobytes() if isinstance(v, torch.Tensor) else bytes(v)) for k, v in state.items()}
        if self._octet_engine is not None:
            self._octet_engine.load_quantizers(data)
        else:
            self._octet_pending.update(data)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """The Parameters under torch.nn.Linear's names, nothing else, so the
        state_dict loads strictly into torch modules; the quantizer
        checkpoints go into state_dict()._metadata (kept by torch.save and
        load_state_dict, ignored by torch modules)."""
        super()._save_to_state_dict(destination, prefix, keep_vars)
        metadata = getattr(destination, "_metadata", None)
        state = self.quantizer_state()
        if metadata is not None and state:
            metadata.setdefault(prefix[:-1], {})[_QUANTIZER_METADATA] = state

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
        state = (local_metadata or {}).get(_QUANTIZER_METADATA)
        if state:
            self.load_quantizer_state(state)


def _recipe_spec(recipe):
    """A picklable description of a Recipe: (module, class name, options)."""
    if getattr(recipe, "_keepalive", None) and any(f is not None for f in recipe._keepalive):
        raise TypeError(f"octet.torch: a module whose recipe has Python callbacks ({recipe!r}) cannot be pickled; "
                        "save its state_dict() and make the module again")
    return (type(recipe).__module__, type(recipe).__name__, recipe.options())


def _recipe_from_spec(spec):
    import importlib
    module, name, options = spec
    return getattr(importlib.import_module(module), name)(**options)


def _ops_layer_class(kind):
    return {"Linear": _layers.Linear, "LayerNormLinear": _layers.LayerNormLinear,
            "LayerNormMLP": _layers.LayerNormMLP, "GroupedLinear": _layers.GroupedLinear}[kind]


def _memory_of(params):
    """Each parameter's storage as the forward read it: (a tensor on it, its
    address, its size); None for FP8-gathered weights (Octet copied them)."""
    out = []
    for p in params:
        if isinstance(p, GatheredWeight):
            out.append(None)
            continue
        p = (p._data if isinstance(p, ShardedWeight) else p).detach()
        out.append((p, p.data_ptr(), p.untyped_storage().nbytes()))
    return tuple(out)


def _drop_saved(module, key):
    entry = module._octet_saved.pop(key, None)
    if entry is not None:
        entry[1].close()


class Linear(_Module):
    """y = x W^T + b, as torch.nn.Linear (parameters "weight" [out, in] and
    "bias" [out], initialised as torch.nn.Linear's from
    numpy.random.default_rng(seed)). dtype: the parameters' (float32 or
    bfloat16 run in place; float64 and float16 are converted to FP32 for
    Octet); device; context: an octet.Context (default:
    octet.torch.default_context()); further keywords are octet.Linear's
    options (recipe, save_original_input, minimize_memory, weight_cache)."""

    _kind = "Linear"
    _extra_options = ("bias",)

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, *, context=None, seed=None,
                 **options):
        super().__init__()
        parameters = options.pop("_parameters", None)  # octet.torch.convert: the torch.nn.Linear's own
        self.in_features, self.out_features = int(in_features), int(out_features)
        self._setup((in_features, out_features), dict(options, bias=bool(bias)), dtype=dtype, device=device,
                    context=context, seed=seed, parameters=parameters)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={'bias' in self._octet_names}, dtype={self.dtype}")


class LayerNormLinear(_Module):
    """LayerNorm (or RMSNorm, norm="rmsnorm") over the last dimension, then
    Linear: parameters "norm_weight", "norm_bias" (LayerNorm only), "weight",
    "bias". eps: the norm's epsilon (None: Octet's 1e-5). Other keywords as
    Linear's."""

    _kind = "LayerNormLinear"
    _extra_options = ("bias", "norm", "epsilon")

    def __init__(self, in_features, out_features, bias=True, *, norm="layernorm", eps=None, device=None, dtype=None,
                 context=None, seed=None, **options):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self._setup((in_features, out_features), dict(options, bias=bool(bias), norm=norm, epsilon=eps),
                    dtype=dtype, device=device, context=context, seed=seed)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype={self.dtype}"


class LayerNormMLP(_Module):
    """norm, FC1 (hidden -> ffn, 2 ffn for SwiGLU), activation ("gelu", tanh
    form, or "swiglu"), FC2 (ffn -> hidden): parameters "norm_weight",
    "norm_bias" (LayerNorm only), "fc1_weight", "fc1_bias", "fc2_weight",
    "fc2_bias". Other keywords as LayerNormLinear's."""

    _kind = "LayerNormMLP"
    _extra_options = ("bias", "norm", "epsilon", "activation")

    def __init__(self, hidden_size, ffn_hidden_size, bias=True, *, norm="layernorm", eps=None, activation="gelu",
                 device=None, dtype=None, context=None, seed=None, **options):
        super().__init__()
        self.in_features = self.out_features = int(hidden_size)
        self.ffn_features = int(ffn_hidden_size)
        self._setup((hidden_size, ffn_hidden_size),
                    dict(options, bias=bool(bias), norm=norm, epsilon=eps, activation=activation),
                    dtype=dtype, device=device, context=context, seed=seed)

    def extra_repr(self):
        return f"hidden_size={self.in_features}, ffn_hidden_size={self.ffn_features}, dtype={self.dtype}"


class GroupedLinear(_Module):
    """num_groups experts' Linears over one input whose rows are sorted by
    expert (docs/grouped_linear.md): forward(x, splits) sends splits[g] rows,
    in order, through expert g. Parameters "weight0" [out, in], "bias0",
    "weight1", ... (each initialised as a torch.nn.Linear's). shared_quantizers:
    one set of quantizers for every expert (default: each its own). Other
    keywords as Linear's. from_linears(linears) makes one over existing
    torch.nn.Linear experts, holding their very Parameters."""

    _kind = "GroupedLinear"
    _extra_options = ("bias", "shared_quantizers")

    def __init__(self, num_groups, in_features, out_features, bias=True, device=None, dtype=None, *, context=None,
                 seed=None, **options):
        super().__init__()
        parameters = options.pop("_parameters", None)
        self.num_groups = int(num_groups)
        self.in_features, self.out_features = int(in_features), int(out_features)
        self._setup((num_groups, in_features, out_features), dict(options, bias=bool(bias)), dtype=dtype,
                    device=device, context=context, seed=seed, parameters=parameters)

    @classmethod
    def from_linears(cls, linears, *, context=None, **options):
        """A GroupedLinear whose expert g holds linears[g]'s weight and bias
        Parameters (the same objects: an optimizer made before keeps
        working). Every linear must be a torch.nn.Linear of one shape, all
        with a bias or all without."""
        linears = list(linears)
        if not linears or not all(type(m) is torch.nn.Linear for m in linears):
            raise TypeError("from_linears takes a non-empty sequence of torch.nn.Linear modules")
        first = linears[0]
        for g, m in enumerate(linears):
            if (m.in_features, m.out_features, m.bias is None) != (first.in_features, first.out_features,
                                                                    first.bias is None):
                raise ValueError(f"linears[{g}] is {m.in_features} -> {m.out_features} (bias: {m.bias is not None}); "
                                 f"linears[0] is {first.in_features} -> {first.out_features} (bias: "
                                 f"{first.bias is not None}): the experts must agree")
        parameters = {}
        for g, m in enumerate(linears):
            parameters[f"weight{g}"] = m.weight
            if m.bias is not None:
                parameters[f"bias{g}"] = m.bias
        module = cls(len(linears), first.in_features, first.out_features, bias=first.bias is not None,
                     context=context, _parameters=parameters, **options)
        module.train(first.training)
        return module

    def forward(self, x, splits):
        """y = the experts over x [tokens, in_features] (or [..., in]: rows
        are the product of the leading dims), splits[g] rows to expert g
        (a sequence of ints or an integer tensor of num_groups entries
        adding up to the rows)."""
        if isinstance(splits, torch.Tensor):
            if splits.is_floating_point() or splits.dtype == torch.bool:
                raise TypeError(f"splits must hold integers; got {splits.dtype}")
            values = [int(v) for v in splits.detach().cpu().reshape(-1).tolist()]
        else:
            try:
                values = [int(v) for v in splits]
            except (TypeError, ValueError):
                raise TypeError(f"splits must be a sequence of ints; got {type(splits).__name__}") from None
            if any(isinstance(v, float) for v in splits):
                raise TypeError("splits must hold integers")
        if len(values) != self.num_groups:
            raise ValueError(f"octet.torch.GroupedLinear: splits must hold num_groups ({self.num_groups}) row "
                             f"counts; got {len(values)}")
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError("octet.torch.GroupedLinear: the input must be a floating torch.Tensor")
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"octet.torch.GroupedLinear: the input must have shape [..., {self.in_features}]; got "
                             f"{list(x.shape)}")
        rows = x.numel() // self.in_features
        if any(v < 0 for v in values) or sum(values) != rows:
            raise ValueError(f"octet.torch.GroupedLinear: the splits {values} must be >= 0 and add up to the "
                             f"input's {rows} rows")
        params = self._octet_params()
        if x.device.type != params[0].device.type:
            raise ValueError(f"octet.torch.GroupedLinear: the input is on {x.device}, the parameters on "
                             f"{params[0].device}")
        out_dtype = torch.get_autocast_dtype(x.device.type) if torch.is_autocast_enabled(x.device.type) else x.dtype
        if x.numel() == 0:
            zero = sum(p.sum() for p in params) * 0 + x.sum() * 0
            return zero.to(out_dtype).expand(tuple(x.shape[:-1]) + (self.out_features,))
        training = torch.is_grad_enabled() and (x.requires_grad or any(p.requires_grad for p in params))
        split_tensor = torch.tensor(values, dtype=torch.int64)
        return torch.ops.octet.grouped_forward(self._octet_key, x, split_tensor, params, training, out_dtype)[0]

    def extra_repr(self):
        return (f"num_groups={self.num_groups}, in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={'bias0' in self._octet_names}, dtype={self.dtype}")
