"""octet.torch past one process, over torch.distributed's gloo backend on
this CPU: DDP with 2 and 4 processes and FSDP2 (fully_shard) with 2,
and FSDP2 with the FP8 all-gather of weights, against one process
training on the whole batch (distributed_worker.py).

What must hold: with octet.torch.autocast(recipe, group=WORLD) every rank
holds the same scales after every step (the amaxes are all-reduced), and
these are the single process's: at the first step exactly (the input and
weight scales; the gradient scales divided by the world size: each rank's
mean loss covers 1/world of the batch, so its gradients are world times
larger, a power of two), later within the few FP32 ulps by which the
weights then differ. The parameters equal the single process's up to the
reordered FP32 sums of the weight gradients."""

import pathlib
import socket
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.fail("this torch has no torch.distributed", pytrace=False)

WORKER = pathlib.Path(__file__).with_name("distributed_worker.py")


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(mode, world, tmp_path, timeout=300):
    """Each rank's {recipe: {"params", "scales", ...}}. A rank that fails
    stops the others (they would wait on it until gloo's timeout); the
    failure shows every rank's exit code and output."""
    out = tmp_path / f"{mode}-{world}"
    port = _port()
    logs = [tmp_path / f"{mode}-{world}.log.{rank}" for rank in range(world)]
    procs = []
    for rank in range(world):
        with open(logs[rank], "w") as log:
            procs.append(subprocess.Popen([sys.executable, str(WORKER), mode, str(world), str(rank), str(port),
                                           str(out)], stdout=log, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in procs):
        failed = any(p.poll() not in (None, 0) for p in procs)
        if failed or time.monotonic() > deadline:
            time.sleep(2 if failed else 0)  # the others' last words
            for p in procs:
                if p.poll() is None:
                    p.kill()
            break
        time.sleep(0.05)
    codes = [p.wait() for p in procs]
    if any(codes):
        report = "\n".join(f"--- rank {rank}: exit code {code}\n{logs[rank].read_text()}"
                           for rank, code in enumerate(codes))
        pytest.fail(f"{mode} with {world} processes failed:\n{report}", pytrace=False)
    return [torch.load(f"{out}.{rank}", weights_only=True) for rank in range(world)]


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    return _run("single", 1, tmp_path_factory.mktemp("single"))[0]


def _check_against_single(ranks, single, world, roles=("input", "weight", "gradient")):
    for r in ranks[1:]:  # every rank holds the same scales and parameters
        assert r["scales"] == ranks[0]["scales"]
        assert all(torch.equal(a, b) for a, b in zip(r["params"], ranks[0]["params"]))
    for step, (got, want) in enumerate(zip(ranks[0]["scales"], single["scales"])):
        for i, (g, w) in enumerate(zip(got, want)):
            role = ("input", "weight", "gradient")[i % 3]
            if role not in roles:
                continue
            expected = w / world if role == "gradient" else w
            # Step 0 sees the same values; later steps' weights (and so what
            # they produce) differ by the reordered sums, a few FP32 ulps.
            tolerance = 0 if step == 0 else 1e-4 * expected
            assert abs(g - expected) <= tolerance, f"step {step} module {i // 3} {role}: scale {g}, single process {w}"
    for a, b in zip(ranks[0]["params"], single["params"]):
        assert (a - b).abs().max() <= 1e-5 * max(1.0, b.abs().max().item())


@pytest.mark.parametrize("world", [2, 4])
def test_ddp_matches_one_process_on_the_whole_batch(world, single, tmp_path):
    ranks = _run("ddp", world, tmp_path)
    for recipe in ("delayed", "current"):
        _check_against_single([r[recipe] for r in ranks], single[recipe], world)
    solo = [r["delayed"]["solo_scales"] for r in ranks]  # without the group: each rank's own amaxes
    assert solo[0][0] != solo[1][0]


def test_fsdp2_fully_shard_matches_one_process(single, tmp_path):
    """fully_shard of each octet module and the root, high-precision
    all-gather; then with octet.torch.enable_fp8_all_gather: FSDP2 gathers
    uint8 FP8 codes (one byte per element) and the layers run on them. The
    weight is encoded with the scale of the whole weight's amax, the one the
    single process's own current-scaling weight quantize takes, so the
    results match it too (the weight quantizers go unused: their scales are
    not compared)."""
    ranks = _run("fsdp", 2, tmp_path)
    for recipe in ("delayed", "current"):
        assert not ranks[0][recipe]["gathers"]
        _check_against_single([r[recipe] for r in ranks], single[recipe], 2)
    for r in ranks:
        assert r["fp8_all_gather"]["gathers"] and set(r["fp8_all_gather"]["gathers"]) == {"torch.uint8"}
    _check_against_single([r["fp8_all_gather"] for r in ranks], single["fp8_all_gather"], 2,
                          roles=("input", "gradient"))
