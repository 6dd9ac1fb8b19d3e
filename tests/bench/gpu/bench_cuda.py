#!/usr/bin/env python3
"""Octet's cuda backend against PyTorch, in one process, on one CUDA stream.

    python3 tests/bench/gpu/bench_cuda.py [--lib build-gpu/lib/liboctet.so] --out bench.md
    python3 tests/bench/gpu/bench_cuda.py --check          # numerics only (small shapes)
    python3 tests/bench/gpu/bench_cuda.py --quick          # small shapes, fast
    python3 tests/bench/gpu/bench_cuda.py --backend cpu --quick   # host dry run, no GPU
    python3 tests/bench/gpu/bench_cuda.py --profile-op gemm     # for ncu (see .ci/gpu profile)

Octet runs on a context created on backend "cuda" with torch's current
stream (a non-default torch.cuda.Stream: the legacy default stream's handle
is NULL, which octet.h reads as "the backend's own stream"). Inputs and
outputs are torch tensors wrapped with octet_tensor_wrap (plain tensors
only, per octet.h); quantized FP8 tensors are Octet-owned (octet.h has no
way to wrap a quantized tensor), filled by octet_quantize from wrapped BF16.

Before timing, each Octet op is checked against torch on a small shape
(FP8 codes bit for bit, GEMM and Linear against an FP64 emulation of the
same FP8 codes and scales); a failed check stops the run (exit 1).

Sections (targets from the issue, ratios in the same run; > 1 = Octet better):
  gemm:     FP8 E4M3xE4M3->BF16 octet_gemm vs torch.mm BF16 (>= 1.7x at
            8192^3) and vs torch._scaled_mm (>= 0.95x), shapes MxKxN
            4096^3, 8192^3, 16384x8192x28672
  quantize: octet_quantize both usages (fused cast+transpose) from BF16 vs a
            D2D copy of the same bytes (>= 0.80 of its bandwidth) and vs eager
            torch amax+scale+cast+transpose (>= 3x)
  linear:   Octet Linear (no bias, BF16 params) fwd+bwd in FP8 (current and
            delayed scaling, HYBRID) vs torch.nn.functional.linear fwd+bwd in
            BF16 (>= 1.3x) at 16384 tokens, 8192 -> 8192
"""

import contextlib
import ctypes
import datetime
import os
import pathlib
import shlex
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE))

import bench_report as R  # noqa: E402
import octet_lib as A  # noqa: E402  (liboctet through api/python/octet/_abi.py)

_c = ctypes

# Where the torch tensors live: "cuda", or "cpu" for the host dry run of the
# checks (--backend reference|cpu).
DEV = "cuda"


# ---- Octet on torch's stream -------------------------------------------------

class OTensor:
    """An Octet tensor; keeps the torch tensor it wraps (if any) alive."""

    def __init__(self, octet, handle, torch_tensor=None, borrowed=False):
        self.octet = octet
        self.handle = _c.c_void_p(handle) if not isinstance(handle, _c.c_void_p) else handle
        self.torch = torch_tensor
        self.borrowed = borrowed  # owned by a layer (a gradient): never destroyed here

    def info(self):
        i = A.TensorInfo()
        i.struct_size = _c.sizeof(i)
        self.octet.lib.call("octet_tensor_get_info", self.handle, _c.byref(i))
        return i

    def destroy(self):
        if self.handle and not self.borrowed:
            self.octet.lib.fn("octet_tensor_destroy")(self.handle)
            self.handle = _c.c_void_p()

    def __del__(self):
        try:
            self.destroy()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


class OctetCuda:
    """An Octet context on `backend` ("cuda": on torch's stream `stream`;
    a host backend with stream None for the host dry run)."""

    def __init__(self, lib, torch, stream, backend="cuda", profile=A.PROFILE_NATIVE):
        self.lib, self.torch = lib, torch
        self.stream = stream
        backends = {b.name.decode(): b for b in lib.backends()}
        if backend not in backends:
            failures = "; ".join(f"{p}: {r}" for p, r in lib.failures()) or "none"
            raise RuntimeError(f"liboctet at {lib.path} lists no '{backend}' backend (backends: "
                               f"{', '.join(backends) or 'none'}; plugin load failures: {failures}). "
                               "Was it built with -DOCTET_WITH_CUDA=ON?")
        b = backends[backend]
        if not b.available:
            raise RuntimeError(f"the {backend} backend is unavailable: " + (b.unavailable_reason or b"").decode())
        expected = A.MEMORY_DEVICE if DEV == "cuda" else A.MEMORY_HOST
        if b.memory_kind != expected:
            raise RuntimeError(f"backend {backend} has memory kind {b.memory_kind}, tensors are on {DEV}")
        opts = lib.init_struct(A.ContextOptions, "octet_context_options_init")
        opts.backend = backend.encode()
        opts.capability_profile = profile
        if stream is not None:
            handle = stream.cuda_stream
            if not handle:
                raise RuntimeError("torch's current stream is the legacy default stream (handle 0), which "
                                   "octet.h reads as 'the backend's own stream': run under torch.cuda.stream()")
            opts.stream = _c.c_void_p(handle)
        ctx = _c.c_void_p()
        lib.call("octet_context_create", _c.byref(opts), _c.byref(ctx))
        self.ctx = ctx
        info = A.BackendInfo()
        info.struct_size = _c.sizeof(info)
        lib.call("octet_context_get_info", ctx, _c.byref(info))
        self.info = info
        self.alignment = int(info.alignment) or 1
        self.device = (info.device or b"").decode()
        self.version = (info.version or b"").decode()

    def close(self):
        if self.ctx:
            self.lib.fn("octet_context_destroy")(self.ctx)
            self.ctx = _c.c_void_p()

    def sync(self):
        self.lib.call("octet_context_synchronize", self.ctx)

    # torch dtype -> octet dtype
    def dtype_of(self, t):
        torch = self.torch
        table = {torch.float32: A.DTYPE_FP32, torch.bfloat16: A.DTYPE_BF16, torch.float16: A.DTYPE_FP16,
                 torch.float8_e4m3fn: A.DTYPE_E4M3, torch.float8_e5m2: A.DTYPE_E5M2}
        if t.dtype not in table:
            raise TypeError(f"no Octet dtype for {t.dtype}")
        return table[t.dtype]

    def wrap(self, t):
        """A plain Octet tensor over a contiguous torch CUDA tensor (no copy)."""
        if t.device.type != DEV or not t.is_contiguous():
            raise ValueError(f"wrap needs a contiguous tensor on {DEV}, got {t.device} "
                             f"contiguous={t.is_contiguous()}")
        if t.data_ptr() % self.alignment:
            raise ValueError(f"tensor at {t.data_ptr():#x} is not aligned to the backend's "
                             f"{self.alignment} bytes")
        desc = A.make_desc(self.dtype_of(t), tuple(t.shape))
        h = _c.c_void_p()
        self.lib.call("octet_tensor_wrap", self.ctx, _c.byref(desc), _c.c_void_p(t.data_ptr()), _c.byref(h))
        return OTensor(self, h, t)

    def create_quantized(self, dtype, shape, usages):
        desc = A.make_desc(dtype, shape, usages=usages, scaling_mode=A.SCALING_PER_TENSOR)
        h = _c.c_void_p()
        self.lib.call("octet_tensor_create", self.ctx, _c.byref(desc), _c.byref(h))
        return OTensor(self, h)

    def set_scale(self, q, scale):
        v = _c.c_float(scale)
        self.lib.call("octet_tensor_copy_from_host", q.handle, A.COMPONENT_SCALE, _c.byref(v), 4)

    def read_scalar(self, q, component):
        v = _c.c_float()
        self.lib.call("octet_tensor_copy_to_host", q.handle, component, _c.byref(v), 4)
        return v.value

    def read_bytes(self, q, component, nbytes):
        """A component's bytes as a CPU uint8 torch tensor."""
        out = self.torch.empty(int(nbytes), dtype=self.torch.uint8)
        self.lib.call("octet_tensor_copy_to_host", q.handle, component, _c.c_void_p(out.data_ptr()),
                      int(nbytes))
        return out

    def quantize(self, x, q, usages=0):
        o = self.lib.init_struct(A.QuantizeOptions, "octet_quantize_options_init_sized")
        o.usages = usages
        self.lib.call("octet_quantize", self.ctx, x.handle, q.handle, _c.byref(o))

    def quantize_fn(self, x, q, usages=0):
        """A no-argument closure of octet_quantize with its options built once."""
        o = self.lib.init_struct(A.QuantizeOptions, "octet_quantize_options_init_sized")
        o.usages = usages
        fn, ctx, xh, qh, op = self.lib.fn("octet_quantize"), self.ctx, x.handle, q.handle, _c.byref(o)
        call = self.lib.call

        def run():
            if fn(ctx, xh, qh, op) != 0:
                call("octet_quantize", ctx, xh, qh, op)  # raises with the message
        run.keep = (o, x, q)  # the OTensors own the handles: keep them alive
        return run

    def gemm_fn(self, a, b, d, trans_a=0, trans_b=0):
        o = self.lib.init_struct(A.GemmOptions, "octet_gemm_options_init_sized")
        o.trans_a, o.trans_b = trans_a, trans_b
        fn, ctx, op = self.lib.fn("octet_gemm"), self.ctx, _c.byref(o)
        ah, bh, dh = a.handle, b.handle, d.handle
        call = self.lib.call

        def run():
            if fn(ctx, ah, bh, dh, op) != 0:
                call("octet_gemm", ctx, ah, bh, dh, op)  # raises with the message
        run.keep = (o, a, b, d)  # the OTensors own the handles: keep them alive
        return run


class Recipe:
    def __init__(self, lib, kind):
        self.lib = lib
        self.kind = kind
        h = _c.c_void_p()
        if kind == "current":
            o = lib.init_struct(A.CurrentScalingOptions, "octet_current_scaling_options_init_sized")
            o.format = A.FORMAT_HYBRID
            lib.call("octet_recipe_create_current", _c.byref(o), _c.byref(h))
        elif kind == "current_e4m3":
            o = lib.init_struct(A.CurrentScalingOptions, "octet_current_scaling_options_init_sized")
            o.format = A.FORMAT_E4M3
            lib.call("octet_recipe_create_current", _c.byref(o), _c.byref(h))
        elif kind == "delayed":
            o = lib.init_struct(A.DelayedScalingOptions, "octet_delayed_scaling_options_init")
            o.format = A.FORMAT_HYBRID
            o.amax_history_len = 16
            lib.call("octet_recipe_create_delayed", _c.byref(o), _c.byref(h))
        else:
            raise ValueError(kind)
        self.handle = h

    def __del__(self):
        try:
            if self.handle:
                self.lib.fn("octet_recipe_destroy")(self.handle)
        except Exception:  # noqa: BLE001
            pass


class OctetLinear:
    """Octet Linear, no bias, BF16 parameters, weight borrowed from a torch
    tensor (skip_weight_allocation + octet_layer_set_weight).

    recipe "current": the layer's own current-scaling recipe.
    recipe "delayed": the layer follows autocast; every step runs inside
    octet_autocast_begin/end so the delayed scales are updated each step."""

    def __init__(self, octet, w, recipe_kind):
        lib = octet.lib
        self.octet, self.lib = octet, lib
        out_f, in_f = w.shape
        self.recipe = Recipe(lib, recipe_kind)
        self.autocast = recipe_kind == "delayed"
        o = lib.init_struct(A.LinearOptions, "octet_linear_options_init")
        o.in_features, o.out_features = in_f, out_f
        o.bias = 0
        o.params_dtype = A.DTYPE_BF16
        o.weight_storage = A.WEIGHTS_HIGH_PRECISION
        o.recipe = None if self.autocast else self.recipe.handle
        o.skip_weight_allocation = 1
        h = _c.c_void_p()
        lib.call("octet_layer_create_linear", octet.ctx, _c.byref(o), _c.byref(h))
        self.handle = h
        idx = _c.c_size_t()
        lib.call("octet_layer_find_parameter", h, b"weight", _c.byref(idx))
        self.weight_index = idx.value
        self.w = octet.wrap(w)
        lib.call("octet_layer_set_weight", h, self.weight_index, self.w.handle)

    def step_fn(self, x, y, dy, dx):
        lib, h, ctx = self.lib, self.handle, self.octet.ctx
        fwd, bwd = lib.fn("octet_layer_forward"), lib.fn("octet_layer_backward")
        begin, end = lib.fn("octet_autocast_begin"), lib.fn("octet_autocast_end")
        rh = self.recipe.handle
        xh, yh, dyh, dxh = x.handle, y.handle, dy.handle, dx.handle
        autocast = self.autocast
        call = lib.call

        def run():
            saved = _c.c_void_p()
            if autocast and begin(ctx, rh) != 0:
                call("octet_autocast_begin", ctx, rh)
            try:
                if fwd(h, xh, yh, 1, _c.byref(saved)) != 0:
                    call("octet_layer_forward", h, xh, yh, 1, _c.byref(saved))
                if bwd(h, _c.byref(saved), dyh, dxh, 0) != 0:
                    call("octet_layer_backward", h, _c.byref(saved), dyh, dxh, 0)
            finally:
                if saved:
                    lib.fn("octet_saved_destroy")(saved)
                if autocast and end(ctx) != 0:
                    call("octet_autocast_end", ctx)
        run.keep = (self, x, y, dy, dx)  # the OTensors own the handles: keep them alive
        return run

    def weight_gradient(self):
        g = _c.c_void_p()
        self.lib.call("octet_layer_get_gradient", self.handle, self.weight_index, _c.byref(g))
        return OTensor(self.octet, g, borrowed=True)

    def quantizer_scale(self, role):
        q = _c.c_void_p()
        self.lib.call("octet_layer_get_quantizer", self.handle, 0, role, _c.byref(q))
        info = A.QuantizerInfo()
        info.struct_size = _c.sizeof(info)
        self.lib.call("octet_quantizer_get_info", q, _c.byref(info))
        return info.scale, info.scale_inv

    def close(self):
        if self.handle:
            self.lib.fn("octet_layer_destroy")(self.handle)
            self.handle = _c.c_void_p()


# ---- torch helpers --------------------------------------------------------------

def scaled_mm(torch, a8, b8_t, scale_a, scale_b, out_dtype, fast_accum=False):
    """torch._scaled_mm across the signatures PyTorch has had."""
    try:
        r = torch._scaled_mm(a8, b8_t, scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype,
                             use_fast_accum=fast_accum)
    except TypeError:
        r = torch._scaled_mm(a8, b8_t, out_dtype=out_dtype, scale_a=scale_a, scale_b=scale_b)
    return r[0] if isinstance(r, tuple) else r  # PyTorch < 2.4 returned (out, amax)


def fp32(torch, value):
    """value rounded to FP32, as a Python float."""
    return float(torch.tensor(value, dtype=torch.float32))


def current_scale(torch, amax, fp8_max):
    """numerics.md 14.1 with epsilon 0 and no power of two, in FP32."""
    if amax == 0 or amax != amax or amax == float("inf"):
        return 1.0
    s = torch.tensor(fp8_max, dtype=torch.float32) / torch.tensor(amax, dtype=torch.float32)
    return float(s)


def inv32(torch, s):
    return float(torch.tensor(1.0, dtype=torch.float32) / torch.tensor(s, dtype=torch.float32))


def torch_codes(torch, x, scale, fp8_dtype):
    """fp8(x * scale) in FP32 then RNE, as uint8 codes (torch's cast)."""
    s = torch.tensor(scale, dtype=torch.float32, device=x.device)
    return (x.float() * s).to(fp8_dtype).view(torch.uint8)


def rel_err(torch, got, ref):
    got, ref = got.double(), ref.double()
    den = torch.linalg.vector_norm(ref).item()
    num = torch.linalg.vector_norm(got - ref).item()
    return num / den if den > 0 else num


def sync_device(torch):
    if DEV == "cuda":
        torch.cuda.synchronize()


def free_cached(torch):
    if DEV == "cuda":
        free_cached(torch)


def time_interleaved(torch, stream, fns, warmup, iters, reps):
    """{name: fn} -> ({name: median ms per call}, {name: median host ms per call}).
    Each repetition times every fn in turn (same repetition, same conditions)."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    sync_device(torch)
    dev = {n: [] for n in fns}
    host = {n: [] for n in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            if stream is None:  # host dry run: host backends finish inside each call
                h0 = time.perf_counter()
                for _ in range(iters):
                    fn()
                ms = (time.perf_counter() - h0) * 1e3 / iters
                dev[name].append(ms)
                host[name].append(ms)
                continue
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record(stream)
            h0 = time.perf_counter()
            for _ in range(iters):
                fn()
            h1 = time.perf_counter()
            stop.record(stream)
            stop.synchronize()
            dev[name].append(start.elapsed_time(stop) / iters)
            host[name].append((h1 - h0) * 1e3 / iters)
    return ({n: R.median(v) for n, v in dev.items()}, {n: R.median(v) for n, v in host.items()})


# ---- numerics checks -------------------------------------------------------------

def check_quantize(torch, octet, lib, results):
    rows, cols = 257, 333  # ragged on purpose
    x = (torch.randn(rows, cols, device=DEV) * 3.0).to(torch.bfloat16)
    x[0, 0] = 0.0
    x[1, 2] = -1e-6  # below E4M3's subnormals after scaling: a flush to zero
    amax = float(x.abs().max().float())
    scale = current_scale(torch, amax, 448.0)
    xw = octet.wrap(x)
    q = octet.create_quantized(A.DTYPE_E4M3, (rows, cols), A.USAGE_BOTH)
    octet.set_scale(q, scale)
    octet.quantize(xw, q)
    octet.sync()
    info = q.info()
    ref = torch_codes(torch, x, scale, torch.float8_e4m3fn).cpu()
    # The reference codec of the library on the same FP32 products.
    prod = (x.float() * torch.tensor(scale, dtype=torch.float32, device=DEV)).cpu().contiguous()
    ref_lib = torch.empty(rows * cols, dtype=torch.uint8)
    lib.call("octet_fp8_encode_array", _c.c_void_p(prod.data_ptr()), _c.c_void_p(ref_lib.data_ptr()),
             rows * cols, A.DTYPE_E4M3, 1)
    problems = []
    torch_vs_lib = int((ref.flatten() != ref_lib).sum())
    if torch_vs_lib:
        problems.append(f"torch's cast and octet_fp8_encode_array differ on {torch_vs_lib} codes "
                        "(reference disagreement, not Octet's device code)")
    if info.has_rowwise_data:
        got = octet.read_bytes(q, A.COMPONENT_DATA, info.rowwise_bytes)
        bad = int((got != ref_lib).sum())
        if bad:
            problems.append(f"rowwise codes: {bad} of {rows * cols} differ")
    else:
        problems.append("no rowwise data in a BOTH-usage tensor")
    if info.has_columnwise_data:
        got_t = octet.read_bytes(q, A.COMPONENT_COLUMNWISE_DATA, info.columnwise_bytes).view(cols, rows)
        bad = int((got_t.t() != ref_lib.view(rows, cols)).sum())
        if bad:
            problems.append(f"columnwise (transposed) codes: {bad} of {rows * cols} differ")
    got_amax = octet.read_scalar(q, A.COMPONENT_AMAX)
    if got_amax != amax:
        problems.append(f"amax {got_amax!r} != {amax!r}")
    got_sinv = octet.read_scalar(q, A.COMPONENT_SCALE_INV)
    if got_sinv != inv32(torch, scale):
        problems.append(f"scale_inv {got_sinv!r} != 1/scale {inv32(torch, scale)!r}")
    results.append(R.CheckResult(
        "quantize E4M3 both usages, BF16 257x333", not problems,
        "; ".join(problems) or f"codes equal torch and the reference codec; transposed copy "
        f"{'checked' if info.has_columnwise_data else 'absent (native columnwise)'}; amax, scale_inv exact"))


def quantized_operands(torch, octet, m, k, n, b_spread=1.0):
    """BF16 operands A [m, k] and B [n, k] (B's values times b_spread), their
    current-scaling scales, and their per-tensor E4M3 copies quantized by
    Octet (rowwise): (a, b, sa, sb, qa, qb)."""
    a = torch.randn(m, k, device=DEV).to(torch.bfloat16)
    b = (torch.randn(n, k, device=DEV) * b_spread).to(torch.bfloat16)
    sa = current_scale(torch, float(a.abs().max().float()), 448.0)
    sb = current_scale(torch, float(b.abs().max().float()), 448.0)
    qa = octet.create_quantized(A.DTYPE_E4M3, (m, k), A.USAGE_ROWWISE)
    qb = octet.create_quantized(A.DTYPE_E4M3, (n, k), A.USAGE_ROWWISE)
    octet.set_scale(qa, sa)
    octet.set_scale(qb, sb)
    octet.quantize(octet.wrap(a), qa)
    octet.quantize(octet.wrap(b), qb)
    return a, b, sa, sb, qa, qb


def check_gemm(torch, octet, results):
    m, k, n = 272, 384, 208
    a, b, sa, sb, qa, qb = quantized_operands(torch, octet, m, k, n, b_spread=0.5)
    d = torch.full((m, n), float("nan"), device=DEV, dtype=torch.bfloat16)
    octet.gemm_fn(qa, qb, octet.wrap(d))()
    octet.sync()
    a8 = octet.read_bytes(qa, A.COMPONENT_DATA, m * k).view(m, k).to(DEV).view(torch.float8_e4m3fn)
    b8 = octet.read_bytes(qb, A.COMPONENT_DATA, n * k).view(n, k).to(DEV).view(torch.float8_e4m3fn)
    sia, sib = octet.read_scalar(qa, A.COMPONENT_SCALE_INV), octet.read_scalar(qb, A.COMPONENT_SCALE_INV)
    ref = (a8.double() @ b8.double().t()) * (sia * sib)
    problems = []
    if not bool(torch.isfinite(d).all()):
        problems.append(f"{int((~torch.isfinite(d)).sum())} outputs not written or not finite")
    e64 = rel_err(torch, d, ref)
    if not e64 <= 1e-2:
        problems.append(f"|D - fp64| / |fp64| = {e64:.3g} > 1e-2")
    ta = torch.tensor(sia, dtype=torch.float32, device=DEV)
    tb = torch.tensor(sib, dtype=torch.float32, device=DEV)
    try:
        smm = scaled_mm(torch, a8, b8.t(), ta, tb, torch.bfloat16)
    except (RuntimeError, NotImplementedError) as e:
        if DEV == "cuda":
            raise
        smm = None  # host dry run: this torch may have no CPU _scaled_mm
        print(f"note: torch._scaled_mm on {DEV} failed ({type(e).__name__}), comparison skipped")
    e_t = rel_err(torch, d, smm) if smm is not None else float("nan")
    if smm is not None and not e_t <= 1e-2:
        problems.append(f"|D - torch._scaled_mm| / |torch._scaled_mm| = {e_t:.3g} > 1e-2")
    # Plain FP8 codes wrapped from torch (no scales): same product, unscaled.
    d2 = torch.full((m, n), float("nan"), device=DEV, dtype=torch.bfloat16)
    a8c, b8c = a8.contiguous(), b8.contiguous()
    octet.gemm_fn(octet.wrap(a8c), octet.wrap(b8c), octet.wrap(d2))()
    octet.sync()
    e_plain = rel_err(torch, d2, a8c.double() @ b8c.double().t())
    if not e_plain <= 1e-2:
        problems.append(f"wrapped plain codes: rel err {e_plain:.3g} > 1e-2")
    results.append(R.CheckResult(
        f"GEMM E4M3xE4M3->BF16 TN {m}x{k}x{n}", not problems,
        "; ".join(problems) or f"rel err vs fp64 {e64:.2e}, vs torch._scaled_mm {e_t:.2e}, "
        f"wrapped plain codes {e_plain:.2e}; every output written"))


def check_linear(torch, octet, results, recipe_kind):
    """One Linear step (delayed: two, checking the second, whose scales come
    from the update at the end of the first) against an FP64 emulation of
    the same FP8 codes: x, W E4M3; dy E5M2 (HYBRID)."""
    t, k, n = 256, 512, 384
    x = torch.randn(t, k, device=DEV).to(torch.bfloat16)
    w = (torch.randn(n, k, device=DEV) * 0.05).to(torch.bfloat16)
    dy = (torch.randn(t, n, device=DEV) * 0.01).to(torch.bfloat16)
    layer = OctetLinear(octet, w, recipe_kind)
    try:
        y = torch.full((t, n), float("nan"), device=DEV, dtype=torch.bfloat16)
        dx = torch.full((t, k), float("nan"), device=DEV, dtype=torch.bfloat16)
        step = layer.step_fn(octet.wrap(x), octet.wrap(y), octet.wrap(dy), octet.wrap(dx))
        roles = (A.ROLE_INPUT, A.ROLE_WEIGHT, A.ROLE_GRADIENT)
        if recipe_kind == "delayed":
            step()
            octet.sync()
            y.fill_(float("nan"))
            dx.fill_(float("nan"))
        # Delayed: the scales now in the quantizers are those the next step
        # uses. Current: read after the step, they are those it used.
        before = [layer.quantizer_scale(r)[0] for r in roles]
        step()
        octet.sync()
        after = [layer.quantizer_scale(r)[0] for r in roles]
        sx, sw, sg = before if recipe_kind == "delayed" else after
        problems = []
        # Both recipes: scale = fp8_max / amax of this (same) data, numerics.md 14.2 / 14.1.
        for name, got, tensor, fmax in (("input", sx, x, 448.0), ("weight", sw, w, 448.0),
                                        ("gradient", sg, dy, 57344.0)):
            want = current_scale(torch, float(tensor.abs().max().float()), fmax)
            if got != want:
                problems.append(f"{name} scale {got!r} != fp8_max/amax {want!r}")
        g = layer.weight_gradient()
        gi = g.info()
        dw = octet.read_bytes(g, A.COMPONENT_DATA, gi.rowwise_bytes).view(torch.bfloat16).view(n, k).to(DEV)
        xq = torch_codes(torch, x, sx, torch.float8_e4m3fn).view(torch.float8_e4m3fn).double()
        wq = torch_codes(torch, w, sw, torch.float8_e4m3fn).view(torch.float8_e4m3fn).double()
        gq = torch_codes(torch, dy, sg, torch.float8_e5m2).view(torch.float8_e5m2).double()
        ix, iw, ig = inv32(torch, sx), inv32(torch, sw), inv32(torch, sg)
        refs = (("y", y, (xq @ wq.t()) * (ix * iw)), ("dx", dx, (gq @ wq) * (ig * iw)),
                ("dW", dw, (gq.t() @ xq) * (ig * ix)))
        errs = {}
        for name, got, ref in refs:
            if not bool(torch.isfinite(got).all()):
                problems.append(f"{name}: {int((~torch.isfinite(got)).sum())} values not written or not finite")
            errs[name] = rel_err(torch, got, ref)
            if not errs[name] <= 1e-2:
                problems.append(f"{name}: rel err vs FP8 emulation {errs[name]:.3g} > 1e-2")
        # Against plain BF16 math (information: FP8's own error).
        xr, wr = x.double(), w.double()
        bf = {"y": rel_err(torch, y, xr @ wr.t()), "dx": rel_err(torch, dx, dy.double() @ wr),
              "dW": rel_err(torch, dw, dy.double().t() @ xr)}
    finally:
        layer.close()
    results.append(R.CheckResult(
        f"Linear fwd+bwd FP8 {recipe_kind} (HYBRID), no bias, {t}x{k}->{n}", not problems,
        "; ".join(problems) or "scales = fp8_max/amax; rel err vs FP8 emulation " +
        ", ".join(f"{kk} {v:.2e}" for kk, v in errs.items()) + "; vs BF16 math (info) " +
        ", ".join(f"{kk} {v:.2e}" for kk, v in bf.items())))


def run_checks(torch, octet, lib, settings):
    results = []
    checks = [("quantize", lambda: check_quantize(torch, octet, lib, results)),
              ("gemm", lambda: check_gemm(torch, octet, results))]
    for kind in settings.linear_recipes:
        checks.append((f"linear {kind}", lambda kind=kind: check_linear(torch, octet, results, kind)))
    for name, fn in checks:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            results.append(R.CheckResult(name, False, f"{type(e).__name__}: {e}"))
    return results


# ---- benchmarks -----------------------------------------------------------------

def bench_gemm(torch, octet, stream, s, rows):
    for (m, k, n) in s.gemm_shapes:
        _bench_gemm_shape(torch, octet, stream, s, rows, m, k, n)
        free_cached(torch)


def _bench_gemm_shape(torch, octet, stream, s, rows, m, k, n):
    shape = f"{m}x{k}x{n}"
    flops = R.gemm_flops(m, k, n)
    try:
        a, b, sa, sb, qa, qb = quantized_operands(torch, octet, m, k, n)
        d = torch.empty(m, n, device=DEV, dtype=torch.bfloat16)
        octet_fn = octet.gemm_fn(qa, qb, octet.wrap(d))
        a8 = torch_codes(torch, a, sa, torch.float8_e4m3fn).view(torch.float8_e4m3fn)
        b8 = torch_codes(torch, b, sb, torch.float8_e4m3fn).view(torch.float8_e4m3fn)
        ia = torch.tensor(inv32(torch, sa), dtype=torch.float32, device=DEV)
        ib = torch.tensor(inv32(torch, sb), dtype=torch.float32, device=DEV)
        d_mm = torch.empty(m, n, device=DEV, dtype=torch.bfloat16)
        bt = b.t()
        fns = {
            "octet": octet_fn,
            "mm": lambda: torch.mm(a, bt, out=d_mm),
            "scaled_mm": lambda: scaled_mm(torch, a8, b8.t(), ia, ib, torch.bfloat16),
            "scaled_mm_fast": lambda: scaled_mm(torch, a8, b8.t(), ia, ib, torch.bfloat16, True),
        }
        t, host = time_interleaved(torch, stream, fns, s.warmup, s.iters, s.reps)
    except Exception as e:  # noqa: BLE001
        rows.append(R.Row("gemm", "FP8 GEMM E4M3xE4M3->BF16 (TN)", shape, float("nan"), "", "-",
                          float("nan"), "", float("nan"), None, error=f"{type(e).__name__}: {e}"))
        return
    ours = R.fmt_rate(R.tflops(flops, t["octet"]), "TFLOP/s")
    note = f"Octet host enqueue {host['octet'] * 1e3:.1f} us/call"
    target_bf16 = R.TARGET_GEMM_VS_BF16 if (m, k, n) in R.GEMM_BF16_TARGET_SHAPES else None
    for key, label, target in (("mm", "torch.mm BF16", target_bf16),
                               ("scaled_mm", "torch._scaled_mm E4M3", R.TARGET_GEMM_VS_SCALED_MM),
                               ("scaled_mm_fast", "torch._scaled_mm E4M3 use_fast_accum", None)):
        rows.append(R.Row("gemm", "FP8 GEMM E4M3xE4M3->BF16 (TN)", shape, t["octet"], ours, label,
                          t[key], R.fmt_rate(R.tflops(flops, t[key]), "TFLOP/s"),
                          R.speedup(t["octet"], t[key]), target, note=note))


def bench_quantize(torch, octet, lib, stream, s, rows):
    for (r_, c_) in s.quantize_shapes:
        _bench_quantize_shape(torch, octet, lib, stream, s, rows, r_, c_)
        free_cached(torch)


def _bench_quantize_shape(torch, octet, lib, stream, s, rows, r_, c_):
    shape = f"{r_}x{c_} BF16"
    try:
        x = torch.randn(r_, c_, device=DEV).to(torch.bfloat16)
        xw = octet.wrap(x)
        q = octet.create_quantized(A.DTYPE_E4M3, (r_, c_), A.USAGE_BOTH)
        octet.set_scale(q, current_scale(torch, float(x.abs().max().float()), 448.0))
        info = q.info()
        in_bytes = x.numel() * x.element_size()
        out_bytes = int(info.rowwise_bytes + info.columnwise_bytes)
        total = in_bytes + out_bytes
        # D2D copy moving the same bytes (read + write = total).
        src = torch.empty(total // 2, dtype=torch.uint8, device=DEV)
        dst = torch.empty_like(src)
        src.random_(0, 255)
        # Current scaling through a quantizer: octet_amax + quantize (the
        # same work as the eager baseline).
        rec = Recipe(lib, "current_e4m3")
        qz = _c.c_void_p()
        lib.call("octet_quantizer_create", rec.handle, A.ROLE_INPUT, _c.byref(qz))
        qopts = lib.init_struct(A.QuantizeOptions, "octet_quantize_options_init_sized")
        qq = lib.fn("octet_quantizer_quantize")

        def octet_current():
            if qq(octet.ctx, qz, xw.handle, q.handle, _c.byref(qopts), None) != 0:
                lib.call("octet_quantizer_quantize", octet.ctx, qz, xw.handle, q.handle,
                         _c.byref(qopts), None)

        def eager():
            amax = x.abs().max()
            scale = 448.0 / amax
            q8 = (x * scale).to(torch.float8_e4m3fn)
            return q8, q8.t().contiguous()

        fns = {"octet": octet.quantize_fn(xw, q), "current_scaling": octet_current,
               "copy": lambda: dst.copy_(src), "eager": eager}
        t, host = time_interleaved(torch, stream, fns, s.warmup, s.iters, s.reps)
        lib.fn("octet_quantizer_destroy")(qz)
    except Exception as e:  # noqa: BLE001
        rows.append(R.Row("quantize", "cast+transpose E4M3, both usages", shape, float("nan"), "", "-",
                          float("nan"), "", float("nan"), None, error=f"{type(e).__name__}: {e}"))
        return
    ours = R.fmt_rate(R.gbps(total, t["octet"]), "GB/s")
    note = (f"bytes {in_bytes} in + {out_bytes} out; Octet host enqueue {host['octet'] * 1e3:.1f} us/call; "
            f"transposed copy {'yes' if info.has_columnwise_data else 'no (native columnwise)'}")
    rows.append(R.Row("quantize", "cast+transpose E4M3, both usages (scale given)", shape, t["octet"], ours,
                      "D2D copy of the same bytes", t["copy"], R.fmt_rate(R.gbps(total, t["copy"]), "GB/s"),
                      R.bandwidth_fraction(total, t["octet"], total, t["copy"]), R.TARGET_CAST_VS_COPY,
                      ratio_kind="of copy BW", note=note))
    rows.append(R.Row("quantize", "cast+transpose E4M3, both usages (scale given)", shape, t["octet"], ours,
                      "eager torch amax+scale+cast+transpose", t["eager"], "",
                      R.speedup(t["octet"], t["eager"]), R.TARGET_CAST_VS_EAGER, note=note))
    rows.append(R.Row("quantize", "current scaling: octet_amax + cast+transpose (quantizer)", shape,
                      t["current_scaling"], R.fmt_rate(R.gbps(total + in_bytes, t["current_scaling"]), "GB/s"),
                      "eager torch amax+scale+cast+transpose", t["eager"], "",
                      R.speedup(t["current_scaling"], t["eager"]), None,
                      note=f"same work as eager (two passes over x: amax, then cast+transpose; the scale "
                           f"is computed on the device); "
                           f"host enqueue {host['current_scaling'] * 1e3:.1f} us/call"))


def bench_linear(torch, octet, stream, s, rows):
    for (t_, k, n) in s.linear_shapes:
        _bench_linear_shape(torch, octet, stream, s, rows, t_, k, n)
        free_cached(torch)


def _bench_linear_shape(torch, octet, stream, s, rows, t_, k, n):
    F = torch.nn.functional
    shape = f"{t_} tokens, {k}->{n}"
    flops = R.linear_fwd_bwd_flops(t_, k, n)
    x = torch.randn(t_, k, device=DEV).to(torch.bfloat16)
    w = (torch.randn(n, k, device=DEV) * 0.02).to(torch.bfloat16)
    dy = (torch.randn(t_, n, device=DEV) * 0.01).to(torch.bfloat16)
    xg = x.detach().clone().requires_grad_(True)
    wg = w.detach().clone().requires_grad_(True)

    def torch_step():
        y = F.linear(xg, wg)
        return torch.autograd.grad(y, (xg, wg), dy)

    y_o = torch.empty(t_, n, device=DEV, dtype=torch.bfloat16)
    dx_o = torch.empty(t_, k, device=DEV, dtype=torch.bfloat16)
    fns = {"bf16": torch_step}
    layers, errors = {}, {}
    for kind in s.linear_recipes:
        try:
            layer = OctetLinear(octet, w, kind)
            fn = layer.step_fn(octet.wrap(x), octet.wrap(y_o), octet.wrap(dy), octet.wrap(dx_o))
            fn()  # fail here, not inside the timing loop
            layers[kind] = layer
            fns[kind] = fn
        except Exception as e:  # noqa: BLE001
            errors[kind] = f"{type(e).__name__}: {e}"
    try:
        t, host = time_interleaved(torch, stream, fns, s.warmup, s.iters, s.reps)
    except Exception as e:  # noqa: BLE001
        for kind in s.linear_recipes:
            errors.setdefault(kind, f"{type(e).__name__}: {e}")
        t, host = {}, {}
    target = R.TARGET_LINEAR_VS_BF16 if (t_, k, n) in R.LINEAR_TARGET_SHAPES else None
    for kind in s.linear_recipes:
        label = f"Linear fwd+bwd FP8 {kind} scaling (HYBRID), no bias"
        if kind in errors:
            rows.append(R.Row("linear", label, shape, float("nan"), "", "torch F.linear BF16 fwd+bwd",
                              t.get("bf16", float("nan")), "", float("nan"), target, error=errors[kind]))
            continue
        rows.append(R.Row("linear", label, shape, t[kind], R.fmt_rate(R.tflops(flops, t[kind]), "TFLOP/s"),
                          "torch F.linear BF16 fwd+bwd", t["bf16"],
                          R.fmt_rate(R.tflops(flops, t["bf16"]), "TFLOP/s"), R.speedup(t[kind], t["bf16"]),
                          target, note=f"host time per step {host[kind]:.3f} ms (enqueue only: the step "
                                       f"makes no copy to the host, tests/layers/linear_step_traffic_test"
                                       f".cpp; near the step time, it would mean a synchronisation); "
                                       f"3 GEMMs = {flops / 1e12:.2f} TFLOP"))
    for layer in layers.values():
        layer.close()


def measure_limits(torch, stream, s):
    """D2D copy bandwidth (1 GiB, read + write counted) and BF16 mm rate at
    8192^3 on this device, in this run."""
    out = []
    nbytes = (1 << 30) if (DEV == "cuda" and s.gemm_shapes[0][0] >= 4096) else (1 << 26)
    src = torch.empty(nbytes, dtype=torch.uint8, device=DEV)
    dst = torch.empty_like(src)
    t, _ = time_interleaved(torch, stream, {"copy": lambda: dst.copy_(src)}, s.warmup, s.iters, s.reps)
    out.append(f"Measured D2D copy: {R.gbps(2 * nbytes, t['copy']):.0f} GB/s (read + write, "
               f"{nbytes >> 20} MiB); datasheet: H100 SXM ~3.35 TB/s HBM3, H200 ~4.8 TB/s HBM3e")
    out.append("Datasheet dense peaks (H100/H200 SXM): 989 TFLOP/s BF16, 1979 TFLOP/s FP8")
    return out


# ---- environment ----------------------------------------------------------------

def octet_commit():
    if os.environ.get("OCTET_COMMIT"):
        return os.environ["OCTET_COMMIT"]
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        if rev.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10)
            return rev.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown (no git here; set OCTET_COMMIT)"


def driver_version():
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def collect_env(torch, lib, octet, argv):
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return R.Environment(
        device=torch.cuda.get_device_name(), compute_capability=f"{p.major}.{p.minor}",
        sm_count=str(p.multi_processor_count), memory=f"{p.total_memory / 2**30:.0f} GiB",
        driver=driver_version(), torch_version=torch.__version__, torch_cuda=str(torch.version.cuda),
        octet_version=lib.version_string(),
        octet_backend=f"cuda {octet.version} on \"{octet.device}\" (loaded from {lib.path})",
        octet_commit=octet_commit(), date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        command="python3 " + " ".join(shlex.quote(a) for a in [sys.argv[0]] + list(argv)))


def resolve_lib(arg):
    if arg:
        return arg
    for c in A.default_library_candidates(REPO):
        if os.path.exists(c):
            return c
    raise SystemExit("bench_cuda.py: liboctet not found; give --lib or set OCTET_LIBRARY (tried: "
                     + ", ".join(A.default_library_candidates(REPO)) + ")")


# ---- profiling ----------------------------------------------------------------

def run_profile(torch, octet, lib, stream, args, s):
    """Builds one op, warms it up, then runs it once between
    cudaProfilerStart/Stop (ncu --profile-from-start off)."""
    op = args.profile_op
    F = torch.nn.functional
    if op in ("gemm", "scaled_mm", "mm"):
        m, k, n = R.parse_shape(args.profile_shape or "8192x8192x8192", 3)
        a = torch.randn(m, k, device=DEV).to(torch.bfloat16)
        b = torch.randn(n, k, device=DEV).to(torch.bfloat16)
        sa = current_scale(torch, float(a.abs().max().float()), 448.0)
        sb = current_scale(torch, float(b.abs().max().float()), 448.0)
        if op == "gemm":
            qa = octet.create_quantized(A.DTYPE_E4M3, (m, k), A.USAGE_ROWWISE)
            qb = octet.create_quantized(A.DTYPE_E4M3, (n, k), A.USAGE_ROWWISE)
            octet.set_scale(qa, sa)
            octet.set_scale(qb, sb)
            octet.quantize(octet.wrap(a), qa)
            octet.quantize(octet.wrap(b), qb)
            d = torch.empty(m, n, device=DEV, dtype=torch.bfloat16)
            fn = octet.gemm_fn(qa, qb, octet.wrap(d))
        elif op == "scaled_mm":
            a8 = torch_codes(torch, a, sa, torch.float8_e4m3fn).view(torch.float8_e4m3fn)
            b8 = torch_codes(torch, b, sb, torch.float8_e4m3fn).view(torch.float8_e4m3fn)
            ia = torch.tensor(inv32(torch, sa), dtype=torch.float32, device=DEV)
            ib = torch.tensor(inv32(torch, sb), dtype=torch.float32, device=DEV)

            def fn():
                return scaled_mm(torch, a8, b8.t(), ia, ib, torch.bfloat16)
        else:
            bt = b.t()

            def fn():
                return torch.mm(a, bt)
    elif op in ("quantize", "quantize_current", "copy", "eager_quantize"):
        r_, c_ = R.parse_shape(args.profile_shape or "8192x8192", 2)
        x = torch.randn(r_, c_, device=DEV).to(torch.bfloat16)
        if op == "quantize":
            q = octet.create_quantized(A.DTYPE_E4M3, (r_, c_), A.USAGE_BOTH)
            octet.set_scale(q, current_scale(torch, float(x.abs().max().float()), 448.0))
            fn = octet.quantize_fn(octet.wrap(x), q)
        elif op == "quantize_current":
            xw = octet.wrap(x)
            q = octet.create_quantized(A.DTYPE_E4M3, (r_, c_), A.USAGE_BOTH)
            rec = Recipe(lib, "current_e4m3")
            qz = _c.c_void_p()
            lib.call("octet_quantizer_create", rec.handle, A.ROLE_INPUT, _c.byref(qz))
            qopts = lib.init_struct(A.QuantizeOptions, "octet_quantize_options_init_sized")

            def fn():
                lib.call("octet_quantizer_quantize", octet.ctx, qz, xw.handle, q.handle, _c.byref(qopts), None)
        elif op == "copy":
            y = torch.empty_like(x)

            def fn():
                return y.copy_(x)
        else:
            def fn():
                amax = x.abs().max()
                q8 = (x * (448.0 / amax)).to(torch.float8_e4m3fn)
                return q8.t().contiguous()
    else:
        t_, k, n = R.parse_shape(args.profile_shape or "16384x8192x8192", 3)
        x = torch.randn(t_, k, device=DEV).to(torch.bfloat16)
        w = (torch.randn(n, k, device=DEV) * 0.02).to(torch.bfloat16)
        dy = (torch.randn(t_, n, device=DEV) * 0.01).to(torch.bfloat16)
        if op == "linear":
            kind = s.linear_recipes[0]
            layer = OctetLinear(octet, w, kind)
            y = torch.empty(t_, n, device=DEV, dtype=torch.bfloat16)
            dx = torch.empty(t_, k, device=DEV, dtype=torch.bfloat16)
            fn = layer.step_fn(octet.wrap(x), octet.wrap(y), octet.wrap(dy), octet.wrap(dx))
        else:
            xg = x.clone().requires_grad_(True)
            wg = w.clone().requires_grad_(True)

            def fn():
                return torch.autograd.grad(F.linear(xg, wg), (xg, wg), dy)
    for _ in range(max(s.warmup, 2)):
        fn()
    torch.cuda.synchronize()
    if args.kernel_table:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        table = None
        for key in ("device_time_total", "cuda_time_total"):
            try:
                table = prof.key_averages().table(sort_by=key, row_limit=40)
                break
            except Exception:  # noqa: BLE001 - the key's name changed across versions
                continue
        print(table if table is not None else prof.key_averages().table(row_limit=40))
        print(f"kernel table of one call of {op}")
        return 0
    torch.cuda.profiler.start()
    fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"profiled one call of {op}")
    return 0


# ---- main -----------------------------------------------------------------------

def main(argv=None):
    global DEV
    argv = list(sys.argv[1:] if argv is None else argv)
    args = R.parse_args(argv)
    s = R.settings_from_args(args)
    try:
        import torch
    except ImportError as e:
        print(f"bench_cuda.py: PyTorch is needed: {e}", file=sys.stderr)
        return 1
    host_dry_run = args.backend != "cuda"
    if host_dry_run:
        if args.profile_op:
            print("bench_cuda.py: --profile-op needs the cuda backend", file=sys.stderr)
            return 2
        DEV = "cpu"
    elif not torch.cuda.is_available():
        print("bench_cuda.py: torch.cuda.is_available() is False: no GPU here", file=sys.stderr)
        return 1
    torch.manual_seed(args.seed)
    lib = A.Library(resolve_lib(args.lib))
    checks, rows = [], []
    if host_dry_run:
        stream, scope = None, contextlib.nullcontext()
    else:
        stream = torch.cuda.Stream()
        scope = torch.cuda.stream(stream)
    with scope:
        if host_dry_run:
            # Hopper-like: transposed copies and TN-only GEMMs, as on an H100.
            octet = OctetCuda(lib, torch, None, backend=args.backend, profile=A.PROFILE_HOPPER_LIKE)
            env = host_env(torch, lib, octet, argv, args.backend)
        else:
            octet = OctetCuda(lib, torch, stream)
            env = collect_env(torch, lib, octet, argv)
        print(f"device: {env.device}; Octet backend: {octet.device}; torch {env.torch_version}", flush=True)
        if args.profile_op:
            rc = run_profile(torch, octet, lib, stream, args, s)
            sync_device(torch)
            return rc
        if not args.no_check:
            checks = run_checks(torch, octet, lib, s)
            print(R.render_checks(checks), flush=True)
        failed = sum(1 for c in checks if not c.ok)
        if failed or args.check:
            report = R.render_report(env, None, [], checks)
            if failed:
                report += f"\n{failed} numerics check(s) FAILED: no timing was run.\n"
            _emit(report, args.out)
            octet.close()
            return 1 if failed else 0
        env.limits = measure_limits(torch, stream, s)
        if "gemm" in s.sections:
            bench_gemm(torch, octet, stream, s, rows)
            print(R.render_table(rows), flush=True)
        if "quantize" in s.sections:
            bench_quantize(torch, octet, lib, stream, s, rows)
        if "linear" in s.sections:
            bench_linear(torch, octet, stream, s, rows)
        sync_device(torch)
        if args.quick:
            env.notes.append("--quick: small shapes; the targets apply to the full shapes only")
        if host_dry_run:
            env.notes.append("host dry run: host timers on a host backend; the ratios mean nothing")
        report = R.render_report(env, s, rows, checks)
        _emit(report, args.out)
        octet.close()
    return R.exit_status(rows, 0, args.strict_targets)


def host_env(torch, lib, octet, argv, backend):
    return R.Environment(
        device=f"host dry run on backend {backend} ({octet.device})", torch_version=torch.__version__,
        octet_version=lib.version_string(), octet_backend=f"{backend} {octet.version} (loaded from {lib.path})",
        octet_commit=octet_commit(), date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        command="python3 " + " ".join(shlex.quote(a) for a in [sys.argv[0]] + list(argv)))


def _emit(report, out):
    print(report, flush=True)
    if out:
        pathlib.Path(out).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(out).write_text(report)
        print(f"report written to {out}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
