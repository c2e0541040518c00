"""ember.optim: optimizers and learning-rate schedules with PyTorch's names and arithmetic.

>>> import ember.tensor as et
>>> from ember import optim
>>> w = et.ones(3)
>>> opt = optim.SGD([w], lr=0.1, momentum=0.9)
>>> sched = optim.lr_scheduler.StepLR(opt, step_size=10)
>>> w.grad = et.ones(3)
>>> _ = opt.step(); sched.step()

Importing this package compiles no kernel and imports no numba: the fused CPU kernels of
Adam / AdamW and SGD load on their first step.
"""

from . import lr_scheduler
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__version__ = "0.1.0"
__all__ = [
    "ASGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "LBFGS",
    "Muon",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SGD",
    "SparseAdam",
    "__version__",
    "lr_scheduler",
]
