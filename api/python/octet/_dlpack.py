"""DLPack for the Python package: what Tensor.__dlpack__ / __dlpack_device__,
Tensor.dlpack_component, Context.from_dlpack and octet.from_dlpack do
underneath (octet_dlpack.h; docs/python.md, "DLPack"). This module knows
tensors and contexts only by the attributes it uses (handle, _context,
info(), synchronize()): they import it, not the other way round.

Capsules follow the Python DLPack protocol: a producer hands out a
PyCapsule named "dltensor_versioned" (DLPack >= 1.0) or "dltensor"
(legacy); the consumer that takes it renames it "used_dltensor_versioned" /
"used_dltensor" and from then on calls the deleter itself. A capsule
nobody consumed calls the deleter when it is garbage collected.

Nothing here copies: an import is refused, with the library's message, when
Octet cannot address the memory as it is (non-contiguous, misaligned,
read-only, another device)."""

import ctypes as _c

from . import _abi
from ._errors import _check
from ._lib import lib as _libc

_VERSIONED, _LEGACY = b"dltensor_versioned", b"dltensor"
_USED = {_VERSIONED: b"used_dltensor_versioned", _LEGACY: b"used_dltensor"}
# PyCapsule keeps the name's pointer, not a copy: these buffers live as long
# as the module.
_NAMES = {name: _c.create_string_buffer(name) for name in (_VERSIONED, _LEGACY, *_USED.values())}

# The CPython capsule API, as prototypes (the package sets no argtypes
# outside _abi.py). PYFUNCTYPE: called with the GIL held.
_capsule_new = _c.PYFUNCTYPE(_c.py_object, _c.c_void_p, _c.c_void_p, _c.c_void_p)(("PyCapsule_New", _c.pythonapi))
_capsule_name = _c.PYFUNCTYPE(_c.c_char_p, _c.py_object)(("PyCapsule_GetName", _c.pythonapi))
_capsule_pointer = _c.PYFUNCTYPE(_c.c_void_p, _c.py_object, _c.c_void_p)(("PyCapsule_GetPointer", _c.pythonapi))
_capsule_set_name = _c.PYFUNCTYPE(_c.c_int, _c.py_object, _c.c_void_p)(("PyCapsule_SetName", _c.pythonapi))
# In the destructor the capsule is being freed: it is passed as a plain
# address, never turned into a Python object.
_raw_is_valid = _c.PYFUNCTYPE(_c.c_int, _c.c_void_p, _c.c_void_p)(("PyCapsule_IsValid", _c.pythonapi))
_raw_pointer = _c.PYFUNCTYPE(_c.c_void_p, _c.c_void_p, _c.c_void_p)(("PyCapsule_GetPointer", _c.pythonapi))

_DEVICE_CPU, _DEVICE_CUDA = _abi.DLPACK_DEVICE_CPU, _abi.DLPACK_DEVICE_CUDA
HOST_DEVICES = (_abi.DLPACK_DEVICE_CPU, _abi.DLPACK_DEVICE_CUDA_HOST, _abi.DLPACK_DEVICE_CUDA_MANAGED)
CUDA_DEVICES = (_abi.DLPACK_DEVICE_CUDA, _abi.DLPACK_DEVICE_CUDA_MANAGED)


def _call_deleter(name, address):
    if name == _VERSIONED:
        managed = _c.cast(address, _c.POINTER(_abi.DLPackManagedTensorVersioned))
    else:
        managed = _c.cast(address, _c.POINTER(_abi.DLPackManagedTensor))
    if managed.contents.deleter:
        managed.contents.deleter(managed)


@_c.CFUNCTYPE(None, _c.c_void_p)
def _capsule_destructor(capsule):
    """Calls the deleter of a capsule no consumer took (its name unchanged)."""
    try:
        for name in (_VERSIONED, _LEGACY):
            if _raw_is_valid(capsule, _c.addressof(_NAMES[name])):
                _call_deleter(name, _raw_pointer(capsule, _c.addressof(_NAMES[name])))
                return
    except Exception:  # pragma: no cover - nothing may escape a destructor
        pass


def device_of(context):
    """The (DLPack device type, id) of a context's memory."""
    return (_DEVICE_CPU, 0) if context.info()["memory"] == "host" else (_DEVICE_CUDA, 0)


def export(tensor, component, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of one component of `tensor` (no copy)."""
    device = device_of(tensor._context)
    if copy:
        raise BufferError("octet exports its memory without copying; copy=True is not supported (copy on the "
                          "consumer's side, e.g. torch.from_dlpack(t).clone())")
    if dl_device is not None and tuple(dl_device) != device:
        raise BufferError(f"the tensor lives on DLPack device {device}; dl_device={tuple(dl_device)} would need a "
                          "copy, which octet does not make")
    if device[0] == _DEVICE_CUDA and stream != -1:
        tensor._context.synchronize()  # finished before any consumer stream reads it
    versioned = max_version is not None and int(max_version[0]) >= 1
    out = _c.c_void_p()
    if versioned:
        _check(_libc.octet_tensor_to_dlpack(tensor.handle, component, _c.byref(out)))
        managed = _c.cast(out, _c.POINTER(_abi.DLPackManagedTensorVersioned)).contents
        if int(max_version[0]) == managed.version.major:  # the minor the consumer knows, if older
            managed.version.minor = min(managed.version.minor, int(max_version[1]))
    else:
        _check(_libc.octet_tensor_to_dlpack_legacy(tensor.handle, component, _c.byref(out)))
    name = _VERSIONED if versioned else _LEGACY
    try:
        return _capsule_new(out.value, _c.addressof(_NAMES[name]), _c.cast(_capsule_destructor, _c.c_void_p))
    except BaseException:
        _call_deleter(name, out.value)
        raise


class DLPackComponent:
    """One component of a tensor (a quantized tensor's SCALE_INV, ...) as a
    DLPack producer: np.from_dlpack(t.dlpack_component(octet.SCALE_INV))."""

    def __init__(self, tensor, component):
        self._tensor, self._component = tensor, component

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return export(self._tensor, self._component, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return device_of(self._tensor._context)


def import_handle(context, obj):
    """The handle of a tensor on `context` over the memory of `obj`, a DLPack
    producer (an object with __dlpack__, or a capsule), without copying."""
    if hasattr(obj, "__dlpack__"):
        host = context.info()["memory"] == "host"
        if hasattr(obj, "__dlpack_device__"):
            device_type = int(obj.__dlpack_device__()[0])
            accepted = HOST_DEVICES if host else CUDA_DEVICES
            if device_type not in accepted:
                raise BufferError(f"obj is on DLPack device type {device_type}, but the context's backend "
                                  f"'{context.info()['name']}' works on {'host' if host else 'CUDA'} memory "
                                  f"(device types {accepted}); octet does not copy between devices")
        kwargs = {} if host else {"stream": None}
        try:
            capsule = obj.__dlpack__(max_version=(_abi.DLPACK_MAJOR_VERSION, _abi.DLPACK_MINOR_VERSION), **kwargs)
        except TypeError:  # a producer that predates max_version: legacy capsules only
            capsule = obj.__dlpack__(**kwargs)
    else:
        capsule = obj
    try:
        name = _capsule_name(capsule)
    except (TypeError, ValueError, SystemError):
        raise TypeError(f"from_dlpack needs an object with __dlpack__ (a NumPy array, a torch tensor, an octet "
                        f"Tensor) or a DLPack capsule; got {type(obj).__name__}") from None
    if name not in _USED:
        raise ValueError(f"the capsule is named {name!r}, not 'dltensor_versioned' or 'dltensor': "
                         "it was consumed already, or it is no DLPack capsule")
    pointer = _capsule_pointer(capsule, _c.addressof(_NAMES[name]))
    handle = _c.c_void_p()
    if name == _VERSIONED:
        status = _libc.octet_tensor_from_dlpack(context.handle, _c.cast(pointer, _c.POINTER(
            _abi.DLPackManagedTensorVersioned)), _c.byref(handle))
    else:
        status = _libc.octet_tensor_from_dlpack_legacy(context.handle, _c.cast(pointer, _c.POINTER(
            _abi.DLPackManagedTensor)), _c.byref(handle))
    _check(status)  # refused: the capsule still owns the memory, and its destructor calls the deleter
    _capsule_set_name(capsule, _c.addressof(_NAMES[_USED[name]]))  # consumed: the tensor calls the deleter
    return handle
