"""Run every docstring example of an ember distribution, module by module.

Each distribution's ``tests/test_doctests.py`` builds a :class:`DocExamples` for its package
and turns :meth:`DocExamples.pytest_tests` into its tests. Modules are found by walking the
package (``pkgutil.walk_packages`` over its ``__path__``, plus the package itself), so a new
module is covered without editing any list; each module's examples run with
``doctest.testmod`` (ELLIPSIS, NORMALIZE_WHITESPACE) in the module's own globals over the
names a docstring there may assume. A module leaves the run only through ``needs`` (its
reason, and whether what it needs is present); one that fails to import otherwise is an error.
"""
from __future__ import annotations

import builtins
import doctest
import functools
import importlib
import pkgutil

import ember.tensor as et

__all__ = ["DocExamples", "usual_names"]

OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def usual_names(**extra) -> dict:
    """``et`` and every public name of ember.tensor except those that would shadow a builtin
    (``abs``, ``int``, ``round``, ``sum`` ...: a docstring means Python's, and writes
    ``et.abs`` for ember's), plus ``extra``."""
    names = {name: getattr(et, name) for name in et.__all__ if not hasattr(builtins, name)}
    names.update(et=et, **extra)
    return names


class DocExamples:
    """The docstring examples of ``package``; ``needs``: module name -> (reason, present)."""

    def __init__(self, package, names: dict, needs: dict | None = None) -> None:
        self.package, self.names = package, names
        self.needs = needs or {}
        self.excluded = {n: why for n, (why, present) in self.needs.items() if not present}
        self.all_modules, self.import_errors = self._walk()
        self.modules = [n for n in self.all_modules
                        if n not in self.excluded and n not in self.import_errors]

    def _walk(self):
        names, broken = [self.package.__name__], {}

        def onerror(name: str) -> None:  # a subpackage that does not import: recorded
            broken[name] = "import failed"

        prefix = self.package.__name__ + "."
        for info in pkgutil.walk_packages(self.package.__path__, prefix, onerror=onerror):
            names.append(info.name)
        for name in names:
            if name in self.excluded:
                continue
            try:
                importlib.import_module(name)
            except Exception as exc:  # reported by check_collection
                broken[name] = f"{type(exc).__name__}: {exc}"
        return names, broken

    @functools.cache  # noqa: B019  (one instance per test module, alive for the session)
    def run(self, name: str) -> doctest.TestResults:
        module = importlib.import_module(name)
        return doctest.testmod(module, globs={**self.names, **vars(module)},
                               optionflags=OPTIONFLAGS, report=True)

    def check_collection(self) -> None:
        assert self.import_errors == {}
        for name, why in self.excluded.items():
            assert name in self.all_modules, f"{name} is excluded but is not a module"
            assert why
        assert sorted(self.modules + list(self.excluded)) == sorted(self.all_modules)

    def check_module(self, name: str) -> None:
        result = self.run(name)
        assert result.failed == 0, (f"{result.failed} of {result.attempted} examples failed "
                                    f"in {name}")

    def check_has_examples(self) -> None:
        assert sum(self.run(name).attempted for name in self.modules) > 0

    def pytest_tests(self) -> dict:
        """The three tests of a ``test_doctests.py``: every module collected (or excluded
        with a reason), each module's examples pass, the package has examples."""
        import pytest

        @pytest.mark.parametrize("name", self.modules)
        def test_docstring_examples(name):
            self.check_module(name)

        def test_every_module_is_collected():
            self.check_collection()

        def test_package_has_examples():
            self.check_has_examples()

        return {f.__name__: f for f in (test_docstring_examples, test_every_module_is_collected,
                                       test_package_has_examples)}
