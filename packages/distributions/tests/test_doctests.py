"""Every docstring example of ember.distributions runs and shows what it claims; the runner
is ``ember.tensor.testing.doctests``. The tox env installs only ember-distributions and what
it declares, so an example that needs a layer above belongs in that layer."""
from __future__ import annotations

import ember.distributions as D
from ember.tensor.testing.doctests import DocExamples, usual_names

EXAMPLES = DocExamples(D, usual_names(D=D))
globals().update(EXAMPLES.pytest_tests())
