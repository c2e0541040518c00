"""Every docstring example of ember.onnx runs and shows what it claims; the runner is
``ember.tensor.testing.doctests``. The tox env installs only ember-onnx and what it declares,
so an example that needs a layer above belongs in that layer."""
from __future__ import annotations

import ember.nn as nn
import ember.nn.functional as F
import ember.onnx
from ember.tensor.testing.doctests import DocExamples, usual_names

EXAMPLES = DocExamples(ember.onnx, usual_names(nn=nn, F=F))
globals().update(EXAMPLES.pytest_tests())
