"""Picklable datasets and hooks for the DataLoader worker tests (imported by workers by name)."""

import os
import time

import numpy as np

from ember.data import Dataset, IterableDataset, get_worker_info


class Squares(Dataset):
    """Item i is (i, i*i as a NumPy row); slow items make workers finish out of order."""

    def __init__(self, n, slow_every=0):
        self.n = n
        self.slow_every = slow_every

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.slow_every and i % self.slow_every == 0:
            time.sleep(0.02)
        return i, np.array([i, i * i], dtype=np.int64)


class Raises(Dataset):
    def __init__(self, n, bad):
        self.n, self.bad = n, bad

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"bad item {i}")
        return i


class MissingKey(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return {}["no-such-key"]


class Dies(Dataset):
    def __init__(self, n, bad):
        self.n, self.bad = n, bad

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            os._exit(7)
        return i


class Sleeps(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(30)
        return i


class WorkerIds(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return (info.id, info.num_workers, info.seed, int(np.random.randint(0, 2**31)), os.getpid())


class Stream(IterableDataset):
    """0..n-1, sharded across workers by get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


def init_marks_env(worker_id):
    os.environ["EMBER_TEST_WORKER"] = str(worker_id)


class ReadsEnv(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return os.environ.get("EMBER_TEST_WORKER", "unset")


def init_fails(worker_id):
    raise RuntimeError(f"init failed in {worker_id}")
