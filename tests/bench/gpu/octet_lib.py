"""liboctet for the GPU benchmark, through the Python package's ctypes
declarations of octet.h (api/python/octet/_abi.py: the repository's only
one, checked against the header by tests/python/test_abi.py).

_abi.py is loaded by path, not through `import octet`: the benchmark picks
the library file itself (--lib, OCTET_LIBRARY or a build folder) and needs
neither NumPy nor the package's own library search. Its constants and
structs are re-exported here (DTYPE_E4M3, TensorDesc, ...), so the
benchmark writes octet_lib.DTYPE_E4M3 for octet.h's OCTET_DTYPE_E4M3."""

import ctypes
import importlib.util
import os
import pathlib

_c = ctypes
_REPO = pathlib.Path(__file__).resolve().parents[3]
ABI_FILE = _REPO / "api" / "python" / "octet" / "_abi.py"


def _load_declarations():
    spec = importlib.util.spec_from_file_location("octet_abi_declarations", ABI_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


abi = _load_declarations()
globals().update({k: v for k, v in vars(abi).items() if not k.startswith("_") and k.isidentifier()
                  and (k.isupper() or isinstance(v, type))})
STATUS_SUCCESS = abi.STATUS_SUCCESS


class OctetError(RuntimeError):
    """An Octet call returned a status other than SUCCESS."""

    def __init__(self, call, status, name, message):
        super().__init__(f"{call} failed: {name} ({status}): {message}")
        self.call, self.status, self.status_name, self.message = call, status, name, message


def default_library_candidates(repo_root):
    """Where liboctet is looked for when no path is given: OCTET_LIBRARY,
    then the build folders .ci/gpu and CI use."""
    out = []
    if os.environ.get("OCTET_LIBRARY"):
        out.append(os.environ["OCTET_LIBRARY"])
    root = pathlib.Path(repo_root)
    for build in (os.environ.get("OCTET_GPU_BUILD_DIR", "build-gpu"), "build", "build-gpub"):
        out.append(str(root / build / "lib" / "liboctet.so"))
    return out


class Library:
    """liboctet loaded with the declarations above; `call` raises OctetError
    with octet_last_error_message() on failure."""

    def __init__(self, path):
        self.path = str(path)
        self.lib = _c.CDLL(self.path)
        missing = abi.declare(self.lib)
        if missing:
            raise OctetError("dlsym", -1, "MISSING_SYMBOL",
                             f"{self.path} lacks: {', '.join(missing)} (older than api/python/octet/_abi.py)")

    def fn(self, name):
        return getattr(self.lib, name)

    def last_error(self):
        msg = self.lib.octet_last_error_message()
        return msg.decode(errors="replace") if msg else ""

    def call(self, name, *args):
        status = getattr(self.lib, name)(*args)
        if status != STATUS_SUCCESS:
            message = self.last_error()
            sname = self.lib.octet_status_name(status)
            raise OctetError(name, status, sname.decode() if sname else "?", message)
        return status

    def init_struct(self, cls, init_name):
        """An option struct filled by its `_init` function. The struct lives
        in a buffer with room to spare: a newer liboctet whose struct has
        more (appended, ABI minor) fields writes them there, sets
        struct_size to its own size, and so reads its own defaults for the
        fields these declarations do not know."""
        room = max(_c.sizeof(cls), 1024)
        buf = (_c.c_ubyte * room)()
        s = cls.from_buffer(buf)  # keeps buf alive
        if init_name.endswith("_sized"):  # ABI 1.4+: told the room it may fill
            self.call(init_name, _c.byref(s), room)
        else:
            self.call(init_name, _c.byref(s))
        if s.struct_size < _c.sizeof(cls) or s.struct_size > room:
            raise OctetError(init_name, -1, "LAYOUT_MISMATCH",
                             f"wrote struct_size {s.struct_size}; {cls.__name__} here has "
                             f"{_c.sizeof(cls)} bytes: update api/python/octet/_abi.py")
        return s

    def backends(self):
        count = _c.c_size_t(0)
        self.call("octet_backend_count", _c.byref(count))
        out = []
        for i in range(count.value):
            info = BackendInfo()
            info.struct_size = _c.sizeof(info)
            self.call("octet_backend_get_info", i, _c.byref(info))
            out.append(info)
        return out

    def failures(self):
        count = _c.c_size_t(0)
        self.call("octet_backend_failure_count", _c.byref(count))
        out = []
        for i in range(count.value):
            f = BackendFailure()
            f.struct_size = _c.sizeof(f)
            self.call("octet_backend_get_failure", i, _c.byref(f))
            out.append((f.path.decode(errors="replace") if f.path else "",
                        f.reason.decode(errors="replace") if f.reason else ""))
        return out

    def version_string(self):
        v = self.lib.octet_library_version()
        a = self.lib.octet_abi_version()
        return f"{v.major}.{v.minor}.{v.patch} (ABI {a.major}.{a.minor})"


def make_desc(dtype, shape, usages=0, scaling_mode=0):
    d = TensorDesc()
    d.struct_size = _c.sizeof(d)
    d.dtype = dtype
    d.ndim = len(shape)
    for i, s in enumerate(shape):
        d.shape[i] = int(s)
    d.usages = usages
    d.scaling_mode = scaling_mode
    return d
