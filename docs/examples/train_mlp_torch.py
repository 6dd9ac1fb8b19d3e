"""Trains a small MLP made of octet.torch modules with a torch optimizer,
once in FP32 and once in FP8 (delayed scaling), and prints both losses.

    OCTET_LIBRARY=build/lib/liboctet.so PYTHONPATH=api/python python3 docs/examples/train_mlp_torch.py

The task: regress y = sin(x A) B, a smooth function of 32 inputs, from
random samples. Both runs start from the same parameters (seed=) and see
the same batches; the FP8 run's final loss lands near the FP32 run's.
(tests/pytorch/test_torch_modules.py runs this file.)
"""

import torch

import octet
import octet.torch


def make_model(seed):
    return torch.nn.Sequential(
        octet.torch.LayerNormMLP(32, 64, seed=seed),       # norm, FC1, GELU, FC2
        octet.torch.Linear(32, 8, seed=seed + 1),
    )


def train(recipe, steps=120, batch=32, seed=0):
    data = torch.Generator().manual_seed(seed)
    a = torch.randn(32, 32, generator=data) / 32**0.5
    b = torch.randn(32, 8, generator=data) / 32**0.5
    model = make_model(seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = last = None
    for step in range(steps):
        x = torch.randn(batch, 32, generator=data)
        target = torch.sin(x @ a) @ b
        opt.zero_grad()
        if recipe is None:                                  # FP32: plain GEMMs
            loss = torch.nn.functional.mse_loss(model(x), target)
            loss.backward()
        else:                                               # FP8 GEMMs; the scope's end updates the scales
            with octet.torch.autocast(recipe):
                loss = torch.nn.functional.mse_loss(model(x), target)
                loss.backward()
        opt.step()                                          # in place: the next forward reads the new values
        first = loss.item() if first is None else first
        last = loss.item()
    return first, last


if __name__ == "__main__":
    fp32 = train(None)
    fp8 = train(octet.DelayedScaling(amax_history_len=16))
    print(f"fp32 loss {fp32[0]:.4f} -> {fp32[1]:.4f}")
    print(f"fp8 loss {fp8[0]:.4f} -> {fp8[1]:.4f}")
