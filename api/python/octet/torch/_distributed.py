"""Amax reductions over a torch.distributed process group: the context's
communicator (docs/distributed.md) as torch.distributed.all_reduce(MAX)."""

import torch
import torch.distributed as dist

_attached = {}  # id(context) -> (context, group) whose communicator this module set


def attach(context, group):
    """Sets context's communicator to an all-reduce (MAX) over `group`
    (None or torch.distributed.group.WORLD: the default group), unless this
    group's is already set. The values go through a float32 CPU tensor, as
    gloo reduces them; a backend whose group needs device tensors (nccl)
    gets a copy on the current CUDA device."""
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("octet.torch.autocast(group=...): torch.distributed is not initialized "
                           "(torch.distributed.init_process_group first)")
    if group is not None and not isinstance(group, dist.ProcessGroup):
        raise TypeError(f"group must be a torch.distributed.ProcessGroup or None; got {type(group).__name__}")
    key = id(context)
    held = _attached.get(key)
    if held is not None and held[0] is context and held[1] is group:
        return
    on_cuda = dist.get_backend(group) == "nccl"

    def allreduce_max(values):
        t = torch.from_numpy(values)  # shares the library's buffer
        if on_cuda:
            d = t.to(torch.device("cuda", torch.cuda.current_device()))
            dist.all_reduce(d, op=dist.ReduceOp.MAX, group=group)
            t.copy_(d.cpu())
        else:
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
        return None

    context.set_communicator(allreduce_max)
    _attached[key] = (context, group)


def detach(context):
    """Removes the communicator attach() set on context (another one is left)."""
    held = _attached.pop(id(context), None)
    if held is not None and held[0] is context:
        context.set_communicator(None)

