"""Every docstring example of ember.autograd runs and shows what it claims; the runner is
``ember.tensor.testing.doctests``. The tox env installs only ember-autograd and what it declares,
so an example that needs a layer above belongs in that layer."""
from __future__ import annotations

import ember.autograd as ag
from ember.tensor.testing.doctests import DocExamples, usual_names

EXAMPLES = DocExamples(ag, usual_names(ag=ag))
globals().update(EXAMPLES.pytest_tests())
