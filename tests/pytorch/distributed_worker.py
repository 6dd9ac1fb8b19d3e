"""One process of test_distributed.py's runs: trains a small model of
octet.torch modules on its share of a fixed global batch and writes what
the test compares (parameters, the quantizers' scales) to a file.

    python distributed_worker.py MODE WORLD RANK PORT OUT
    MODE: single (the whole batch, no process group), ddp, fsdp

Each run trains fresh models under delayed scaling, then under current
scaling, and (single, fsdp) as "fp8_all_gather": the modules with their
own current-scaling recipe, under fsdp with octet.torch.enable_fp8_all_gather.

It writes {run: {"params", "scales", "gathers"[, "solo_scales"]}}.
"""

import datetime
import sys

import torch
import torch.distributed as dist

import octet
import octet.torch as ot

STEPS, BATCH = 3, 16


def model(own_recipe=None):
    torch.manual_seed(0)
    return ot.convert(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)),
                      recipe=own_recipe)


def recipe(name):
    if name == "delayed":
        return octet.DelayedScaling(amax_history_len=4)
    return octet.CurrentScaling(reduce_amax=True)


def scales(net):
    """[input, weight, gradient scale of each octet module, in order]."""
    out = []
    for m in net.modules():
        if isinstance(m, ot.Linear):
            layer = m.octet_layer
            out += [layer.quantizer(role).info().scale for role in ("input", "weight", "gradient")]
    return out


def data():
    g = torch.Generator().manual_seed(1)
    return torch.randn(STEPS, BATCH, 16, generator=g), torch.randn(STEPS, BATCH, 8, generator=g)


def train(mode, run, world, rank):
    fp8_gather = run == "fp8_all_gather"
    recipe_name = "current" if fp8_gather else run
    net = model(recipe(recipe_name) if fp8_gather else None)
    gathers = []
    if mode == "fsdp" and fp8_gather:
        assert ot.enable_fp8_all_gather(net) == 2
        from octet.torch._fsdp import ShardedWeight
        hook = ShardedWeight.fsdp_pre_all_gather

        def counted(self, mesh, outer_size, outer_stride, module, mp_policy):  # what FSDP2 all-gathers
            inputs, metadata = hook(self, mesh, outer_size, outer_stride, module, mp_policy)
            gathers.append(str(inputs[0].dtype))
            return inputs, metadata
        ShardedWeight.fsdp_pre_all_gather = counted
    if mode == "ddp":
        wrapped = torch.nn.parallel.DistributedDataParallel(net)
    elif mode == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("cpu", (world,))
        for m in net:
            if isinstance(m, ot.Linear):
                fully_shard(m, mesh=mesh)
        wrapped = fully_shard(net, mesh=mesh)
    else:
        wrapped = net
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.1)
    xs, ts = data()
    share = BATCH // world
    rows = slice(rank * share, (rank + 1) * share)
    group = dist.group.WORLD if mode != "single" else None
    r = recipe(recipe_name)
    step_scales = []
    for step in range(STEPS):
        opt.zero_grad()
        with ot.autocast(r, group=group):
            loss = torch.nn.functional.mse_loss(wrapped(xs[step][rows]), ts[step][rows])
            loss.backward()
        opt.step()
        step_scales.append(scales(net))
    if mode == "fsdp":
        params = [_plain(p.full_tensor()).detach() for p in net.parameters()]
    else:
        params = [p.detach() for p in net.parameters()]
    result = {"params": params, "scales": step_scales, "gathers": gathers}
    if mode != "single":
        ot.release_process_group()
    if mode == "ddp" and recipe_name == "delayed":
        # The same step without the group: each rank's own amaxes, so the
        # input scales differ between ranks (the reduction above is real).
        solo = model()
        with ot.autocast(recipe(recipe_name)):
            torch.nn.functional.mse_loss(solo(xs[0][rows]), ts[0][rows]).backward()
        result["solo_scales"] = scales(solo)
    return result


def _plain(t):
    """The high-precision data of a weight enable_fp8_all_gather wrapped."""
    return t._data if hasattr(t, "_data") else t


def main(mode, world, rank, port, out):
    if mode != "single":
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=120))
    runs = ("delayed", "current") + (("fp8_all_gather",) if mode != "ddp" else ())
    result = {run: train(mode, run, world, rank) for run in runs}
    torch.save(result, f"{out}.{rank}")
    if mode != "single":
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    mode, world, rank, port, out = sys.argv[1:6]
    main(mode, int(world), int(rank), int(port), out)
