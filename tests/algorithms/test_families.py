"""The family packages: every algorithm lives in one, and every module path from before them
(``evolax.algorithms.cma_es``, ...) still imports, as configurations and run folders name
components by it."""

import importlib
import pkgutil

import pytest

import evolax
import evolax.algorithms as algorithms
from evolax import schema
from evolax.algorithms import MOVED_MODULES, Algorithm

FAMILIES = (
    "es",
    "cma",
    "ga",
    "de",
    "pso",
    "qd",
    "multiobjective",
    "learned",
    "neat",
    "baselines",
)
TOP = {"arguments", "base", "evolve", "noise", "shaping", "stein", "unbatched", *FAMILIES}
"""What ``evolax.algorithms`` holds: the helpers every family uses (and ``evolve``, which runs
any of them on a function), and the families."""


def test_the_package_holds_the_shared_helpers_and_the_families():
    found = {m.name for m in pkgutil.iter_modules(algorithms.__path__)}
    assert found == TOP
    for family in FAMILIES:
        assert importlib.import_module(f"evolax.algorithms.{family}").__path__


def test_every_exported_algorithm_lives_in_a_family_package():
    for name in algorithms.__all__:
        value = getattr(algorithms, name)
        if isinstance(value, type) and issubclass(value, Algorithm):
            parts = value.__module__.split(".")
            if parts[2] == "base":  # the template's abstract bases
                continue
            assert parts[2] in FAMILIES and len(parts) == 4, (name, value.__module__)


def test_each_family_exports_its_algorithms_as_evolax_algorithms_does():
    for family in FAMILIES:
        package = importlib.import_module(f"evolax.algorithms.{family}")
        for name in package.__all__:
            if name in algorithms.__all__:
                assert getattr(algorithms, name) is getattr(package, name), (family, name)


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_old_module_path_still_imports(old):
    new = importlib.import_module(f"evolax.algorithms.{MOVED_MODULES[old]}")
    assert importlib.import_module(f"evolax.algorithms.{old}") is new
    assert getattr(algorithms, old) is new
    exec(f"from evolax.algorithms.{old} import *", {})


def test_old_import_paths_name_the_same_objects():
    from evolax.algorithms.cma_es import CMAES, default_pop_size
    from evolax.algorithms.cma_family import default_pop_size as family_default
    from evolax.algorithms.samr_ga import check_ga_sizes

    from evolax.algorithms.learned import initial_weights, load_weights
    from evolax.algorithms.multiobjective import FrontState, RealCoded, dominance_tournament
    from evolax.algorithms.neat import NEAT
    from evolax.algorithms.pso import SwarmState, constriction_coefficient, update_personal_bests

    assert CMAES is algorithms.CMAES and NEAT is algorithms.NEAT
    assert default_pop_size is family_default
    learned = "evolax.algorithms.learned.common"
    assert load_weights.__module__ == initial_weights.__module__ == learned
    assert FrontState.__module__ == RealCoded.__module__ == dominance_tournament.__module__
    assert {SwarmState.__module__, update_personal_bests.__module__} <= {
        "evolax.algorithms.pso.pso",
        "evolax.algorithms.pso.common",
    }
    assert callable(constriction_coefficient) and callable(check_ga_sizes)
    assert evolax.PGPE is algorithms.PGPE and evolax.Algorithm is Algorithm


@pytest.mark.parametrize(
    "path, name",
    [
        ("evolax.algorithms.nsga2:NSGA2", "NSGA2"),
        ("evolax.algorithms.multiobjective.nsga2:NSGA2", "NSGA2"),
        ("evolax.algorithms.cma_me:CMAME", "CMAME"),
        ("evolax.algorithms.me_es:MEES", "MEES"),
        ("evolax.algorithms.guided_es:GuidedES", "GuidedES"),
        ("evolax.algorithms.cma_es:CMAES", "CMAES"),
    ],
)
def test_a_configuration_names_a_component_by_its_old_or_new_path(path, name):
    target, _ = schema.find(path, algorithms.REGISTRY, "algorithm")
    assert target is getattr(algorithms, name)
