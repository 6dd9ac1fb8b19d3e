"""octet/_abi.py (the package's ctypes declaration of octet.h, which the GPU
benchmark uses too) against the header itself.

The expectations come from octet.h, not from _abi.py: the header is parsed
for every `typedef struct`, enumeration constant, #define'd number and
OCTET_API function, and a C program compiled with the header prints every
struct's sizeof/alignof, every field's offsetof and every constant's value.
A field, struct, constant or function added to the header without the same
change in _abi.py fails here (test_a_field_added_to_the_header_is_caught
shows it on an edited copy of the header).

ctest (tests/python/CMakeLists.txt) sets CC to CMake's C compiler and
OCTET_REQUIRE_C_COMPILER=1: there a missing compiler fails instead of
skipping."""

import ctypes
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import pytest

import octet
from octet import _abi, _lib

REPO = pathlib.Path(__file__).resolve().parents[2]
HEADER = REPO / "api" / "include" / "octet" / "octet.h"
# The DLPack header (ABI 1.6) is declared in _abi.py too; it is checked with
# octet.h, as if both were one header.
DLPACK_HEADER = REPO / "api" / "include" / "octet" / "octet_dlpack.h"
# The statuses, dtypes and kinds octet.h shares with the plugin ABI live in
# octet_types.h, which octet.h includes: checked with octet.h, as one header.
TYPES_HEADER = REPO / "api" / "include" / "octet" / "octet_types.h"


def _dlpack_header(header):
    """octet_dlpack.h beside `header` (an edited copy's folder may lack it:
    then the repository's, which includes <octet/octet.h> from the copy's
    folder, see _compile_layout)."""
    beside = pathlib.Path(header).parent / "octet_dlpack.h"
    return beside if beside.exists() else DLPACK_HEADER


def _types_header(header):
    """octet_types.h beside `header` (_edited_header copies it there)."""
    return pathlib.Path(header).parent / "octet_types.h"


# ---- the header, parsed --------------------------------------------------------------

def _strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def _header_structs(text):
    """{C name: [field names in order]} of every `typedef struct NAME {...} NAME;`."""
    structs = {}
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text, flags=re.S):
        assert m.group(1) == m.group(3), m.group(0)
        fields = []
        for decl in m.group(2).split(";"):
            decl = " ".join(decl.split())
            if not decl:
                continue
            pointer_to_function = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
            if pointer_to_function:
                fields.append(pointer_to_function.group(1))
            else:
                fields.append(re.search(r"(\w+)\s*(\[[^\]]*\])?$", decl).group(1))
        structs[m.group(1)] = fields
    return structs


def _header_constants(text):
    """Names of every enumeration constant and #define'd number (OCTET_...)."""
    names = []
    for body in re.findall(r"enum\s*\{(.*?)\}", text, flags=re.S):
        names += [item.split("=")[0].strip() for item in body.split(",") if item.strip()]
    # #define'd numbers, but not the library's version: the package asks the
    # loaded library for it (octet.__version__, test_version_is_the_librarys).
    names += [n for n in re.findall(r"^#define\s+(OCTET_\w+)\s+\d+\s*$", text, flags=re.M)
              if not n.startswith("OCTET_VERSION_")]
    return names


def _header_functions(text):
    """{name: (return type, [parameter types])} of every OCTET_API function
    (also those declared as `OCTET_API T (name)(...)` beside a macro)."""
    functions = {}
    for m in re.finditer(r"OCTET_API\s+([\w\s\*]+?)\s*\(?\s*(octet_\w+)\s*\)?\s*\(([^;]*?)\)\s*;", text, flags=re.S):
        params = " ".join(m.group(3).split())
        types = []
        if params != "void":
            for p in params.split(","):
                p = p.strip()
                types.append(re.sub(r"\s*\b\w+$", "", p) if not p.endswith("*") else p)  # drop the name
        functions[m.group(2)] = (" ".join(m.group(1).split()), types)
    return functions


def _int32_typedefs(text):
    return set(re.findall(r"typedef\s+int32_t\s+(\w+)\s*;", text))


# ---- a C compile of the header --------------------------------------------------------

def _compiler():
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return shutil.which(cc)
    return None


def _compile_layout(header, structs, constants):
    """{key: int}: 'S' -> sizeof, 'S@align' -> alignof, 'S.f' -> offsetof,
    'OCTET_X' -> the constant's value, from a C program built with `header`."""
    cc = _compiler()
    if cc is None:
        if os.environ.get("OCTET_REQUIRE_C_COMPILER") == "1":
            pytest.fail("OCTET_REQUIRE_C_COMPILER=1 but no C compiler (CC, cc, gcc, clang) was found")
        pytest.skip("no C compiler (CC, cc, gcc or clang) to compile octet.h with: install gcc")
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <stdalign.h>", f'#include "{header}"',
             f'#include "{_dlpack_header(header).resolve()}"', "int main(void) {"]
    for name, fields in structs.items():
        lines.append(f'  printf("{name} %zu\\n", sizeof({name}));')
        lines.append(f'  printf("{name}@align %zu\\n", alignof({name}));')
        for f in fields:
            lines.append(f'  printf("{name}.{f} %zu\\n", offsetof({name}, {f}));')
    for c in constants:
        lines.append(f'  printf("{c} %lld\\n", (long long)({c}));')
    lines += ["  return 0;", "}"]
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="octet-abi-"))
    try:
        (tmp / "layout.c").write_text("\n".join(lines) + "\n")
        include = pathlib.Path(header).resolve().parent.parent  # <octet/octet.h> is this header
        r = subprocess.run([cc, "-std=c11", f"-I{include}", str(tmp / "layout.c"), "-o", str(tmp / "layout")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        out = subprocess.run([str(tmp / "layout")], capture_output=True, text=True, check=True).stdout
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {key: int(value) for key, value in (line.rsplit(" ", 1) for line in out.splitlines() if line)}


# ---- the comparison --------------------------------------------------------------------

_SCALARS = {"int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "uint8_t": ctypes.c_uint8,
            "uint16_t": ctypes.c_uint16, "size_t": ctypes.c_size_t, "float": ctypes.c_float,
            "double": ctypes.c_double, "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64}


def _type_problem(c_type, py_type, int32_names, where):
    """None if the ctypes type `py_type` passes what the C type `c_type` is."""
    t = " ".join(c_type.replace("const", " ").split()).replace(" *", "*")
    stars = t.count("*")
    base = t.rstrip("*").strip()
    if stars == 0:
        if base == "void":
            return None if py_type is None else f"{where}: void, declared {py_type}"
        if base in int32_names:
            base = "int32_t"
        if base in _abi.STRUCTS:  # by value (octet_version)
            return None if py_type is _abi.STRUCTS[base] else f"{where}: {base} by value, declared {py_type}"
        want = _SCALARS.get(base)
        if want is None:
            return f"{where}: C type {c_type!r} has no rule in this test"
        return None if py_type is want else f"{where}: {c_type}, declared {py_type.__name__}"
    # pointers: void* stands for any; char* may be c_char_p; a struct pointer
    # must point to that struct's declaration, a scalar pointer to its type.
    if py_type is ctypes.c_void_p or (base == "char" and stars == 1 and py_type is ctypes.c_char_p):
        return None
    if not (isinstance(py_type, type) and issubclass(py_type, ctypes._Pointer)):
        return f"{where}: {c_type} (a pointer), declared {getattr(py_type, '__name__', py_type)}"
    target = py_type._type_
    if stars >= 2:
        return None if target in (ctypes.c_void_p, ctypes.c_char_p) else f"{where}: {c_type}, declared {py_type}"
    if base in _abi.STRUCTS:
        return None if target is _abi.STRUCTS[base] else f"{where}: {c_type}, declared POINTER({target.__name__})"
    if base in int32_names:
        base = "int32_t"
    want = _SCALARS.get(base)
    return None if target is want else f"{where}: {c_type}, declared POINTER({target.__name__})"


def abi_mismatches(header, abi=_abi):
    """Every way `abi` (a module like octet._abi) differs from `header` (a
    path to octet.h) and the octet_dlpack.h beside it, as a list of
    messages; empty when they agree."""
    text = _strip_comments(_types_header(header).read_text() + "\n" + pathlib.Path(header).read_text() + "\n" +
                           _dlpack_header(header).read_text())
    structs = _header_structs(text)
    constants = _header_constants(text)
    functions = _header_functions(text)
    int32_names = _int32_typedefs(text)
    problems = []

    # structs: the same set, the same fields in the same order, the C layout
    declared = {name: cls for name, cls in abi.STRUCTS.items()}
    for name in sorted(set(structs) - set(declared)):
        problems.append(f"struct {name} is in octet.h but not declared in octet/_abi.py")
    for name in sorted(set(declared) - set(structs)):
        problems.append(f"struct {name} is declared in octet/_abi.py but not in octet.h")
    common = {n: f for n, f in structs.items() if n in declared}
    layout = _compile_layout(pathlib.Path(header).resolve(), common, constants)
    for name, fields in common.items():
        cls = declared[name]
        py_fields = [f for f, _ in cls._fields_]
        if py_fields != fields:
            problems.append(f"{name}: octet.h has fields {fields}, octet/_abi.py {cls.__name__} has {py_fields}")
            continue
        for f, _ in cls._fields_:
            if getattr(cls, f).offset != layout[f"{name}.{f}"]:
                problems.append(f"{name}.{f}: offset {getattr(cls, f).offset} in Python, "
                                f"{layout[f'{name}.{f}']} in C")
        if ctypes.sizeof(cls) != layout[name]:
            problems.append(f"sizeof({name}): {ctypes.sizeof(cls)} in Python, {layout[name]} in C")
        if ctypes.alignment(cls) != layout[f"{name}@align"]:
            problems.append(f"alignof({name}): {ctypes.alignment(cls)} in Python, {layout[name + '@align']} in C")

    # constants: OCTET_X in the header is X in _abi with the C value
    for c in constants:
        value = getattr(abi, c[len("OCTET_"):], None)
        if value != layout[c]:
            problems.append(f"{c} = {layout[c]} in octet.h; octet/_abi.py has {c[len('OCTET_'):]} = {value}")

    # functions: the same set, each with octet.h's argument count and kinds
    for name in sorted(set(functions) - set(abi.FUNCTIONS)):
        problems.append(f"function {name} is in octet.h but not in octet/_abi.py FUNCTIONS")
    for name in sorted(set(abi.FUNCTIONS) - set(functions)):
        problems.append(f"function {name} is in octet/_abi.py FUNCTIONS but not in octet.h")
    for name, (c_ret, c_args) in functions.items():
        if name not in abi.FUNCTIONS:
            continue
        restype, argtypes = abi.FUNCTIONS[name]
        if len(argtypes) != len(c_args):
            problems.append(f"{name}: {len(c_args)} parameters in octet.h, {len(argtypes)} declared")
            continue
        for problem in [_type_problem(c_ret, restype, int32_names, f"{name} returns")] + [
                _type_problem(c, p, int32_names, f"{name} parameter {i + 1}")
                for i, (c, p) in enumerate(zip(c_args, argtypes))]:
            if problem:
                problems.append(problem)
    return problems


# ---- the tests -------------------------------------------------------------------------

def test_the_declarations_match_octet_h():
    problems = abi_mismatches(HEADER)
    assert not problems, "octet/_abi.py differs from octet.h:\n  " + "\n  ".join(problems)


def test_the_parser_sees_the_whole_header():
    """Guards the parsing above: it must find what the header obviously has
    (so an empty parse cannot pass the comparison)."""
    text = _strip_comments(HEADER.read_text())
    structs, functions = _header_structs(text), _header_functions(text)
    assert len(structs) >= 20 and "octet_linear_options" in structs
    assert structs["octet_communicator"][:3] == ["struct_size", "allreduce_max", "user_data"]
    assert structs["octet_communicator"][-2:] == ["reduce_scatter", "wait"]  # pointers to functions, named
    assert structs["octet_tensor_desc"][3] == "shape"
    assert len(functions) == len(re.findall(r"^OCTET_API\b", text, flags=re.M))  # one per declaration
    assert "octet_gemm_options_init" in functions and "octet_current_scaling_options_init" in functions
    assert functions["octet_gemm"][1][-1] == "const octet_gemm_options*"


def _edited_header(tmp_path, old, new):
    text = HEADER.read_text()
    assert old in text
    (tmp_path / "octet").mkdir()
    path = tmp_path / "octet" / "octet.h"
    path.write_text(text.replace(old, new, 1))
    shutil.copy(TYPES_HEADER, tmp_path / "octet" / "octet_types.h")
    return path


def test_a_field_added_to_the_header_is_caught(tmp_path):
    path = _edited_header(tmp_path, "  int32_t reduce_amax;         /* 1: before each quantize",
                          "  int32_t reduce_amax; int32_t new_field;         /* 1: before each quantize")
    problems = abi_mismatches(path)
    assert any("octet_current_scaling_options" in p and "new_field" in p for p in problems), problems


def test_a_changed_field_type_is_caught(tmp_path):
    path = _edited_header(tmp_path, "  uint64_t alignment;      /* bytes Octet aligns",
                          "  uint32_t alignment;      /* bytes Octet aligns")
    problems = abi_mismatches(path)
    assert any("octet_backend_info" in p for p in problems), problems


def test_a_new_function_and_constant_are_caught(tmp_path):
    path = _edited_header(tmp_path, "OCTET_API void octet_saved_destroy(octet_saved* saved);",
                          "OCTET_API void octet_saved_destroy(octet_saved* saved);\n"
                          "OCTET_API octet_status octet_saved_size(const octet_saved* saved, size_t* bytes);\n"
                          "enum { OCTET_SAVED_NEW = 3 };")
    problems = abi_mismatches(path)
    assert any("octet_saved_size" in p for p in problems), problems
    assert any("OCTET_SAVED_NEW" in p for p in problems), problems


def test_every_declared_function_is_exported_by_the_library():
    missing = [name for name in _abi.FUNCTIONS if not hasattr(_lib.lib, name)]
    assert not missing, f"{_lib.lib._name} lacks {missing}"


def test_every_options_struct_has_its_init_function_and_it_writes_the_c_size():
    """Each _init writes struct_size; the _sized ones and those of structs
    that never grew write the whole struct (our sizeof, which
    test_the_declarations_match_octet_h ties to C's)."""
    text = _strip_comments(HEADER.read_text())
    inits = {n for n in _header_functions(text) if n.endswith("_options_init") or n.endswith("_options_init_sized")}
    covered = set(_abi.INIT_FUNCTIONS.values())
    for name in inits - covered:  # a plain _init beside a _sized one is the legacy entry point
        assert name + "_sized" in covered, f"{name}: no entry in octet/_abi.py INIT_FUNCTIONS"
    for c_name, init in _abi.INIT_FUNCTIONS.items():
        cls = _abi.STRUCTS[c_name]
        room = ctypes.sizeof(cls) + 64
        buf = (ctypes.c_ubyte * room)(*([0xAB] * room))
        fn = getattr(_lib.lib, init)
        args = (ctypes.cast(buf, ctypes.POINTER(cls)),) + ((ctypes.sizeof(cls),) if init.endswith("_sized") else ())
        assert fn(*args) == 0, init
        written = ctypes.c_size_t.from_buffer(buf).value
        assert written == ctypes.sizeof(cls), f"{init} wrote struct_size {written}; sizeof is {ctypes.sizeof(cls)}"
        assert bytes(buf[written:]) == b"\xab" * (room - written), f"{init} wrote past struct_size"


def test_version_is_the_librarys():
    v = _lib.lib.octet_library_version()
    assert octet.__version__ == f"{v.major}.{v.minor}.{v.patch}"
    assert octet.library_version() == (v.major, v.minor, v.patch)
    a = _lib.lib.octet_abi_version()
    assert (a.major, a.minor) == (_abi.ABI_MAJOR, _abi.ABI_MINOR)


def test_no_other_ctypes_declaration_of_octet_h_in_the_repository():
    """_abi.py is the only place C structs are declared or octet_* signatures
    set (a second copy rotted once: tests/bench/gpu had its own). Signatures
    of other libraries' functions (oneDNN's dnnl_sgemm in a benchmark) are
    not octet.h's and may be declared where they are used."""
    declaring = re.compile(r"class \w+\((?:ctypes|_c)\.(?:Structure|Union)\)|"
                           r"\boctet_\w+\.(?:argtypes|restype)\s*=|"
                           r"\[[\"']octet_\w+[\"']\]\.(?:argtypes|restype)\s*=")
    found = []
    for path in REPO.rglob("*.py"):
        parts = path.relative_to(REPO).parts
        if parts[0].startswith(("build", ".")) or "site-packages" in parts or parts == ("api", "python", "octet",
                                                                                         "_abi.py"):
            continue
        if declaring.search(path.read_text(errors="replace")):
            found.append(str(path.relative_to(REPO)))
    assert not found, f"ctypes declarations outside api/python/octet/_abi.py: {found}"
