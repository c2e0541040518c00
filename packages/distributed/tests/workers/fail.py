"""Run under the launcher with 2 processes: rank 1 raises (before or after the process group
is up, as argv[2] says) while rank 0 goes on into a collective that can never complete. The
launcher must end the whole job with a non-zero status and show rank 1's error."""
import sys
import time

import ember.distributed as dist
import ember.tensor as et


def main(out, when):
    import os

    rank = int(os.environ["RANK"])
    if when == "before" and rank == 1:
        raise ValueError("rank 1 failed before init_process_group")
    dist.init_process_group("mpi")
    if when == "after" and rank == 1:
        time.sleep(0.2)  # rank 0 is inside the all-reduce by now
        raise ValueError("rank 1 failed inside the training loop")
    if when == "exit" and rank == 1:
        sys.exit(3)
    t = et.ones(4)
    dist.all_reduce(t)  # rank 0 waits here for a partner that is gone
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
