"""DataLoader workers from a script with no ``if __name__ == "__main__":`` guard (issue 16,
item 8): on Linux they start by fork, as PyTorch's do, after the parent has run parallel Numba
kernels, without a deadlock; each worker runs ember's kernels on one thread; an abandoned
iterator stops its workers. Each script runs in a subprocess under a hard time limit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="fork is the default start method on Linux only")

UNGUARDED = textwrap.dedent("""
    import multiprocessing
    import ember.tensor as et
    from ember.data import DataLoader, Dataset, get_worker_info

    class Squares(Dataset):
        def __len__(self):
            return 40

        def __getitem__(self, i):
            x = et.full((64, 600), float(i))
            # a kernel that runs in parallel in the parent runs in the forked worker too
            s = et.softmax(x, 1).sum()
            info = get_worker_info()
            return et.tensor([float(i * i), s.item(), float(info.id)])

    # the parent's Numba thread pool is live before the workers fork
    big = et.softmax(et.randn(2048, 1024), 1)
    assert abs(big.sum().item() - 2048) < 1e-2
    loader = DataLoader(Squares(), batch_size=4, num_workers=2)
    rows = et.cat(list(loader))
    assert rows[:, 0].tolist() == [float(i * i) for i in range(40)], rows[:, 0]
    assert abs(rows[:, 1].sum().item() - 40 * 64) < 1e-2
    assert set(rows[:, 2].tolist()) == {0.0, 1.0}
    print("START", multiprocessing.get_start_method())
    print("OK", len(rows))
""")


def _run(src: str, tmp_path, timeout: float = 120.0) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(src)
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(tmp_path / "numba_cache"))
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_unguarded_script_with_two_workers(tmp_path):
    r = _run(UNGUARDED, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "OK 40" in r.stdout
    assert "START fork" in r.stdout  # the platform's default, PyTorch's choice too


def test_unguarded_script_spawn_context_still_available(tmp_path):
    # an explicit non-fork context is honoured (and then needs a guard, as in PyTorch)
    src = textwrap.dedent("""
        from ember.data import DataLoader
        from ember.data._dataloader import _default_context
        import multiprocessing
        assert _default_context().get_start_method() == multiprocessing.get_start_method()
        if __name__ == "__main__":
            dl = DataLoader(list(range(8)), batch_size=4, num_workers=2,
                            multiprocessing_context="spawn")
            print("OK", [b.tolist() for b in dl])
    """)
    r = _run(src, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "OK [[0, 1, 2, 3], [4, 5, 6, 7]]" in r.stdout


def test_workers_run_kernels_on_one_thread(tmp_path):
    src = textwrap.dedent("""
        import ember.tensor as et
        from ember.data import DataLoader, Dataset

        class Threads(Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                et.softmax(et.randn(8, 8), 1)  # imports Numba in the worker if needed
                import numba
                return numba.get_num_threads()

        et.softmax(et.randn(256, 256), 1)
        print("THREADS", sorted(set(b.item() for b in DataLoader(Threads(), num_workers=2))))
    """)
    r = _run(src, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "THREADS [1]" in r.stdout


def test_abandoned_iterator_stops_its_workers(tmp_path):
    src = textwrap.dedent("""
        import ember.tensor as et
        from ember.data import DataLoader

        loader = DataLoader(et.arange(1000.), batch_size=2, num_workers=2)
        it = iter(loader)
        next(it)
        workers = list(it._workers)
        del it
        for w in workers:
            w.join(20)
        print("ALIVE", [w.is_alive() for w in workers], [w.exitcode for w in workers])
    """)
    r = _run(src, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ALIVE [False, False] [0, 0]" in r.stdout
