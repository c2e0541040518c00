"""The docstring examples of ember.optim run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["ember.optim", "ember.optim.optimizer", "ember.optim.sgd", "ember.optim.adam",
           "ember.optim.adamax", "ember.optim.nadam", "ember.optim.radam",
           "ember.optim.rmsprop", "ember.optim.adagrad", "ember.optim.adadelta",
           "ember.optim.lbfgs", "ember.optim.lr_scheduler"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
