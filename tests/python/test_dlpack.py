"""DLPack both ways (docs/python.md, "DLPack"): octet Tensors read and
written by NumPy and PyTorch without copies, NumPy arrays and torch CPU
tensors (float32, bfloat16, float8_e4m3fn, float8_e5m2) imported without
copies, lifetimes in both orders of release, and clear refusals. Run under
ASan by .ci/sanitize, where a deleter called twice or memory freed too
early fails."""

import gc
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import octet

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(params=["reference", "cpu"])
def ctx(request):
    if request.param not in [b["name"] for b in octet.backends() if b["available"]]:
        pytest.skip(f"the {request.param} backend is not registered (build with -DOCTET_WITH_ONEDNN=ON)")
    with octet.Context(request.param) as c:
        yield c


def user_bytes(ctx):
    return ctx.memory_stats()["user tensors"]["current"]


# ---- octet -> NumPy -----------------------------------------------------------------------

def test_numpy_shares_an_octet_tensors_memory(ctx):
    t = ctx.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    assert a.shape == (2, 3) and a.dtype == np.float32 and a.flags.writeable
    a[0, 0] = 42.0                      # NumPy writes, octet reads
    assert t.numpy()[0, 0] == 42.0
    ctx_write = np.full((2, 3), 7.0, np.float32)
    octet_lib = octet._lib.lib
    assert octet_lib.octet_tensor_copy_from_host(t.handle, octet.DATA, ctx_write.ctypes.data, 24) == 0
    assert a[1, 2] == 7.0               # octet writes, NumPy reads


def test_an_octet_export_outlives_its_tensor_and_is_freed_once(ctx):
    t = ctx.tensor(np.arange(4, dtype=np.float32))
    held = user_bytes(ctx)
    a = np.from_dlpack(t)
    t.close()                           # the producer goes first
    gc.collect()
    assert user_bytes(ctx) == held      # the export holds the memory
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
    a[3] = -1.0
    del a                               # NumPy calls the deleter
    gc.collect()
    assert user_bytes(ctx) == 0


def test_a_numpy_view_released_before_the_tensor_leaves_it_intact(ctx):
    t = ctx.tensor(np.arange(4, dtype=np.float32))
    a = np.from_dlpack(t)
    del a
    gc.collect()
    assert t.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    b = np.from_dlpack(t)               # again, then the capsule only
    capsule = t.__dlpack__(max_version=(1, 0))
    del capsule                         # never consumed: its destructor calls the deleter
    gc.collect()
    assert b.sum() == 6.0
    del b
    t.close()
    gc.collect()
    assert user_bytes(ctx) == 0


def test_export_refuses_copies_and_other_devices(ctx):
    t = ctx.tensor(np.ones(3, np.float32))
    with pytest.raises(BufferError, match="without copying"):
        t.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="device"):
        t.__dlpack__(dl_device=(2, 0))
    assert np.from_dlpack(t, copy=False).sum() == 3.0


# ---- NumPy -> octet -----------------------------------------------------------------------

def test_octet_imports_a_numpy_array_without_copying(ctx):
    a = octet.aligned_empty((3, 4), np.float32)
    a[...] = np.arange(12, dtype=np.float32).reshape(3, 4)
    refs = sys.getrefcount(a)
    t = ctx.from_dlpack(a)
    assert sys.getrefcount(a) == refs + 1   # NumPy's manager holds the array
    assert t.shape == (3, 4) and t.dtype == octet.FP32 and t.info()["owns_memory"] == 0
    a[2, 3] = 99.0
    assert t.numpy()[2, 3] == 99.0
    assert ctx.amax(t) == 99.0
    t.close()                               # the deleter, exactly once
    assert sys.getrefcount(a) == refs


def test_an_imported_array_may_outlive_its_producers_name(ctx):
    a = octet.aligned_empty((8,), np.float32)
    a[...] = 2.0
    t = ctx.from_dlpack(a)
    del a                                   # the producer's name goes first
    gc.collect()
    assert t.numpy().tolist() == [2.0] * 8
    t.close()


def test_element_aligned_numpy_memory_is_imported_in_place(ctx):
    """Arrays aligned to their elements only (4 bytes past a 64-byte
    boundary) are imported without a copy: writes on either side are seen on
    the other, a GEMM writes its result into such an array, and a quantize
    and a GEMM on them give what they give on aligned copies."""
    def offset_array(rows, cols, seed):
        raw = octet.aligned_empty((1 + rows * cols,), np.float32)
        raw[:] = np.random.default_rng(seed).standard_normal(raw.size).astype(np.float32)
        a = raw[1:].reshape(rows, cols)
        assert a.ctypes.data % 64 == 4
        return a

    x = offset_array(32, 16, 3)
    t = ctx.from_dlpack(x)
    assert np.from_dlpack(t).ctypes.data == x.ctypes.data
    x[0, 0] = 7.0                           # NumPy writes, octet reads
    assert t.numpy()[0, 0] == 7.0
    aligned = ctx.from_dlpack(octet.aligned_empty((32, 16), np.float32))
    np.from_dlpack(aligned)[:] = x
    out = offset_array(32, 32, 4)
    ctx.gemm(t, t, out=ctx.from_dlpack(out))  # octet writes into the array itself
    np.testing.assert_array_equal(out, ctx.gemm(aligned, aligned).numpy())
    q_offset = ctx.quantize(t, octet.E4M3, scale=8.0)
    q_aligned = ctx.quantize(aligned, octet.E4M3, scale=8.0)
    np.testing.assert_array_equal(q_offset.codes(), q_aligned.codes())
    t.close()
    aligned.close()


def test_misaligned_and_read_only_numpy_memory_are_refused(ctx):
    raw = octet.aligned_empty((65,), np.uint8)
    odd = raw[1:].view(np.float32)  # 1 byte past a boundary: no float32 is aligned there
    refs = sys.getrefcount(raw)
    with pytest.raises(octet.OctetError, match=r"not aligned to 4 bytes.*octet.aligned_empty"):
        ctx.from_dlpack(odd)
    del odd
    readonly = octet.aligned_empty((4,), np.float32)
    readonly.flags.writeable = False
    with pytest.raises((octet.OctetError, BufferError), match="(?i)read.?only"):
        ctx.from_dlpack(readonly)
    gc.collect()
    assert sys.getrefcount(raw) == refs    # the refused capsule's deleter ran


def test_octet_to_octet(ctx):
    with octet.Context("reference", profile="hopper-like") as other:
        t = ctx.tensor(np.arange(4, dtype=np.float32))
        u = other.from_dlpack(t)
        u_write = np.full(4, 5.0, np.float32)
        assert octet._lib.lib.octet_tensor_copy_from_host(u.handle, octet.DATA, u_write.ctypes.data, 16) == 0
        assert t.numpy().tolist() == [5.0] * 4
        t.close()
        assert u.numpy().tolist() == [5.0] * 4
        u.close()
    gc.collect()
    assert user_bytes(ctx) == 0


def test_legacy_and_versioned_capsules_and_a_consumed_one(ctx):
    t = ctx.tensor(np.arange(4, dtype=np.float32))
    for capsule in (t.__dlpack__(), t.__dlpack__(max_version=(1, 3))):  # legacy, versioned
        u = ctx.from_dlpack(capsule)
        assert u.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
        with pytest.raises(ValueError, match="consumed already"):
            ctx.from_dlpack(capsule)
        u.close()
    t.close()
    gc.collect()
    assert user_bytes(ctx) == 0


def test_module_level_from_dlpack_picks_a_host_context():
    a = octet.aligned_empty((2, 2), np.float32)
    a[...] = 1.5
    t = octet.from_dlpack(a)
    assert t._context.info()["memory"] == "host"
    assert t.numpy().tolist() == [[1.5, 1.5], [1.5, 1.5]]
    with pytest.raises(TypeError, match="__dlpack__"):
        octet.from_dlpack(object(), context=t._context)


# ---- quantized tensors --------------------------------------------------------------------

def test_a_quantized_tensor_exports_its_codes_and_scales(ctx):
    q = ctx.quantize(np.array([[1.0, -2.0], [0.5, 4.0]], np.float32), octet.E4M3)
    scale_inv = np.from_dlpack(q.dlpack_component(octet.SCALE_INV))
    assert scale_inv.shape == (1,) and scale_inv[0] == np.float32(q.component(octet.SCALE_INV))
    assert np.from_dlpack(q.dlpack_component(octet.AMAX))[0] == 4.0
    plain = ctx.tensor(np.ones(2, np.float32))
    with pytest.raises(octet.OctetError, match="only on a quantized tensor"):
        plain.dlpack_component(octet.SCALE).__dlpack__()
    with pytest.raises(TypeError, match="octet component"):
        plain.dlpack_component("scale")


# ---- PyTorch ------------------------------------------------------------------------------

torch_dtypes = ["float32", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
octet_dtypes = {"float32": octet.FP32, "bfloat16": octet.BF16, "float8_e4m3fn": octet.E4M3,
                "float8_e5m2": octet.E5M2}


@pytest.mark.parametrize("name", torch_dtypes)
def test_torch_cpu_tensors_both_ways(ctx, name):
    torch = pytest.importorskip("torch")
    dtype = getattr(torch, name, None)
    if dtype is None:
        pytest.skip(f"this torch has no {name}")
    x = torch.ones(4, 8, dtype=torch.float32).to(dtype)
    t = ctx.from_dlpack(x)                   # torch -> octet
    assert t.dtype == octet_dtypes[name] and t.shape == (4, 8)
    x[1, 2] = 2.0                            # torch writes, octet reads
    assert t.values()[1, 2] == 2.0
    y = torch.from_dlpack(t)                 # octet -> torch: the same memory
    assert y.dtype == dtype and y.data_ptr() == x.data_ptr()
    y[3, 7] = -4.0
    assert float(x[3, 7].float()) == -4.0
    del x, y                                 # the producer first
    gc.collect()
    assert t.values()[3, 7] == -4.0 and t.values()[1, 2] == 2.0
    t.close()


def test_torch_takes_a_legacy_capsule(ctx):
    torch = pytest.importorskip("torch")
    t = ctx.tensor(np.arange(4, dtype=np.float32))
    y = torch.utils.dlpack.from_dlpack(t.__dlpack__())
    t.close()
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0]
    del y
    gc.collect()
    assert user_bytes(ctx) == 0


def test_torch_releases_before_octet_and_after(ctx):
    torch = pytest.importorskip("torch")
    t = ctx.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    held = user_bytes(ctx)
    y = torch.from_dlpack(t)
    t.close()                                # octet's name first
    gc.collect()
    assert user_bytes(ctx) == held and y.sum().item() == 15.0
    del y                                    # torch calls the deleter
    gc.collect()
    assert user_bytes(ctx) == 0
    x = torch.arange(4, dtype=torch.float32)
    u = octet.from_dlpack(x, context=ctx)
    u.close()                                # octet's tensor first: torch's storage lives on
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_non_contiguous_torch_tensors_are_refused_not_copied(ctx):
    torch = pytest.importorskip("torch")
    base = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    with pytest.raises(octet.OctetError, match=r"strides \(1, 8\) are not compact row-major.*\.contiguous\(\)"):
        ctx.from_dlpack(base.t())
    with pytest.raises(octet.OctetError, match=r"strides \(16, 1\) are not compact row-major"):
        ctx.from_dlpack(base[::2])
    t = ctx.from_dlpack(base.t().contiguous())
    assert t.shape == (8, 4)
    t.close()


def test_torch_reads_a_quantized_tensors_codes(ctx):
    torch = pytest.importorskip("torch")
    q = ctx.quantize(np.array([[1.0, -2.0], [0.5, 4.0]], np.float32), octet.E4M3)
    codes = torch.from_dlpack(q)
    assert codes.dtype == torch.float8_e4m3fn
    assert codes.view(torch.uint8).numpy().tolist() == q.codes().tolist()
    scale_inv = torch.from_dlpack(q.dlpack_component(octet.SCALE_INV))
    assert (codes.float() * scale_inv).tolist() == q.values().tolist()


def test_a_cuda_tensor_is_refused_on_a_host_context(ctx):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    with pytest.raises(BufferError, match="host"):
        ctx.from_dlpack(torch.ones(4, device="cuda"))


# ---- the header against PyTorch's dlpack.h ------------------------------------------------

def test_octet_dlpack_h_has_dlpack_h_layout():
    """sizeof and every offsetof of the octet_dlpack_* structs equal those of
    the DLPack structs in the dlpack.h that PyTorch installs."""
    torch = pytest.importorskip("torch")
    header = pathlib.Path(torch.__file__).parent / "include" / "ATen" / "dlpack.h"
    cc = next((shutil.which(c) for c in (os.environ.get("CC"), "cc", "gcc") if c and shutil.which(c)), None)
    if not header.exists() or cc is None:
        pytest.skip("no dlpack.h in this torch, or no C compiler")
    pairs = {"octet_dlpack_version": ("DLPackVersion", ["major", "minor"]),
             "octet_dlpack_device": ("DLDevice", ["device_type", "device_id"]),
             "octet_dlpack_dtype": ("DLDataType", ["code", "bits", "lanes"]),
             "octet_dlpack_tensor": ("DLTensor", ["data", "device", "ndim", "dtype", "shape", "strides",
                                                  "byte_offset"]),
             "octet_dlpack_managed_tensor": ("DLManagedTensor", ["dl_tensor", "manager_ctx", "deleter"]),
             "octet_dlpack_managed_tensor_versioned": ("DLManagedTensorVersioned",
                                                       ["version", "manager_ctx", "deleter", "flags", "dl_tensor"])}
    lines = [f'#include "{header}"', "#include <octet/octet_dlpack.h>", "#include <stddef.h>"]
    for ours, (theirs, fields) in pairs.items():
        lines.append(f"_Static_assert(sizeof({ours}) == sizeof({theirs}), \"{ours}\");")
        lines.append(f"_Static_assert(_Alignof({ours}) == _Alignof({theirs}), \"{ours}\");")
        for f in fields:
            lines.append(f"_Static_assert(offsetof({ours}, {f}) == offsetof({theirs}, {f}), \"{ours}.{f}\");")
    lines += ["_Static_assert(sizeof(DLDeviceType) == sizeof(int32_t), \"enum size\");",
              "_Static_assert(kDLFloat8_e4m3fn == OCTET_DLPACK_CODE_FLOAT8_E4M3FN, \"e4m3\");",
              "_Static_assert(kDLFloat8_e5m2 == OCTET_DLPACK_CODE_FLOAT8_E5M2, \"e5m2\");",
              "_Static_assert(kDLFloat8_e8m0fnu == OCTET_DLPACK_CODE_FLOAT8_E8M0FNU, \"e8m0\");",
              "_Static_assert(kDLBfloat == OCTET_DLPACK_CODE_BFLOAT && kDLFloat == OCTET_DLPACK_CODE_FLOAT, \"\");",
              "_Static_assert(kDLCPU == OCTET_DLPACK_DEVICE_CPU && kDLCUDA == OCTET_DLPACK_DEVICE_CUDA, \"\");",
              "_Static_assert(kDLCUDAHost == OCTET_DLPACK_DEVICE_CUDA_HOST, \"\");",
              "_Static_assert(kDLCUDAManaged == OCTET_DLPACK_DEVICE_CUDA_MANAGED, \"\");",
              "_Static_assert(DLPACK_FLAG_BITMASK_READ_ONLY == OCTET_DLPACK_FLAG_READ_ONLY, \"\");",
              "_Static_assert(DLPACK_FLAG_BITMASK_IS_COPIED == OCTET_DLPACK_FLAG_IS_COPIED, \"\");",
              "_Static_assert(DLPACK_MAJOR_VERSION == OCTET_DLPACK_MAJOR_VERSION, \"\");",
              "int main(void) { return 0; }"]
    with tempfile.TemporaryDirectory() as tmp:
        source = pathlib.Path(tmp) / "layout.c"
        source.write_text("\n".join(lines) + "\n")
        r = subprocess.run([cc, "-std=c11", f"-I{REPO / 'api' / 'include'}", "-fsyntax-only", str(source)],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
