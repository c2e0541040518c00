import os
import sys

# Worker processes (forkserver/spawn) must import the picklable helpers of these tests by a
# stable module name, so the folder goes on sys.path before any worker starts.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

SAMPLES = os.path.join(_HERE, "samples")
