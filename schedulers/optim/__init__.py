"""CPU+GPU co-scheduling for seed 002 (Soner & Ozturan): nodes of cores and GPUs, requests,
priorities, SLURM's best fit, and the IPSCHED / AUCSCHED MILPs solved with HiGHS."""
