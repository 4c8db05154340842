"""A real MPI all-reduce (mpi4py): every rank adds rank + 1."""

import os

from mpi4py import MPI

comm = MPI.COMM_WORLD
total = comm.allreduce(comm.Get_rank() + 1, op=MPI.SUM)
node = os.environ.get("SLURMD_NODENAME", "?")
print(f"MPI rank={comm.Get_rank()} size={comm.Get_size()} sum={total} node={node}", flush=True)
