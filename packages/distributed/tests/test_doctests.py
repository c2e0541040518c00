"""Every docstring example of ember.distributed runs and shows what it claims; the runner is
``ember.tensor.testing.doctests``. The tox env installs only ember-distributed and what it declares,
so an example that needs a layer above belongs in that layer."""
from __future__ import annotations

import ember.distributed as dist
import ember.nn as nn
from ember.tensor.testing.doctests import DocExamples, usual_names

EXAMPLES = DocExamples(dist, usual_names(nn=nn, dist=dist), needs={
    # the package docstring starts a one-process "mpi" group and all-reduces over it
    "ember.distributed": (
        "needs mpi4py and an MPI library (the [mpi] extra, which the distributed tox env "
        "installs)", dist.is_mpi_available()),
})
globals().update(EXAMPLES.pytest_tests())
