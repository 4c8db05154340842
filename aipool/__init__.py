"""AIPool: pooled, fairly shared GPU and NPU compute on Slurm."""
