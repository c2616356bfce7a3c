"""A corpus of hostile replies, made by code: what a model (or whoever answers in its place)
could send to stop, wedge or crash the controller through its edit pipeline.

Every reply is written against the toy problem's seed (evolve/testing/toy_problem.py: one
EVOLVE-BLOCK holding `def f(x): return x`), so each one reaches as deep into the
pipeline as it can: parsed, applied, tidied, hashed, tuned, diffed, shown in a prompt.
`size` is the length of the huge ones (the reply limit in unit tests, less where they
travel as JSON through the scripted server). Used by tests/test_hostile_replies.py and
bench/hostile_replies.py.
"""

from __future__ import annotations

from dataclasses import dataclass

NORMAL = "```python\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x + 7\n# EVOLVE-BLOCK-END\n```\n"


@dataclass(frozen=True)
class Hostile:
    name: str
    text: str
    fmt: str = "diff"  # the edit format the run asked for (each reading is tried anyway)


def block(body: str, fence: str = "```python") -> str:
    """A fenced reply holding the toy program with `body` as its block."""
    return f"{fence}\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```\n"


def f_returning(expr: str) -> str:
    return block(f"def f(x):\n    return {expr}\n")


def search_replace(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def _padded(head: str, tail: str, size: int, filler: str) -> str:
    """head + filler repeated + tail, exactly `size` characters (ASCII: bytes too)."""
    room = max(0, size - len(head) - len(tail))
    return head + (filler * (room // len(filler) + 1))[:room] + tail


def deep(n: int = 100_000) -> list[Hostile]:
    """Deep syntax: what overflows ast.parse, ast.unparse or the parser's own stack."""
    return [
        # the breach of issue 37: compiles in the sandbox, overflowed the tuner's ast.parse
        Hostile("deep_sum_2950", f_returning("+".join(["1"] * 2950) + "+x"), "block"),
        Hostile("deep_sum_3k", f_returning("+".join(["1"] * 3000) + "+x"), "block"),
        Hostile("deep_sum_huge", f_returning("+".join(["1"] * n) + "+x"), "block"),
        Hostile(
            "deep_sum_diff",
            search_replace("    return x\n", "    return " + "+".join(["x"] * 2950) + "\n"),
        ),
        Hostile("deep_attr_chain", f_returning("x" + ".real" * 5000), "block"),
        Hostile("deep_parens_190", f_returning("(" * 190 + "x" + ")" * 190), "block"),
        Hostile("deep_parens_5k", f_returning("(" * 5000 + "x" + ")" * 5000), "block"),
        Hostile("deep_lists_5k", f_returning("[" * 5000 + "x" + "]" * 5000 + "[0]" * 10), "block"),
        Hostile("deep_dicts_3k", f_returning("{1:" * 3000 + "x" + "}" * 3000), "block"),
        Hostile(
            "deep_lambdas_5k", f_returning("(" + "lambda: " * 5000 + "x)" + "()" * 10), "block"
        ),
        Hostile("deep_unary", f_returning("-" * n + "x"), "block"),
        Hostile("deep_not", f_returning("not " * (n // 2) + "x"), "block"),
        Hostile("deep_calls_5k", f_returning("abs(" * 5000 + "x" + ")" * 5000), "block"),
        Hostile("deep_ternary_5k", f_returning("x if x else " * 5000 + "x"), "block"),
        Hostile("deep_compare", f_returning("x" + " < x" * (n // 5)), "block"),
        Hostile(
            "deep_indent_150",
            block(
                "def f(x):\n"
                + "".join("    " * (k + 1) + "if x:\n" for k in range(150))
                + "    " * 151
                + "return x\n    return x\n"
            ),
            "block",
        ),
        Hostile(
            "deep_defs_90",
            block(
                "".join("    " * k + f"def f{k}(x):\n" for k in range(90))
                + "    " * 90
                + "return x\ndef f(x):\n    return x + 1\n"
            ),
            "block",
        ),
        Hostile(
            "deep_unfenced", "def f(x):\n    return " + "+".join(["1"] * 2950) + "+x\n", "full"
        ),
        Hostile("deep_fstring", f_returning('f"{' * 150 + "x" + '}"' * 150), "block"),
    ]


def huge(size: int) -> list[Hostile]:
    """Replies of `size` characters (and one over): prose, one line, a program, a diff."""
    body_head = "```python\n# EVOLVE-BLOCK-START\ndef f(x):\n"
    body_tail = "    return x + 3\n# EVOLVE-BLOCK-END\n```\n"
    return [
        Hostile(
            "huge_program", _padded(body_head, body_tail, size, "    y = x * 2  # pad\n"), "block"
        ),
        Hostile(
            "huge_over_limit",
            _padded(body_head, body_tail, size + 1, "    y = x * 2  # pad\n"),
            "block",
        ),
        Hostile(
            "huge_prose", _padded("Here is my answer.\n", "\n", size, "The bins are packed well. ")
        ),
        Hostile(
            "huge_one_line",
            _padded(
                "```python\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x",
                "\n# EVOLVE-BLOCK-END\n```\n",
                size,
                " + 0",
            ),
        ),
        Hostile(
            "huge_search",
            _padded(
                "<<<<<<< SEARCH\n",
                "=======\n    return x + 1\n>>>>>>> REPLACE\n",
                size,
                "    return x\n",
            ),
        ),
        Hostile(
            "huge_replace",
            _padded(
                "<<<<<<< SEARCH\n    return x\n=======\n",
                "    return x + 1\n>>>>>>> REPLACE\n",
                size,
                "    x = x + 0\n",
            ),
        ),
        Hostile("huge_sum", f_returning("+".join(["1"] * (size // 2 - 60)) + "+x"), "block"),
        Hostile(
            "huge_repeated_lines",
            _padded(
                "<<<<<<< SEARCH\n",
                "    return 2\n=======\n    return 3\n>>>>>>> REPLACE\n",
                size // 2,
                "x\n",
            ),
        ),
    ]


def diffs(n: int = 5000) -> list[Hostile]:
    """Pathological SEARCH/REPLACE: thousands of blocks, overlaps, nested markers, growth."""
    grow = "".join(
        search_replace("    return x\n", "    x = x + 0\n" * max(50, n // 12) + "    return x\n")
        for _ in range(100)
    )
    nested = (
        "<<<<<<< SEARCH\n" * n
        + "    return x\n"
        + "=======\n" * n
        + "    return x + 1\n"
        + ">>>>>>> REPLACE\n" * n
    )
    return [
        Hostile(
            "sr_thousands_of_blocks", search_replace("    return x\n", "    return x + 1\n") * n
        ),
        Hostile(
            "sr_100_blocks",
            search_replace("    return x\n", "    return x\n") * 99
            + search_replace("    return x\n", "    return x + 2\n"),
        ),
        Hostile("sr_growing", grow),
        Hostile(
            "sr_overlapping",
            search_replace("def f(x):\n    return x\n", "def f(x):\n    return x * 2\n")
            + search_replace("    return x\n# EVOLVE-BLOCK-END\n", "    return x\n")
            + search_replace("# EVOLVE-BLOCK-START\ndef f(x):\n", "def f(y):\n"),
        ),
        Hostile("sr_nested_markers", nested),
        Hostile("sr_unterminated", "<<<<<<< SEARCH\n    return x\n" * n),
        Hostile("sr_dividers_only", "=======\n" * (20 * n) + ">>>>>>> REPLACE\n" * n),
        Hostile(
            "sr_fence_flood",
            "<<<<<<< SEARCH\n"
            + "```\n" * (20 * n)
            + "    return x\n=======\n"
            + "```\n" * (20 * n)
            + "    return x + 1\n>>>>>>> REPLACE\n",
        ),
        Hostile(
            "sr_blank_flood",
            "<<<<<<< SEARCH\n"
            + "\n" * (40 * n)
            + "    return x\n=======\n    return x + 4\n>>>>>>> REPLACE\n",
        ),
        Hostile(
            "sr_outside_blocks",
            search_replace(
                "# EVOLVE-BLOCK-END\n", "# EVOLVE-BLOCK-END\nimport os\nos.system('id')\n"
            ),
        ),
        Hostile(
            "sr_inserts_markers",
            search_replace(
                "    return x\n", "    return x\n# EVOLVE-BLOCK-END\n# EVOLVE-BLOCK-START\n" * 1000
            ),
        ),
        Hostile("sr_empty_search", search_replace("", "    return 5\n") * 50),
    ]


def markers(n: int = 5000) -> list[Hostile]:
    """Thousands of EVOLVE-BLOCK markers, balanced and not."""
    pairs = "".join(
        f"# EVOLVE-BLOCK-START\ndef g{k}(x):\n    return x\n# EVOLVE-BLOCK-END\n" for k in range(n)
    )
    return [
        Hostile("markers_pairs", f"```python\n{pairs}```\n", "block"),
        Hostile(
            "markers_starts",
            "```python\n" + "# EVOLVE-BLOCK-START\n" * n + "def f(x):\n    return x\n```\n",
            "block",
        ),
        Hostile(
            "markers_ends",
            "```python\ndef f(x):\n    return x\n" + "# EVOLVE-BLOCK-END\n" * n + "```\n",
            "full",
        ),
        Hostile(
            "markers_in_body",
            block("def f(x):\n    return x\n" + "# EVOLVE-BLOCK-END\n# EVOLVE-BLOCK-START\n" * n),
            "block",
        ),
        Hostile(
            "markers_long_line",
            block("#" + " EVOLVE-BLOCK-STAR" * (n * 10) + "\ndef f(x):\n    return x + 9\n"),
            "block",
        ),
    ]


def encodings() -> list[Hostile]:
    """Text that is not clean UTF-8 Python: surrogates, NULs, odd line ends, invisible marks."""
    return [
        Hostile("enc_lone_surrogate", f_returning("x  # \ud800 \udfff"), "block"),
        Hostile("enc_surrogate_code", f_returning("x\ud800"), "block"),
        Hostile("enc_surrogateescape", f_returning("x  # \udcff\udcfe"), "block"),
        Hostile("enc_nul", f_returning("x + 1  # \x00"), "block"),
        Hostile("enc_nul_code", f_returning("x\x00 + 1"), "block"),
        Hostile("enc_crlf", f_returning("x + 11").replace("\n", "\r\n"), "block"),
        Hostile("enc_cr_only", f_returning("x + 12").replace("\n", "\r"), "block"),
        Hostile("enc_bom", "\ufeff" + f_returning("x + 13"), "block"),
        Hostile("enc_bom_in_code", block("\ufeffdef f(x):\n    return x + 131\n"), "block"),
        Hostile("enc_rtl", f_returning("x  # \u202e\u2066 }; return 0 \u2069\u2066"), "block"),
        Hostile("enc_rtl_string", f_returning('x + len("\u202eadmin\u202c")'), "block"),
        Hostile("enc_mojibake", f_returning("x  # Ã©Ã¨ \ufffd\ufffd Â\x85 \x85"), "block"),
        Hostile(
            "enc_line_separators", f_returning("x + 14  # \u2028 \u2029 \x0c \x0b \x1c"), "block"
        ),
        Hostile("enc_zero_width", f_returning("x\u200b + 15"), "block"),
        Hostile("enc_fullwidth", f_returning("ｘ + 16"), "block"),
        Hostile("enc_combining", f_returning("x  # " + "e\u0301" * 10_000), "block"),
        Hostile("enc_astral", f_returning("x  # " + "\U0001f600" * 10_000), "block"),
        Hostile(
            "enc_dotted_i", f_returning("x  # " + "\u0130" * 5000) + "</THINK>" + "\u0130" * 50
        ),
    ]


def regexes(n: int = 200_000) -> list[Hostile]:
    """Inputs aimed at our regexes' backtracking (fences, think sections, markers, names)."""
    return [
        Hostile("re_fence_spaces", "```a" + " " * n + "b\n" + f_returning("x + 21"), "block"),
        Hostile("re_fence_tabs", "~~~" + " \t" * (n // 2) + "x\n" + f_returning("x + 22"), "block"),
        Hostile("re_fences", "```\n```\n" * (n // 4) + f_returning("x + 23"), "block"),
        Hostile("re_think_flood", "<think>" * (n // 7) + f_returning("x + 24"), "block"),
        Hostile(
            "re_think_closed_flood", "<think>a</think>" * (n // 16) + f_returning("x + 25"), "block"
        ),
        Hostile("re_unthink_flood", "</think>" * (n // 8) + f_returning("x + 26"), "block"),
        Hostile("re_search_lt", "<" * n + "\n" + " " * n + "<<< SEARC\n" + f_returning("x + 27")),
        Hostile("re_replace_gt", ">" * n + " " * n + "REPLAC\n"),
        Hostile("re_dividers", ("=" * n + " \t" * 1000 + "x\n") * 3),
        Hostile(
            "re_def_spaces", block("def" + " " * n + "\ndef f(x):\n    return x + 28\n"), "block"
        ),
        Hostile(
            "re_marker_leaders",
            block("#" * n + "\n" + "// " * (n // 3) + "\ndef f(x):\n    return x + 29\n"),
            "block",
        ),
        Hostile("re_funsearch_names", f_returning("x" + " + f_v" + "1" * n), "funsearch"),
        Hostile(
            "re_funsearch_many",
            f_returning("x + " + " + ".join(f"f_v{k}(0)" for k in range(n // 10))),
            "funsearch",
        ),
        Hostile("re_block_comments", "/* " * (n // 3) + "\n" + f_returning("x + 30"), "block"),
        Hostile("re_word_flood", f_returning("x  # " + "a" * n), "block"),
        Hostile(
            "re_blank_lines",
            block("def f(x):\n" + "\n" * (n // 4) + "    return x + 31\n"),
            "block",
        ),
    ]


def corpus(size: int = 1 << 20) -> list[Hostile]:
    """The whole corpus; `size`: the length of the huge replies, and the scale of the rest
    (1 MiB: 100k-term expressions, 5,000 SEARCH/REPLACE blocks and marker pairs, 200k-char
    lines aimed at regexes)."""
    return (
        deep(min(100_000, size // 10))
        + huge(size)
        + diffs(max(200, size // 200))
        + markers(max(200, size // 200))
        + encodings()
        + regexes(size // 5)
    )
