"""The Prism placement model: KV-cache pressure of LLMs sharing 80 GB GPUs, and its cases.

A GPU holding models M has KV-cache pressure KVPR = sum(req_rate / slo over M) /
(80 - sum(model_size over M)): the request load it must serve per GB left for
the KV cache. A placement's cost is its worst GPU's KVPR; a split's cost is the
mean of that over its cases (the ADRS case study's metric). A GPU filled to
exactly 80 GB has no KV room and counts as FULL_KVPR, ADRS's constant; more than
80 GB is no placement at all (kit.Invalid).

Cases are drawn as the ADRS evaluator draws them: numpy's legacy RandomState
(the generator `np.random.seed` drives), per case the GPU count, then per model
its size, request rate and SLO, each an integer from a half-open range.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from evaluators import kit

GPU_MEM_GB = 80
FULL_KVPR = 1_000_000.0  # KVPR of a GPU with no memory left (ADRS's constant)
DATA_FILE = "adrs_cases.json"


@dataclass(frozen=True)
class Case:
    """One placement problem: models (name, size GB, req_rate, slo) onto gpu_num GPUs."""

    gpu_num: int
    names: tuple[str, ...]
    sizes: tuple[int, ...]
    rates: tuple[int, ...]
    slos: tuple[int, ...]

    def as_json(self) -> dict:
        models = [list(m) for m in zip(self.names, self.sizes, self.rates, self.slos, strict=True)]
        return {"gpu_num": self.gpu_num, "models": models}

    @classmethod
    def from_json(cls, raw: dict) -> Case:
        names, sizes, rates, slos = zip(*raw["models"], strict=True)
        return cls(int(raw["gpu_num"]), names, sizes, rates, slos)


@dataclass(frozen=True)
class Family:
    """How a set of cases is drawn: ranges are numpy's randint(lo, hi), hi excluded."""

    cases: int
    gpus: tuple[int, int] = (5, 10)
    models_per_gpu: int = 2
    size: tuple[int, int] = (10, 30)
    rate: tuple[int, int] = (1, 10)
    slo: tuple[int, int] = (5, 10)


ADRS = Family(cases=50)  # the ADRS evaluator's generate_test_gpu_models, seed 42
ADRS_SEED = 42


def draw_cases(family: Family, seed: int) -> list[Case]:
    """The cases of `family` under `seed`, in the ADRS draw order (seed 42: the ADRS cases)."""
    rs = np.random.RandomState(seed % 2**32)
    cases = []
    for _ in range(family.cases):
        gpu_num = int(rs.randint(*family.gpus))
        names, sizes, rates, slos = [], [], [], []
        for j in range(gpu_num * family.models_per_gpu):
            names.append(f"model_{j}")
            sizes.append(int(rs.randint(*family.size)))
            rates.append(int(rs.randint(*family.rate)))
            slos.append(int(rs.randint(*family.slo)))
        cases.append(Case(gpu_num, tuple(names), tuple(sizes), tuple(rates), tuple(slos)))
    return cases


# ---------------------------------------------------------------- the model


def gpu_kvpr(load: float, used_gb: int) -> float:
    """KVPR of one GPU with `load` = sum(r/s) and `used_gb` of weights (<= 80)."""
    free = GPU_MEM_GB - used_gb
    return load / free if free > 0 else FULL_KVPR


def max_kvpr(case: Case, groups: list[list[int]]) -> float:
    """The worst GPU's KVPR; groups[g] lists the model indices on GPU g."""
    worst = 0.0
    for members in groups:
        load = sum(case.rates[i] / case.slos[i] for i in members)
        worst = max(worst, gpu_kvpr(load, sum(case.sizes[i] for i in members)))
    return worst


def lower_bound(case: Case) -> float:
    """No placement beats this: the pooled bound sum(r/s) / (80 g - sum size) (every GPU's
    load <= K * its free memory, summed), and each model alone on a GPU."""
    total_free = GPU_MEM_GB * case.gpu_num - sum(case.sizes)
    pooled = sum(r / s for r, s in zip(case.rates, case.slos, strict=True)) / total_free
    alone = max(
        gpu_kvpr(r / s, m) for r, s, m in zip(case.rates, case.slos, case.sizes, strict=True)
    )
    return max(pooled, alone)


def check_placement(case: Case, raw: object) -> list[list[int]]:
    """The placement {gpu_id: [model names]} as model indices per GPU, or kit.Invalid:
    GPU ids ints in [0, gpu_num), every model exactly once, no GPU over 80 GB."""
    if not isinstance(raw, dict):
        raise kit.Invalid(f"expected a dict {{gpu_id: [models]}}, got {type(raw).__name__}")
    index = {name: i for i, name in enumerate(case.names)}
    groups: list[list[int]] = [[] for _ in range(case.gpu_num)]
    where: dict[int, object] = {}
    for gpu, models in raw.items():
        if not isinstance(gpu, numbers.Integral) or isinstance(gpu, bool):
            raise kit.Invalid(f"GPU ids must be ints, got {gpu!r:.50} ({type(gpu).__name__})")
        if not 0 <= gpu < case.gpu_num:
            raise kit.Invalid(f"GPU id {gpu} is outside [0, {case.gpu_num})")
        if not isinstance(models, (list, tuple)):
            raise kit.Invalid(f"GPU {gpu}: expected a list of models, got {type(models).__name__}")
        for name in models:
            if not isinstance(name, str) or name not in index:
                raise kit.Invalid(f"GPU {gpu}: {name!r:.60} is not one of the case's models")
            i = index[name]
            if i in where:
                raise kit.Invalid(f"{name} is placed twice (GPU {where[i]} and GPU {gpu})")
            where[i] = gpu
            groups[int(gpu)].append(i)
    if len(where) < len(case.names):
        missing = next(n for i, n in enumerate(case.names) if i not in where)
        raise kit.Invalid(
            f"{missing} is not placed ({len(case.names) - len(where)} of "
            f"{len(case.names)} models missing); every model must be on one GPU"
        )
    for gpu, members in enumerate(groups):
        used = sum(case.sizes[i] for i in members)
        if used > GPU_MEM_GB:
            raise kit.Invalid(f"GPU {gpu} holds {used} GB of models, over its {GPU_MEM_GB} GB")
    return groups


# ---------------------------------------------------------------- splits

# split "test" (held out): name -> (family, public seed). A run draws them under its
# private data seed (kit.seed), so a candidate cannot regenerate them.
TEST_FAMILIES = {
    "adrs_like": (ADRS, 4201),  # the ADRS distribution, other draws
    "more_gpus": (Family(cases=15, gpus=(10, 15)), 4202),  # 10-14 GPUs
    "dense": (Family(cases=20, models_per_gpu=3, size=(5, 25)), 4203),  # 3 models a GPU
}
SPLITS = ("train", "test")


def load_adrs_cases() -> list[Case]:
    """The ADRS case study's 50 cases, from the data folder."""
    raw = kit.read_json(kit.data_path(__file__, DATA_FILE))
    return [Case.from_json(c) for c in raw["cases"]]


def make_cases(split: str) -> list[tuple[str, Case]]:
    """[(case label, case)] of a split; labels name the family and the index."""
    if split == "train":
        return [(f"adrs_{i}", c) for i, c in enumerate(load_adrs_cases())]
    if split == "test":
        out = []
        for name, (family, public) in TEST_FAMILIES.items():
            cases = draw_cases(family, kit.seed(public, name))
            out += [(f"{name}_{i}", c) for i, c in enumerate(cases)]
        return out
    raise ValueError(f"unknown split {split!r}; expected one of {list(SPLITS)}")
