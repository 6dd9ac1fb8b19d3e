"""Loads liboctet and declares its C functions (the declarations: _abi.py).

The library is found, in order, through the OCTET_LIBRARY environment
variable (a file path), in the package itself (octet/lib: the copy a pip
install bundles; _candidates() walks up from this file, so it comes first),
beside an installed package (<prefix>/lib), or by the system's usual search
(ctypes.util.find_library)."""

import ctypes
import ctypes.util
import os
import pathlib

from ._abi import (ALLREDUCE_MAX_FN, AMAX_COMPUTE_FN, MAX_DIMS, SCALE_COMPUTE_FN,  # noqa: F401 (re-exported)
                   BackendFailure, BackendInfo, BlockScalingOptions, Communicator, ContextOptions,
                   CurrentScalingOptions, DelayedScalingOptions, GemmOptions, GroupedGemmOptions, LayerNormLinearOptions,
                   LayerNormMLPOptions, GroupedLinearOptions, LinearOptions, MemoryStats, MXFP4Options, MXFP8Options, NVFP4Options, QuantizeOptions, QuantizerInfo,
                   QuantizeStats, RecipeInfo, RowwiseScalingOptions, StaticScalingOptions, TensorDesc, TensorInfo, Version)
from ._abi import MEMORY_MAX_CATEGORIES as MAX_MEMORY_CATEGORIES  # noqa: F401
from ._abi import GROUP_SPLIT_K, GROUP_SPLIT_M  # noqa: F401
from ._abi import ABI_MAJOR as _ABI_MAJOR, ABI_MINOR as _ABI_MINOR, declare as _declare_all

_c = ctypes


def _candidates():
    explicit = os.environ.get("OCTET_LIBRARY")
    if explicit:
        yield explicit
        return
    here = pathlib.Path(__file__).resolve()
    for up in here.parents:
        for name in ("liboctet.so.1", "liboctet.so"):
            for sub in ("lib", "lib64"):
                candidate = up / sub / name
                if candidate.exists():
                    yield str(candidate)
    found = ctypes.util.find_library("octet")
    if found:
        yield found


def _load():
    errors = []
    for path in _candidates():
        try:
            return _c.CDLL(path)
        except OSError as e:  # keep looking, report everything if none loads
            errors.append(f"{path}: {e}")
    raise ImportError(
        "cannot find liboctet: set OCTET_LIBRARY to its path"
        + (" (tried: " + "; ".join(errors) + ")" if errors else "")
    )


lib = _load()


# Every function of octet.h (octet/_abi.py, checked against the header by
# tests/python/test_abi.py).
_missing = _declare_all(lib)
if _missing:
    raise ImportError(f"the liboctet at {lib._name} lacks {', '.join(_missing)}: it is older than this package "
                      f"(octet.h: users' ABI {_ABI_MAJOR}.{_ABI_MINOR}); set OCTET_LIBRARY to a matching build")
