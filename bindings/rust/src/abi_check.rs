//! The one-declaration check: `sys.rs` against `octet.h` and `octet_dlpack.h`
//! themselves.
//!
//! The expectations come from the header, not from `sys.rs`: the header's
//! text is parsed for every `typedef struct` (fields and their C types),
//! enumeration constant, `#define`d number, typedef and `OCTET_API` function,
//! and a C program compiled with the header (the compiler in `CC`, else `cc`)
//! prints every struct's size, alignment and field offsets and every
//! constant's value. Rust's side is what `sys.rs` declares: the layout table
//! its `c_structs!` macro builds with `size_of` / `align_of` / `offset_of!`,
//! the table of `c_constants!`, and the `extern "C"` block and `pub type`
//! aliases parsed from its source. Both directions are checked, so something
//! added to the header and not to Rust fails, and so does the reverse
//! (`a_change_to_the_header_is_caught` shows it on an edited copy).
//!
//! The header is `OCTET_INCLUDE_DIR/octet/octet.h` when that variable is set,
//! else the repository's `api/include/octet/octet.h`, read together with the
//! `octet_types.h` beside it (which it includes) as one header.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::sys;

fn include_dir() -> PathBuf {
    match std::env::var_os("OCTET_INCLUDE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../api/include"),
    }
}

// ---- text helpers -------------------------------------------------------------

fn strip_c_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        out.push(' ');
        rest = match rest[start + 2..].find("*/") {
            Some(end) => &rest[start + 2 + end + 2..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

fn strip_line_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn is_ident(text: &str) -> bool {
    !text.is_empty()
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !text.starts_with(|c: char| c.is_ascii_digit())
}

// ---- C types, written the way sys.rs writes them ---------------------------------

/// A C type ("const octet_recipe**") as sys.rs spells it
/// ("*mut *const octet_recipe"), whitespace removed; "" for void.
fn rust_type_of_c(c_type: &str) -> String {
    let spaced = c_type.replace('*', " * ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let mut consts = vec![false];
    let mut base = String::new();
    for token in tokens {
        match token {
            "const" => *consts.last_mut().unwrap() = true,
            "*" => consts.push(false),
            name => base = name.to_string(),
        }
    }
    let stars = consts.len() - 1;
    let mut rust = match base.as_str() {
        "int32_t" => "i32",
        "uint32_t" => "u32",
        "int64_t" => "i64",
        "uint64_t" => "u64",
        "uint8_t" => "u8",
        "uint16_t" => "u16",
        "size_t" => "usize",
        "float" => "f32",
        "double" => "f64",
        "char" => "c_char",
        "void" if stars == 0 => "",
        "void" => "c_void",
        other => other,
    }
    .to_string();
    for pointee_const in consts.iter().take(stars) {
        rust = format!("*{}{}", if *pointee_const { "const" } else { "mut" }, rust);
    }
    rust
}

/// A C parameter list ("const float* in, size_t n" or "void"): the Rust types.
fn rust_params_of_c(params: &str) -> Vec<String> {
    let params = words(params);
    if params == "void" || params.is_empty() {
        return Vec::new();
    }
    params
        .split(',')
        .map(|param| {
            let param = param.trim();
            // Drop the parameter's name: the last identifier, after the type.
            let cut = param
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map(|i| i + 1)
                .unwrap_or(0);
            rust_type_of_c(&param[..cut])
        })
        .collect()
}

/// A pointer to function, C return type and parameters, as sys.rs spells it.
fn rust_fn_pointer(ret: &str, params: &str) -> String {
    let ret = rust_type_of_c(ret);
    let arrow = if ret.is_empty() {
        String::new()
    } else {
        format!("->{ret}")
    };
    format!(
        "Option<unsafeextern\"C\"fn({}){arrow}>",
        rust_params_of_c(params).join(",")
    )
}

/// A Rust type from sys.rs, whitespace removed, with the parameter names and
/// trailing commas of a function pointer type removed.
fn normalize_rust_type(rust: &str) -> String {
    let rust = squash(rust);
    let Some(start) = rust.find("fn(") else {
        return rust;
    };
    let open = start + 3;
    let close = open + rust[open..].find(')').expect("a closing parenthesis");
    let params: Vec<&str> = rust[open..close]
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.find(':') {
            Some(i) if is_ident(&p[..i]) => &p[i + 1..],
            _ => p,
        })
        .collect();
    let tail = rust[close + 1..].replace(",>", ">");
    format!("{}{})", &rust[..open], params.join(",")) + &tail
}

// ---- the header, parsed --------------------------------------------------------------

/// A struct field: its name and its type as sys.rs should spell it.
struct CField {
    name: String,
    rust_type: String,
}

struct Header {
    /// Every `typedef struct NAME { ... } NAME;`, in order.
    structs: Vec<(String, Vec<CField>)>,
    /// Every enumeration constant and `#define`d number.
    constants: Vec<String>,
    /// Every `typedef T NAME;` and pointer to function type.
    typedefs: BTreeMap<String, String>,
    /// Every OCTET_API function: (Rust return type, Rust parameter types).
    functions: BTreeMap<String, (String, Vec<String>)>,
}

fn parse_field(decl: &str) -> CField {
    if let Some(star) = decl.find("(*") {
        let close = star + decl[star..].find(')').unwrap();
        let name = decl[star + 2..close].trim().to_string();
        let params_open = close + decl[close..].find('(').unwrap();
        let params = &decl[params_open + 1..decl.rfind(')').unwrap()];
        return CField {
            name,
            rust_type: rust_fn_pointer(&decl[..star], params),
        };
    }
    if let Some(open) = decl.find('[') {
        let close = decl.find(']').unwrap();
        let head = decl[..open].trim();
        let split = head.rfind(' ').unwrap();
        let element = rust_type_of_c(&head[..split]);
        return CField {
            name: head[split + 1..].to_string(),
            rust_type: format!("[{element};{}]", decl[open + 1..close].trim()),
        };
    }
    let split = decl.rfind([' ', '*']).unwrap();
    CField {
        name: decl[split + 1..].to_string(),
        rust_type: rust_type_of_c(&decl[..split + 1]),
    }
}

fn parse_header(text: &str) -> Header {
    let text = strip_c_comments(text);
    let mut header = Header {
        structs: Vec::new(),
        constants: Vec::new(),
        typedefs: BTreeMap::new(),
        functions: BTreeMap::new(),
    };

    // typedef struct NAME { fields } NAME;  and the other typedefs.
    let mut rest = text.as_str();
    while let Some(at) = rest.find("typedef ") {
        rest = &rest[at + "typedef ".len()..];
        let end = rest.find(';').unwrap();
        let decl = words(&rest[..end]);
        if let Some(body) = decl.strip_prefix("struct ") {
            if let Some(open) = body.find('{') {
                let name = body[..open].trim().to_string();
                // The body may hold ';' of its own: read up to the brace.
                let close = rest.find('}').unwrap();
                let inner = &rest[rest.find('{').unwrap() + 1..close];
                let fields = inner
                    .split(';')
                    .map(words)
                    .filter(|d| !d.is_empty())
                    .map(|d| parse_field(&d))
                    .collect();
                let tail_end = close + rest[close..].find(';').unwrap();
                assert_eq!(words(&rest[close + 1..tail_end]), name);
                header.structs.push((name, fields));
                rest = &rest[tail_end..];
            }
            // else an opaque handle: `typedef struct NAME NAME;`
        } else if decl.contains("(*") {
            let field = parse_field(&decl);
            header.typedefs.insert(field.name, field.rust_type);
        } else {
            let split = decl.rfind(' ').unwrap();
            header.typedefs.insert(
                decl[split + 1..].to_string(),
                rust_type_of_c(&decl[..split]),
            );
        }
    }

    // enum { A = 1, B, ... }
    let mut rest = text.as_str();
    while let Some(at) = rest.find("enum") {
        rest = &rest[at + 4..];
        if !rest.trim_start().starts_with('{') {
            continue;
        }
        let open = rest.find('{').unwrap();
        let close = rest.find('}').unwrap();
        for item in rest[open + 1..close].split(',') {
            let name = item.split('=').next().unwrap().trim();
            if !name.is_empty() {
                header.constants.push(name.to_string());
            }
        }
        rest = &rest[close..];
    }
    // #define OCTET_NAME 123
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() == 3
            && parts[0] == "#define"
            && parts[1].starts_with("OCTET_")
            && parts[2].chars().all(|c| c.is_ascii_digit())
        {
            header.constants.push(parts[1].to_string());
        }
    }

    // OCTET_API T name(params);  and  OCTET_API T (name)(params);
    let mut rest = text.as_str();
    while let Some(at) = rest.find("OCTET_API ") {
        rest = &rest[at + "OCTET_API ".len()..];
        if rest.starts_with("__") {
            continue; // the macro's own definition
        }
        let end = rest.find(';').unwrap();
        let decl = words(&rest[..end]);
        // The name is the last identifier before the parameter list, which
        // the header may parenthesise beside a macro: `T (name)(params)`.
        let Some(open) = decl.rfind('(').filter(|_| decl.ends_with(')')) else {
            continue;
        };
        let before = decl[..open].trim().trim_end_matches(')').trim();
        let name_at = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = before[name_at..].to_string();
        let ret = before[..name_at].trim().trim_end_matches('(').trim();
        let params = &decl[open + 1..decl.len() - 1];
        header
            .functions
            .insert(name, (rust_type_of_c(ret), rust_params_of_c(params)));
    }
    header
}

// ---- sys.rs, parsed ----------------------------------------------------------------

struct RustDecls {
    functions: BTreeMap<String, (String, Vec<String>)>,
    typedefs: BTreeMap<String, String>,
}

fn parse_sys(source: &str) -> RustDecls {
    let source = strip_line_comments(source);
    let mut decls = RustDecls {
        functions: BTreeMap::new(),
        typedefs: BTreeMap::new(),
    };
    let block_start = source
        .find("extern \"C\" {")
        .expect("sys.rs has an extern \"C\" block");
    let mut rest = &source[block_start..];
    while let Some(at) = rest.find("pub fn ") {
        rest = &rest[at + "pub fn ".len()..];
        let open = rest.find('(').unwrap();
        let name = rest[..open].trim().to_string();
        let close = open + rest[open..].find(')').unwrap();
        let end = close + rest[close..].find(';').unwrap();
        let params = rest[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| squash(&p[p.find(':').unwrap() + 1..]))
            .collect();
        let ret = rest[close + 1..end].trim();
        let ret = squash(ret.strip_prefix("->").unwrap_or(ret));
        decls.functions.insert(name, (ret, params));
        rest = &rest[end..];
    }
    let mut rest = source.as_str();
    while let Some(at) = rest.find("pub type ") {
        rest = &rest[at + "pub type ".len()..];
        let eq = rest.find('=').unwrap();
        let end = rest.find(';').unwrap();
        decls.typedefs.insert(
            rest[..eq].trim().to_string(),
            normalize_rust_type(&rest[eq + 1..end]),
        );
        rest = &rest[end..];
    }
    decls
}

// ---- the C compiler's answers ---------------------------------------------------------

static RUN: AtomicUsize = AtomicUsize::new(0);

fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "octet-rust-abi-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Compiles and runs a program that prints, per line, `struct NAME SIZE ALIGN`,
/// `field STRUCT NAME OFFSET` and `const NAME VALUE`.
fn c_layout(header: &Header, include: &Path) -> BTreeMap<String, i128> {
    let mut program = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <octet/octet.h>\n#include <octet/octet_dlpack.h>\n\
         int main(void) {\n",
    );
    for (name, fields) in &header.structs {
        program += &format!(
            "  printf(\"struct {name} %zu %zu\\n\", sizeof({name}), (size_t)_Alignof({name}));\n"
        );
        for field in fields {
            let f = &field.name;
            program += &format!("  printf(\"field {name}.{f} %zu\\n\", offsetof({name}, {f}));\n");
        }
    }
    for name in &header.constants {
        program += &format!("  printf(\"const {name} %lld\\n\", (long long)({name}));\n");
    }
    program += "  return 0;\n}\n";

    let dir = scratch_dir();
    let source = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&source, program).unwrap();
    let cc = std::env::var("CC")
        .ok()
        .filter(|cc| !cc.is_empty())
        .unwrap_or_else(|| "cc".into());
    let out = Command::new(&cc)
        .arg("-std=c11")
        .arg("-I")
        .arg(include)
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` (set CC): {e}"));
    assert!(
        out.status.success(),
        "{cc} failed on the layout program:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    std::fs::remove_dir_all(&dir).ok();
    let mut values = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        match parts[0] {
            "struct" => {
                values.insert(format!("sizeof {}", parts[1]), parts[2].parse().unwrap());
                values.insert(format!("alignof {}", parts[1]), parts[3].parse().unwrap());
            }
            _ => {
                values.insert(
                    format!("{} {}", parts[0], parts[1]),
                    parts[2].parse().unwrap(),
                );
            }
        }
    }
    values
}

// ---- the comparison --------------------------------------------------------------------

/// Every difference between the header and sys.rs, in words.
fn differences(header_text: &str, include: &Path) -> Vec<String> {
    let header = parse_header(header_text);
    let rust = parse_sys(include_str!("sys.rs"));
    let c = c_layout(&header, include);
    let mut problems = Vec::new();

    // Structs: the same structs, fields in the same order with the same
    // types, and the C compiler's sizes, alignments and offsets.
    let rust_structs: BTreeMap<&str, &sys::StructLayout> =
        sys::STRUCTS.iter().map(|s| (s.name, s)).collect();
    for (name, fields) in &header.structs {
        let Some(layout) = rust_structs.get(name.as_str()) else {
            problems.push(format!("struct {name} is in the header, not in sys.rs"));
            continue;
        };
        let c_names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        let rust_names: Vec<&str> = layout.fields.iter().map(|f| f.0).collect();
        if c_names != rust_names {
            problems.push(format!(
                "struct {name}: the header's fields are {c_names:?}, sys.rs has {rust_names:?}"
            ));
        }
        for field in fields {
            let Some(&(_, offset, ty)) = layout.fields.iter().find(|f| f.0 == field.name) else {
                continue;
            };
            let c_offset = c[&format!("field {name}.{}", field.name)];
            if c_offset != offset as i128 {
                problems.push(format!(
                    "{name}.{}: offset {c_offset} in C, {offset} in Rust",
                    field.name
                ));
            }
            if normalize_rust_type(ty) != field.rust_type {
                problems.push(format!(
                    "{name}.{}: the header's type means `{}`, sys.rs has `{ty}`",
                    field.name, field.rust_type
                ));
            }
        }
        for (what, rust_value) in [("sizeof", layout.size), ("alignof", layout.align)] {
            let c_value = c[&format!("{what} {name}")];
            if c_value != rust_value as i128 {
                problems.push(format!(
                    "{what}({name}): {c_value} in C, {rust_value} in Rust"
                ));
            }
        }
    }
    for layout in sys::STRUCTS {
        if !header.structs.iter().any(|(name, _)| name == layout.name) {
            problems.push(format!(
                "struct {} is in sys.rs, not in the header",
                layout.name
            ));
        }
    }

    // Constants: the same names and values.
    let rust_constants: BTreeMap<&str, i128> = sys::CONSTANTS.iter().copied().collect();
    for name in &header.constants {
        match rust_constants.get(name.as_str()) {
            None => problems.push(format!("constant {name} is in the header, not in sys.rs")),
            Some(&value) => {
                let c_value = c[&format!("const {name}")];
                if c_value != value {
                    problems.push(format!("{name} is {c_value} in C, {value} in Rust"));
                }
            }
        }
    }
    for (name, _) in sys::CONSTANTS {
        if !header.constants.iter().any(|c| c == name) {
            problems.push(format!("constant {name} is in sys.rs, not in the header"));
        }
    }

    // Typedefs and functions: the same names, the same types.
    for (what, c_side, rust_side) in [
        ("typedef", &header.typedefs, &rust.typedefs),
        (
            "function",
            &header
                .functions
                .iter()
                .map(|(n, (r, p))| (n.clone(), format!("({}) -> {r}", p.join(", "))))
                .collect(),
            &rust
                .functions
                .iter()
                .map(|(n, (r, p))| (n.clone(), format!("({}) -> {r}", p.join(", "))))
                .collect(),
        ),
    ] {
        for (name, c_type) in c_side {
            match rust_side.get(name) {
                None => problems.push(format!("{what} {name} is in the header, not in sys.rs")),
                Some(rust_type) if rust_type != c_type => problems.push(format!(
                    "{what} {name}: the header's type means `{c_type}`, sys.rs has `{rust_type}`"
                )),
                Some(_) => {}
            }
        }
        for name in rust_side.keys() {
            if !c_side.contains_key(name) {
                problems.push(format!("{what} {name} is in sys.rs, not in the header"));
            }
        }
    }
    problems
}

/// The headers sys.rs declares, relative to the include folder.
const HEADERS: [&str; 3] = ["octet/octet_types.h", "octet/octet.h", "octet/octet_dlpack.h"];

fn read_header(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The headers' texts, one after the other.
fn header_text() -> String {
    HEADERS
        .iter()
        .map(|h| read_header(&include_dir(), h))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn sys_matches_the_header() {
    let header = parse_header(&header_text());
    // The parse found what is there (a guard against a parser that finds nothing).
    assert!(
        header.structs.len() >= 20,
        "{} structs",
        header.structs.len()
    );
    assert!(
        header.functions.len() >= 90,
        "{} functions",
        header.functions.len()
    );
    assert!(
        header.constants.len() >= 90,
        "{} constants",
        header.constants.len()
    );
    let problems = differences(&header_text(), &include_dir());
    assert!(
        problems.is_empty(),
        "sys.rs differs from the headers:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn a_change_to_the_header_is_caught() {
    let originals: Vec<String> = HEADERS
        .iter()
        .map(|h| read_header(&include_dir(), h))
        .collect();
    let edits = [
        // a field appended to a struct
        (
            "  int32_t scaling_mode;\n} octet_tensor_desc;",
            "  int32_t scaling_mode;\n  int32_t added_field;\n} octet_tensor_desc;",
            "added_field",
        ),
        // a field whose type changed (same size: only the type check sees it)
        (
            "  uint32_t usages;  /* 0: every usage",
            "  int32_t usages;  /* 0: every usage",
            "octet_quantize_options.usages",
        ),
        // a function
        (
            "OCTET_API void octet_saved_destroy(octet_saved* saved);",
            "OCTET_API void octet_saved_destroy(octet_saved* saved);\n\
             OCTET_API octet_status octet_added_function(size_t n);",
            "octet_added_function",
        ),
        // a function whose parameter changed
        (
            "OCTET_API octet_status octet_layer_new_step(octet_layer* layer);",
            "OCTET_API octet_status octet_layer_new_step(const octet_layer* layer);",
            "octet_layer_new_step",
        ),
        // a constant, and a changed value
        (
            "OCTET_ACTIVATION_SWIGLU = 1 };",
            "OCTET_ACTIVATION_SWIGLU = 1, OCTET_ACTIVATION_ADDED = 2 };",
            "OCTET_ACTIVATION_ADDED",
        ),
        (
            "OCTET_DTYPE_E8M0 = 14",
            "OCTET_DTYPE_E8M0 = 15",
            "OCTET_DTYPE_E8M0",
        ),
        (
            "#define OCTET_ABI_MINOR 9",
            "#define OCTET_ABI_MINOR 99",
            "OCTET_ABI_MINOR",
        ),
        // octet_dlpack.h: a field's type, a function, a constant
        (
            "  uint64_t byte_offset;",
            "  int64_t byte_offset;",
            "octet_dlpack_tensor.byte_offset",
        ),
        (
            "OCTET_API octet_status octet_tensor_to_dlpack(",
            "OCTET_API octet_status octet_added_dlpack(int32_t n);\nOCTET_API octet_status octet_tensor_to_dlpack(",
            "octet_added_dlpack",
        ),
        (
            "OCTET_DLPACK_DEVICE_CUDA = 2,",
            "OCTET_DLPACK_DEVICE_CUDA = 7,",
            "OCTET_DLPACK_DEVICE_CUDA is 7 in C",
        ),
    ];
    for (from, to, expected) in edits {
        let which = originals.iter().position(|text| text.contains(from));
        let which = which.unwrap_or_else(|| panic!("no header contains {from:?} any more"));
        let mut texts = originals.clone();
        texts[which] = texts[which].replacen(from, to, 1);
        let dir = scratch_dir();
        std::fs::create_dir_all(dir.join("octet")).unwrap();
        for (name, text) in HEADERS.iter().zip(&texts) {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let problems = differences(&texts.join("\n"), &dir);
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "editing {from:?} into {to:?} was not caught: {problems:?}"
        );
    }
}

#[test]
fn c_types_are_spelled_as_sys_spells_them() {
    assert_eq!(
        rust_type_of_c("const octet_recipe**"),
        "*mut*constoctet_recipe"
    );
    assert_eq!(rust_type_of_c("void"), "");
    assert_eq!(rust_type_of_c("const void*"), "*constc_void");
    assert_eq!(
        rust_params_of_c("const float* in, size_t n"),
        ["*constf32", "usize"]
    );
    assert_eq!(
        normalize_rust_type("Option<unsafe extern \"C\" fn(a: *mut f32, n: usize,) -> i32,>"),
        "Option<unsafeextern\"C\"fn(*mutf32,usize)->i32>"
    );
}
