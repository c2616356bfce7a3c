"""A hostile C++ candidate of a native `tools` problem, shared by the confinement tests.

It tries, at run time, to read the request, the data seed, the run's `--env` secret (its own
environment and its parent's /proc files), the problem folder, the data folder and the runs
folder's archive.db, and prints whatever it got into stderr, which the evaluator returns as
an artifact; a second candidate tries the same at compile time (`#include` of the files,
whose lines g++ quotes in its errors). `secrets_in(result)` names every secret that made it
into a stored result. The problem is a copy of tests/fixtures/cpp_knapsack with a canary in
its evaluator and a data folder holding another.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from evaluators.sandbox import EvalRequest, EvalResult, Limits
from evolve.archive.store import Archive

CPP = Path(__file__).parent.parent / "fixtures" / "cpp_knapsack"
SEED = 918273645546372819  # the run's data seed: found nowhere it could be read
ENV_NAME, ENV_VALUE = "KNAPSACK_API_TOKEN", "canary-env-5f1d0c8e"
PROBLEM_CANARY = "canary-problem-7a2b91"
DATA_CANARY = "canary-data-c04e33"
ARCHIVE_CANARY = "canary-archive-19bd7e"
DONE = "HOSTILE-READS-DONE"  # the candidate ran and its stderr came back
LIMITS = Limits(timeout_s=60.0, memory_mb=2048, max_procs=64, max_file_mb=16, max_output_kb=32)

_READER = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
extern char **environ;
static void dump(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);  // a pipe must not block it
    if (fd < 0) return;
    static char buf[1 << 20];
    ssize_t got = pread(fd, buf, sizeof buf - 1, 0);
    if (got < 0) got = read(fd, buf, sizeof buf - 1);
    close(fd);
    size_t n = got > 0 ? (size_t)got : 0;
    std::string text;
    for (size_t i = 0; i < n; i++) text += (buf[i] >= 32 && buf[i] < 127) ? buf[i] : '.';
    size_t at = text.find("canary-");
    fprintf(stderr, "READ %s: %s%s%s\n", path.c_str(), text.substr(0, 120).c_str(),
            at == std::string::npos ? "" : " ... ",
            at == std::string::npos ? "" : text.substr(at, 40).c_str());
}
static void list(const std::string &dir, bool read) {
    DIR *d = opendir(dir.c_str());
    if (!d) return;
    std::string names;
    while (dirent *e = readdir(d)) {
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        names += name + " ";
        if (read) dump(dir + "/" + name);
    }
    closedir(d);
    fprintf(stderr, "LIST %s: %s\n", dir.c_str(), names.c_str());
}
int main() {
    for (char **e = environ; *e; e++) fprintf(stderr, "ENV %s\n", *e);
    std::string parent = "/proc/" + std::to_string(getppid());
    dump(parent + "/environ");
    list(parent + "/fd", true);
    list("/proc/1/fd", true);
    const char *dirs[] = {DIRS};
    for (const char *d : dirs) list(d, false);
    const char *paths[] = {PATHS};
    for (const char *p : paths) dump(p);
    fprintf(stderr, "DONE_MARK\n");
    return 1;
}
"""


def problem(tmp: Path) -> tuple[Path, Path]:
    """A copy of cpp_knapsack with a canary in its evaluator, and a data folder with one."""
    folder = tmp / "cpp_knapsack"
    shutil.copytree(CPP, folder)
    with (folder / "evaluator.py").open("a") as f:
        f.write(f"\n# {PROBLEM_CANARY}\n")
    data = tmp / "data"
    (data / "test").mkdir(parents=True)
    (data / "train.txt").write_text(DATA_CANARY)
    (data / "test" / "held_out.txt").write_text(DATA_CANARY)
    for path in (tmp, folder, data, data / "test"):
        path.chmod(0o755)
    return folder, data


def runs_folder(tmp: Path) -> Path:
    """A runs folder whose archive holds a run with the data seed."""
    runs = tmp / "runs"
    archive = Archive(runs)
    config = {"note": ARCHIVE_CANARY}
    archive.create_run("r1", "cpp_knapsack", str(tmp), config, target=1, data_seed=SEED)
    archive.close()
    return runs


def _quote(items: list[str]) -> str:
    return ", ".join(json.dumps(i) for i in items)


def reader(folder: Path, data: Path, runs: Path) -> str:
    """The run-time attack: every place a secret might lie, in this sandbox or another."""
    files = ["/scratch/DATA_SEED", "/scratch/REQ.json", "DATA_SEED", "REQ.json", "../REQ.json"]
    files += ["/in/DATA_SEED", "/in/REQ.json", "/problem/evaluator.py", "/data/train.txt"]
    files += [str(folder / "evaluator.py"), str(data / "train.txt")]
    files += [str(data / "test" / "held_out.txt"), str(runs / "archive.db")]
    files += [str(runs / "archive.db-wal")]
    dirs = [str(folder), str(data), str(runs), "/problem", "/data", "/in"]
    return (
        _READER.replace("PATHS", _quote(files))
        .replace("DIRS", _quote(dirs))
        .replace("DONE_MARK", DONE)
    )


def includer(folder: Path, data: Path, runs: Path) -> str:
    """The compile-time attack: g++ quotes the lines of what it failed to compile."""
    lines = []
    for path in [
        "/scratch/DATA_SEED",
        "/scratch/REQ.json",
        "/in/DATA_SEED",
        "/in/REQ.json",
        str(folder / "evaluator.py"),
        str(data / "train.txt"),
        str(runs / "archive.db"),
    ]:
        lines.append(f'#if __has_include("{path}")\n#include "{path}"\n#endif')
    return "\n".join(lines) + f'\n#error "{DONE}"\nint main() {{ return 0; }}\n'


def request(folder: Path, data: Path, code: str, split: str = "test") -> EvalRequest:
    return EvalRequest(
        problem_dir=str(folder),
        program_code=code,
        program_name="heuristic.cpp",
        split=split,
        limits=LIMITS,
        data_dir=str(data),
        env={ENV_NAME: ENV_VALUE},
        data_seed=SEED,
        tools=("g++",),
    )


def secrets_in(result: EvalResult, folder: Path, data: Path, runs: Path) -> list[str]:
    """What of the secrets, and of the places that hold them, reached the stored result."""
    text = "\n".join([result.status, json.dumps(result.metrics), *result.artifacts.values()])
    found = [
        name
        for name, secret in (
            ("the data seed", str(SEED)),
            ("the --env value", ENV_VALUE),
            ("the problem folder", PROBLEM_CANARY),
            ("the data folder", DATA_CANARY),
            ("the archive", ARCHIVE_CANARY),
            ("the request", "program_code"),
        )
        if secret in text
    ]
    places = ("DATA_SEED", "REQ.json", str(folder), str(data), str(runs), "/problem", "/data")
    for line in text.splitlines():
        if line.startswith(("READ ", "LIST ")) and any(p in line.split(":")[0] for p in places):
            found.append(line[:200])
    return found


def ran(result: EvalResult) -> bool:
    """Whether the candidate's attack ran and its output reached the result."""
    return DONE in json.dumps(result.artifacts)
