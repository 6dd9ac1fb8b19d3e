"""_Handle: the base of every Python object that holds a C handle."""

from ._lib import lib as _libc


class _Handle:
    """A C handle held by a Python object. `handle` raises once closed;
    close() releases it through _release() unless the handle is borrowed
    (`_owner` set: the owner frees it); also a context manager, and closed
    by the garbage collector. Subclasses set _kind and _destroy."""

    _kind = "object"
    _destroy = None   # name of the C destroy function
    _handle = None
    _owner = None

    @property
    def handle(self):
        if not getattr(self, "_handle", None):
            raise ValueError(f"{self._kind} is closed")
        return self._handle

    def _release(self, handle):
        getattr(_libc, self._destroy)(handle)

    def close(self):
        if getattr(self, "_handle", None):
            if self._owner is None:
                self._release(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

