"""Every docstring example of ember.optim runs and shows what it claims; the runner is
``ember.tensor.testing.doctests``. The tox env installs only ember-optim and what it declares,
so an example that needs a layer above belongs in that layer."""
from __future__ import annotations

import ember.optim as optim
from ember.tensor.testing.doctests import DocExamples, usual_names

EXAMPLES = DocExamples(optim, usual_names(optim=optim))
globals().update(EXAMPLES.pytest_tests())
