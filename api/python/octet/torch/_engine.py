"""The Octet layer behind an octet.torch module, for one context and one
parameter dtype.

The module's torch Parameters are ordinary torch tensors. The layer is
made with skip_weight_allocation: each weight matrix is lent to it
(octet_layer_set_weight over the Parameter's memory, through DLPack, no
copy) when the Parameter's dtype is the layer's (FP32 or BF16); other
dtypes are converted at each forward. The small parameters (biases,
norm weights) are copied into the layer's own memory at each forward."""

import torch
import torch.optim.optimizer as _optim

from .. import layers as _layers
from .._core import BF16, FP32
from ..autocast import autocast_state
from ._fsdp import GatheredWeight, ShardedWeight

_KINDS = {"Linear": _layers.Linear, "LayerNormLinear": _layers.LayerNormLinear,
          "LayerNormMLP": _layers.LayerNormMLP, "GroupedLinear": _layers.GroupedLinear}
ROLES = ("input", "weight", "gradient")


# Optimizer steps taken in this process (any torch.optim optimizer): a
# weight cache quantizes again after each. The version counter alone cannot
# say so under FSDP2, whose all-gather writes the stepped values into the
# gathered weight keeping its version counter (and, often, its address).
_optimizer_steps = [0]


def _count_step(optimizer, args, kwargs):
    _optimizer_steps[0] += 1


_optim.register_optimizer_step_post_hook(_count_step)


def engine_dtype(dtype):
    """The layer's parameter dtype for Parameters of `dtype`: BF16 for
    bfloat16, FP32 for every other floating dtype (float64 and float16
    Parameters are converted)."""
    return torch.bfloat16 if dtype == torch.bfloat16 else torch.float32


def is_weight(name):
    """A weight matrix: "weight", "fc1_weight", a GroupedLinear's "weight3"."""
    return name.rstrip("0123456789").endswith("weight") and not name.startswith("norm_")


def linear_count(kind, args):
    """The linears whose quantizers a layer has: FC1 and FC2, one per
    expert of a GroupedLinear (args[0]), else one."""
    return {"LayerNormMLP": 2, "GroupedLinear": int(args[0]) if args else 1}.get(kind, 1)


class Engine:
    def __init__(self, kind, args, options, context, dtype):
        self.context = context
        self.dtype = dtype
        self.layer = _KINDS[kind](context, *args, params_dtype=BF16 if dtype == torch.bfloat16 else FP32,
                                  skip_weight_allocation=True, seed=0, **options)
        self.names = self.layer.parameter_names
        self.linear_count = linear_count(kind, args)
        info = context.info()
        self.device = "cpu" if info["memory"] == "host" else "cuda"
        # what Octet needs of memory it did not allocate: the element size and this
        self.alignment = max(int(info["caller_alignment"]), torch.tensor([], dtype=dtype).element_size())
        self.weight_cache = bool(options.get("weight_cache"))
        self._steps_seen = _optimizer_steps[0]
        with torch.inference_mode(False):  # views written to outside inference mode too
            self._views = {n: torch.from_dlpack(self.layer.parameter(n)) for n in self.names if not is_weight(n)}
        self._synced = {}  # weight name -> (identity, tensor lent, version at the last forward)

    # -- parameters ---------------------------------------------------------

    def _ready(self, t):
        """t as the layer reads it in place: its dtype, contiguous, aligned."""
        if t.dtype != self.dtype:
            t = t.to(self.dtype)
        if not t.is_contiguous():
            t = t.contiguous()
        if t.data_ptr() % self.alignment:
            t = t.clone()
        return t

    def sync(self, params):
        """Before each forward: lends the weights whose memory changed
        (another tensor, or a dtype the layer converts: again each time) and
        copies the other parameters (a few vectors; a write through .data
        bumps no version counter, so they are copied every time). With the
        weight cache, a weight whose version counter moved, or any optimizer
        step since the last forward, makes the layer quantize it again."""
        requantize = False
        for name, p in zip(self.names, params):
            if isinstance(p, GatheredWeight):  # FP8 codes FSDP2 gathered: the layer's FP8 weight as it is
                self.layer.set_weight(name, p.octet_tensor(self.context))
                self._synced.pop(name, None)
                continue
            p = p.detach()
            if not is_weight(name):
                self._views[name].copy_(p)
                continue
            identity = (p.data_ptr(), tuple(p.shape), p.dtype, p.stride())
            held = self._synced.get(name)
            native = p.dtype == self.dtype and p.is_contiguous() and p.data_ptr() % self.alignment == 0
            if held is None or held[0] != identity or not native:
                src = self._ready(p)
                self.layer.set_weight(name, self.context.from_dlpack(src))
                requantize = True
                held = (identity, src, None)  # src: kept alive while lent (a converted copy)
            if held[2] != p._version:
                requantize = True
            self._synced[name] = (held[0], held[1], p._version)
        if _optimizer_steps[0] != self._steps_seen:
            self._steps_seen = _optimizer_steps[0]
            requantize = True
        if requantize and self.weight_cache:
            self.layer.new_step()

    # -- forward and backward -------------------------------------------------

    def relend_moved(self, saved, params, memory):
        """Before a backward: each weight whose memory moved since the forward
        (memory: _memory_of at the forward; None: nothing to check) is lent to
        `saved` where it is now (octet_layer_set_saved_weight). Returns the
        octet Tensors lent, to close after the backward."""
        lent = []
        for name, p, m in zip(self.names, params, memory or ()):
            if m is None or not is_weight(name) or isinstance(p, GatheredWeight):
                continue
            if m[0].data_ptr() == m[1] and m[0].untyped_storage().nbytes() == m[2]:
                continue
            p = (p._data if isinstance(p, ShardedWeight) else p).detach()
            if p.untyped_storage().nbytes() < (p.storage_offset() + p.numel()) * p.element_size():
                raise RuntimeError(f"octet.torch: the weight {name!r} a forward read was freed and not gathered "
                                   "again before its backward")
            t = self.context.from_dlpack(self._ready(p))
            try:
                self.layer.set_saved_weight(saved, name, t)
            except BaseException:
                t.close()
                raise
            lent.append(t)
        return lent


    def recipe(self):
        """The recipe in effect for the layer: its own, else the innermost
        open scope's of its context (None: high precision)."""
        if self.layer.recipe is not None:
            return self.layer.recipe
        return autocast_state(self.context)[1]

    def _empty(self, shape):
        """(torch tensor, octet Tensor) over one new buffer of the layer's
        dtype in Octet's memory, which torch frees through DLPack: Octet
        keeps freed host buffers of 2 MiB or more for reuse (docs/abi.md),
        so an output does not pay its page faults at every step."""
        t = self.context.empty(shape, BF16 if self.dtype == torch.bfloat16 else FP32)
        return torch.from_dlpack(t), t

    def forward(self, x, training, splits=None):
        """(y, saved, x as read): y in the layer's dtype. splits: a
        GroupedLinear's rows per expert (a sequence of ints)."""
        x = self._ready(x)
        y, yt = self._empty(tuple(x.shape[:-1]) + (self.layer.out_features,))
        xt = self.context.from_dlpack(x.detach())
        try:
            if splits is None:
                result = self.layer.forward(xt, training=training, out=yt)
            else:
                result = self.layer.forward(xt, splits, training=training, out=yt)
        finally:
            xt.close()  # a saved handle that still reads x keeps it (Tensor.close waits for it)
            yt.close()
        return y, (result[1] if training else None), x

    def backward(self, saved, dy, input_shape, need_input, need_params):
        """(dx or None, [gradient or None per parameter]) in the layer's dtype."""
        dy = self._ready(dy)
        dyt = self.context.from_dlpack(dy)
        dx, dxt = self._empty(input_shape) if need_input else (None, None)
        try:
            self.layer.backward(saved, dyt, grad_input=dxt if dxt is not None else False)
        finally:
            dyt.close()
            if dxt is not None:
                dxt.close()
        grads = [torch.from_dlpack(self.layer.gradient(name)).clone() if need else None  # buffers are reused
                 for name, need in zip(self.names, need_params)]
        return dx, grads

    # -- quantizer state --------------------------------------------------------

    def quantizer_keys(self):
        return [(linear, role) for linear in range(self.linear_count) for role in ROLES]

    def save_quantizers(self):
        """{"linear.role": octet_quantizer_save bytes} of the quantizers used
        so far (one never used holds no recipe state and is left out)."""
        out = {}
        for linear, role in self.quantizer_keys():
            q = self.layer.quantizer(role, linear)
            if q.info().recipe_kind is not None:
                out[f"{linear}.{role}"] = q.save()
        return out

    def load_quantizers(self, state):
        for key, data in state.items():
            linear, role = key.split(".")
            self.layer.quantizer(role, int(linear)).load(bytes(data))
