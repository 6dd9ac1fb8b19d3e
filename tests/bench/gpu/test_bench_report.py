"""Tests of the GPU benchmark's pure-Python parts and of the calls it makes
through octet_lib.py (the package's declarations, api/python/octet/_abi.py,
which tests/python/test_abi.py checks against octet.h), on any machine (no
GPU needed; the host dry run of the checks needs torch).

ctest (tests/bench/gpu/CMakeLists.txt) sets OCTET_LIBRARY to the built
liboctet and OCTET_BENCH_REQUIRE_LIBRARY=1: then a missing library fails
instead of skipping. Skipped without torch: the host dry run of the checks
(the reason says so)."""

import ctypes
import importlib.util
import math
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE))

import bench_report as R  # noqa: E402
import octet_lib as A  # noqa: E402

REQUIRE = os.environ.get("OCTET_BENCH_REQUIRE_LIBRARY") == "1"


# ---- bench_report: arguments and settings ----------------------------------------

def test_defaults_are_the_full_issue_shapes():
    args = R.parse_args([])
    s = R.settings_from_args(args)
    assert s.sections == ("gemm", "quantize", "linear")
    assert s.linear_recipes == ("current", "delayed")
    assert (s.warmup, s.iters, s.reps) == (5, 20, 7)
    assert s.gemm_shapes == [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 8192, 28672)]
    assert s.linear_shapes == [(16384, 8192, 8192)]
    assert (8192, 8192) in s.quantize_shapes


def test_quick_mode_uses_small_shapes_and_few_repetitions():
    s = R.settings_from_args(R.parse_args(["--quick"]))
    assert (s.warmup, s.iters, s.reps) == (2, 5, 3)
    assert all(max(shape) <= 2048 for shape in s.gemm_shapes + s.quantize_shapes + s.linear_shapes)
    # explicit counts win over --quick
    s = R.settings_from_args(R.parse_args(["--quick", "--reps", "9", "--iters", "1", "--warmup", "0"]))
    assert (s.warmup, s.iters, s.reps) == (0, 1, 9)


def test_sections_and_recipes_are_validated():
    s = R.settings_from_args(R.parse_args(["--sections", "gemm, linear", "--linear-recipes", "delayed"]))
    assert s.sections == ("gemm", "linear")
    assert s.linear_recipes == ("delayed",)
    with pytest.raises(SystemExit):
        R.settings_from_args(R.parse_args(["--sections", "gemm,bogus"]))
    with pytest.raises(SystemExit):
        R.settings_from_args(R.parse_args(["--linear-recipes", "mxfp8"]))
    with pytest.raises(SystemExit):
        R.settings_from_args(R.parse_args(["--reps", "0"]))
    with pytest.raises(SystemExit):
        R.parse_args(["--check", "--no-check"])
    with pytest.raises(SystemExit):
        R.parse_args(["--profile-op", "nonsense"])


def test_parse_shape():
    assert R.parse_shape("8192x8192x8192", 3) == (8192, 8192, 8192)
    assert R.parse_shape("16384X8192", 2) == (16384, 8192)
    for bad in ("8192x8192", "axb x c", "0x4x4"):
        with pytest.raises(SystemExit):
            R.parse_shape(bad, 3)


def test_issue_targets():
    assert R.TARGET_GEMM_VS_BF16 == 1.7
    assert R.TARGET_GEMM_VS_SCALED_MM == 0.95
    assert R.TARGET_CAST_VS_COPY == 0.80
    assert R.TARGET_CAST_VS_EAGER == 3.0
    assert R.TARGET_LINEAR_VS_BF16 == 1.3
    assert R.GEMM_BF16_TARGET_SHAPES == {(8192, 8192, 8192)}
    assert R.LINEAR_TARGET_SHAPES == {(16384, 8192, 8192)}


# ---- arithmetic -------------------------------------------------------------------

def test_rates_and_ratios():
    assert R.gemm_flops(8192, 8192, 8192) == 2.0 * 8192 ** 3
    assert R.linear_fwd_bwd_flops(16384, 8192, 8192) == 3 * 2.0 * 16384 * 8192 * 8192
    # 2*8192^3 FLOP in 1 ms = 1099.5 TFLOP/s
    assert R.tflops(2.0 * 8192 ** 3, 1.0) == pytest.approx(1099.511627776)
    assert R.gbps(4e9, 1.0) == pytest.approx(4000.0)
    assert R.speedup(2.0, 3.4) == pytest.approx(1.7)
    assert R.speedup(4.0, 2.0) == pytest.approx(0.5)
    # same bytes: the bandwidth fraction is the inverse time ratio
    assert R.bandwidth_fraction(100, 2.0, 100, 1.6) == pytest.approx(0.8)
    # different bytes are accounted for
    assert R.bandwidth_fraction(200, 2.0, 100, 1.0) == pytest.approx(1.0)
    for bad in (R.speedup(0.0, 1.0), R.speedup(float("nan"), 1.0), R.tflops(1.0, 0.0),
                R.bandwidth_fraction(1, float("nan"), 1, 1.0)):
        assert math.isnan(bad)


def test_median_ignores_missing_values():
    assert R.median([3.0, 1.0, 2.0]) == 2.0
    assert R.median([1.0, float("nan"), 3.0]) == 2.0
    assert math.isnan(R.median([]))


def test_verdict():
    assert R.verdict(1.70, 1.7) == "yes"
    assert R.verdict(1.69, 1.7) == "**no**"
    assert R.verdict(0.5, None) == "-"
    assert R.verdict(float("nan"), 1.7) == "**error**"
    assert R.verdict(2.0, 1.7, error="boom") == "**error**"


# ---- report ------------------------------------------------------------------------

def _rows():
    return [
        R.Row("gemm", "FP8 GEMM", "8192x8192x8192", 1.0, "1100 TFLOP/s", "torch.mm BF16", 1.8, "611 TFLOP/s",
              1.8, 1.7, note="host 5 us"),
        R.Row("gemm", "FP8 GEMM", "8192x8192x8192", 1.0, "1100 TFLOP/s", "torch._scaled_mm", 0.9, "",
              0.9, 0.95),
        R.Row("quantize", "cast|transpose", "8192x8192 BF16", 0.2, "2700 GB/s", "D2D copy", 0.15, "3500 GB/s",
              0.75, 0.8, ratio_kind="of copy BW"),
        R.Row("linear", "Linear", "16384 tokens", float("nan"), "", "F.linear", 9.0, "", float("nan"), 1.3,
              error="OctetError: UNSUPPORTED"),
        R.Row("gemm", "FP8 GEMM", "4096^3", 0.1, "", "fast accum", 0.1, "", 1.0, None),
    ]


def test_table_has_one_line_per_row_and_escapes_pipes():
    table = R.render_table(_rows())
    lines = table.strip().split("\n")
    assert lines[0].startswith("| benchmark | shape | Octet | baseline |")
    assert len(lines) == 2 + len(_rows())
    assert all(line.count(" | ") == 8 for line in lines[2:]), lines
    assert "cast\\|transpose" in table
    assert "1.800x" in table and ">= 1.7x" in table and "| yes |" in table
    assert "0.750 of copy BW" in table and ">= 0.8 of copy BW" in table
    assert "| **no** |" in table and "| **error** |" in table and "(info)" in table
    assert "1.000 ms" in table and "100.0 us" in table


def test_rate_formatting():
    assert R.fmt_rate(1234.4, "TFLOP/s") == "1234 TFLOP/s"
    assert R.fmt_rate(42.25, "GB/s") == "42.2 GB/s"
    assert R.fmt_rate(0.0123, "TFLOP/s") == "0.0123 TFLOP/s"
    assert R.fmt_rate(float("nan"), "GB/s") == "n/a"
    assert R.fmt_ms(float("nan")) == "n/a" and R.fmt_ms(250.0) == "250.0 ms"


def test_row_notes_are_listed_once_per_benchmark_and_shape():
    rows = [R.Row("gemm", "G", "s", 1.0, "", "b1", 1.0, "", 1.0, None, note="same"),
            R.Row("gemm", "G", "s", 1.0, "", "b2", 1.0, "", 1.0, None, note="same")]
    text = R.render_report(R.Environment(), None, rows, [])
    assert text.count("- G s: same") == 1


def test_summary_and_exit_status():
    rows = _rows()
    assert R.summarize(rows) == {"met": 1, "missed": 2, "errors": 1, "info": 1}
    assert R.summary_line(rows).startswith("TARGETS: 1 met, 2 missed, 1 errors")
    assert R.exit_status(rows, 0, False) == 1          # an op failed
    ok_rows = [r for r in rows if not r.error]
    assert R.exit_status(ok_rows, 0, False) == 0       # misses alone do not fail
    assert R.exit_status(ok_rows, 0, True) == 2        # unless strict
    assert R.exit_status(ok_rows, 1, False) == 1       # a failed check fails


def test_report_names_environment_checks_table_and_errors():
    env = R.Environment(device="NVIDIA H100 80GB HBM3", compute_capability="9.0", octet_commit="abc1234",
                        command="python3 bench_cuda.py --out x.md", limits=["Measured D2D copy: 3000 GB/s"])
    checks = [R.CheckResult("quantize", True, "bit exact"), R.CheckResult("gemm", False, "rel err 0.5")]
    s = R.settings_from_args(R.parse_args([]))
    text = R.render_report(env, s, _rows(), checks)
    assert "NVIDIA H100 80GB HBM3 (SM 9.0" in text
    assert "abc1234" in text and "`python3 bench_cuda.py --out x.md`" in text
    assert "median over 7 repetitions of 20 calls" in text
    assert "Measured D2D copy: 3000 GB/s" in text
    assert "| gemm | **FAILED** | rel err 0.5 |" in text and "| quantize | ok | bit exact |" in text
    assert "TARGETS:" in text
    assert "Errors:" in text and "OctetError: UNSUPPORTED" in text
    assert "Row notes:" in text and "host 5 us" in text
    assert R.render_checks([]) == "Numerics checks: not run.\n"


# ---- bench_cuda.py without torch ---------------------------------------------------

def test_bench_cuda_imports_without_torch_and_has_help():
    spec = importlib.util.spec_from_file_location("bench_cuda_under_test", HERE / "bench_cuda.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # must not import torch at module level
    assert callable(mod.main)
    r = subprocess.run([sys.executable, str(HERE / "bench_cuda.py"), "--help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    for option in ("--lib", "--out", "--quick", "--check", "--profile-op", "--backend"):
        assert option in r.stdout


def test_bench_cuda_without_torch_says_so():
    """Runs with torch hidden (sys.modules["torch"] = None makes the import
    fail), so it runs whether or not torch is installed here."""
    hide = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = [sys.argv[1], '--check']; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", hide, str(HERE / "bench_cuda.py")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "PyTorch is needed" in r.stderr


# ---- the ctypes declarations against the built liboctet ------------------------------

def _library_path():
    for c in A.default_library_candidates(REPO):
        if os.path.exists(c):
            return c
    return None


@pytest.fixture(scope="module")
def lib():
    path = _library_path()
    if path is None:
        if REQUIRE:
            pytest.fail("OCTET_BENCH_REQUIRE_LIBRARY=1 but no liboctet at " +
                        ", ".join(A.default_library_candidates(REPO)))
        pytest.skip("no built liboctet (set OCTET_LIBRARY)")
    return A.Library(path)


def test_the_declarations_are_the_packages():
    """One ctypes declaration of octet.h in the repository: octet_lib.py
    loads api/python/octet/_abi.py and declares nothing of its own."""
    assert pathlib.Path(A.abi.__file__).resolve() == (REPO / "api" / "python" / "octet" / "_abi.py").resolve()
    assert A.TensorDesc is A.abi.TensorDesc and A.DTYPE_E4M3 == A.abi.DTYPE_E4M3
    for path in (HERE / "octet_lib.py", HERE / "bench_cuda.py"):
        text = path.read_text()
        assert "Structure)" not in text and "argtypes" not in text, f"{path.name} declares C types itself"


def test_every_function_the_benchmark_calls_is_declared(lib):
    import re
    used = set(re.findall(r'"(octet_[a-z0-9_]+)"', (HERE / "bench_cuda.py").read_text()))
    assert used, "no Octet call found in bench_cuda.py"
    assert used <= set(A.abi.FUNCTIONS), sorted(used - set(A.abi.FUNCTIONS))
    for name in used:
        assert getattr(lib.lib, name).argtypes is not None, name


@pytest.mark.parametrize("c_name,init", sorted(A.abi.INIT_FUNCTIONS.items()),
                         ids=sorted(A.abi.INIT_FUNCTIONS.values()))
def test_init_struct_fills_every_options_struct(lib, c_name, init):
    """Library.init_struct (what bench_cuda.py builds its options with)
    accepts every options struct: the library writes the struct's whole
    size (tests/python/test_abi.py ties that size to octet.h's)."""
    cls = A.abi.STRUCTS[c_name]
    s = lib.init_struct(cls, init)
    assert s.struct_size == ctypes.sizeof(cls)


def test_init_struct_refuses_a_struct_the_library_writes_short(lib):
    """The legacy un-sized _init writes the ABI 1.4 size of current scaling's
    options: init_struct says so instead of using half-set options."""
    with pytest.raises(A.OctetError, match="LAYOUT_MISMATCH"):
        lib.init_struct(A.CurrentScalingOptions, "octet_current_scaling_options_init")


def test_errors_raise_with_the_library_message(lib):
    opts = lib.init_struct(A.ContextOptions, "octet_context_options_init")
    opts.backend = b"no-such-backend"
    ctx = ctypes.c_void_p()
    with pytest.raises(A.OctetError) as e:
        lib.call("octet_context_create", ctypes.byref(opts), ctypes.byref(ctx))
    assert e.value.status != 0
    assert e.value.status_name.startswith("OCTET_STATUS_")
    assert e.value.message, "octet_last_error_message() was empty"
    assert "no-such-backend" in str(e.value)


def test_backend_info_layout_reads_the_reference(lib):
    infos = lib.backends()
    assert infos and infos[0].name == b"reference"
    ref = infos[0]
    assert ref.memory_kind == A.MEMORY_HOST and ref.available == 1
    assert ref.abi_major == 1 and ref.alignment >= 1
    assert ref.features & A.FEATURE_GEMM_FP8
    assert isinstance(lib.failures(), list)
    assert "ABI 1." in lib.version_string()


class _HostContext:
    """A reference-backend context used to run the calls bench_cuda.py makes,
    through the same declarations, on host memory."""

    def __init__(self, lib):
        self.lib = lib
        opts = lib.init_struct(A.ContextOptions, "octet_context_options_init")
        opts.backend = b"reference"
        self.ctx = ctypes.c_void_p()
        lib.call("octet_context_create", ctypes.byref(opts), ctypes.byref(self.ctx))
        info = A.BackendInfo()
        info.struct_size = ctypes.sizeof(info)
        lib.call("octet_context_get_info", self.ctx, ctypes.byref(info))
        self.alignment = int(info.alignment) or 1
        self.keep = []

    def aligned(self, nbytes):
        raw = (ctypes.c_ubyte * (nbytes + self.alignment))()
        self.keep.append(raw)
        addr = ctypes.addressof(raw)
        return addr + (-addr) % self.alignment

    def wrap(self, dtype, shape, addr):
        d = A.make_desc(dtype, shape)
        h = ctypes.c_void_p()
        self.lib.call("octet_tensor_wrap", self.ctx, ctypes.byref(d), ctypes.c_void_p(addr), ctypes.byref(h))
        return h


def _bf16_matrix(lib, hc, values):
    n = len(values)
    addr = hc.aligned(2 * n)
    arr = (ctypes.c_uint16 * n).from_address(addr)
    for i, v in enumerate(values):
        arr[i] = lib.lib.octet_bf16_encode(v)
    return addr


def test_quantize_gemm_and_tensor_info_through_the_declarations(lib):
    hc = _HostContext(lib)
    rows, cols = 5, 7
    vals = [((i * 37) % 23 - 11) * 0.37 for i in range(rows * cols)]
    x = hc.wrap(A.DTYPE_BF16, (rows, cols), _bf16_matrix(lib, hc, vals))
    q = ctypes.c_void_p()
    d = A.make_desc(A.DTYPE_E4M3, (rows, cols), usages=A.USAGE_BOTH, scaling_mode=A.SCALING_PER_TENSOR)
    lib.call("octet_tensor_create", hc.ctx, ctypes.byref(d), ctypes.byref(q))
    info = A.TensorInfo()
    info.struct_size = ctypes.sizeof(info)
    lib.call("octet_tensor_get_info", q, ctypes.byref(info))
    assert (info.dtype, info.ndim, info.shape[0], info.shape[1]) == (A.DTYPE_E4M3, 2, rows, cols)
    assert info.usages == A.USAGE_BOTH and info.owns_memory == 1
    assert info.scaling_mode == A.SCALING_PER_TENSOR and (info.block_rows, info.block_cols) == (1, 1)
    assert info.has_rowwise_data == 1 and info.rowwise_bytes == rows * cols
    scale = ctypes.c_float(4.0)
    lib.call("octet_tensor_copy_from_host", q, A.COMPONENT_SCALE, ctypes.byref(scale), 4)
    opts = lib.init_struct(A.QuantizeOptions, "octet_quantize_options_init_sized")
    assert opts.usages == 0 and opts.saturate == 1
    lib.call("octet_quantize", hc.ctx, x, q, ctypes.byref(opts))
    lib.call("octet_context_synchronize", hc.ctx)
    codes = (ctypes.c_uint8 * (rows * cols))()
    lib.call("octet_tensor_copy_to_host", q, A.COMPONENT_DATA, codes, rows * cols)
    # the library's own codec on the FP32 products (BF16 of vals, times 4)
    decoded = []
    for v in vals:
        decoded.append(lib.lib.octet_bf16_decode(lib.lib.octet_bf16_encode(v)) * 4.0)
    prod = (ctypes.c_float * len(decoded))(*decoded)
    want = (ctypes.c_uint8 * len(decoded))()
    lib.call("octet_fp8_encode_array", prod, want, len(decoded), A.DTYPE_E4M3, 1)
    assert bytes(codes) == bytes(want)
    amax = ctypes.c_float()
    lib.call("octet_tensor_copy_to_host", q, A.COMPONENT_AMAX, ctypes.byref(amax), 4)
    assert amax.value == max(abs(v) / 4.0 for v in decoded)
    # GEMM through the declared options: D[m,n] = sum_k x[m,k] x[n,k] (TN, B = x)
    out_addr = hc.aligned(4 * rows * rows)
    dd = hc.wrap(A.DTYPE_FP32, (rows, rows), out_addr)
    g = lib.init_struct(A.GemmOptions, "octet_gemm_options_init_sized")
    assert (g.trans_a, g.trans_b, g.alpha, g.beta, g.bias, g.epilogue) == (0, 0, 1.0, 0.0, None, 0)
    lib.call("octet_gemm", hc.ctx, q, q, dd, ctypes.byref(g))
    lib.call("octet_context_synchronize", hc.ctx)
    out = (ctypes.c_float * (rows * rows)).from_address(out_addr)
    qv = [lib.lib.octet_fp8_decode(c, A.DTYPE_E4M3) / 4.0 for c in codes]
    for m in range(rows):
        for n in range(rows):
            ref = sum(qv[m * cols + k] * qv[n * cols + k] for k in range(cols))
            assert out[m * rows + n] == pytest.approx(ref, rel=1e-5, abs=1e-5)
    for h in (x, q, dd):
        lib.fn("octet_tensor_destroy")(h)
    lib.fn("octet_context_destroy")(hc.ctx)


@pytest.mark.parametrize("kind", ["current", "delayed"])
def test_linear_step_through_the_declarations(lib, kind):
    """The Linear calls of bench_cuda.py (recipe structs, linear options,
    set_weight on a wrapped tensor, autocast for delayed, forward/backward,
    gradient and quantizer info) on the reference backend."""
    hc = _HostContext(lib)
    t, k, n = 4, 8, 6
    rec = ctypes.c_void_p()
    if kind == "current":
        o = lib.init_struct(A.CurrentScalingOptions, "octet_current_scaling_options_init_sized")
        assert o.format == A.FORMAT_HYBRID and o.amax_epsilon == 0.0
        lib.call("octet_recipe_create_current", ctypes.byref(o), ctypes.byref(rec))
    else:
        o = lib.init_struct(A.DelayedScalingOptions, "octet_delayed_scaling_options_init")
        assert (o.margin, o.interval, o.format, o.amax_history_len, o.reduce_amax) == (0, 1, A.FORMAT_HYBRID,
                                                                                       1024, 1)
        o.amax_history_len = 16
        lib.call("octet_recipe_create_delayed", ctypes.byref(o), ctypes.byref(rec))
    lo = lib.init_struct(A.LinearOptions, "octet_linear_options_init")
    assert (lo.bias, lo.params_dtype, lo.skip_weight_allocation) == (1, A.DTYPE_FP32, 0)
    lo.in_features, lo.out_features, lo.bias, lo.params_dtype = k, n, 0, A.DTYPE_BF16
    lo.recipe = rec if kind == "current" else None
    lo.skip_weight_allocation = 1
    layer = ctypes.c_void_p()
    lib.call("octet_layer_create_linear", hc.ctx, ctypes.byref(lo), ctypes.byref(layer))
    idx = ctypes.c_size_t()
    lib.call("octet_layer_find_parameter", layer, b"weight", ctypes.byref(idx))
    w = hc.wrap(A.DTYPE_BF16, (n, k), _bf16_matrix(lib, hc, [((i % 7) - 3) * 0.05 for i in range(n * k)]))
    lib.call("octet_layer_set_weight", layer, idx.value, w)
    x = hc.wrap(A.DTYPE_BF16, (t, k), _bf16_matrix(lib, hc, [((i % 5) - 2) * 0.5 for i in range(t * k)]))
    dy = hc.wrap(A.DTYPE_BF16, (t, n), _bf16_matrix(lib, hc, [((i % 3) - 1) * 0.01 for i in range(t * n)]))
    y = hc.wrap(A.DTYPE_BF16, (t, n), hc.aligned(2 * t * n))
    dx = hc.wrap(A.DTYPE_BF16, (t, k), hc.aligned(2 * t * k))
    for _ in range(2):
        saved = ctypes.c_void_p()
        if kind == "delayed":
            lib.call("octet_autocast_begin", hc.ctx, rec)
        lib.call("octet_layer_forward", layer, x, y, 1, ctypes.byref(saved))
        assert saved.value
        lib.call("octet_layer_backward", layer, ctypes.byref(saved), dy, dx, 0)
        assert not saved.value  # consumed
        if kind == "delayed":
            lib.call("octet_autocast_end", hc.ctx)
    g = ctypes.c_void_p()
    lib.call("octet_layer_get_gradient", layer, idx.value, ctypes.byref(g))
    gi = A.TensorInfo()
    gi.struct_size = ctypes.sizeof(gi)
    lib.call("octet_tensor_get_info", g, ctypes.byref(gi))
    assert (gi.dtype, gi.shape[0], gi.shape[1], gi.rowwise_bytes) == (A.DTYPE_BF16, n, k, 2 * n * k)
    qz = ctypes.c_void_p()
    lib.call("octet_layer_get_quantizer", layer, 0, A.ROLE_GRADIENT, ctypes.byref(qz))
    qi = A.QuantizerInfo()
    qi.struct_size = ctypes.sizeof(qi)
    lib.call("octet_quantizer_get_info", qz, ctypes.byref(qi))
    assert qi.role == A.ROLE_GRADIENT
    assert qi.recipe_kind == (A.RECIPE_CURRENT if kind == "current" else A.RECIPE_DELAYED)
    # dy amax is 0.01 (BF16 of it); E5M2 max 57344
    amax = lib.lib.octet_bf16_decode(lib.lib.octet_bf16_encode(0.01))
    assert qi.scale == pytest.approx(57344.0 / amax, rel=1e-6)
    if kind == "delayed":
        assert qi.update_count == 2 and qi.amax_history_len == 16
    lib.fn("octet_layer_destroy")(layer)
    for h in (w, x, dy, y, dx):
        lib.fn("octet_tensor_destroy")(h)
    lib.fn("octet_recipe_destroy")(rec)
    lib.fn("octet_context_destroy")(hc.ctx)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                    reason="needs torch (pip install torch; a CPU build suffices): the host dry run of the checks")
def test_checks_pass_on_the_reference_backend_with_cpu_torch(lib, tmp_path):
    """Where torch is installed: the numerics checks of bench_cuda.py, run on
    the reference backend with CPU tensors (host dry run)."""
    out = tmp_path / "checks.md"
    r = subprocess.run([sys.executable, str(HERE / "bench_cuda.py"), "--check", "--backend", "reference",
                        "--lib", lib.path, "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    text = out.read_text()
    assert text.count("| ok |") >= 4 and "FAILED" not in text
