"""Target `onnxruntime`: Cast (FP32/FP16/BF16 <-> float8 and float4, with
saturate 1 and 0), QuantizeLinear and DequantizeLinear (per-tensor,
per-axis, blocked) on float8 and float4, each as a one-node model built
in memory with onnx.helper and run by the execution provider of the
device (CPU, or CUDA)."""

import ctypes

import numpy as np

from . import checks

NAME, INSTALL = "onnxruntime", "pip install onnxruntime onnx"
ONNX_TYPES = {"e4m3fn": "FLOAT8E4M3FN", "e4m3fnuz": "FLOAT8E4M3FNUZ", "e5m2": "FLOAT8E5M2",
              "e5m2fnuz": "FLOAT8E5M2FNUZ", "e8m0fnu": "FLOAT8E8M0", "e2m1fn": "FLOAT4E2M1"}
OPSETS = (21, 23, 24, 25)  # tried in turn: the first the runtime implements the node at
# What ONNX Cast pins that OCP leaves open: round_mode "up" to E8M0 by default.
CAST_RULES = {"e8m0_rounding": "up"}


def load():
    import onnx  # noqa: F401  (models are built with onnx.helper)
    import onnxruntime
    return onnxruntime, f"{onnxruntime.__version__} (onnx {onnx.__version__})"


def device_problem(ort, device):
    wanted = "CUDAExecutionProvider" if device == "cuda" else "CPUExecutionProvider"
    if wanted not in ort.get_available_providers():
        return f"{wanted} is not available (onnxruntime-gpu provides it: pip install onnxruntime-gpu)"
    return None


class Node:
    """One ONNX node as a model: run(feeds) with numpy arrays or (raw bytes
    array, onnx type) pairs, returning the output's raw bytes."""

    def __init__(self, ort, device, op, inputs, out_type, attrs, inits=()):
        from onnx import helper
        self.ort, self.out_type = ort, out_type
        self.providers = ["CUDAExecutionProvider" if device == "cuda" else "CPUExecutionProvider"]
        node = helper.make_node(op, [n for n, _ in inputs] + [i.name for i in inits], ["y"], **attrs)
        errors = []
        for opset in OPSETS:
            graph = helper.make_graph([node], "audit", [helper.make_tensor_value_info(n, t, None) for n, t in inputs],
                                      [helper.make_tensor_value_info("y", out_type, None)], initializer=list(inits))
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
            model.ir_version = 11
            try:
                options = ort.SessionOptions()
                options.log_severity_level = 3
                self.session = ort.InferenceSession(model.SerializeToString(), options, providers=self.providers)
                self.opset = opset
                return
            except Exception as e:  # onnxruntime raises its own exception types
                errors.append(f"opset {opset}: {str(e).splitlines()[0][:160]}")
        raise checks.Unsupported("onnxruntime has no implementation: " + "; ".join(errors[-1:]))

    def run(self, feeds, shape, out_bytes):
        binding = self.session.io_binding()
        keep = []
        for name, value in feeds.items():
            if isinstance(value, tuple):  # raw codes of an ONNX type numpy lacks
                data, onnx_type = value
                ov = self.ort.OrtValue.ortvalue_from_shape_and_type(list(data.shape_logical), onnx_type)
                ctypes.memmove(ov.data_ptr(), data.ctypes.data, data.nbytes)
                binding.bind_ortvalue_input(name, ov)
                keep.append(ov)
            else:
                binding.bind_cpu_input(name, np.ascontiguousarray(value))
        out = self.ort.OrtValue.ortvalue_from_shape_and_type(list(shape), self.out_type)
        binding.bind_ortvalue_output("y", out)
        try:
            self.session.run_with_iobinding(binding)
        except Exception as e:
            raise checks.Unsupported(f"onnxruntime refuses it: {str(e).splitlines()[0][:200]}") from None
        return np.frombuffer(ctypes.string_at(out.data_ptr(), out_bytes), dtype=np.uint8).copy()


class Raw(np.ndarray):
    """uint8/uint16 bytes standing for a tensor of another shape (packed FP4)."""


def raw(data, shape):
    r = np.ascontiguousarray(data).view(Raw)
    r.shape_logical = tuple(shape)
    return r


def unpack4(packed, n):
    out = np.empty(n, dtype=np.uint8)
    out[0::2] = packed[:(n + 1) // 2] & 0xF
    out[1::2] = packed[:n // 2] >> 4
    return out


def pack4(codes):
    flat = np.asarray(codes, dtype=np.uint8).reshape(-1)
    packed = np.zeros((flat.size + 1) // 2, dtype=np.uint8)
    packed |= flat[0::2]
    packed[:flat.size // 2] |= flat[1::2] << 4
    return packed


def _lazy(factory):
    """fn whose Node is built on first call (an Unsupported then is the check's)."""
    state = {}

    def get():
        if "node" not in state:
            state["node"] = factory()
        return state["node"]
    return get


def build(ort, device):
    from onnx import TensorProto as T
    ops = []
    for fmt, tname in ONNX_TYPES.items():
        t = getattr(T, tname, None)
        if t is None:
            ops.append(checks.unsupported(f"Cast fp32->{fmt}", "cast", f"this onnx has no TensorProto.{tname}"))
            continue
        four = fmt == "e2m1fn"
        nbytes = (lambda n: (n + 1) // 2) if four else (lambda n: n)
        modes = (1,) if fmt == "e8m0fnu" else (1, 0)
        for source, src_type in (("fp32", T.FLOAT), ("fp16", T.FLOAT16), ("bf16", T.BFLOAT16)):
            for sat in modes:
                node = _lazy(lambda src_type=src_type, t=t, sat=sat: Node(ort, device, "Cast", [("x", src_type)], t,
                                                                         {"to": t, "saturate": sat}))

                def fn(a, node=node, source=source, src_type=src_type, four=four, nbytes=nbytes):
                    feed = raw(a.view(np.uint16), a.shape) if source == "bf16" else a
                    feed = (feed, src_type) if source == "bf16" else feed
                    out = node().run({"x": feed}, a.shape, nbytes(a.size))
                    return unpack4(out, a.size) if four else out
                label = f"Cast {source}->{fmt}" + ("" if fmt == "e8m0fnu" else f" saturate={sat}")
                ops.append(checks.encode(label, fmt, source, bool(sat), fn, CAST_RULES))
        for dest, dst_type, view in (("fp32", T.FLOAT, np.uint32), ("fp16", T.FLOAT16, np.uint16),
                                     ("bf16", T.BFLOAT16, np.uint16)):
            node = _lazy(lambda t=t, dst_type=dst_type: Node(ort, device, "Cast", [("x", t)], dst_type,
                                                             {"to": dst_type}))

            def fn(codes, node=node, t=t, four=four, view=view):
                data = pack4(codes) if four else codes
                out = node().run({"x": (raw(data, codes.shape), t)}, codes.shape,
                                 codes.size * np.dtype(view).itemsize)
                return out.view(view)
            ops.append(checks.decode(f"Cast {fmt}->{dest}", fmt, dest, fn))
    ops += quantize_checks(ort, device, T)
    return ops


def quantize_checks(ort, device, T):
    from onnx import helper
    ops = []
    for fmt in ("e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "e2m1fn"):
        t = getattr(T, ONNX_TYPES[fmt])
        four = fmt == "e2m1fn"
        for granularity in ("per-tensor", "per-axis", "blocked"):
            for sat in ((1,) if four else (1, 0)):
                if granularity == "blocked" and sat == 0 and not four:
                    continue
                cache = {}

                def fn(x, scale, axis, block, saturate, cache=cache, t=t, four=four, sat=sat, granularity=granularity):
                    scale = np.asarray(scale, dtype=np.float32)
                    key = scale.shape
                    if key not in cache:
                        zp_shape = list(scale.shape)
                        zp = helper.make_tensor("zp", t, zp_shape, np.zeros(int(np.prod(zp_shape)), np.float32).tolist())
                        attrs = {"axis": axis} if granularity != "per-tensor" else {}
                        if block:
                            attrs["block_size"] = block
                        if not four:
                            attrs["saturate"] = sat
                        cache[key] = Node(ort, device, "QuantizeLinear", [("x", T.FLOAT), ("s", T.FLOAT)], t, attrs,
                                          [zp])
                    out = cache[key].run({"x": x, "s": scale}, x.shape, (x.size + 1) // 2 if four else x.size)
                    return unpack4(out, x.size).reshape(x.shape) if four else out.reshape(x.shape)
                label = f"QuantizeLinear fp32->{fmt} {granularity}" + ("" if four else f" saturate={sat}")
                ops.append(checks.quantize_check(label, fmt, granularity, bool(sat), fn))
        for granularity in ("per-tensor", "per-axis", "blocked"):
            cache = {}

            def fn(codes, scale, axis, block, cache=cache, t=t, four=four, granularity=granularity):
                scale = np.asarray(scale, dtype=np.float32)
                if scale.shape not in cache:
                    attrs = {"axis": axis} if granularity != "per-tensor" else {}
                    if block:
                        attrs["block_size"] = block
                    cache[scale.shape] = Node(ort, device, "DequantizeLinear", [("x", t), ("s", T.FLOAT)], T.FLOAT,
                                              attrs)
                data = pack4(codes) if four else codes
                out = cache[scale.shape].run({"x": (raw(data, codes.shape), t), "s": scale}, codes.shape,
                                             codes.size * 4)
                return out.view(np.float32).reshape(codes.shape)
            ops.append(checks.dequantize_check(f"DequantizeLinear {fmt}->fp32 {granularity}", fmt, granularity, fn))
    return ops
