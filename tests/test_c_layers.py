"""The C core's layers point down only (docs/security-model.md, "C layers").

Parses csrc/*.c and csrc/include/dpfast/*.h: per file its function definitions, the
functions it calls and its ``#include "dpfast/..."`` lines.  A module is a file name
without its extension (exact.c and exact.h are the module ``exact``).  Module A depends
on module B when a file of A includes B's header or uses a function (or an ``extern``
variable) that B defines.  That graph must have no cycle, and no edge may point
up the layer order below.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CSRC = ROOT / "csrc"

# the tests run from the source tree (a clean clone), where csrc/ always exists: a
# missing folder is a failure, never a skip
assert CSRC.is_dir(), f"{CSRC} is missing: run the tests from a clone of the repository"

# Bottom to top, as in docs/security-model.md ("C layers").  A module may use modules of
# its own layer (without a cycle) and of the layers below, never one above.
LAYERS = [
    ("portability, status", {"common", "status", "arith"}),
    ("operating system: entropy, fork safety, erasure", {"entropy"}),
    ("generator", {"chacha", "rng"}),
    ("certified arithmetic", {"certified", "expfix"}),
    ("samplers without set-up", {"exact", "continuous", "grid"}),
    ("certified threshold tables", {"tables"}),
    ("prepared and constant-time samplers", {"dgauss", "prepared", "consttime"}),
    ("sampler choice", {"discrete"}),
    ("mechanism kernels", {"selection", "sparse", "boost", "grouped", "compat", "release"}),
]

_KEYWORDS = {
    "if",
    "for",
    "while",
    "switch",
    "return",
    "sizeof",
    "defined",
    "do",
    "else",
    "case",
    "goto",
    "_Pragma",
    "__attribute__",
    "__declspec",
    "__builtin_expect",
}


def _files():
    return sorted(CSRC.glob("*.c")) + sorted((CSRC / "include" / "dpfast").glob("*.h"))


def _module(path):
    return path.stem


def _strip(text):
    """The text without comments, string and character literals, and preprocessor lines
    (an #include is read before this), in the C standard's order: lines spliced first."""
    text = re.sub(r"\\\n", " ", text)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\\n])*'", "''", text)
    # the C++ guards of the headers (extern "C" { ... }) would hide their definitions
    text = re.sub(
        r"^[ \t]*#[ \t]*ifdef[ \t]+__cplusplus\b.*?^[ \t]*#[ \t]*endif\b",
        "",
        text,
        flags=re.M | re.S,
    )
    return re.sub(r"^[ \t]*#[^\n]*", "", text, flags=re.M)


def _top_level(code):
    """code with the inside of every top-level brace pair removed: what is left is
    declarations, and the head of every definition followed by '{}'."""
    out, depth = [], 0
    for ch in code:
        if ch == "{":
            if depth == 0:
                out.append("{")
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                out.append("}")
        elif depth == 0:
            out.append(ch)
    return "".join(out)


_PARENS = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
_DEFINITION = re.compile(
    r"(?P<head>[^;{}]*?)\b(?P<name>[A-Za-z_]\w*)\s*" + _PARENS + r"\s*\{"
)
_NAME = re.compile(r"\b([A-Za-z_]\w*)\b")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"dpfast/(\w+)\.h"', re.M)
_EXTERN = re.compile(r"\bextern\b[^;(){}]*?\b([A-Za-z_]\w*)\s*;")


def _parse():
    """Per file: the functions it defines (name -> static?), the names it uses, the
    dpfast headers it includes and (headers) the variables it declares extern."""
    parsed = {}
    for path in _files():
        raw = path.read_text(encoding="utf-8")
        code = _strip(raw)
        defined = {}
        for m in _DEFINITION.finditer(_top_level(code)):
            if m.group("name") not in _KEYWORDS:
                defined[m.group("name")] = bool(re.search(r"\bstatic\b", m.group("head")))
        parsed[path] = {
            "defines": defined,
            # every name used (a call, a function pointer, an extern variable)
            "uses": set(_NAME.findall(code)) - _KEYWORDS,
            "includes": set(_INCLUDE.findall(raw)),
            "externs": set(_EXTERN.findall(code)) if path.suffix == ".h" else set(),
        }
    return parsed


def _graph(parsed):
    """{module: {module it depends on: reasons}}."""
    owner = {}
    for path, info in parsed.items():
        for name, static in info["defines"].items():
            # a static function of a .c file is its own; a header's inline ones are shared
            if not (static and path.suffix == ".c"):
                owner.setdefault(name, set()).add(_module(path))
        for name in info["externs"]:
            owner.setdefault(name, set()).add(_module(path))
    graph = {}
    for path, info in parsed.items():
        mod = _module(path)
        edges = graph.setdefault(mod, {})
        for header in info["includes"]:
            if header != mod:
                edges.setdefault(header, set()).add(f'#include "dpfast/{header}.h"')
        for name in info["uses"] - set(info["defines"]):
            for other in owner.get(name, ()):
                if other != mod:
                    edges.setdefault(other, set()).add(name)
    return graph


def _cycle(graph):
    """One cycle of the graph as a list of modules, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


@pytest.fixture(scope="module")
def graph():
    return _graph(_parse())


def test_the_parser_sees_the_known_edges(graph):
    # a check of the check: edges that must be found, through a call and an include
    assert "dpf_next_u64" in graph["exact"]["rng"]
    assert "dpf_u_below" in graph["dgauss"]["tables"]
    assert "dpf_os_entropy" in graph["chacha"]["entropy"]
    assert "dpf_fork_generation" in graph["chacha"]["entropy"]
    assert '#include "dpfast/chacha.h"' in graph["rng"]["chacha"]
    assert "dpf_dlap_exact_prepare" in graph["discrete"]["prepared"]
    assert "dpf_chacha_fill" in graph["consttime"]["chacha"]  # defined after SIMD macros
    ring = {"a": {"b": {"f"}}, "b": {"c": {"g"}}, "c": {"a": {"h"}}}
    assert _cycle(ring) == ["a", "b", "c", "a"]


def test_the_file_graph_has_no_cycle(graph):
    cycle = _cycle(graph)
    assert cycle is None, "C modules in a cycle: " + " -> ".join(
        f"{a} ({', '.join(sorted(graph[a][b]))})" for a, b in zip(cycle, cycle[1:])
    )


def test_every_module_has_a_layer(graph):
    placed = set().union(*(mods for _, mods in LAYERS))
    assert set(graph) == placed, (
        f"place new C modules in LAYERS and in the docs: {sorted(set(graph) - placed)}; "
        f"gone: {sorted(placed - set(graph))}"
    )


def test_layers_point_down_only(graph):
    level = {mod: i for i, (_, mods) in enumerate(LAYERS) for mod in mods}
    upward = [
        f"{a} ({LAYERS[level[a]][0]}) -> {b} ({LAYERS[level[b]][0]}): "
        f"{', '.join(sorted(why))}"
        for a, deps in graph.items()
        for b, why in deps.items()
        if a in level and b in level and level[b] > level[a]
    ]
    assert upward == []


def test_os_entropy_and_fork_handling_live_in_entropy_c():
    os_calls = re.compile(
        r"\b(getpid|pthread_atfork|mmap|munmap|madvise|getrandom|"
        r"BCryptGenRandom|arc4random_buf|GetCurrentProcessId)\b"
    )
    users = {p.name for p in CSRC.glob("*.c") if os_calls.search(_strip(p.read_text()))}
    assert users == {"entropy.c"}


def test_dead_integer_add_is_gone():
    # the one integer-release policy is _saturating_add in the Cython layer
    hits = [
        str(p.relative_to(ROOT))
        for p in _files() + sorted((ROOT / "src").rglob("*.p*"))
        if p.is_file() and "dpf_int_add" in p.read_text(encoding="utf-8")
    ]
    assert hits == []
