"""Programs of several files in the archive: each file's text stored once (content-addressed),
every reader given the exact tree text back, and schema-6 archives migrated."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators import tree
from evolve.archive import SCHEMA_VERSION, Archive, ArchiveError, ArchiveReader, ProgramRow
from evolve.archive.trees import digest

FILES = ("policy/__init__.py", "policy/admission.py", "policy/batching.py", "eviction.py")


def seed_files() -> dict[str, str]:
    return {path: f"# {path}\ndef f{i}(x):\n    return x + {i}\n" for i, path in enumerate(FILES)}


def changed(files: dict[str, str], path: str, n: int) -> dict[str, str]:
    """`files` with one file changed, as a child of evolution changes its parent."""
    return {**files, path: files[path] + f"K{n} = {n}\n"}


def row(it: int, code: str | None, parent: str | None = None, status: str = "ok") -> ProgramRow:
    return ProgramRow(
        f"r:{it}",
        "r",
        "p",
        it,
        0,
        status,
        code=code,
        parent_id=parent,
        kind="seed" if it == 0 else "mutation",
        score=float(it) if status == "ok" else None,
    )


@pytest.fixture
def lineage_archive(tmp_path) -> tuple[Path, list[str]]:
    """A run of 6 programs: a tree seed, children that each change one file, a one-file
    program and one with no code (an edit that failed)."""
    runs = tmp_path / "runs"
    a = Archive(runs)
    a.create_run("r", "p", "/nowhere", {}, 6)
    files = seed_files()
    codes = [tree.encode(files)]
    for it, path in enumerate(FILES[1:], 1):
        files = changed(files, path, it)
        codes.append(tree.encode(files))
    codes.append("x = 1\n")  # one file
    for it, code in enumerate(codes):
        a.insert_program(row(it, code, f"r:{it - 1}" if it else None))
    a.insert_program(row(len(codes), None, "r:0", status="invalid_edit"))
    a.close()
    return runs, codes


def test_a_child_that_changes_one_file_stores_only_that_file(lineage_archive):
    runs, codes = lineage_archive
    db = sqlite3.connect(runs / "archive.db")
    stored = db.execute("SELECT code, code_files FROM programs ORDER BY iteration").fetchall()
    # trees: no text in the row, their files apart; one-file programs: as they always were
    assert stored[:4] == [(None, 4)] * 4
    assert stored[4] == ("x = 1\n", 0) and stored[5] == (None, 0)
    # the seed's 4 files, then one new text per child
    assert db.execute("SELECT COUNT(*) FROM blobs").fetchone()[0] == 4 + 3
    assert db.execute("SELECT COUNT(*) FROM program_files").fetchone()[0] == 4 * 4
    paths = db.execute(
        "SELECT path FROM program_files WHERE program_id = 'r:3' ORDER BY position"
    ).fetchall()
    assert [p for (p,) in paths] == list(FILES)
    for key, text in db.execute("SELECT sha256, text FROM blobs"):
        assert key == digest(text)
    db.close()


def test_every_reader_gets_the_tree_back_exactly(lineage_archive):
    runs, codes = lineage_archive
    a = Archive(runs)
    try:
        assert [p.code for p in a.programs("r", code=True)] == [*codes, None]
        assert [p.code for p in a.programs("r", code=True, pending=False)] == [*codes, None]
        assert a.program("r:2").code == codes[2]
        assert a.best("r").program_id == "r:4" and a.best("r").code == codes[4]
    finally:
        a.close()
    reader = ArchiveReader(runs)
    assert [p.code for p in reader.programs("r", code=True)] == [*codes, None]
    assert [p.code for p in reader.programs("r")] == [None] * 6  # a listing reads no code
    assert reader.program("r:3").code == codes[3]
    assert reader.resolve_program("r:1").code == codes[1]
    assert reader.best(run_id="r").code == codes[4]
    assert [p.code for p in reader.lineage("r:3")] == codes[3::-1]


def test_a_text_that_would_not_come_back_from_its_files_is_stored_whole(tmp_path):
    """A tree's header with a CR, one with no newline, a path that leaves the tree, a file
    named twice: each is kept as the text it is, and read back byte for byte."""
    odd = [
        "# evolve-file: a.py\r\nx = 1\n# evolve-file: b.py\ny = 2\n",
        "# evolve-file: a.py\nx = 1\n# evolve-file: b.py",
        "# evolve-file: ../a.py\nx = 1\n# evolve-file: b.py\n",
        "# evolve-file: a.py\nx\n# evolve-file: a.py\ny\n",
        "# evolve-file: a.py\n",  # a tree of one empty file: stored by its files
    ]
    a = Archive(tmp_path / "runs")
    a.create_run("r", "p", "/nowhere", {}, 5)
    for it, code in enumerate(odd):
        a.insert_program(row(it, code))
    assert [p.code for p in a.programs("r", code=True)] == odd
    files = [n for (n,) in a.db.execute("SELECT code_files FROM programs ORDER BY iteration")]
    assert files == [0, 0, 0, 0, 1]
    a.close()


PATHS = st.lists(
    st.from_regex(r"[a-z_]{1,8}(/[a-z_]{1,8}){0,2}\.(py|rs|h)", fullmatch=True),
    min_size=2,
    max_size=6,
    unique=True,
)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=200)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paths=PATHS, texts=st.lists(TEXT, min_size=6, max_size=6), plain=TEXT)
def test_any_tree_and_any_text_come_back_exactly(tmp_path_factory, paths, texts, plain):
    try:
        code = tree.encode(dict(zip(paths, texts, strict=False)))
    except tree.TreeError:  # a file line that starts with the header: not a tree
        code = plain
    a = Archive(tmp_path_factory.mktemp("runs"))
    a.create_run("r", "p", "/nowhere", {}, 2)
    a.insert_program(row(0, code))
    a.insert_program(row(1, plain))
    assert [p.code for p in a.programs("r", code=True)] == [code, plain]
    a.close()


def test_a_tree_whose_files_are_gone_is_one_line_naming_the_archive(lineage_archive):
    runs, _ = lineage_archive
    db = sqlite3.connect(runs / "archive.db")
    db.execute("DELETE FROM program_files WHERE program_id = 'r:2' AND position = 1")
    db.commit()
    db.close()
    with pytest.raises(ArchiveError) as e:
        ArchiveReader(runs).program("r:2")
    assert str(runs / "archive.db") in str(e.value) and "r:2: 4 files" in str(e.value)
    assert "\n" not in str(e.value)


def schema_6(runs: Path) -> None:
    """The archive of `runs`, made by this code, turned into what schema 6 wrote: each code
    whole in `programs.code`, no blobs, no program_files, no code_files."""
    reader = ArchiveReader(runs)
    codes = {
        p.program_id: p.code for r in reader.runs() for p in reader.programs(r.run_id, code=True)
    }
    db = sqlite3.connect(runs / "archive.db")
    db.executemany(
        "UPDATE programs SET code = ? WHERE program_id = ?", [(c, k) for k, c in codes.items()]
    )
    db.execute("ALTER TABLE programs DROP COLUMN code_files")
    db.execute("DROP TABLE program_files")
    db.execute("DROP TABLE blobs")
    db.execute("PRAGMA user_version=6")
    db.commit()
    db.execute("VACUUM")
    db.close()


def test_a_schema_6_archive_reads_as_it_is_and_migrates_its_trees(lineage_archive):
    runs, codes = lineage_archive
    schema_6(runs)
    db_file = runs / "archive.db"
    before = db_file.read_bytes()
    reader = ArchiveReader(runs)  # read-only: as it is, unmigrated
    assert [p.code for p in reader.programs("r", code=True)] == [*codes, None]
    assert reader.program("r:3").code == codes[3]
    assert db_file.read_bytes() == before

    a = Archive(runs)  # what run and resume open: it migrates, in one transaction
    try:
        assert a.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
        stored = a.db.execute("SELECT code, code_files FROM programs ORDER BY iteration")
        assert [tuple(r) for r in stored] == [(None, 4)] * 4 + [("x = 1\n", 0), (None, 0)]
        assert a.db.execute("SELECT COUNT(*) FROM blobs").fetchone()[0] == 7
        assert [p.code for p in a.programs("r", code=True)] == [*codes, None]
        assert a.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # the run goes on under the new schema: a new child stores only its new file
        child = tree.encode(changed(dict(tree.decode(codes[3], "")), FILES[0], 9))
        a.insert_program(row(6, child, "r:3"))
        assert a.program("r:6").code == child
        assert a.db.execute("SELECT COUNT(*) FROM blobs").fetchone()[0] == 8
    finally:
        a.close()
    assert ArchiveReader(runs).program("r:6").code == child


def test_a_migration_to_7_that_cannot_finish_leaves_schema_6_as_it_was(lineage_archive):
    runs, codes = lineage_archive
    schema_6(runs)
    db = sqlite3.connect(runs / "archive.db")
    db.execute("CREATE TABLE blobs (x)")  # in the way of the migration's own
    db.commit()
    db.close()
    with pytest.raises(ArchiveError) as e:  # CREATE TABLE IF NOT EXISTS keeps it: storing fails
        Archive(runs)
    assert "blobs" in str(e.value) and str(runs / "archive.db") in str(e.value)
    db = sqlite3.connect(runs / "archive.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == 6
    assert "code_files" not in {r[1] for r in db.execute("PRAGMA table_info(programs)")}
    assert db.execute("SELECT code FROM programs WHERE iteration = 2").fetchone()[0] == codes[2]
    db.close()
