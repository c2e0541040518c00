"""Every docstring example of ember.tensor runs and shows what it claims; the runner is
``ember.tensor.testing.doctests``. The tox env installs only ember-tensor and what it declares,
so an example that needs a layer above belongs in that layer."""
from __future__ import annotations

import ember.tensor as et
from ember.tensor.testing.doctests import DocExamples, usual_names

EXAMPLES = DocExamples(et, usual_names(), needs={
    # the CuPy twins of the CPU kernels: their examples launch CUDA C through CuPy
    "ember.tensor.kernels.cuda": (
        "needs CuPy and a CUDA GPU (the cuda12/cuda13 extra, absent from the tensor tox env)",
        et.cuda.is_available()),
})
globals().update(EXAMPLES.pytest_tests())
