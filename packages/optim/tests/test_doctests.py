"""Every docstring example of ember.optim runs and shows what it claims; the runner is
``ember.tensor.testing.doctests``. The tox env installs only ember-optim and what it declares,
so an example that needs a layer above belongs in that layer."""
from __future__ import annotations

import importlib.util

import ember.optim as optim
from ember.tensor.testing.doctests import DocExamples, usual_names

EXAMPLES = DocExamples(optim, usual_names(optim=optim), needs={
    # an AveragedModel is a Module: the example runs where ember-nn is installed (the
    # integration env runs it: tests/integration/test_swa_utils.py)
    "ember.optim.swa_utils": ("needs ember-nn, which ember-optim does not declare",
                              importlib.util.find_spec("ember.nn") is not None),
})
globals().update(EXAMPLES.pytest_tests())
