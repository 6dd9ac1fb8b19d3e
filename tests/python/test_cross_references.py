"""Every cross-reference in the repository resolves.

Checked, in every text file of the tree (docs, README.md, CHANGELOG.md,
headers, sources, comments, tests, bindings; build folders skipped; files
found by walking the tree, so moving a file moves nothing here):

- citations of a numbered section: "numerics.md section 8", "numerics.md
  sections 5 and 11", "docs/numerics.md 2", "numerics 13": the document
  must exist and have a heading numbered so ("## 8. GEMM: ...");
- citations of a heading: docs/recipes.md, "Checkpoint format": the
  document must have a heading that starts with those words (backticks and
  a leading section number ignored);
- "section N" inside a document whose headings are numbered: its own
  heading N;
- every docs/....md path named anywhere: the file exists;
- markdown links in .md files outside code blocks, [text](path#anchor):
  the file exists (relative to the linking file) and the anchor is the
  GitHub anchor of one of its headings.

A failure lists every broken reference as path:line: what is wrong."""

import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[2]
TEXT_SUFFIXES = {".md", ".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".cuh", ".py", ".rs", ".txt", ".cmake", ".sh",
                 ".toml", ".in", ".yml", ".yaml"}
# Folders that hold what a build or a tool made, not the project's text.
SKIPPED_DIRS = {"__pycache__", "node_modules", "target", "_deps"}

_NUMBER = r"\d+(?:\.\d+)*"
_NUMBER_LIST = rf"{_NUMBER}(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s+or\s+|\s*-\s*|\s*/\s*){_NUMBER}(?![\w.]\w))*"
_DOCUMENT = r"(?P<doc>(?:[\w.-]+/)*[\w.-]+\.md|\b[Nn]umerics\b(?!\.))"
SECTION_CITATION = re.compile(rf"{_DOCUMENT},?\s+(?:sections?\s+|§\s*)?(?P<numbers>{_NUMBER_LIST})(?![\w.]\w)")
# [numerics.md](numerics.md) section 6
LINKED_SECTION_CITATION = re.compile(
    rf"\[[^\]\n]*\]\((?P<doc>[^)#\s]+\.md)\),?\s+(?:sections?\s+|§\s*)(?P<numbers>{_NUMBER_LIST})(?![\w.]\w)")
HEADING_CITATION = re.compile(r'(?P<doc>(?:[\w.-]+/)*[\w.-]+\.md),?\s+"(?P<heading>[^"\n]+)"')
SELF_CITATION = re.compile(rf"(?<![\w.])(?:[Ss]ections?)\s+(?P<numbers>{_NUMBER_LIST})(?![\w.]\w)")
DOCS_PATH = re.compile(r"(?<![\w./-])(?<!\]\()(?P<path>docs/[\w./-]*?\w\.md)\b")  # a link's target: see links
MARKDOWN_LINK = re.compile(r"\[[^\]\n]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
NUMBERED_HEADING = re.compile(rf"^(?P<number>{_NUMBER})\.?\s")
# A comment's or a quoted block's leading markers, removed when a citation
# runs on from one line to the next.
LINE_PREFIX = re.compile(r"^\s*(?://+|/\*+|\*+/?|#+(?=\s)|--|>|\"\"\"|''')?\s*")


def text_files(root):
    """Every text file under root; skipped: build folders (a CMakeCache.txt
    in them), virtual environments (a pyvenv.cfg), hidden folders other
    than .ci, and tool folders (SKIPPED_DIRS)."""
    root = pathlib.Path(root)
    stack = [root]
    while stack:
        folder = stack.pop()
        for entry in sorted(folder.iterdir()):
            if entry.is_dir():
                hidden = entry.name.startswith(".") and entry.name != ".ci"
                if hidden or entry.name in SKIPPED_DIRS or any((entry / marker).exists()
                                                               for marker in ("CMakeCache.txt", "pyvenv.cfg")):
                    continue
                stack.append(entry)
            elif entry.suffix in TEXT_SUFFIXES or entry.name in ("CMakeLists.txt",):
                yield entry


class Document:
    """A markdown file's headings: their texts, numbers and GitHub anchors."""

    def __init__(self, path):
        self.path = path
        self.titles, self.numbers, self.anchors = [], set(), set()
        counts = {}
        for line in _outside_code_blocks(path.read_text(errors="replace").splitlines()):
            match = HEADING.match(line)
            if not match:
                continue
            title = match.group(2)
            self.titles.append(title)
            numbered = NUMBERED_HEADING.match(title)
            if numbered:
                self.numbers.add(numbered.group("number"))
            anchor = github_anchor(title)
            self.anchors.add(anchor if anchor not in counts else f"{anchor}-{counts[anchor]}")
            counts[anchor] = counts.get(anchor, 0) + 1

    def has_heading(self, words):
        wanted = _plain(words)
        return any(_plain(NUMBERED_HEADING.sub("", title)).startswith(wanted) for title in self.titles)


def _plain(text):
    return " ".join(re.sub(r"[`*_]", "", text).replace(":", " ").lower().split())


def github_anchor(title):
    """The anchor GitHub gives a heading: markup removed, lowercase,
    punctuation other than - and _ dropped, spaces turned into -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link keeps its text
    text = re.sub(r"[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _outside_code_blocks(lines):
    fenced = False
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            yield ""
            continue
        yield "" if fenced else line


def _expand(numbers):
    """"5, 6 and 11" -> ["5", "6", "11"]; a range "1-5" -> its two ends."""
    return re.findall(_NUMBER, numbers)


class Checker:
    def __init__(self, root):
        self.root = pathlib.Path(root)
        # This file's examples of broken references are no references.
        self.files = [p for p in text_files(self.root) if p != pathlib.Path(__file__).resolve()]
        self.markdown = [p for p in self.files if p.suffix == ".md"]
        self._documents = {}
        self.problems = []

    def document(self, path):
        if path not in self._documents:
            self._documents[path] = Document(path)
        return self._documents[path]

    def resolve(self, name, citing):
        """The markdown file a citation names: relative to the citing file's
        folder, to the repository root, else the one file of that name
        (docs/ first); None when there is none."""
        if name.lower() == "numerics":
            name = "numerics.md"
        for base in (citing.parent, self.root):
            candidate = (base / name).resolve()
            if candidate.is_file():
                return candidate
        matches = [p for p in self.markdown if p.as_posix().endswith("/" + name)]
        in_docs = [p for p in matches if (self.root / "docs") in p.parents]
        for group in (in_docs, matches):
            if len(group) == 1:
                return group[0]
        return None

    def report(self, path, line, message):
        self.problems.append((path.relative_to(self.root).as_posix(), line, message))

    def check(self):
        for path in self.files:
            text = path.read_text(errors="replace")
            lines = text.splitlines()
            if path.suffix == ".md":
                lines = list(_outside_code_blocks(lines))
            self._check_citations(path, lines)
            if path.suffix == ".md":
                self._check_links(path, lines)
        return [f"{path}:{line}: {message}" for path, line, message in sorted(self.problems)]

    def _joined(self, lines):
        """The lines as one text (comment markers removed, so that a citation
        broken over two lines is read whole), with each line's start."""
        starts, parts, offset = [], [], 0
        for line in lines:
            body = LINE_PREFIX.sub("", line, count=1)
            starts.append(offset)
            parts.append(body)
            offset += len(body) + 1
        return " ".join(parts), starts

    def _check_citations(self, path, lines):
        text, starts = self._joined(lines)

        def line_of(offset):
            low, high = 0, len(starts) - 1
            while low < high:
                middle = (low + high + 1) // 2
                if starts[middle] <= offset:
                    low = middle
                else:
                    high = middle - 1
            return low + 1

        cited_spans = []
        matches = [*SECTION_CITATION.finditer(text), *LINKED_SECTION_CITATION.finditer(text)]
        for match in sorted(matches, key=lambda m: m.start()):
            cited_spans.append(match.span())
            target = self.resolve(match.group("doc"), path)
            where = line_of(match.start())
            if target is None:
                self.report(path, where, f"cites {match.group(0)!r}, but there is no {match.group('doc')}")
                continue
            numbers = self.document(target).numbers
            missing = [n for n in _expand(match.group("numbers")) if n not in numbers]
            if missing:
                self.report(path, where, f"cites {match.group(0)!r}, but {target.relative_to(self.root)} has no "
                                         f"section {', '.join(missing)}")
        for match in HEADING_CITATION.finditer(text):
            target = self.resolve(match.group("doc"), path)
            where = line_of(match.start())
            if target is None:
                self.report(path, where, f"cites {match.group(0)!r}, but there is no {match.group('doc')}")
            elif not self.document(target).has_heading(match.group("heading")):
                self.report(path, where, f"cites {match.group(0)!r}, but {target.relative_to(self.root)} has no "
                                         f"heading starting so")
        for match in DOCS_PATH.finditer(text):
            if self.resolve(match.group("path"), path) is None and not (self.root / match.group("path")).is_file():
                self.report(path, line_of(match.start()), f"names {match.group('path')}, which does not exist")
        if path.suffix == ".md" and self.document(path).numbers:
            for match in SELF_CITATION.finditer(text):
                if any(start <= match.start() < end for start, end in cited_spans):
                    continue
                missing = [n for n in _expand(match.group("numbers")) if n not in self.document(path).numbers]
                if missing:
                    self.report(path, line_of(match.start()), f"cites {match.group(0)!r}, but this document has "
                                                              f"no section {', '.join(missing)}")

    def _check_links(self, path, lines):
        for number, line in enumerate(lines, 1):
            for match in MARKDOWN_LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                target = match.group("target")
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                file_part, _, anchor = target.partition("#")
                linked = (path.parent / file_part).resolve() if file_part else path
                if not linked.exists():
                    self.report(path, number, f"links to {target}, but {file_part} does not exist")
                    continue
                if anchor and linked.suffix == ".md" and anchor not in self.document(linked).anchors:
                    self.report(path, number, f"links to {target}, but {linked.name} has no heading with "
                                              f"anchor #{anchor}")


def test_every_cross_reference_resolves():
    checker = Checker(REPO)
    assert any(p.name == "numerics.md" for p in checker.markdown)  # the tree was found and read
    problems = checker.check()
    assert not problems, f"{len(problems)} broken cross-references:\n  " + "\n  ".join(problems)


def _tree(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return Checker(tmp_path)


NUMERICS = "# Numerics\n\n## 1. Formats\n\ntext, see section 2\n\n## 2. Conversion (`exact`)\n\n### 2.1 Rounding\n"


def test_section_citations_are_checked(tmp_path):
    checker = _tree(tmp_path, {
        "docs/numerics.md": NUMERICS,
        "api/src/good.cpp": "// numerics.md section 2, numerics.md sections 1 and 2.1; numerics 2\n"
                            "// as docs/numerics.md\n// section 1 says\n",
        "api/src/bad.cpp": "int x;\n// numerics.md 3.1 and\n/* numerics section 6 */\n",
        "docs/other.md": "As numerics.md 2.2 says, and [numerics.md](numerics.md#2-conversion-exact) 2.1.\n",
    })
    problems = checker.check()
    assert problems == [
        "api/src/bad.cpp:2: cites 'numerics.md 3.1', but docs/numerics.md has no section 3.1",
        "api/src/bad.cpp:3: cites 'numerics section 6', but docs/numerics.md has no section 6",
        "docs/other.md:1: cites 'numerics.md 2.2', but docs/numerics.md has no section 2.2",
    ], problems


def test_self_citations_of_a_numbered_document_are_checked(tmp_path):
    checker = _tree(tmp_path, {"docs/numerics.md": NUMERICS + "\nThe rule of section 3.2 of the design.\n"})
    problems = checker.check()
    assert problems == ["docs/numerics.md:11: cites 'section 3.2', but this document has no section 3.2"]


def test_heading_citations_and_paths_are_checked(tmp_path):
    checker = _tree(tmp_path, {
        "docs/numerics.md": NUMERICS,
        "docs/backends/cuda.md": "# cuda\n\n## Capabilities (read at start)\n",
        "tests/a_test.py": '# numerics.md, "Conversion"; cuda.md, "Capabilities"; see docs/backends/cuda.md\n'
                           '# docs/numerics.md, "Rounding" and docs/recipes.md\n'
                           '# numerics.md, "Block scaling"\n',
    })
    problems = checker.check()
    assert problems == [
        "tests/a_test.py:2: names docs/recipes.md, which does not exist",
        "tests/a_test.py:3: cites 'numerics.md, \"Block scaling\"', but docs/numerics.md has no heading starting so",
    ], problems


def test_markdown_links_and_anchors_are_checked(tmp_path):
    checker = _tree(tmp_path, {
        "docs/numerics.md": NUMERICS + "\n## 1. Formats\n",
        "README.md": "[n](docs/numerics.md#2-conversion-exact) [f](docs/numerics.md#1-formats-1) "
                     "[w](https://example.org/x.md) [self](#readme)\n\n# Readme\n"
                     "```\n[not a link](nowhere.md)\n```\n"
                     "[gone](docs/gone.md) [bad anchor](docs/numerics.md#3-gemm)\n",
    })
    problems = checker.check()
    assert problems == [
        "README.md:7: links to docs/gone.md, but docs/gone.md does not exist",
        "README.md:7: links to docs/numerics.md#3-gemm, but numerics.md has no heading with anchor #3-gemm",
    ], problems


def test_github_anchors():
    assert github_anchor("8. GEMM: the order of operations") == "8-gemm-the-order-of-operations"
    assert github_anchor("Delayed scaling (`octet_recipe_create_delayed`)") == \
        "delayed-scaling-octet_recipe_create_delayed"
    assert github_anchor("Plugin ABI 1.3: scaling kernels") == "plugin-abi-13-scaling-kernels"
