"""Routing tokens to experts for a mixture-of-experts block
(docs/grouped_linear.md): the rows of a GroupedLinear's input sorted by
expert, with the splits, and the way back.

Each function takes NumPy arrays or torch tensors (then it runs torch
operations, which autograd differentiates: permute's gradient is
unpermute's, and back).

    order, splits = octet.moe.sort_by_expert(expert_index, num_experts)
    xs = octet.moe.permute(x, order, top_k)            # [tokens * k, hidden]
    ys = experts.forward(xs, splits)                   # a GroupedLinear, or several
    y = octet.moe.unpermute(ys, order, top_k, probs)   # [tokens, hidden]
"""

import numpy as _np


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def _index_array(expert_index):
    if _is_torch(expert_index):
        if expert_index.is_floating_point() or expert_index.is_complex() or expert_index.dtype == __import__(
                "torch").bool:
            raise TypeError(f"expert_index must hold integers; got {expert_index.dtype}")
        return expert_index.detach().cpu().numpy()
    a = _np.asarray(expert_index)
    if a.dtype.kind not in "iu":
        raise TypeError(f"expert_index must hold integers; got {a.dtype}")
    return a


def sort_by_expert(expert_index, num_experts):
    """(order, splits) for expert_index [tokens, k] (each token's k chosen
    experts; [tokens] for k = 1): order [tokens * k] lists the flat slots
    t * k + j sorted by expert, stably (tokens in their order within an
    expert), and splits [num_experts] counts each expert's rows. Every index
    must be in [0, num_experts). order and splits are int64 arrays (torch
    tensors, on expert_index's device, for a torch input)."""
    if isinstance(num_experts, bool) or not isinstance(num_experts, (int, _np.integer)) or num_experts < 1:
        raise ValueError(f"num_experts must be a positive int; got {num_experts!r}")
    index = _index_array(expert_index)
    if index.ndim not in (1, 2):
        raise ValueError(f"expert_index must be [tokens] or [tokens, k]; got shape {list(index.shape)}")
    flat = index.reshape(-1).astype(_np.int64)
    if flat.size and (flat.min() < 0 or flat.max() >= num_experts):
        bad = flat[(flat < 0) | (flat >= num_experts)][0]
        raise ValueError(f"expert_index holds {int(bad)}, outside [0, {num_experts}) (num_experts)")
    order = _np.argsort(flat, kind="stable").astype(_np.int64)
    splits = _np.bincount(flat, minlength=int(num_experts)).astype(_np.int64)
    if _is_torch(expert_index):
        import torch
        return (torch.from_numpy(order).to(expert_index.device), torch.from_numpy(splits))
    return order, splits


def _check_order(order, rows, what):
    n = order.shape[0] if len(order.shape) else -1
    if len(order.shape) != 1 or n != rows:
        raise ValueError(f"order must be the [{rows}] array sort_by_expert returned for {what}; got shape "
                         f"{list(order.shape)}")


def _top_k(top_k):
    if isinstance(top_k, bool) or not isinstance(top_k, (int, _np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be a positive int; got {top_k!r}")
    return int(top_k)


def permute(x, order, top_k=1):
    """The rows of x [tokens, hidden] copied into expert order: row i is
    token order[i] // top_k (a token chosen by k experts appears k times)."""
    k = _top_k(top_k)
    if len(x.shape) != 2:
        raise ValueError(f"x must be [tokens, hidden]; got shape {list(x.shape)}")
    _check_order(order, x.shape[0] * k, f"{x.shape[0]} tokens with top_k = {k}")
    if _is_torch(x):
        import torch
        return torch.index_select(x, 0, torch.div(order.to(x.device), k, rounding_mode="floor"))
    return _np.asarray(x)[_np.asarray(order) // k]


def unpermute(y, order, top_k=1, probs=None):
    """The inverse of permute, combining each token's k expert outputs: out
    [tokens, hidden] with out[t] = sum_j probs[t, j] * y[i] over the rows i
    with order[i] = t * top_k + j (probs None: weight 1)."""
    k = _top_k(top_k)
    if len(y.shape) != 2 or y.shape[0] % k:
        raise ValueError(f"y must be [tokens * top_k, hidden]; got shape {list(y.shape)} with top_k = {k}")
    tokens = y.shape[0] // k
    _check_order(order, y.shape[0], f"{tokens} tokens with top_k = {k}")
    if probs is not None and tuple(probs.shape) not in ((tokens, k), (tokens * k,)) and not (k == 1 and tuple(
            probs.shape) == (tokens,)):
        raise ValueError(f"probs must be [tokens, top_k] = [{tokens}, {k}]; got shape {list(probs.shape)}")
    if _is_torch(y):
        import torch
        order = order.to(y.device)
        rows = y if probs is None else y * probs.reshape(-1).to(y.dtype).index_select(0, order).unsqueeze(1)
        out = y.new_zeros((tokens, y.shape[1]))
        return out.index_add(0, torch.div(order, k, rounding_mode="floor"), rows)
    y = _np.asarray(y)
    order = _np.asarray(order)
    rows = y if probs is None else y * _np.asarray(probs).reshape(-1)[order][:, None].astype(y.dtype)
    out = _np.zeros((tokens, y.shape[1]), dtype=y.dtype)
    _np.add.at(out, order // k, rows)
    return out
