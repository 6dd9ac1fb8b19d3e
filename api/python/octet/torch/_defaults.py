"""The context octet.torch modules run on when they were given none, and the
stack of open octet.torch.autocast blocks."""

import os
import threading

from .._core import Context, backends
from .._errors import OctetError

_LAYER_FEATURES = (1 << 11) | (1 << 12) | (1 << 13) | (1 << 14)  # NORM, ACTIVATION, BIAS_GRADIENT, ACCUMULATE
ENVIRONMENT_VARIABLE = "OCTET_TORCH_BACKEND"

_lock = threading.Lock()
_default = None
_scopes = threading.local()  # .contexts: the contexts of the open blocks, innermost last


def _automatic_backend():
    names = [b["name"] for b in backends()
             if b["available"] and b["memory"] == "host" and b["features"] & _LAYER_FEATURES == _LAYER_FEATURES]
    plugins = [n for n in names if n != "reference"]
    return plugins[0] if plugins else "reference"


def default_context():
    """The context of every module made without context=, created on first
    use and shared by the process (a context is used by one thread at a
    time, docs/abi.md): the backend set_default_backend() chose, else the
    one named by the environment variable OCTET_TORCH_BACKEND, else the
    first available host backend that has every layer kernel (norm,
    activation, bias gradient, accumulate; the cpu backend where it is
    built), else the reference."""
    global _default
    with _lock:
        if _default is None:
            name = os.environ.get(ENVIRONMENT_VARIABLE) or _automatic_backend()
            try:
                _default = Context(name)
            except OctetError as e:
                origin = f"{ENVIRONMENT_VARIABLE}={name!r}" if os.environ.get(ENVIRONMENT_VARIABLE) else repr(name)
                raise OctetError(e.status, f"octet.torch: cannot open the default backend {origin}: {e}") from e
        return _default


def set_default_backend(backend):
    """Sets the context of every module made without context= (from their
    next forward on; their quantizer state moves along) and of
    octet.torch.autocast blocks opened without context=. backend: a backend
    name ("cpu", "reference", ...: a new Context), an octet.Context, or None
    (back to the choice default_context() describes). Returns the context
    (None for None)."""
    global _default
    if backend is not None and not isinstance(backend, (str, Context)):
        raise TypeError(f"backend must be a backend name, an octet.Context or None; got {type(backend).__name__}")
    context = Context(backend) if isinstance(backend, str) else backend
    with _lock:
        _default = context
    return context


def open_contexts():
    contexts = getattr(_scopes, "contexts", None)
    if contexts is None:
        contexts = _scopes.contexts = []
    return contexts
