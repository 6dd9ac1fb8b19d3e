"""octet.torch.autocast: an Octet autocast scope for the octet.torch modules."""

from .._core import Context
from ..autocast import Autocast
from ..recipes import CurrentScaling, Recipe
from . import _defaults


class autocast:
    """`with octet.torch.autocast(recipe):` runs the octet.torch modules of
    `context` (default: octet.torch.default_context()) in FP8 under `recipe`
    (an octet Recipe: DelayedScaling, CurrentScaling, ...): an Octet
    autocast scope (docs/recipes.md) on that context. Scopes nest; the end
    of the outermost one updates the delayed-scaling scales of the
    quantizers used inside it. Put the backward inside the block too, so the
    gradient quantizers' amaxes are part of that update (a backward after
    the block still runs in FP8, with the forward's recipe, and its amaxes
    count at the next block's end). Outside any block the modules compute in
    high precision, unless they were given their own recipe=.

    group: a torch.distributed process group (None here: no reduction; pass
    torch.distributed.group.WORLD for the default group). Every rank then
    holds the same scales: the context all-reduces (MAX) the amaxes over the
    group, delayed scaling once at the end of the outermost block, current
    scaling before each quantize (the recipe needs reduce_amax=True, else
    ValueError). Every rank must run the same modules in the same order.
    The context keeps reducing over that group after the block (a backward
    outside it included) until octet.torch.autocast opens it with another
    group or octet.torch.release_process_group(context) is called."""

    def __init__(self, recipe, *, context=None, group=None):
        if not isinstance(recipe, Recipe):
            raise TypeError(f"octet.torch.autocast needs an octet Recipe (octet.DelayedScaling(), ...); "
                            f"got {type(recipe).__name__}")
        if context is not None and not isinstance(context, Context):
            raise TypeError(f"context must be an octet.Context or None; got {type(context).__name__}")
        if group is not None and isinstance(recipe, CurrentScaling) and not recipe.options().get("reduce_amax"):
            raise ValueError("octet.torch.autocast(group=...) with current scaling needs a recipe that reduces each "
                             "quantize's amax: octet.CurrentScaling(reduce_amax=True, ...)")
        if group is not None and not recipe.options().get("reduce_amax", True):
            raise ValueError(f"octet.torch.autocast(group=...): the recipe {recipe!r} has reduce_amax=False, so its "
                             "amaxes would stay per rank: create it with reduce_amax=True")
        self.recipe = recipe
        self.context = context
        self.group = group
        self._scope = None

    def __enter__(self):
        if self._scope is not None:
            raise ValueError("this octet.torch.autocast block is already open")
        context = self.context or _defaults.default_context()
        if self.group is not None:
            from . import _distributed  # torch.distributed only where a group is used
            _distributed.attach(context, self.group)
        scope = Autocast(context, self.recipe)
        scope.begin()
        self._scope = scope
        _defaults.open_contexts().append(scope.context)
        return self

    def __exit__(self, exc_type, exc, tb):
        scope, self._scope = self._scope, None
        _defaults.open_contexts().pop()
        return scope.__exit__(exc_type, exc, tb)


def release_process_group(context=None):
    """Stops the amax reductions an octet.torch.autocast(group=...) set up
    on context (default: default_context())."""
    from . import _distributed
    _distributed.detach(context or _defaults.default_context())
