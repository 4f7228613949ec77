"""How scheduling cost grows with the number of jobs and with the machine (issue 18).

Run on demand (not a test):

    .venv/bin/python bench/bench_scale.py                                  # the issue's grid
    .venv/bin/python bench/bench_scale.py --sizes 10000 100000 --policies fcfs-bb sjf-bb
    .venv/bin/python bench/bench_scale.py --big-sizes                      # only the 96-node machine
    .venv/bin/python bench/bench_scale.py --check 40c244b --sizes 2000 10000   # decisions unchanged?
    .venv/bin/python bench/bench_scale.py --count --sizes 20000 100000 --big-sizes --policies fcfs-bb

Workloads are the issue's overloaded synthetic burst-buffer ones (``mrsched workload synthetic
--model burst-buffer --variant alloc-only --seed 1``) on the 96-node Dragonfly, plus
``--big-sizes`` jobs on a 10,000-node Dragonfly in the zoned form (4 groups x 25 chassis x 10
routers x 10 nodes; one burst-buffer node per chassis: 9,900 compute nodes), arrivals every 60 s
on average instead of 120 s (its jobs, log-uniform up to the machine, are ~50x wider). Each run is one
``simulate`` call in its own child process (peak memory is the child's maximum resident set).
Printed per run: CPU seconds of the whole run and of the scheduler alone, jobs/s (jobs / whole
CPU), peak memory, and time(N)/time(previous N) for the same policy and machine (the growth:
at most 10 for a 10x step means cost linear in the jobs). Last, for a policy run on both
machines at one size: time per job on 10,000 nodes / time per job on 96 nodes (target 2).
Runs go policy by policy and size by size, the two machines at one size back to back, so that
this ratio compares runs minutes apart (this machine's speed drifts within an hour).

``--check REV`` runs the same workloads with revision REV's ``mrsched`` (exported with ``git
archive`` as ``bench_plan.py`` does, its compiled queue tree built where it has one) and
prints whether every ``_jobs.csv`` is byte-identical: the scale work must not change any
decision.

Measured on the development machine (2 cores shared by several sessions, CPU seconds whole run
/ scheduler; before = 32102da, the revision before the ordered queue):
- ``--check 32102da --sizes 2000 10000``: every ``_jobs.csv`` byte-identical for ``fcfs-bb``,
  ``sjf-bb``, ``fcfs-easy``, ``filler``, ``fcfs`` (2k, 10k) and ``conservative-bb`` (2k); also
  ``fcfs-bb`` on 40,000 jobs: before 84.4 / 77.9, after 14.8 / 10.5, identical.
- 96 nodes: ``fcfs-bb`` 10k 4.2 / 2.6, 100k 54.4 / 39.6 (x12.9, peak 476 MB); ``sjf-bb`` 10k
  4.1 / 2.5, 100k 50.6 / 37.4 (x12.2, 450 MB). 1M jobs not run yet.
- 10,000 nodes, 10k jobs: ``fcfs-bb`` 30.9 / 21.4, ``sjf-bb`` 29.2 / 19.8, ``fcfs-easy``
  25.8 / 16.7, ``filler`` 21.7 / 12.8 (scheduler ~2 ms a job against ~0.25 ms on 96 nodes:
  jobs there are ~50x wider and a start's placement, Batsim mapping and the engine's tasks are
  per node).
- This session (81fc7a4, load average 12-22 on the 2 cores, so CPU seconds are inflated;
  min of alternated runs): ``fcfs-bb`` 20k scheduler 5.42 s at ca47b15, 4.91 s now (whole run
  8.21 / 7.46), ``_jobs.csv`` identical; 100k 48.4 / 34.3 (peak 492 MB). At 9892dc2:
  ``sjf-bb`` 100k 43.1 / 30.5 (452 MB), ``fcfs-easy`` 100k 57.1 / 45.9 (345 MB);
  ``--check ca47b15`` identical for ``fcfs-bb``, ``sjf-bb``, ``fcfs-easy``, ``filler``, ``fcfs``
  at 2k and 10k and ``fcfs-bb`` at 40k (15.5 s, baseline 16.2 s). At load ~6, alternated
  with ca47b15: ``fcfs-bb`` 100k 41.1 / 30.4 before, 38.2 / 27.5 after (482 MB), identical;
  20k ``fcfs-bb`` 6.80 / 4.60 -> 6.33 / 4.15, ``sjf-bb`` 7.15 / 4.90 -> 6.65 / 4.39. A sampling profile
  (py-spy) of 100k puts half the scheduler in the queue walk (``_MinTree.first``): it still
  grows with the queue. Splitting the queue in walltime lanes (tried) was slower at 20k and
  40k. 1M not measured: the run got 1.7 CPU minutes in 18 wall minutes (RSS 1.9 GB, still
  loading/early) and was stopped.
- Node-count lanes in the ordered queue (5409739..f80672b, before = 3072e9d). Counted on
  ``fcfs-bb`` 100k: one walk of the one-tree queue visited 70 / 102 / 145 subtrees at queues
  of 4k / 8k / 16k jobs (x1.4 a doubling: ~sqrt); with lanes a whole query (every lane) reads
  the room 22 / 28 / 35 times. Alternated with
  3072e9d at load ~4: ``fcfs-bb`` 100k 40.7 / 28.8 before, 35.1 / 23.8 after (395 MB),
  identical. At load 9-12 (other sessions' runs; CPU seconds inflated ~40%): ``fcfs-bb``
  100k 48.2 / 32.2 (398 MB); at 3ebe049 ``sjf-bb`` 62.4 / 44.2 (380 MB), ``fcfs-easy``
  64.3 / 45.9 (280 MB). ``--check 3072e9d --sizes 2000 10000`` identical for ``fcfs-bb``,
  ``sjf-bb``, ``fcfs-easy``, ``filler``, ``fcfs``, and ``fcfs-bb`` 40k (18.3 s, baseline
  18.8 s). Growth, c76982a, one process at a time, load 7-11: ``fcfs-bb`` 100k 48.2 / 32.2,
  400k 192.0 / 136.7 (914 MB): x3.98 for 4x the jobs (scheduler x4.25).
  Nearly idle machine (load 1-3), c76982a: ``fcfs-bb`` 100k 32.2 / 21.9 (before 32.8 / 22.6,
  identical); 400k, before and after side by side: 169.6 / 128.1 before (x5.2 over 100k),
  144.6 / 102.8 after (x4.5, 930 MB), identical; 1M 404.7 / 299.2, peak 1,820 MB: x12.6 over
  100k (scheduler x13.7), so still over both targets (5 min; x12). The rest of a round
  (availability prefix and room, fits_now, reserve / release, placement, runtime checks) is
  now most of the scheduler; its cost per job still rises slowly with the queue.
- Merged main (dddc7a6, load 1-3, two runs side by side): ``sjf-bb`` 100k 32.8 / 23.8, 1M
  639.1 / 541.3 (1,600 MB; x19.5); ``fcfs-easy`` 100k 34.7 / 25.7, 1M 802.0 / 706.0 (1,714 MB;
  x23.1): both far over the targets and super-linear. ``fcfs-easy`` reserves nodes only, so
  burst buffer is what blocks most backfill candidates; inside a node-count lane the minima of
  bytes and walltime still come from different jobs (the sqrt walk the lanes removed for
  nodes). Then sjf runs got node-count lanes too (they had one): ``sjf-bb`` 300k 123.9 / 95.9
  -> 108.6 / 80.7, 100k 33.7 / 24.5 both, ``_jobs.csv`` identical; 1M alone on the machine
  452.6 / 357.0 (1,581 MB; x13.8 of 100k; the 639.1 above ran beside another 1M run).
- 1cd7a3d (the profile's room from per-slice byte totals, placement bytes without the per-node
  map, leaner fcfs and engine), side by side with a revision that adds a room of burst-buffer
  shares per node count and half-power node lanes (branch w4-easy, load 0.1-1.7, identical
  ``_jobs.csv``): ``fcfs-bb`` 100k 27.1 / 18.0 against 31.0 / 21.8, ``sjf-bb`` 100k 32.6 / 22.9
  against 38.3 / 28.5, 10,000 nodes ``fcfs-bb`` 100k 130.8 / 111.0 (730 MB) against 151.1 /
  129.3: 4.8x the 96-node time a job (target 2x; the queue walk is ~half of it: the queue there
  is ~2.4x longer and half the ``fits_now`` refusals are burst-buffer packing the room cannot
  see). The shares branch cut ``fcfs-easy`` 1M 829.2 / 730.9 -> 653.5 / 554.0 (x17.2 of 100k,
  was x22.2) and ``sjf-bb`` 1M 471.2 -> 441.4, but costs 10-20 % at 10k-100k jobs: not merged.
- 1e12396 (merged main, load 1-2): ``fcfs-bb`` 100k 29.5 / 19.9, 1M 385.1 / 287.8 (1,635 MB):
  x13.0 (scheduler x14.5, the rest x10.1). Where the growth is: a sampling profile of both puts
  ``_MinTree.first`` at x28 (4 -> 114 s) and every other function at x10-12. Counted
  (``--count``): a backfilling pass tries 1.53 / 1.68 jobs at 20k / 100k, so the candidates
  hardly grow, and a query finds 2.28 jobs in its lanes for the one it returns (it searches
  every node-count lane that may hold one and keeps the earliest). With an instrumented copy
  of the walk (not kept): 7.6 / 13.3 / 22.0 subtrees a lane search at 20k / 100k / 400k jobs,
  nearly all on paths down to a passing job (11 descents a hit at 400k). Tried and not kept: a lane per node count below 128
  (400k 150.4 / 112.0 against 134.2 / 96.5: more lanes to search a query); a scan that resumes
  each lane where the pass last looked (400k 128.6 / 92.0 against 134.2 / 96.5, ``fcfs-easy``
  100k unchanged, ``sjf-bb`` 100k 34.1 against 31.3: one run per walltime pays its
  bookkeeping). On 10,000 nodes (``fcfs-bb`` 100k; ``--count`` on 1e12396: 136,991 passes) the
  backfilling passes try 1.74M jobs for 81k starts; of the 1.66M refused (an instrumented run,
  not kept) 1.05M fail the packing test (``capacity_fits``) and 0.60M the per-storage minima,
  both let through by the room's per-slice byte totals; each costs a query (8 tree searches)
  and a ``fits_now``. 4633f10 decides ``capacity_fits`` on many storage nodes in C, side by side:
  136.9 / 116.4 -> 130.4 / 110.6, identical. Next there: a room exact on packing for wide jobs
  (the w4-easy shares are exact to 64 nodes only, a bound beyond: why they did not help there).
- 4633f10 / 5ff0864 (load 1-2): on 1e12396, ``sjf-bb`` 100k 32.5 / 22.9, 1M 452.7 / 354.4
  (1,527 MB, x13.9) and ``fcfs-easy`` 100k 34.7 / 25.4, 1M 859.3 / 755.6 (1,657 MB, x24.7),
  the two run side by side. 5ff0864: on more than 16 storage nodes the room tests each job its
  bounds let through with ``fits_now``'s packing test, inside the walk (``Room.admits``);
  EASY's "may any later job start?" keeps the bounds alone (with the test, that walk went
  through every job that does not pack: 142.9 s). ``--count``, 10,000 nodes ``fcfs-bb`` 100k:
  jobs tried a pass 12.68 -> 0.59, refused 12.09 -> 0.00. 10,000 nodes ``fcfs-bb`` 100k, side by
  side: 130.4 / 110.6 -> 99.0 / 80.0; alone, one after the other: 96 nodes 26.2 / 17.5,
  10,000 nodes 98.2 / 79.2 (739 MB): 3.75x per job (target 2x). On 96 nodes (12 storage) the
  test cost 7 % (25.2 -> 27.0, alternated twice), so it is off there. Also tried: the scan
  above with the test (109.6), the bytes bound as the sum of per-storage minima (no gain), and
  the test on 96 nodes for ``fcfs-easy`` 400k (190.1 / 149.1 against 193.9 / 155.9: -2 %; a
  profile of its 100k and 400k runs puts the growth in ``_MinTree.first`` again, x7.7 for 4x).
  ``--check 1e12396 --sizes 2000 10000 --big-sizes 1000 10000`` for ``fcfs-bb``, ``sjf-bb``,
  ``fcfs-easy``, ``filler``, ``fcfs``: every ``_jobs.csv`` identical.
- 1746825: EASY's "may any later job start?" asks ``OrderedQueue.skip``, which stops at the
  first node-count lane holding such a job, instead of finding the earliest across every lane
  (an instrumented walk, not kept, of ``fcfs-easy`` 100k: that check visited 155 subtrees a
  query, a backfilling query 25). Side by side with its parent, identical ``_jobs.csv``:
  ``fcfs-easy`` 100k 34.5 / 25.4 -> 28.4 / 19.4, 400k 183.6 / 145.9 -> 150.7 / 113.9;
  ``fcfs-bb`` 100k 26.7 / 18.0 -> 25.4 / 16.7; ``sjf-bb`` 100k 31.4 / 22.2 -> 31.1 / 21.8.
  1M, two at a time: ``fcfs-easy`` 418.6 / 322.1 (1,658 MB; was 859.3 / 755.6), ``fcfs-bb``
  359.8 / 264.4 (1,632 MB); ``sjf-bb`` 100k 33.0 / 23.3, 1M 451.7 / 354.2 (1,527 MB, x13.7).
  Against the side-by-side 100k figures ``fcfs-easy`` grows x14.7 and ``fcfs-bb`` x14.2: all
  three still over 5 minutes and x12. ``--check 8e4f23f --sizes 2000 10000 --big-sizes 1000
  10000`` for ``fcfs-bb``, ``sjf-bb``, ``fcfs-easy``, ``filler``, ``fcfs``: identical.
  ``--count``, ``fcfs-bb`` 100k / 400k: 1.68 / 2.02 jobs tried a pass (0.85 / 1.16 refused),
  2.77 / 2.81 tree searches a query, 2.73 / 2.84 hits a job returned, so the queries grow x4.35
  for 4x the jobs and each costs a little more. The instrumented walk at 100k: a search that
  finds a job visits 24.1 subtrees (``fcfs-easy`` 9.4) for a job 2^4.4 lane slots away on
  average; 10.9 of them fail, and 2.1 pass while neither child does (the minima of bytes and
  walltime come from different jobs). Tried and not kept: a bound on each job's smallest
  burst-buffer share in the trees (the largest share that a lane's fewest nodes may each get
  from the free bytes per storage node now). In ``fcfs-easy`` 100k, ``--count``: 520k jobs
  tried -> 195k (of the 432k that ``fits_now`` refused, 325k exceed that bound taken on the
  fewest free bytes over the job's window), yet the run was 6 % slower at 100k and 3 % faster
  at 400k: computing the bound cost what the walk saved. Its cheap form (the most free bytes
  of one storage node) was +5 % / +3 %, and +14 % on 10,000 nodes. Also tried: searching
  first the lane of the last answer, and starting a lane's walk at its first occupied slot
  (no change); lanes split further by walltime (within 4x), so that a subtree's walltimes
  agree: ``fcfs-bb`` 100k 26.7 -> 27.8, 400k 122.1 -> 122.9. 10,000 nodes ``fcfs-bb`` 100k,
  side by side with 8e4f23f: 127.9 / 105.1 -> 106.6 / 85.9, identical; alone, one after the
  other, 96 nodes 27.4 / 18.3 and 10,000 nodes 113.3 / 91.8: 4.1x per job (3.75x at 5ff0864,
  measured the same way in an earlier session); an hour later, with the ratio printed by this
  script, 27.4 / 18.3 and 124.7 / 101.9: 4.55x (the large machine's runs vary by ~10 %).
- Why the walk still grows with the queue: the front of an overloaded queue keeps the jobs that
  every pass has passed over, those asking many bytes for a short time or few bytes for long.
  A subtree holding both kinds passes a room by its minima though none of its jobs does, and
  the longer the queue, the more such subtrees lie between the blocked job and the next one
  that fits. An instrumented walk (not kept) that also replays each ``fcfs-bb`` search with
  other tests counted subtrees visited a search at 20k / 100k / 400k jobs: 9.8 / 18.8 / 30.9
  as the walk is; 5.6 / 7.9 / 10.1 with an exact test (a subtree of up to 128 jobs entered only
  when one of its jobs passes); 6.2 / 9.3 / 13.1 with minima per walltime class (powers of 2);
  6.7 / 11.0 / 16.6 per class of bytes. Tried, side by side, identical ``_jobs.csv``, not kept:
  walltime classes as lanes (node count x walltime power of 2), ``fcfs-bb`` 100k 26.9 -> 29.9
  (every lane searched pays its own walk); reading the jobs of a subtree of 8 (or 4) slots in
  turn instead of descending into it, 100k +2.6 % (+1.6 %), 400k +1.3 %. A 10,000-node
  platform naming its hosts by chassis (``node_07_700``), so that Batsim's ids follow chassis
  and a wide job's nodes form few runs of one storage order: ``fcfs-bb`` 30k jobs 25.9 -> 24.1
  (-7 %; other decisions, as the ids change): not done.
- 67a080c: in ``sjf`` order (177 walltimes, a run each) a ``sjf-bb`` search at 100k jobs tried
  4.4 runs a query; 1.87M of its 2.15M run searches found nothing, 1.64M of them because no
  lane's minima passed (the minima of the run mix its lanes). A run's search now reads each
  lane's minima from the leaves of its tree over lanes instead of from the lane. Side by side
  with ed99b56, identical ``_jobs.csv``: ``sjf-bb`` 100k 33.0 / 23.3 -> 30.9 / 21.5, 400k
  149.8 / 111.6 -> 139.8 / 102.2, 1M 441.9 / 343.4 -> 412.2 / 314.4 (1,522 MB; x13.3 of its
  100k); ``fcfs-bb`` and ``fcfs-easy`` 100k within 0.5 %. Also tried: the tree over runs with a
  leaf per lane of each run, so that it points only at runs where some lane's minima pass
  (100k unchanged, 400k -0.7 %: its walk pays what the run searches saved).
- Where ``fcfs-easy`` grows (a sampling profile of 100k and 400k at 67a080c: 28.5 and 158.5
  CPU s, ``_MinTree.first`` 3.4 -> 42.8 s, x12.5 for 4x the jobs), ``--count``: 189,841 /
  761,037 backfilling passes trying 2.74 / 5.23 jobs each, of which 2.27 / 4.76 are refused by
  ``fits_now`` (0.43M / 3.62M refusals: x8.4). Its reservation holds nodes only, so the
  room's bytes are the free bytes in total, and a job whose per-node shares do not pack onto
  what each storage node has free passes it (at 100k, 325k of the 432k refusals, see above);
  such jobs stay at the front and every pass walks over each of them again. That is the term
  that grows faster than the jobs; the bound on the smallest share tried before (above)
  targets it, but cost more per room than it saved at 100k. Tried again in a cheaper form
  (each lane's largest share from the storage nodes' free bytes now, O(storage nodes) once a
  lane and room, the trees holding each subtree's smallest share): it halved the refusals at
  100k (0.43M -> 0.22M; 0.52M -> 0.31M jobs tried), yet 100k took 28.9 -> 29.4 s and 400k
  156.0 -> 153.9 s, side by side, identical. A bound on bytes per lane instead (no fourth
  minimum): 0.52M -> 0.38M tried, 100k +4 %, 400k -1.3 %. Refusals cost less than the walk
  they sit in: the hits a query finds per job returned (3.0 -> 3.5) and the subtrees a hit
  visits (9.4 -> 13.0) grow with the queue too.
- 5395068..1cbbf25: the queue's trees compiled (``schedulers/profile/_mintree.c``, an optional C
  extension; ``_PyMinTree`` stays for installs without a compiler and is tested alike): the
  walk, a run's search over its lanes, the search over runs and, on machines of many storage
  nodes, the room's packing test. Every pure-Python pruning tried above cost about what it
  saved a subtree; in C a subtree costs a few ns and the room's reads are most of a walk.
  Side by side (this day's machine was ~1.45x slower than the earlier rounds': 461820f's
  ``fcfs-bb`` 100k took 36.5-41.0 CPU s against 25-27 before), identical ``_jobs.csv``:
  ``fcfs-bb`` 100k 41.0 / 27.6 -> 32.7 / 20.0, 400k 191.7 / 136.0 -> 140.4 / 88.4, 1M 571.9 /
  425.0 -> 395.5 / 253.2; ``fcfs-easy`` 100k 42.2 / 29.3 -> 35.6 / 23.0; 10,000 nodes
  ``fcfs-bb`` 100k 163.5 / 133.0 -> 117.0 / 86.2, then 112.3 -> 106.2 with the packing test in
  C; ``sjf-bb`` 400k 156.1 -> 149.0 with the search over runs in C (100k unchanged). Tried, not
  kept: a room's values remembered across walks (~1 %); the packing test on 96 nodes too
  (``fcfs-bb`` / ``fcfs-easy`` 100k +7 %, ``fcfs-easy`` 400k -3.6 %). ``--check 461820f --sizes
  2000 10000 --big-sizes 1000 10000`` (``fcfs-bb``, ``sjf-bb``, ``fcfs-easy``, ``filler``,
  ``fcfs``; the baseline runs its pure-Python tree): every ``_jobs.csv`` identical.
  ``--sizes 100000 1000000 --policies fcfs-bb sjf-bb fcfs-easy --big-sizes 100000``, one run at
  a time (fcfs-bb 100k at 1661e55, the rest at 1cbbf25): ``fcfs-bb`` 31.8 / 19.6, 1M 331.3 /
  213.5 (1,643 MB, x10.4); ``sjf-bb`` 33.0 / 21.3, 1M 363.0 / 242.6 (1,517 MB, x11.0);
  ``fcfs-easy`` 31.2 / 19.2, 1M 348.0 / 232.0 (1,672 MB, x11.2): the growth is within x12 for
  all three, the time still over 5 minutes on this machine. 10,000 nodes, 100k: ``fcfs-bb``
  128.6 / 92.4 (4.05x per job), ``sjf-bb`` 112.8 / 77.6 (3.42x), ``fcfs-easy`` 97.4 / 64.4
  (3.12x): still over 2x.
- 2caacfe..35268cb: a room on a machine of many storage nodes held its own bound packing test
  (a reference cycle: the cyclic collector took ~5 % of a 10,000-node run collecting rooms
  and their slice lists; now a property); the bytes a job's burst-buffer shares take from each
  storage node are counted in C node by node (``schedulers/profile/_shares.c``, optional as
  ``_mintree``; the run-by-run Python count stays and is tested alike); a start's per-machine
  work in the engine: idle time summed with numpy's sequential accumulate (bit for bit the
  node-by-node sum), busy machines as a bit mask, an allocation of one range of ids kept as a
  ``range`` (the engine's alloc cache held a thousand-id list per entry). Side by side with
  each parent, identical ``_jobs.csv`` (``_schedule.csv`` but for its timings and
  ``_machine_states.csv`` too): 10,000 nodes ``fcfs-bb`` 30k 28.7 -> 25.7 (rooms), 29.6 ->
  24.7 (C count), 23.6 -> 21.1 (idle sum and bit mask), 17.6 -> 16.9 and peak 549 -> 205 MB
  (ranges); 96 nodes ``fcfs-bb`` 100k 31.7 -> 28.9 (C count). ``--sizes 100000 1000000
  --policies fcfs-bb sjf-bb fcfs-easy --big-sizes 100000`` at 927b93c, one run at a time:
  ``fcfs-bb`` 100k 25.0 / 14.4, 1M 273.6 / 166.5 (1,605 MB, x11.0); ``sjf-bb`` 27.0 / 16.4,
  1M 293.7 / 186.8 (1,500 MB, x10.9); ``fcfs-easy`` 25.6 / 15.1, 1M 321.0 / 208.0 (1,634 MB,
  x12.5). 10,000 nodes, 100k: ``fcfs-bb`` 66.5 / 47.8 (2.67x per job), ``sjf-bb`` 61.6 / 42.5
  (2.29x), ``fcfs-easy`` 61.9 / 41.0 (2.41x), peak 338-419 MB (was 730-858). Earlier the same
  day, at 5921b20 (before the ranges), with the 96-node runs slower: 2.42x / 2.13x / 2.00x.
- 368b3d8..c051df9: rooms test a job's burst-buffer packing on every machine with burst
  buffer, not only beyond 16 storage nodes (the test is compiled now; ``fcfs-easy``'s
  nodes-only reservation leaves every free byte to the bounds, so jobs whose shares pack
  nowhere came back in every round); the profile's rows of free bytes per storage node
  (running minimum, taking and giving back a job's bytes, the over-allocation check) and the
  choice of a job's nodes (``lowest_bits``) in C (``schedulers/profile/_profile.c``, optional with
  Python twins, as the other two), capacity tests in C (``_shares.holds``); the runtime's free
  bytes per storage node as one such row (it looped over the storage nodes twice a start); the
  engine keeps an allocation of several id ranges as its ranges (``_RunIds``) instead of a
  list of every id. Measured (CPU s, identical ``_jobs.csv``; pairs side by side, and on this
  machine a pair of equal revisions differs by up to ~10 %): ``fcfs-easy`` 400k 168.4 ->
  148.9 (scheduler 108.8 -> 89.2), 100k 34.7 -> 33.8 (packing); 10,000 nodes ``fcfs-bb`` 30k
  23.1 -> 20.7 and 96 nodes 100k 31.4 -> 29.6 (rows), 27.1 -> 22.6 with ``lowest_bits``,
  18.0 -> 16.6 (runtime row), engine -6-8 % and peak 205 -> 158 MB (ranges); ``sjf-bb`` 400k
  138.6 -> 127.0 against 64b1497 (this round's start). Tried, not kept (alternated solo runs,
  least of three): node-count lanes of 4x instead of 2x (10,000 nodes ``fcfs-bb`` 30k +8.6 %,
  96 nodes ``sjf-bb`` 100k +7 %); a room's node count computed once per run of slices with
  the same AND (+6 %). ``--sizes 100000 1000000 --policies fcfs-bb sjf-bb fcfs-easy
  --big-sizes 100000`` at c051df9, one run at a time, on a slower day than the last round's
  (the 100k runs took 9-20 % longer than at 927b93c): ``fcfs-bb`` 100k 27.3 / 14.9, 1M 302.5
  / 170.6 (1,606 MB, x11.1); ``sjf-bb`` 29.6 / 17.0, 1M 356.4 / 217.4 (1,509 MB, x12.0);
  ``fcfs-easy`` 30.7 / 16.6, 1M 313.1 / 181.2 (1,627 MB, x10.2): growth within x12 for all
  three, the time over 5 minutes on this day. 10,000 nodes, 100k: ``fcfs-bb`` 52.0 / 35.1
  (1.91x per job), ``sjf-bb`` 46.8 / 29.8 (1.58x), ``fcfs-easy`` 44.7 / 26.9 (1.46x), peak
  278-294 MB: within 2x (two earlier runs of the 100k part, same revision and morning:
  1.78 / 1.54 / 1.78 and 2.09 / 1.79 / 1.87). A re-run of the ``fcfs-bb`` / ``sjf-bb`` part
  an hour later, the machine slower still: 100k 30.3 / 32.1, 1M 333.7 / 351.2 (x11.0 /
  x10.9); side by side with 64b1497 at the same moment, ``fcfs-bb`` 1M 317.1 -> 289.9.
- 80dc7a9..8549d56: node counts read in place (``_profile.bit_count``: the CPU's popcount where
  it has one, while CPython's ``int.bit_count`` calls a software count per 30-bit digit: ~4 %
  of a 10,000-node run by callgrind), ``lowest_bits`` on the mask's digits without a byte
  copy, the ptask model's busy CPUs as one byte each (a free range is one ``bytearray.find``,
  not a copy and a scan of the counts), free bytes read without 3.11's byte-array path of
  ``PyLong_AsLongLong`` (``holds``, the queue's rows) and compared in place up to two digits
  (the profile's running minimum). Instructions (callgrind, the per-job part, identical
  ``_jobs.csv``): 10,000 nodes ``fcfs-bb`` 3k jobs -19 %, 96 nodes 5k jobs -0.3 %. CPU s,
  alternated solo runs: 10,000 nodes ``fcfs-bb`` 30k 14.45 -> 13.30 (least of three), 96 nodes
  ``fcfs-bb`` 100k 30.47 -> 25.71 (least of three, ABBA order; the machine drifted by ~20 %
  within those six runs); ``--check``: ``conservative-bb`` 1k on 10,000 nodes 23.8 -> 17.1.
  ``--check 80dc7a9 --sizes 2000 10000 --big-sizes 1000 10000``: identical ``_jobs.csv`` for
  ``fcfs-bb``, ``sjf-bb``, ``fcfs-easy``, ``filler``, ``fcfs``, and ``conservative-bb`` at 2k /
  1k. ``--sizes 100000 1000000 --policies fcfs-bb sjf-bb fcfs-easy --big-sizes 100000`` at
  8549d56, one run at a time, in a slow stretch (the 96-node ``fcfs-bb`` 100k took 36.1 s
  there, 24.0-25.7 s in solo runs of the same revision minutes later): ``fcfs-bb`` 100k 36.1 /
  19.4, 1M 342.2 / 192.4 (1,600 MB, x9.5); ``sjf-bb`` 37.9 / 21.7, 1M 357.1 / 215.0 (1,489 MB,
  x9.4); ``fcfs-easy`` 27.3 / 14.8, 1M 298.9 / 169.6 (1,633 MB, x10.9). 10,000 nodes, 100k:
  ``fcfs-bb`` 45.6 / 30.0 (52.0 at c051df9), ``sjf-bb`` 40.2 / 24.7 (46.8), ``fcfs-easy``
  43.1 / 25.0 (44.7), peak 278-294 MB; per job against this run's 96-node figures 1.26x /
  1.06x / 1.58x, against c051df9's (faster) ones 1.67x / 1.36x / 1.40x.
- 33c1c7c..b410ee2: the queue's compiled walk fills a profile's room on a miss itself (the
  running AND of free nodes and least free bytes extended in C, as ``Room.__missing__``
  does, ~11 Python calls a job before: ``_mintree.native_room``); the profile keeps its
  release log only for a policy that reads it (``release_log``: conservative), so EASY runs no
  longer log two tuples per release; ``simulate`` loads the platform and workloads with the
  cyclic collector paused (a million-job workload 7.6 -> 6.0 CPU s, ``bench_load.py``); a mask's digits are
  counted two at a time; ``shift_rows`` adds a row's entries in int64 below 2**60.
  Instructions (callgrind, per job after the fixed part, identical ``_jobs.csv``): 96 nodes
  ``fcfs-bb`` 5k 1.154M -> 1.080M (-6.4 %), 10,000 nodes ``fcfs-bb`` 3k 2.287M -> 2.091M
  (-8.6 %). Tried, not kept: the isolated ptask step in C (-0.2 % of instructions, no
  measurable time), the engine compiled with Cython as it is (untyped: -1 % of instructions).
  ``--check 33c1c7c --sizes 2000 10000 --big-sizes 1000 10000`` at b410ee2: identical
  ``_jobs.csv`` for ``fcfs-bb``, ``sjf-bb``, ``fcfs-easy``, ``filler``, ``fcfs``, and
  ``conservative-bb`` at 2k / 1k. Two grids (``--sizes 100000 1000000 --policies fcfs-bb
  sjf-bb fcfs-easy``), one run at a time, an hour apart, the machine ~10-20 % slower in the
  second: at f1ce55f, 96 nodes ``fcfs-bb`` 100k 24.2 / 12.8, 1M 264.1 / 143.8 (1,592 MB,
  x10.9); ``sjf-bb`` 25.1 / 13.9, 1M 268.0 / 154.3 (1,481 MB, x10.7); ``fcfs-easy`` 23.8 /
  12.5, 1M 262.7 / 145.0 (1,609 MB, x11.0). At b410ee2 (with ``--big-sizes 100000``):
  ``fcfs-bb`` 26.4 / 13.8, 1M 297.1 / 162.3 (1,591 MB, x11.3); ``sjf-bb`` 30.2 / 16.9, 1M
  321.1 / 187.5 (1,465 MB, x10.6); ``fcfs-easy`` 24.6 / 12.9, 1M 280.8 / 156.0 (1,616 MB,
  x11.4); 10,000 nodes 100k ``fcfs-bb`` 41.9 / 26.7, ``sjf-bb`` 41.2 / 24.3, ``fcfs-easy``
  37.9 / 20.9: per job 1.59x / 1.36x / 1.54x the 96-node time. An earlier run at f1ce55f
  gave 46.6 / 41.1 / 40.9 on 10,000 nodes (1.95x / 1.47x / 1.73x).
- b410ee2..84a15ff: the ordered queue searches its runs lane by lane (one tree per node-count
  lane over the runs: ``ordered_queue._py_find_in_runs``, ``_mintree.find_in_runs``). A run's
  minima mixed its lanes (a 1-node job asking many bytes, a wide one asking none), so on long
  ``sjf`` queues most runs entered passed on minima that no job had, and the runs entered per
  search grew with the queue: ``sjf-bb`` 100k, 0.9 at a queue of 650 and 6.1 at 6,000; now 0.8
  and 1.5 (run, lane) pairs, and the room is read 76 times a message instead of 151 at the end.
  Same answers: ``--check 12b59ae --sizes 2000 10000 --big-sizes 1000`` identical for
  ``fcfs-bb``, ``sjf-bb``, ``fcfs-easy``, ``filler``, ``fcfs``; ``sjf-bb`` at 100k, 400k and 1M
  identical. Its time is within this machine's noise: ``sjf-bb`` 1M scheduler CPU, old and new
  alternated, 199.0 / 184.1 s and 179.9 / 181.3 s; 5k jobs (a queue of ~300) +0.7 % of
  instructions. Tried, not kept: the tree's three arrays of minima interleaved (one cache line
  a node): ``fcfs-easy`` 400k, alternated, scheduler 66.5 / 60.8 s before and 62.6 / 61.0 s
  after, identical ``_jobs.csv``. Grid at 84a15ff (``--sizes 100000 1000000 --big-sizes
  100000 --policies fcfs-bb sjf-bb fcfs-easy``, one run at a time): 96 nodes ``fcfs-bb`` 100k
  25.7 / 13.4, 1M 292.5 / 161.2 (1,590 MB, x11.4); ``sjf-bb`` 31.9 / 17.6, 1M 291.5 / 162.3
  (1,490 MB, x9.2); ``fcfs-easy`` 28.5 / 15.0, 1M 278.1 / 154.0 (1,598 MB, x9.8): all three
  under 5 minutes. 10,000 nodes 100k: ``fcfs-bb`` 42.7 / 27.4, ``sjf-bb`` 43.0 / 25.7,
  ``fcfs-easy`` 38.0 / 21.3, per job 1.66x / 1.35x / 1.34x the 96-node time. Then (da01f68)
  runs start with room for 64 jobs and lanes for 32 instead of 8, so that a short run or lane
  is not rebuilt every few appends (``sjf-bb`` 20k: 2,568 run and 12,941 lane rebuilds with
  8): ``sjf-bb`` 5k 1.157M -> 1.148M instructions a job (-0.8 %), ``fcfs-bb`` unchanged;
  identical ``_jobs.csv``.
- dab6665..a4643c7: the engine's step loop in C (``simulator/_steps.c``; ``Engine._py_steps``
  its Python twin): the clock's steps, the sleeps, the mailbox and the message in flight on C
  arrays, the actors still Python. ``--check dab6665 --sizes 2000 10000 --big-sizes 1000``
  (``fcfs-bb``, ``sjf-bb``, ``fcfs-easy``, ``filler``, ``fcfs``, ``conservative-bb``):
  identical ``_jobs.csv``; ``--check dab6665 --sizes 1000000 --policies fcfs-bb``: identical,
  229.6 CPU s against 237.7 (these jobs run ``parallel_homogeneous`` profiles: the Python ptask
  model still decides their steps, so the engine gains less here than on delay jobs, see
  bench_simulator.py). Grid at a4643c7 (``--sizes 100000 1000000 --big-sizes 100000 --policies
  fcfs-bb sjf-bb fcfs-easy``, one run at a time, in a faster stretch of this machine than the
  last round's): 96 nodes ``fcfs-bb`` 100k 19.6 / 11.3, 1M 208.1 / 126.8 (1,577 MB, x10.6);
  ``sjf-bb`` 20.4 / 12.0, 1M 230.3 / 140.3 (1,471 MB, x11.3); ``fcfs-easy`` 20.7 / 11.9, 1M
  226.4 / 137.7 (1,614 MB, x10.9). 10,000 nodes 100k: ``fcfs-bb`` 37.6 / 25.5, ``sjf-bb``
  36.0 / 23.1, ``fcfs-easy`` 34.2 / 20.5, per job 1.92x / 1.76x / 1.65x the 96-node time
  (within 2x, closer to it than before: the scheduler's work per job on 10,000-node masks,
  ~2.2x the 96-node one, now weighs more in the whole run).
- 22e06aa..012e5aa: a grid of the 100k part at 22e06aa gave, on 10,000 nodes, ``fcfs-bb``
  39.4 / 26.5 against 19.2 / 11.2 on 96 nodes: 2.05x per job, over the target (``sjf-bb``
  1.60x, ``fcfs-easy`` 1.51x); a re-run of that pair, 37.9 against 19.6 s: 1.93x. Where the
  wide run's extra time goes (``perf``, whole 100k runs, and a counting copy of the walk, not
  kept): the queue's compiled search is ~20 % of it, against ~8 % on 96 nodes; a job costs
  1,348 subtree visits (127 on 96 nodes), 13.5 lane walks (3.9) and 23.5 jobs that pass the
  room's bounds but not its packing test (2.0), and the walk's reads of the room missed its
  cache 306 times (48), each a float key and a dict lookup. The walk now reads a profile's
  room by slice (``_mintree.c``: ``slice_get``; each slice's value read from Python once a
  search, the room's dict no longer filled by the walk); ``fits_now``'s quick burst-buffer
  test reads the profile's kept row sum. Callgrind, identical ``_jobs.csv``: ``fcfs-bb``
  10k jobs on 10,000 nodes 25.65G -> 24.94G instructions (-2.8 %), on 96 nodes 13.58G ->
  13.40G (-1.3 %); on whole 100k runs the gain is below this machine's noise (two
  alternated pairs: 39.45 / 39.40 s before, 40.27 / 38.22 s after). What is left on 10,000
  nodes is spread thin: 10,000-bit masks made and freed by every reservation, release and
  room slice, a wide job's burst-buffer shares placed node by node, rows of 100 storage
  nodes, the subtree visits (memory-bound loads of the three minima), ``idle`` summed over
  ~1,000 machines a start. ``--check 22e06aa --sizes
  2000 10000 --big-sizes 1000 10000`` (``fcfs-bb``, ``sjf-bb``, ``fcfs-easy``, ``filler``,
  ``fcfs``) and ``conservative-bb`` at 2k / 1k: every ``_jobs.csv`` identical. Grid at
  012e5aa (``--sizes 100000 1000000 --big-sizes 100000 --policies fcfs-bb sjf-bb
  fcfs-easy``, one run at a time, a slower stretch than a4643c7's): 96 nodes ``fcfs-bb`` 100k
  20.4 / 11.6, 1M 230.7 / 136.1 (1,580 MB, x11.3); ``sjf-bb`` 24.2 / 14.1, 1M 243.5 / 146.3
  (1,470 MB, x10.1); ``fcfs-easy`` 22.4 / 12.6, 1M 226.6 / 132.9 (1,615 MB, x10.1); 10,000
  nodes 100k ``fcfs-bb`` 36.5 / 24.1, ``sjf-bb`` 34.4 / 21.9, ``fcfs-easy`` 33.1 / 19.5: per
  job 1.78x / 1.42x / 1.48x. The 96-node 100k runs came first and ran slower than the same
  runs an hour earlier (``sjf-bb`` 24.2 against 20.9 s), which flatters these ratios: on
  this machine, ``fcfs-bb``'s ratio is 1.8-2.05x from one grid to the next. So this script
  now runs both machines at one size back to back (1dfbce8). Two such runs of ``--sizes
  100000 --big-sizes 100000 --policies fcfs-bb sjf-bb fcfs-easy``, one after the other: 96 /
  10,000 nodes ``fcfs-bb`` 22.1 / 38.6 and 22.1 / 40.8 (1.75x, 1.84x), ``sjf-bb`` 21.9 / 34.4
  and 22.6 / 36.4 (1.57x, 1.61x), ``fcfs-easy`` 20.3 / 36.3 and 20.5 / 32.2 (1.79x, 1.57x).
  A third, inside ``--check 22e06aa --sizes 100000 --big-sizes 100000`` (its baseline runs in
  between): ``fcfs-bb`` 18.5 / 37.7 (2.03x), ``sjf-bb`` 21.2 / 36.9 (1.74x), identical.
- 667732c..971d152: two per-machine costs of a wide job's start and end left the engine. A
  start's idle times are summed and stamped in C (``_steps.idle_stamp``, see
  bench_simulator.py), and the ptask model's isolated ``add_uniform`` tasks keep their CPU
  ranges (sorted, disjoint, found by bisection when another task comes to share a CPU)
  instead of a count and an owner per CPU, written at start and end (py-spy had put those
  four list writes at ~1.8 s of a 10,000-node 100k run). Callgrind, ``fcfs-bb`` 10k jobs on
  10,000 nodes: 24.94G -> 23.02G instructions (25.65G at 22e06aa: -10.3 % this session).
  ``--check 22e06aa --sizes 2000 10000 --big-sizes 1000 10000`` (``fcfs-bb``, ``sjf-bb``,
  ``fcfs-easy``, ``filler``, ``fcfs``) and ``conservative-bb`` at 2k / 1k: identical. Paired
  runs of the 100k part at 971d152: 96 / 10,000 nodes ``fcfs-bb`` 21.5 / 36.5 (1.70x),
  ``sjf-bb`` 22.2 / 35.8 (1.61x), ``fcfs-easy`` 20.2 / 31.8 (1.57x); again, right after:
  19.3 / 33.8 (1.75x), 20.3 / 33.4 (1.64x), 19.2 / 29.1 (1.52x). ``--check 22e06aa --sizes
  1000000 --big-sizes --policies fcfs-bb`` at a177ab4: 202.2 / 121.8 CPU s (1,587 MB),
  identical ``_jobs.csv``.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POLICIES = ("fcfs-bb", "sjf-bb", "fcfs-easy", "conservative-bb", "filler")
BIG = dict(groups=4, chassis=25, routers=10, nodes_per_router=10)   # 10,000 hosts, 100 of them storage


def make_workload(out: Path, jobs: int, platform: Path, label: str, interarrival: float = 120.0) -> Path:
    """The issue's synthetic workload of ``jobs`` jobs on ``platform``, cached in ``out``."""
    path = out / f"synthetic-{label}-{jobs}.json"
    if not path.exists():
        from mrsched.workloads.platform_info import read_platform_info
        from mrsched.workloads.synthetic import synthetic_columns
        head, columns = synthetic_columns(jobs=jobs, platform=read_platform_info(platform), seed=1,
                                          model="burst-buffer", variant="alloc-only",
                                          mean_interarrival=interarrival)
        columns.write(path, head)       # job by job: a million jobs never held as dicts
    return path


def big_platform(out: Path) -> Path:
    path = out / "dragonfly10k.xml"
    if not path.exists():
        from mrsched.platforms.dragonfly import generate_dragonfly
        path.write_text(generate_dragonfly(**BIG, storage_per_chassis=1).xml)
    return path


def install_counters(pkg: str) -> dict[str, int]:
    """Count, for ``--count``, what the ordered policies' queue work is made of: backfilling
    passes (``start_all_that_fit``), the jobs they try and start, queries with a room (``next_job``)
    and those that return a job, tree searches (``_MinTree.first``: each lane's, and each lane's
    tree over the runs; before 84a15ff, one tree over whole runs, so the searches a query of older
    rounds count otherwise) and those that find one. The wrappers cost time: such a run is not
    for timing."""
    import importlib
    oq = importlib.import_module(pkg + ".schedulers.ordered_queue")
    if hasattr(oq, "use"):
        oq.use(False)   # the pure-Python tree, whose searches are Python calls to count (same answers)
    ordered = importlib.import_module(pkg + ".schedulers.policies.ordered").OrderedPolicy
    counts = dict.fromkeys(("passes", "tried", "started", "queries", "answers", "searches", "hits"), 0)
    in_pass = [False]
    start_all, next_job, first = ordered.start_all_that_fit, oq.OrderedQueue.next_job, oq._MinTree.first
    remove = oq.OrderedQueue.remove

    def counted_pass(*args, **kw):
        counts["passes"] += 1
        in_pass[0] = True
        try:
            return start_all(*args, **kw)
        finally:
            in_pass[0] = False

    def counted_query(self, after=None, room=oq._ANY, *rest):
        found = next_job(self, after, room, *rest)
        if room is not oq._ANY:
            counts["queries"] += 1
            counts["answers"] += found[0] is not None
            counts["tried"] += in_pass[0] and found[0] is not None
        return found

    def counted_remove(self, job):
        counts["started"] += in_pass[0]     # a pass takes out only the jobs it starts
        return remove(self, job)

    def counted_search(self, *args):
        s = first(self, *args)
        counts["searches"] += 1
        counts["hits"] += s >= 0
        return s

    ordered.start_all_that_fit = staticmethod(counted_pass)
    oq.OrderedQueue.next_job, oq.OrderedQueue.remove, oq._MinTree.first = counted_query, counted_remove, counted_search
    return counts


def child(pkg: str, policy: str, platform: str, workload: str, prefix: str, count: str = "") -> None:
    """One run in this process; prints its measures as one JSON line (``count``: with the
    counts of ``install_counters``)."""
    import importlib
    counts = install_counters(pkg) if count else None
    registry = importlib.import_module(pkg + ".schedulers.registry")
    engine = importlib.import_module(pkg + ".simulator.engine")
    scheduler = registry.make_scheduler(policy, {})
    spent = [0.0]

    class Timed:
        def handle_message(self, msg: dict) -> dict:
            t = time.process_time()
            try:
                return scheduler.handle_message(msg)
            finally:
                spent[0] += time.process_time() - t

    # as `mrsched run` does: the engine keeps no per-job records (older revisions, for --check,
    # have no such option and keep them)
    import inspect
    kw = {"keep_records": False} if "keep_records" in inspect.signature(engine.simulate).parameters else {}
    t0, w0 = time.process_time(), time.perf_counter()
    engine.simulate(platform, [workload], Timed(), export_prefix=prefix, **kw)
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"cpu": cpu, "wall": wall, "sched": spent[0], "peak_mb": peak_kb / 1024, "counts": counts}))


def run_child(pkg: str, pythonpath: str | None, policy: str, platform: Path, workload: Path, prefix: Path,
              timeout: float, count: bool = False) -> dict | None:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, __file__, "--child", pkg, policy, str(platform), str(workload), str(prefix)]
    if count:
        cmd.append("count")
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise SystemExit(f"{policy} on {workload.name} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def count_text(c: dict[str, int]) -> str:
    """``install_counters``' counts as rates (what does not grow with the queue, and what does)."""
    def per(a: str, b: str) -> str:
        return f"{c[a] / c[b]:.2f}" if c[b] else "-"
    c = dict(c, refused=c["tried"] - c["started"])
    return (f"{c['passes']:,} backfilling passes, {per('tried', 'passes')} jobs tried a pass "
            f"({per('refused', 'passes')} of them refused by fits_now), "
            f"{per('searches', 'queries')} tree searches a query, {per('hits', 'answers')} hits a job "
            f"returned")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(*argv[1:7])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    ap.add_argument("--sizes", nargs="*", type=int, default=[10_000, 100_000, 1_000_000],
                    help="jobs on the 96-node machine")
    ap.add_argument("--big-sizes", nargs="*", type=int, default=[100_000],
                    help="jobs on the 10,000-node machine (none: skip it)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds before a run is given up")
    ap.add_argument("--check", metavar="REV", default=None,
                    help="also run revision REV and compare every _jobs.csv byte for byte")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "mrsched-bench-scale")
    ap.add_argument("--count", action="store_true",
                    help="also count backfilling passes, jobs tried, tree searches and hits "
                         "(slower: times are not comparable)")
    args = ap.parse_args(argv)
    from mrsched.errors import ConfigError
    from mrsched.schedulers.registry import policy_class
    for policy in args.policies:        # one line now, not a child's traceback later
        try:
            policy_class(policy)
        except ConfigError as exc:
            ap.error(str(exc))
    args.out.mkdir(parents=True, exist_ok=True)
    from mrsched.platforms.bundled import bundled_path
    machines = [("dragonfly96", Path(bundled_path("dragonfly96")), args.sizes, 120.0)] if args.sizes else []
    if args.big_sizes:
        # jobs of 1..9,900 nodes (log-uniform) are ~50x wider there: arrivals twice as often
        # keep that machine overloaded too
        machines.append(("dragonfly10k", big_platform(args.out), args.big_sizes, 60.0))
    base_dir = None
    if args.check:
        sys.path.insert(0, str(REPO / "bench"))
        from bench_plan import export_revision
        base_dir = tempfile.mkdtemp(prefix="mrsched-scale-base-")
        export_revision(args.check, Path(base_dir))
    print(f"{'machine':>12} | {'policy':>15} | {'jobs':>9} | {'cpu s':>8} | {'sched s':>8} | {'jobs/s':>8} | "
          f"{'peak MB':>8} | {'x prev':>6}" + (f" | baseline cpu s | identical _jobs.csv" if args.check else ""))
    all_same = True
    cpu: dict[tuple[str, str, int], float] = {}     # (machine, policy, jobs) -> CPU s
    # policy by policy, size by size, both machines at a size one after the other: the ratio
    # of their times compares runs minutes apart, not the two ends of the grid (this machine's
    # speed drifts by 10-20 % within an hour)
    runs = sorted(((policy, n, m) for m, (_, _, sizes, _) in enumerate(machines) for n in sizes
                   for policy in args.policies),
                  key=lambda r: (args.policies.index(r[0]), r[1], r[2]))
    prev: dict[tuple[str, str], float] = {}         # (machine, policy) -> CPU s of its previous size
    given_up: set[tuple[str, str]] = set()
    for policy, n, m in runs:
        label, platform, _, interarrival = machines[m]
        if (label, policy) in given_up:
            continue
        workload = make_workload(args.out, n, platform, label, interarrival)
        prefix = args.out / f"{label}-{policy}-{n}"
        got = run_child("mrsched", None, policy, platform, workload, prefix, args.timeout, args.count)
        if got is None:
            print(f"{label:>12} | {policy:>15} | {n:>9} | > {args.timeout:.0f} s (given up)", flush=True)
            given_up.add((label, policy))
            continue
        last = prev.get((label, policy))
        growth = f"{got['cpu'] / last:6.1f}" if last else f"{'':>6}"
        line = (f"{label:>12} | {policy:>15} | {n:>9} | {got['cpu']:8.1f} | {got['sched']:8.1f} | "
                f"{n / got['cpu']:8.0f} | {got['peak_mb']:8.0f} | {growth}")
        prev[label, policy] = cpu[label, policy, n] = got["cpu"]
        if args.check:
            base_prefix = args.out / f"{label}-{policy}-{n}-baseline"
            base = run_child("mrsched_baseline", base_dir, policy, platform, workload, base_prefix,
                             args.timeout)
            if base is None:
                line += f" | > {args.timeout:.0f} | (baseline given up)"
            else:
                same = filecmp.cmp(f"{base_prefix}_jobs.csv", f"{prefix}_jobs.csv", shallow=False)
                all_same &= same
                line += f" | {base['cpu']:14.1f} | {same}"
        print(line, flush=True)
        if got.get("counts"):
            print(f"{'':>12}   counts: {count_text(got['counts'])}", flush=True)
    for (label, policy, n), big in cpu.items():   # the "within 2x per job" on the large machine
        small = cpu.get(("dragonfly96", policy, n))
        if label == "dragonfly10k" and small:
            print(f"{policy}, {n} jobs: time per job on 10,000 nodes / on 96 nodes = {big / small:.2f} (target 2)")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
