"""Grad modes live in the tensor core (``ember.tensor.no_grad`` is ``torch.no_grad``): their
flags, nesting, decorator forms and threads, without ember-autograd."""
import threading

import ember.tensor as et


def test_flags_nest_and_restore():
    assert et.is_grad_enabled() and not et.is_inference_mode_enabled()
    with et.no_grad():
        assert not et.is_grad_enabled()
        with et.enable_grad():
            assert et.is_grad_enabled()
        assert not et.is_grad_enabled()
    with et.inference_mode():
        assert et.is_inference_mode_enabled() and not et.is_grad_enabled()
        with et.inference_mode(False):
            assert not et.is_inference_mode_enabled() and et.is_grad_enabled()
        assert et.is_inference_mode_enabled()
    assert et.is_grad_enabled() and not et.is_inference_mode_enabled()


def test_set_grad_enabled_call_context_and_decorator():
    et.set_grad_enabled(False)
    assert not et.is_grad_enabled()
    et.set_grad_enabled(True)
    with et.set_grad_enabled(False):
        assert not et.is_grad_enabled()
    assert et.is_grad_enabled()

    @et.set_grad_enabled(False)
    def off():
        return et.is_grad_enabled()

    @et.no_grad
    def bare():
        return et.is_grad_enabled()

    @et.inference_mode()
    def inf():
        return et.is_inference_mode_enabled()

    assert off() is False and bare() is False and inf() is True
    assert et.is_grad_enabled() and not et.is_inference_mode_enabled()


def test_exceptions_restore_the_flags():
    try:
        with et.inference_mode():
            raise ValueError("boom")
    except ValueError:
        pass
    assert et.is_grad_enabled() and not et.is_inference_mode_enabled()


def test_flags_are_per_thread():
    seen = []
    with et.no_grad():
        t = threading.Thread(target=lambda: seen.append(et.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_a_thread_turning_grad_off_leaves_the_others_on():
    from ember.tensor import extension as ext

    seen = []

    def worker():
        et.set_grad_enabled(False)  # the function form: no restore in this thread
        seen.append((et.is_grad_enabled(), ext.grad_enabled()))

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [(False, False)]
    assert et.is_grad_enabled() and ext.grad_enabled()
    ext.set_grad_flag(False)  # the seam the autograd layer sets it through
    try:
        assert not et.is_grad_enabled()
    finally:
        ext.set_grad_flag(True)
    assert et.is_grad_enabled()


def test_anomaly_switches():
    assert not et.is_anomaly_enabled() and et.is_anomaly_check_nan_enabled()
    et.set_anomaly_enabled(True, check_nan=False)
    try:
        assert et.is_anomaly_enabled() and not et.is_anomaly_check_nan_enabled()
    finally:
        et.set_anomaly_enabled(False)
    assert not et.is_anomaly_enabled() and et.is_anomaly_check_nan_enabled()
