"""Every docstring example of ember.data runs and shows what it claims; the runner is
``ember.tensor.testing.doctests``. The tox env installs only ember-data and what it declares,
so an example that needs a layer above belongs in that layer."""
from __future__ import annotations

import ember.data as data
from ember.tensor.testing.doctests import DocExamples, usual_names

EXAMPLES = DocExamples(data, usual_names())
globals().update(EXAMPLES.pytest_tests())
