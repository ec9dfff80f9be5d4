"""A flat public namespace: every algorithm, policy, task and task wrapper is importable from
``evolax`` directly and from its subpackage, as the same object under one name."""

import pytest

import evolax
from evolax import algorithms, policies, rollout, tasks
from evolax.algorithms import Algorithm
from evolax.policies import Policy
from evolax.tasks import Task, TaskWrapper

KINDS = [(algorithms, Algorithm), (policies, Policy), (tasks, Task), (rollout, TaskWrapper)]


def components(package, base):
    """The classes of kind ``base`` a subpackage exports and registers."""
    exported = {
        getattr(package, name)
        for name in package.__all__
        if isinstance(getattr(package, name), type) and issubclass(getattr(package, name), base)
    }
    return exported | set(getattr(package, "REGISTRY", {}).values())


@pytest.mark.parametrize(("package", "base"), KINDS, ids=lambda x: getattr(x, "__name__", x))
def test_every_component_is_one_name_in_evolax_and_its_subpackage(package, base):
    found = components(package, base)
    assert len(found) >= 3
    for cls in found:
        assert getattr(package, cls.__name__) is cls, cls
        assert getattr(evolax, cls.__name__) is cls, cls
        assert cls.__name__ in evolax.__all__ and cls.__name__ in package.__all__, cls


def test_names_are_unique_across_kinds():
    classes = set().union(*(components(package, base) for package, base in KINDS))
    assert len({cls.__name__ for cls in classes}) == len(classes)


def test_the_migration_guides_names_exist():
    for name in (
        "OpenES",
        "CMAES",
        "PGPE",
        "SimpleGA",
        "SNES",
        "XNES",
        "ARS",
        "DifferentialEvolution",
    ):
        assert isinstance(getattr(evolax, name), type)
