"""Autocast scopes and the communicator (docs/recipes.md).

    with ctx.autocast(octet.DelayedScaling()):
        y = layer.forward(x)          # quantizers without a recipe use the scope's
    # the end of the outermost scope all-reduces the amaxes (communicator)
    # and updates every delayed-scaling scale used inside it

    ctx.set_communicator(lambda values: comm.Allreduce(MPI.IN_PLACE, values, op=MPI.MAX))
"""

import ctypes as _c

import numpy as _np

from . import _lib
from ._context import ContextBase
from ._errors import _callback_failed, _check
from ._lib import lib as _libc
from .recipes import Recipe


class Autocast:
    """An autocast scope of a context, used as a `with` block (or through
    begin()/end()). Scopes nest; the end of the outermost one applies the
    delayed-scaling updates. If the body raised, the scope is still ended
    and the body's exception propagates (an error of the end is then
    attached to it as a note); otherwise an error of the end raises
    OctetError."""

    def __init__(self, ctx, recipe):
        if not isinstance(ctx, ContextBase):
            raise TypeError(f"ctx must be an octet Context; got {type(ctx).__name__}")
        if not isinstance(recipe, Recipe):
            raise TypeError(f"autocast needs an octet Recipe; got {type(recipe).__name__}")
        self.context = ctx
        self.recipe = recipe
        self._open = False

    def begin(self):
        if self._open:
            raise ValueError("this autocast scope is already open")
        ctx = self.context
        _check(_libc.octet_autocast_begin(ctx.handle, self.recipe.handle))
        ctx._enter_scope(self.recipe)
        self._open = True
        return self

    def end(self):
        if not self._open:
            raise ValueError("this autocast scope is not open")
        self._open = False
        self.context._leave_scope()  # the end closes the innermost scope, even when it fails
        _check(_libc.octet_autocast_end(self.context.handle))

    def __enter__(self):
        return self.begin()

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            self.end()
            return False
        try:
            self.end()
        except Exception as end_error:  # keep the body's exception
            if hasattr(exc, "add_note"):
                exc.add_note(f"ending the autocast scope also failed: {end_error}")
        return False


def autocast(ctx, recipe):
    """`with octet.autocast(ctx, recipe):` is `with ctx.autocast(recipe):`."""
    return Autocast(ctx, recipe)


def autocast_state(ctx):
    """(depth, recipe in effect) of the context: (0, None) outside scopes.
    The recipe is the Python Recipe given to the innermost scope."""
    depth, recipe = _c.c_int32(), _c.c_void_p()
    _check(_libc.octet_autocast_get_state(ctx.handle, _c.byref(depth), _c.byref(recipe)))
    return depth.value, ctx._innermost_scope_recipe(depth.value) if recipe.value else None


def _allreduce_thunk(fn):
    def thunk(values, count, user_data):
        try:
            view = _np.ctypeslib.as_array(values, shape=(count,)) if count else _np.zeros(0, _np.float32)
            result = fn(view)
            if result is not None and result is not view:
                result = _np.asarray(result, dtype=_np.float32)
                if result.shape != (count,):
                    raise ValueError(f"the communicator returned shape {result.shape}, expected ({count},)")
                view[...] = result
            return 0
        except BaseException as exc:  # never across the C frames
            return _callback_failed(exc)

    return _lib.ALLREDUCE_MAX_FN(thunk)


def set_communicator(ctx, allreduce_max):
    """Sets the context's communicator: allreduce_max(values) gets a float32
    NumPy view of the library's buffer and replaces it in place by the
    element-wise maximum over all processes (or returns the result array).
    An exception in it makes the library call that needed it raise
    OctetError (the exception as __cause__), with nothing changed.
    None removes the communicator."""
    if allreduce_max is not None and not callable(allreduce_max):
        raise TypeError(f"the communicator must be callable or None; got {type(allreduce_max).__name__}")
    if allreduce_max is None:
        _check(_libc.octet_context_set_communicator(ctx.handle, None))
        ctx._hold_communicator(None)
        return
    thunk = _allreduce_thunk(allreduce_max)
    comm = _lib.Communicator(struct_size=_c.sizeof(_lib.Communicator), allreduce_max=thunk, user_data=None)
    _check(_libc.octet_context_set_communicator(ctx.handle, _c.byref(comm)))
    # The library copied the struct; the thunk must live while it is set
    # (and while the C context lives: layers keep it, and they keep ctx).
    ctx._hold_communicator((thunk, allreduce_max))
