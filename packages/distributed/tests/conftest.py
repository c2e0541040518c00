import os
import sys

# the tests import their helpers (_ember_distributed_test_helpers) by a name unique across
# the monorepo, from this folder
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# Open MPI refuses to run as root (CI containers) unless told it may
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
