"""Problem folders load into one typed description, and bad ones fail with one clear line."""

from pathlib import Path

import pytest

from evolve.problem.load import ProblemError, load_problem

ROOT = Path(__file__).resolve().parent.parent


def test_native_example_loads():
    p = load_problem(ROOT / "problems" / "binpack")
    assert p.fmt == "native"
    assert p.train_split == "train" and p.test_split == "test"
    assert [s.split for s in p.cascade] == ["quick", "train"]
    assert p.cascade[0].threshold is not None and p.cascade[-1].threshold is None
    assert "EVOLVE-BLOCK-START" in p.seed_code


def test_openevolve_folder_loads_config():
    p = load_problem(ROOT / "tests" / "fixtures" / "openevolve_binpack")
    assert p.fmt == "openevolve" and p.entry == "initial_program.py"
    # As in OpenEvolve: the stage functions form the cascade, and a threshold gates the next stage.
    assert [s.function for s in p.cascade] == ["evaluate_stage1", "evaluate_stage2"]
    assert p.cascade[0].threshold == 0.5 and p.cascade[-1].threshold is None
    assert p.iterations == 5 and p.num_islands == 2
    assert [(m.name, m.weight, m.api_base) for m in p.llm.models] == [("scripted", 1.0, None)]
    assert p.edit_format == "full"


def test_openevolve_code_length_has_one_name_on_each_side():
    """The MAP-Elites grid calls code length `code_length`; OpenEvolve's fitness rule, in the
    sandbox, gets the feature dimensions as config.yaml names them (`complexity`)."""
    from evolve.pipeline.evaluation import CandidateEvaluator

    p = load_problem(ROOT / "tests" / "fixtures" / "openevolve_binpack")
    assert p.feature_dims == ("code_length", "diversity")
    assert p.openevolve_feature_dims == ("complexity", "diversity")
    request = CandidateEvaluator(p, sandbox=None).request(p.seed_code, "train")  # type: ignore[arg-type]
    assert request.feature_dims == ("complexity", "diversity")


def _native(
    tmp_path: Path,
    toml: str,
    seed: str = "x = 1\n",
    evaluator: str = "def evaluate(p, s):\n    return {}\n",
):
    (tmp_path / "problem.toml").write_text(toml)
    (tmp_path / "seed.py").write_text(seed)
    (tmp_path / "evaluator.py").write_text(evaluator)
    return tmp_path


@pytest.mark.parametrize(
    "toml, fragment",
    [
        ('[problem]\nentry = "seed.py"\n', "[problem] missing required key 'name'"),
        ('[problem]\nname = "x"\nentry = "nope.py"\n', "[problem] entry: 'nope.py' does not exist"),
        (
            '[problem]\nname = "x"\nentry = "seed.py"\ndirection = "up"\n',
            "[problem] direction: expected one of",
        ),
        (
            '[problem]\nname = "x"\nentry = "seed.py"\n[evaluation]\ntimeout_s = -1\n',
            "[evaluation] timeout_s: expected a number > 0, got -1",
        ),
        (
            '[problem]\nname = "x"\nentry = "seed.py"\n[evaluation]\ntest_split = "hold"\n',
            "split 'hold' is not listed",
        ),
        ('[problem]\nname = 3\nentry = "seed.py"\n', "[problem] name: expected a string, got 3"),
        ("[problem\n", "invalid TOML"),
    ],
)
def test_bad_problem_toml_names_the_field(tmp_path, toml, fragment):
    _native(tmp_path, toml)
    with pytest.raises(ProblemError) as e:
        load_problem(tmp_path)
    msg = str(e.value)
    assert fragment in msg and "\n" not in msg
    assert "problem.toml" in msg or "seed.py" in msg or str(tmp_path) in msg


def test_unbalanced_markers_and_missing_evaluate(tmp_path):
    _native(
        tmp_path, '[problem]\nname = "x"\nentry = "seed.py"\n', seed="# EVOLVE-BLOCK-START\nx = 1\n"
    )
    with pytest.raises(ProblemError, match="seed.py"):
        load_problem(tmp_path)
    _native(
        tmp_path, '[problem]\nname = "x"\nentry = "seed.py"\n', evaluator="def other():\n    pass\n"
    )
    with pytest.raises(ProblemError, match="no top-level function 'evaluate'"):
        load_problem(tmp_path)


def test_not_a_problem_folder(tmp_path):
    with pytest.raises(ProblemError, match="not a problem folder"):
        load_problem(tmp_path)
    with pytest.raises(ProblemError, match="no such problem folder"):
        load_problem(tmp_path / "missing")


@pytest.mark.parametrize(
    "problem", sorted(p.parent.name for p in ROOT.glob("problems/*/problem.toml"))
)
def test_nothing_reads_the_shared_data_folder(problem):
    """A problem's data files ship in its data/; no code of the problem looks elsewhere."""
    for path in (ROOT / "problems" / problem).rglob("*.py"):
        assert "shared/" not in path.read_text(), path


def test_every_shipped_problem_loads_and_marks_its_blocks():
    """The schemas accept every problem folder in the repository as it is."""
    from evolve.problem.load import require_blocks

    folders = [p.parent for p in ROOT.glob("problems/*/problem.toml")]
    folders += [p.parent for p in ROOT.glob("tests/fixtures/**/problem.toml")]
    folders += [p.parent for p in ROOT.glob("tests/fixtures/**/initial_program.py")]
    assert len(folders) >= 7
    for folder in folders:
        require_blocks(load_problem(folder))
