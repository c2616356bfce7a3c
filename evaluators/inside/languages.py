"""The languages an evolving program may be written in: how each writes a line comment
(where EVOLVE-BLOCK markers go), the tag of its fenced code in a prompt, and the tools
its evaluator usually compiles it with (an OpenEvolve folder declares only `language`).

Only Python gets Python's checks (parse, canonical form); any other language is
compiled by the problem's own evaluator. Stdlib only: the kit's markers module uses it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    """`comments`: line-comment leaders, the first the one prompts show; `tools`: what an
    OpenEvolve folder naming this language needs in the sandbox unless it says otherwise."""

    name: str
    suffixes: tuple[str, ...]
    comments: tuple[str, ...]
    fence: str
    tools: tuple[str, ...] = ()

    @property
    def comment(self) -> str:
        return self.comments[0]

    @property
    def is_python(self) -> bool:
        return self.name == "python"

    @property
    def title(self) -> str:
        """Its name as prose writes it ("C++", "Rust")."""
        return _TITLES.get(self.name, self.name.capitalize())


_TITLES = {"cpp": "C++", "csharp": "C#", "javascript": "JavaScript", "typescript": "TypeScript"}
_TITLES |= {"sql": "SQL", "vhdl": "VHDL", "cuda": "CUDA", "json": "JSON"}
PYTHON = Language("python", (".py",), ("#",), "python")
_KNOWN = (
    PYTHON,
    Language("rust", (".rs",), ("//",), "rust", ("cargo", "rustc")),
    Language("cpp", (".cpp", ".cc", ".cxx", ".hpp", ".hh", ".h"), ("//",), "cpp", ("g++",)),
    Language("c", (".c",), ("//", "/*"), "c", ("gcc",)),
    Language("go", (".go",), ("//",), "go", ("go",)),
    Language("javascript", (".js", ".mjs", ".cjs"), ("//",), "javascript", ("node",)),
    Language("typescript", (".ts",), ("//",), "typescript", ("node",)),
    Language("java", (".java",), ("//",), "java", ("javac", "java")),
    Language("kotlin", (".kt",), ("//",), "kotlin"),
    Language("scala", (".scala",), ("//",), "scala"),
    Language("swift", (".swift",), ("//",), "swift", ("swiftc",)),
    Language("csharp", (".cs",), ("//",), "csharp"),
    Language("zig", (".zig",), ("//",), "zig", ("zig",)),
    Language("shell", (".sh", ".bash"), ("#",), "bash", ("bash",)),
    Language("ruby", (".rb",), ("#",), "ruby", ("ruby",)),
    Language("r", (".r", ".R"), ("#",), "r", ("Rscript",)),
    Language("julia", (".jl",), ("#",), "julia", ("julia",)),
    Language("sql", (".sql",), ("--",), "sql"),
    Language("lua", (".lua",), ("--",), "lua", ("lua",)),
    Language("haskell", (".hs",), ("--",), "haskell", ("ghc",)),
    Language("verilog", (".v", ".sv"), ("//",), "verilog"),
    Language("vhdl", (".vhd", ".vhdl"), ("--",), "vhdl"),
    Language("cuda", (".cu", ".cuh"), ("//",), "cuda", ("nvcc",)),
    Language("json", (".json", ".json5"), ("//",), "json"),
    Language("markdown", (".md",), ("<!--",), "markdown"),
    Language("wolfram", (".wl", ".wls"), ("(*",), "wolfram", ("wolframscript",)),
    Language(
        "fortran", (".f90", ".f95", ".f03", ".f08", ".f", ".for"), ("!",), "fortran", ("gfortran",)
    ),
)
_ALIASES = {
    "c++": "cpp",
    "cxx": "cpp",
    "py": "python",
    "python3": "python",
    "rs": "rust",
    "js": "javascript",
    "node": "javascript",
    "ts": "typescript",
    "golang": "go",
    "bash": "shell",
    "sh": "shell",
    "c#": "csharp",
    "f90": "fortran",
    "f95": "fortran",
    "f03": "fortran",
    "f08": "fortran",
    "jl": "julia",
    "cc": "cpp",
    "cu": "cuda",
    "json5": "json",
    "md": "markdown",
    "wl": "wolfram",
    "wls": "wolfram",
    "mathematica": "wolfram",
}
# Every leader a marker line may start with, whatever the language: a seed of an unknown
# suffix still has its blocks found, and no Python line starts with the others.
ALL_COMMENTS = ("#", "//", "--", ";", "%", "/*", "(*", "<!--", "!")


def by_name(name: str) -> Language | None:
    """The language OpenEvolve's `language` names (case-insensitive, common aliases)."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    return next((lang for lang in _KNOWN if lang.name == key), None)


def by_suffix(suffix: str) -> Language:
    """The language of a file suffix ('.rs'); an unknown one gets every comment leader."""
    for lang in _KNOWN:
        if suffix in lang.suffixes or suffix.lower() in lang.suffixes:
            return lang
    name = suffix.lstrip(".").lower() or "text"
    return Language(name, (suffix,), ALL_COMMENTS, name)
