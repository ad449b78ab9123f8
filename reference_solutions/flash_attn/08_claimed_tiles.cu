// flash_attn, step 8: step 7 (07_lean_tiles.cu, its header follows below) whose persistent kernels
// claim their non-causal work tiles from a global counter as they free, instead of following the
// host's plan, and whose claiming D = 128 kernel takes each row half's max as a pairwise tree. Each
// behind a compile-time switch (FA8_*, both on by default; -DFA8_X=0 builds without one). Every
// other kernel of the file (causal, three consumers, step 5's grid at D = 128 from N = 4096) is step
// 7's machine code, instruction for instruction (tests/scripts/test_flash_attn_step8.py).
//
// Why. Step 7 was 0.976-1.000x cuDNN at B=16,H=32,N=1024,D=128 non-causal, the one benchmark shape
// short of issue 20's target, and >= 1.03x at the other eleven. That shape has 4,096 work tiles,
// 31.03 rounds on 132 SMs: step 7's plan gives 4 CTAs 32 tiles and 128 CTAs 31, so the call ends when
// the 4 CTAs chosen ahead (0-3) end their 32nd. scripts/probes/attention_tail.py (README, "The next
// steps", 0.) had both kernels paying about a whole round for those 4 tiles (512 heads against 495:
// step 7 1.0745 of the time, cuDNN 1.0638; 1.034 by the work, 1.067 by whole rounds), cuDNN about a
// quarter of a round less. A split of the last tiles (the probe flash_attn_split_tail.cu) gained
// nothing: its pieces' starts and merges cost what they saved.
//
// 1. FA8_DYN: claimed tiles. The producer thread claims tile k + 1 (one atomicAdd on fa8_next) as it
//    starts tile k's loads, so the answer is back before it is needed, and publishes tile k to the
//    consumers through a ring of 4 shared-memory slots, each with an mbarrier of count 1 (the slot
//    written, then one arrive; a consumer waits on it at the tile's start and, the last consumer,
//    once more to know whether its ping-pong hand-over has a taker). Four slots are enough: the
//    producer writes tile k's slot only after issuing tile k - 1's loads, for which every consumer
//    has given back K/V load g_k - 4, so every consumer has started tile k - 4 and read its slot.
//    A claim past the last tile is the end (slot -1); the last CTA to get there zeroes both
//    counters (fa8_done counts them), so every launch starts from 0 with no host work and no plan
//    uploaded. Tiles are claimed in step 5's order (head-major, a head's K/V in L2 while its 8 tiles
//    run); which CTA runs the 32nd-round tiles is whichever frees first. Causal shapes keep the
//    plan: claiming causal tiles longest first (a variant with the ring for causal too) was
//    2.0-2.7% SLOWER at N <= 4096 than the plan, which pairs long and short tiles by its model.
//    The three-consumer kernel (D = 64 from N = 2048, non-causal) keeps the plan too: its producer,
//    at 32 registers, spilled 16 bytes with the claim. The claim waits in shared memory, not in a
//    register, for the same reason in the two-consumer D = 64 kernel (8 bytes spilled otherwise).
//    The counters are the process's, not a launch's: one persistent launch at a time (the judge
//    calls solve() one call at a time); two launches on two streams at once would share them.
//    Each CTA's first tile is its own index (FA8_OWN_FIRST, on by default; blockIdx.x < the grid
//    <= the tiles), claims only from the grid's size on. The first form measured claimed the first
//    tile too, so on shapes with no more tiles than SMs (the grid one CTA a tile) the CTAs that start
//    first could take two tiles before later ones had one. attention_tail.py --heads 4,8,16,17 (32
//    to 136 tiles, B = 1, N = 1024; 2026-11-30): the first form 0.6-5.8% slower than this one at 11
//    of 12 points from 32 to 128 tiles (not the twice feared), this one within the runs' spread of
//    step 7; on the 12 benchmark shapes `judge compare` had the two the SAME (0.998-1.002).
//    FA8_OWN_FIRST=0 builds the first form (README, "Step 8").
// 2. FA8_TREE (the claiming D = 128 kernel only): the 32 values of a row half maxed in 5 levels of
//    independent pairs instead of a chain of 32 FMNMX from -inf (README, "Step 7 beside cuDNN in
//    Nsight Compute": step 7 loses there on dependent-arithmetic stalls; this tree, tried then on
//    every D = 128 kernel, gained 0.7-0.9% at this shape and cost at N >= 4096).
//
// Predicted before the first GPU run (2026-11-30): FA8_DYN 0.7-1.3% off the target shape's time
// (cuDNN's quarter round at 512 heads, if the 4 extra tiles go to the CTAs that end their 31st
// first), about 0 elsewhere. FA8_TREE was added after that first run (of the claim alone, as a
// run-time flag: README), predicted from its earlier measurement: 0.7-0.9% at the target shape.
//
// Build (nvcc 13.0, sm_90a, the judge's flags): six kernels, <D, consumers, persistent, claiming>
// = <128, 2, no, no> (step 5's grid), <128, 2, yes, no>, <64, 2, yes, no>, <64, 3, yes, no> (step
// 7's SASS, each), and the claiming <128, 2, yes, yes> and <64, 2, yes, yes>; all 168 registers at
// launch (128 with three consumers), 0 bytes stack, 0 spills. HGMMA 32 / 48 in the claiming
// kernels, as step 7's. `scripts/probes/sass_stalls.py` on the claiming D = 128 kernel: key-tile loop
// 623 instructions, 1,308 encoded stall cycles (with FA8_TREE=0 625 and 1,291; step 7's persistent
// kernel 649 and 1,293: without the plan's loads ptxas keeps more of the descriptor arithmetic in
// uniform registers), 136 FMNMX in the kernel (140), the producer's walk 428 instructions (452).
// D = 64: key-tile loops 1,121 and 571 (step 7: 1,122 and 571). Two ATOMG.ADD in each claiming
// kernel's code: the claim of the next tile (one a work tile) and the end's count (FA8_OWN_FIRST=0:
// a third, the first claim; the loops above are the same instruction counts either way).
//
// Measured on an NVIDIA H200 (driver 580.159.04, torch 2.11.0+cu130, 2026-11-30 05:22-05:28 UTC;
// README.md, "Step 8"): correct on every test (`judge test` 17 of 17), on 13 shapes twice over (the
// counters reused; the check that became scripts/probes/flash_attn_check.py), compute-sanitizer
// memcheck 0 errors. `judge compare --budget 3` against step 7, step 8's time over step 7's: 0.966 (D = 64) and
// 0.957 (D = 128) at N = 1024 non-causal, FASTER; 0.999-1.005 (SAME) on the other ten, where step 7's
// machine code runs or the claim changes little. FA8_TREE on its own: 0.991 at the target shape
// (interval 0.989-0.991; SAME by the 1% rule), 1.000 elsewhere. `judge submit`: 1.031-1.130x cuDNN on
// every shape (1.031x at the target, 0.4338 against 0.4470 ms; step 7 in the same lease 0.979x),
// 1.81x FA2 (geomean). In scripts/probes/attention_tail.py's setting (the same inputs called back to
// back) the claim gained nothing (512 heads at D = 128: 0.4481 ms against step 7's 0.4463): what it
// wins back is in the judge's setting, fresh inputs behind a gate for every call, where the CTAs
// start their first tiles from DRAM unevenly; not profiled. All of this paragraph was the first form
// (FA8_OWN_FIRST=0). The shipped form (07:29-07:55 UTC): ACCEPTED in `judge verify`,
// flash_attn_check.py 0 wrong calls, memcheck 0 errors; `judge submit` 1.033-1.136x cuDNN on every
// shape (1.033x at the target, 0.4244 ms), 1.83x FA2; fair_timing.py 1.033-1.140x, 50 of 50 targets.
//
// ---- Step 7's header, unchanged ----
//
// flash_attn, step 7: step 6 (06_persistent.cu, its header follows below) with fewer instructions per
// key tile and per work tile, each change behind a compile-time switch (FA7_*, all on by default;
// -DFA7_X=0 builds without one). Kernels, grid, schedule, pipeline, dispatch and ABI are step 6's.
//
// Why. Nsight Compute on an H200 (README.md, "cuDNN's kernel beside step 6"; clocks not locked, one
// call each): cuDNN's sm90 flash kernel (132 persistent CTAs × 384 threads, 168 registers, as step 6)
// against step 6, warp instructions executed per SM and IPC:
//   B,H,N,D,causal     cuDNN µs  step 6 µs                instructions cuDNN / step 6  IPC cuDNN / step 6
//   16,32,1024,64,0     314.6     337.8                    1.088M / 1.108M              2.03 / 1.93
//   16,32,1024,64,1     206.6     223.1                    0.655M / 0.730M              1.92 / 1.95
//   16,32,1024,128,0    440.5     482.5                    1.233M / 1.383M              1.70 / 1.71
//   16,32,1024,128,1    301.7     320.9                    0.755M / 0.909M              1.55 / 1.72
//   4,32,4096,128,0     1620      1640 (step 5's kernel)   4.70M / 4.87M                1.76 / 1.77
//   4,32,4096,128,1     928.5     933.1 (step 5's kernel)  2.47M / 2.65M                1.63 / 1.72
// At D = 128 step 6 issued 12-20% more instructions at N = 1024, 4-7% more at N = 4096, at the same
// IPC. Its SASS shows where: a work tile's epilogue cost as much as a whole key tile, and each key
// tile spent 80-120 instructions per consumer warp (39-49 at D = 64) rebuilding wgmma descriptors.
//
// SASS accounting (nvcc 13.0, sm_90a, the judge's flags; instructions of one consumer warp along the
// executed path. turn = one key tile of the main loop; prologue = a work tile's start and its tile 0;
// epilogue = the last P·V turn, O / l, conversion and stores; masked = a diagonal or ragged tile),
// step 6 -> step 7:
//   kernel                        turn        turn masked  prologue    epilogue
//   D = 128 persistent            588 -> 507  786 -> 649   641 -> 570  690 -> 396
//   D = 128 step 5's (N > 2048)   582 -> 459  779 -> 599   585 -> 521  696 -> 374
//   D = 64, two consumers (PF2)   483 -> 419  682 -> 561   536 -> 489  430 -> 261
//     (the loop unrolled by two, per turn; its odd last turn 515 -> 430, masked 712 -> 571)
//   D = 64, three consumers       470 -> 434  668 -> 576   545 -> 506  425 -> 251
// A per-SM model from these (every work tile of a benchmark shape, 4 warps per consumer, over 132
// SMs) puts step 6 at 0.98-0.99 of the measured counts above, and step 7 at 0.80-0.84 of step 6 at
// N = 1024, 0.78 at D = 128 from N = 4096 (step 5's kernel), 0.85-0.92 at D = 64 from N = 4096.
// Against cuDNN's counts (step 6's unmodelled remainder, producer and the like, added back): 0.86x /
// 0.92x (D = 64, N = 1024, non-causal / causal), 0.93x / 0.97x (D = 128, N = 1024), 0.81x / 0.84x
// (D = 128, N = 4096).
//
// 1. FA7_DESC: wgmma descriptors as base + constant. Step 6 built each descriptor from its pointer
//    ((addr & 0x3FFFF) >> 4 | ...: 5-7 instructions per operand per wgmma, 16 wgmmas per key tile
//    at D = 128); here the high word is a constant and the low word of every box is a per-CTA base
//    (this consumer's Q slice, K and V of stage 0) + stage × (bytes >> 4) + a compile-time offset: no
//    carry out of the 14-bit address field, every shared address is below 228 KB. Per turn: -66
//    (D = 128 persistent), -72 (step 5's kernel), -31..-34 (D = 64). The same change gained 5% in
//    fp8_gemm's step 7 (07_pipelined_promotion.cu).
// 2. FA7_QUNI (with FA7_DESC): the Q slice's base goes through __shfl_sync(.., 0). It depends on the
//    warpgroup (threadIdx.x / 128), which ptxas does not know to be warp-uniform, so step 6 and
//    FA7_DESC alone kept Q's descriptor in vector registers and moved it to uniform ones (R2UR, and
//    the constant high word rebuilt) at every Q·Kᵀ wgmma; after a lane-0 shuffle it stays uniform.
//    Per turn: -16 (D = 128 persistent), -49 (step 5's kernel), -6..-18 (D = 64); prologue -17..-38.
// 3. FA7_EPI: the epilogue's quad transpose in two xor-shuffle stages instead of four index shuffles,
//    each with selects on the runtime lane (step 6: ~40 instructions per 16-byte store); here 4
//    shuffles + 14 selects on two lane bits computed once; O / l by rcp.approx (one MUFU.RCP; step 6's
//    IEEE 1 / l had a slow-path branch). The store map (row r + 8·(quad & 1), block t + quad / 2,
//    16 bytes) and the row < N predicate are step 6's, so rows past N are never written (checked
//    against step 6's map for every lane and block by a Python script written with this step). Per
//    work tile: -258 (D = 128 persistent), -288 (step 5's kernel), -147..-157 (D = 64).
//    Not a TMA store (as hgemm's 08_tma_store_early_fill.cu): at D = 128 shared memory has 2 KB left
//    (Q 32 KB + 3 stages × 64 KB + 1 KB alignment, of 227 KB), and the one 16 KB buffer a consumer
//    could stage O in, its Q slice, is where the next tile's Q loads while the epilogue runs (step 6,
//    2.): holding it through the store would put the next Q's load on consumer 0's path, about a
//    turn per work tile.
// 4. FA7_MASK: the causal / ragged mask as one key limit per row half, lim = min(row, N - 1) - k0 -
//    2·quad (causal) or N - 1 - k0 - 2·quad, then per element a compare with the constant
//    8t + (cc & 1) and a select (step 6 rebuilt key and row and tested both conditions per element).
//    Per masked turn: -59 in every kernel (the mask's 201 instructions -> 142). The same elements are
//    masked as by step 6's test (checked exhaustively over a grid of N, rows, k0 and lanes by the
//    same script).
// Not a switch: a turn's stage, phase and previous stage are computed once at its start (step() in
// the kernel; step 6 wrote (kvb + j) % STAGES at each of four uses, which ptxas merged at D = 128 but
// not in the two-consumer D = 64 kernel): -20 / -34 per turn there, +1..+5 elsewhere.
// Tried and not kept: the K/V stage and phase carried as counters from turn to turn (a compare and
// two selects): ptxas moved the descriptor arithmetic into vector registers (+48 R2UR per turn) and
// spilled 8 B at D = 64.
//
// Predicted before the first GPU run (instruction shares from the model, time from judgement: at N = 1024,
// D = 128 step 6 and cuDNN issue at the same IPC, so about half to two thirds of the issue saved
// should show as time; at D = 64 non-causal step 6 waits rather than issues, so less), time against
// step 6, non-causal / causal:
//   N = 1024:  D = 64  -3..-8% / -5..-10%   (cuDNN: ~0.96-1.01x / ~0.97-1.03x)
//              D = 128 -6..-12% / -7..-13%  (cuDNN: ~0.97-1.04x / ~1.01-1.08x)
//   N = 4096:  D = 64  -2..-5% / -3..-8%;   D = 128 (step 5's kernel) -4..-10% (~1.03-1.11x cuDNN)
//   N = 16384: D = 64  -1..-4%;   D = 128 -3..-8% (nearer the tensor cores' limit there).
// Per switch, the share of step 7's instructions it removes (model; the time share about half):
//   FA7_DESC + FA7_QUNI 9-11% at D = 64, 13-15% at D = 128 N = 1024, 24-26% in step 5's kernel
//   (FA7_QUNI alone 1.4-3.4%, 10% in step 5's kernel); FA7_EPI 4-8.5% at N = 1024, 1-4% at 4096,
//   under 1.2% at 16384; FA7_MASK 1.5-2.4% causal at N = 1024, under 1% elsewhere, 0 non-causal
//   (-0.7% at D = 128: its unmasked turn is 4 instructions longer, a scheduling difference).
// Risks a GPU would settle: whether issue is what limits (if the tensor cores, or the mbarrier and
// named-barrier latencies do, the gain shrinks toward 0, as at D = 64 non-causal); ptxas's schedule
// of the shorter turn (the wait_group 0 of a D = 128 turn still comes right after the mask, before
// the row max, as in step 6, because P is packed into the fragments the running P·V reads); the
// epilogue's 32 shuffles still hiding under the other consumer's last P·V.
//
// ptxas (nvcc 13.0, sm_90a, -O3): 0 B stack, 0 spills, no C75xx in every kernel of every FA7_*
// combination (16) × FA6_PERSISTENT = 0 / 1 / 2, and with FA5_PF2 = 0, FA5_REGS = 0 (also with
// FA6_PERSISTENT = 2), FA5_STAGES = 2, FA5_BR192 = 0, FA5_BR192_CAUSAL = 1; FA5_CVT_OVERLAP = 0
// spills 8 B in <64, 2, true>, as step 6 does with that switch. "Used 168 registers" (128 with three
// consumers); highest register in the SASS: R183 (D = 128, both kernels), R215 (D = 64, two
// consumers; step 6 R220), R151 (three consumers; step 6 R157). HGMMA 32 / 32 / 48 / 24 (<128, 2,
// false>, <128, 2, true>, <64, 2, true>, <64, 3, true>), 136 in the default build, as step 6. Static
// SASS 1944 / 2384 / 3168 / 2104 instructions (step 6: 2896 / 3256 / 4384 / 2776). sm_80: empty
// kernels, as before.
// Written on a machine without a GPU (the predictions above were made there): above this line,
// apart from the Nsight Compute table quoted from README.md, every number is a ptxas or SASS fact, a
// model's output or a prediction. Measured on an NVIDIA H200 (2026-11-28, README.md): correct on all 14
// tests; `judge compare` against step 6 (--budget 1), step 7's time over step 6's,
// non-causal / causal:
//   N = 1024:  D = 64 0.910 / 0.889, D = 128 0.925 / 0.897 (FASTER on all four);
//   N = 4096:  D = 64 1.001 (SAME) / 0.933, D = 128 0.969 / 0.943;
//   N = 16384: D = 64 1.019 (SLOWER) / 1.005 (SAME), D = 128 0.977 / 0.966.
// Against the prediction: at N = 1024 inside it at D = 128 (-7.5% / -10.3%) and a little above it
// at D = 64 (-9.0% / -11.1% for -3..-8% / -5..-10%); at D = 128 from N = 4096 -3.1% / -5.7% (N =
// 4096) and -2.3% / -3.4% (N = 16384), non-causal just under the predicted -4..-10% and -3..-8%; at
// D = 64, N = 4096 causal -6.7% (-3..-8%). The three shapes that did not gain are the ones that run
// the three-consumer kernel, whose turn lost the fewest instructions (470 -> 434): D = 64 non-causal
// at N = 4096 (0, predicted -2..-5%) and at N = 16384 (1.9% slower, predicted 1-4% faster), causal
// at N = 16384 (+0.5%). Why it is not faster there was not measured.
// `judge submit`: 1.786x FA2 (geomean); against cuDNN 1.027 / 1.057 and 0.976 / 1.059 at N = 1024
// (D = 64, D = 128; predicted ~0.96-1.08x), 1.032-1.090 at N = 4096, 1.049-1.135 at N = 16384:
// >= 1.0x on 11 of the 12 shapes, all but D = 128 non-causal at N = 1024. The instruction counts
// were not profiled on the GPU; the per-switch times are in README.md.
//
// ---- Step 6's header, unchanged ----
//
// flash_attn, step 6: step 5 (05_fa3_regs.cu, its header follows below) on a persistent grid with an
// overlapped tile scheduler. The kernel and its Cfg take a template parameter PERSIST: true is the
// persistent kernel (1-5 below), false step 5's (one CTA per (head, query tile), setmaxnreg 24 / 240,
// one Q slice of BR rows). solve picks one at run time, by FA6_PERSISTENT:
//   1 (default): persistent for D = 64, and for D = 128 when N <= FA6_PERSIST_D128_MAX_N (default
//      2048); step 5's kernel (its grid and schedule, no plan uploaded) for D = 128 above that;
//   0: step 5's kernel everywhere; 2: the persistent kernel everywhere.
// A build instantiates only the kernels it can launch (FA6_PERSISTENT = 1: D = 64 persistent only).
// Measured (NVIDIA H200, `judge compare`, 2026-11-28): the persistent kernel at every shape (the
// build before this dispatch, FA6_PERSISTENT = 1 then; FA6_PERSISTENT = 2 now) against step 5;
// ratio = step 6 time / step 5 time, < 1 faster; non-causal / causal:
//   D = 64:  N = 1024 0.933 / 0.876, N = 4096 0.978 / 0.966, N = 16384 1.000 / 0.940;
//   D = 128: N = 1024 0.971 / 0.908, N = 4096 1.051 / 0.999, N = 16384 1.064 / 1.034.
// Hence the rule: the persistent kernel wins or ties at every D = 64 shape and at D = 128 only at
// N = 1024. With the dispatch (FA6_PERSISTENT = 1, the default; `judge compare` against step 5,
// H200, 17:04 UTC): 0.869-0.980 (FASTER) on 7 of the 8 shapes where it runs the persistent kernel,
// 1.000 on the eighth (D = 64 at N = 16384), 1.001-1.005 (SAME) on the 4 that run step 5's; `judge submit`: 1.72x FA2 (geomean), 0.91-0.95x cuDNN at N = 1024,
// 0.99-1.16x at N >= 4096 (README.md).
// Apart from these ratios (and step 5's, quoted from README.md), 1-6 and the predictions below were
// written without a GPU: every number there is a prediction, a model's output or a ptxas fact.
//
// Why. Step 5 against cuDNN (measured, README.md): 0.81-0.87x at N = 1024, 0.97-1.07x at 4096,
// 1.03-1.16x at 16384. At N = 1024 a CTA runs one 128-row query tile over 8 key tiles (4,096 CTAs,
// ~31 per SM), so each CTA's start (mbarrier init, setmaxnreg, Q and the first K/V loads from DRAM)
// and its end (O / l, the stores, the pipeline draining) overlap nothing: ~1 to 1.5 key tiles of
// time in 8 (4.5 causal). Step 4's persistent attempt lost 3-20% with 10 more registers and no
// setmaxnreg; here the registers are there (below), and the schedule is balanced (below).
//
// 1. Grid = min(#SMs, tiles) CTAs (cudaDevAttrMultiProcessorCount, queried once), each walking its
//    list of work tiles (head, query tile). The producer runs ahead across tile boundaries: its
//    K/V stage ring and every mbarrier's phase run on over the CTA's life (stage g % STAGES, use
//    g / STAGES for the g-th K/V load of the CTA), so the next tile's first K/V stages and its Q
//    load while the consumers finish the current tile; a consumer's epilogue (O / l, convert,
//    16-byte stores, unchanged) runs under the other consumer's last P·V and the next tile's loads.
// 2. Q buffers. D = 64: two (2 × 16 KB + 3 stages × 32 KB = 128 KB, or 2 × 24 + 96 = 144 KB with
//    three consumers): the next tile's Q loads while this one runs. D = 128: 2 × 32 KB + 3 × 64 KB =
//    256 KB > 227 KB, and two stages measured -9% to -25% on step 5 (README), so one Q buffer and
//    three stages (225 KB, as step 5). To load the next Q early anyway, every Q buffer is split in
//    per-consumer slices of 64 rows (TMA boxes of 64 rows, an mbarrier pair per slice): consumer c's
//    slice is free once c's own last Q·Kᵀ of the tile is done (a predicated mbarrier arrive after
//    that turn's wait_group 1, no branch among the wgmmas), and the producer loads the next tile's
//    slice c then. Consumer 0, which starts the next tile first, frees its slice first, half a turn
//    before consumer 1: its Q has its own softmax, last P·V and epilogue to arrive in. Order in
//    the producer per tile: K/V tile 0, then Q, then K/V 1, 2, ..: K/V 0's stage frees before Q
//    (the previous tile's key tile n_kv - 3); loading Q after the tile's last K/V instead deadlocks
//    once a tile has more key tiles than stages (the model's negative control, below).
// 3. The ping-pong across tiles. Both (all three) consumers of a CTA have n_kv + 1 issue slots per
//    tile (n_kv is the CTA tile's, not a consumer's: causal rows too), so the named-barrier round
//    robin runs on unbroken: the last consumer's hand-over after its last P·V goes to consumer 0's
//    first slot of the next tile (step 5 dropped it), and only after the CTA's last tile is it left
//    out, so that no arrival is pending at exit. The consumers also give the last K/V stage back
//    (step 5 did not need to).
// 4. The schedule (FA6_PLAN, host, make_plan): tiles in step 5's order (head-major, so a head's K/V
//    stay in L2 while its tiles run; causal query tiles longest first within each head), each to
//    the CTA whose work so far ends first by a cost model (2 per key tile + 1), i.e. what the
//    hardware does with step 5's grid, decided ahead; where the snake (round k = tiles kG .. kG+G-1
//    to the G CTAs, odd rounds reversed) has the shorter modelled makespan it is taken instead. A
//    plain stride (tile = b + kG, the first design) is balanced for non-causal tiles, which all cost
//    the same (and the list schedule is exactly that there), but causal it ends 1.31x later than
//    the ideal at N = 1024 (132 mod 8 = 4: a CTA alternates tiles of 8+4 or 5+1 key tiles), and
//    heaviest-first across all heads (balanced) lost 15-40% on step 4 to L2 misses (README). The
//    plan is made on the CPU at a shape's first call (G + 1 + tiles ints, 17 KB here) and uploaded
//    (cudaMalloc, cudaMemcpyAsync on the legacy stream), cached per shape (64 kept); the kernel
//    reads plan[b] .. plan[b + 1] - 1. No plan (out of memory): one tile per CTA, step 5's order.
// 5. setmaxnreg 32 / 232 (step 5's kernel: 24 / 240) with two consumers: ptxas keeps the code after
//    setmaxnreg.dec within the new count, and the producer's tile walk spilled 4 B (D = 128) and
//    16 B (D = 64) at 24; the consumers use at most R183 (D = 128) and R220 (D = 64) of 232.
// 6. FA6_BR192_CAUSAL_MIN_N (default 8192): three consumers (BR = 192) for causal D = 64 when
//    N >= it (measured on step 5, README: +6% at N = 16384 causal, 0 at 4096, -9% at 1024).
//
// Predicted against step 5 (time), from a makespan model written with this step (Python, not kept: step 5 exposes
// 1 to 1.5 key tiles per work tile, step 6 0.3 to 0.6) and judgement; not measured:
//   N = 1024:  +5% to +12% non-causal, +8% to +15% causal (model: +5..15% / +8..25%) -> about
//              0.91-0.97x cuDNN non-causal, 0.87-0.99x causal: the target (>= 1.0x) likely still
//              missed at N = 1024;
//   N = 4096:  +1% to +4% non-causal, +2% to +6% causal -> ~0.98-1.1x cuDNN;
//   N = 16384: 0 to +1%; D = 64 causal +4% to +8% (three consumers) -> 1.03-1.17x cuDNN.
// The risks (the model cannot see them): the Q load of a D = 128 tile (DRAM) still not hidden under
// consumer 0's last softmax + P·V + epilogue; L2 behaviour of the walk differing from the
// hardware's dispatch; the first call of a shape paying make_plan + cudaMalloc on the host; a
// context with fewer SMs than the device reports (the grid would then run in two waves of whole
// tile lists).
//
// ptxas (nvcc 13.0, sm_90a, -O3): no spills, no C75xx, 0 B stack in every instantiation; "Used 168
// registers" (128 with three consumers) at launch. Persistent (PERSIST true): highest register the
// consumer code uses D = 128 R183, D = 64 two consumers R220 (limit 232), three consumers R157
// (limit 160); producer code at most R29 (limit 32, followed in the SASS from setmaxnreg.dec); HGMMA 32 / 48 / 24, as step 5. Step 5's (PERSIST false): R183 / R215 /
// R152, HGMMA 32 / 48 / 24, as step 5. The default build has four kernels: <64, 2, true>,
// <64, 3, true>, <128, 2, true>, <128, 2, false>, 136 HGMMA; FA6_PERSISTENT = 0 or 2: the three of
// one kind, 104. Each kernel's SASS is the same instruction stream as before the template
// parameter (the FA6_PERSISTENT = 1 / 0 preprocessor builds). sm_80: empty kernels, as step 5.
// Checked without a GPU by a Python model written with this step (not kept in the repository): coverage of every (head, query tile) by the plan for
// ragged N and grids of 1..132 (12 sizes above 2000 tiles), the C++ plan equal to a Python port, and a randomised event
// simulation of producer, consumers and TMA with mbarrier / named-barrier semantics (no deadlock,
// no wgmma reading a buffer that does not hold its tile, no TMA write under a running read, round
// robin issue order over the CTA's life, no arrival left at exit).
//
// ---- Step 5's header, unchanged ----
//
// flash_attn, step 5: step 4 (wgmma for Q·Kᵀ and P·V with P in registers, TMA, a producer warpgroup,
// consumers in ping-pong, the softmax of tile j under P·V of tile j-1, three K/V stages) plus the
// FlashAttention-3 techniques step 4 lacks, each behind a compile-time switch (all on by default;
// `nvcc -DFA5_X=0` builds without one, to measure it on its own). The numbers in 1-5 are the
// predictions written before the kernel first ran; what was measured is at the end of this header
// and, per technique, in README.md.
//
// 1. FA5_REGS: register reallocation. The producer warpgroup gives registers back
//    (`setmaxnreg.dec` to 24) and the two consumers take them (`setmaxnreg.inc` to 240):
//    128 × (24 + 2 × 240) = 64512 of the 65536 (launched at 168, the __launch_bounds__(384, 1)
//    cap). With them D = 128 runs 128-key tiles instead of 64: O (64 floats) + S (64) + P (32) =
//    160 registers of arrays, 184 in all (ptxas), over the 168 a thread has without
//    reallocation (BC = 128 without setmaxnreg: C7512, wgmmas serialised, 208 B spilled). Gain: at
//    BC = 64 the Q·Kᵀ wgmma is m64n64k16 (half the N of FA3's, more shared-memory operand traffic
//    per FLOP), and every per-tile fixed cost (mbarrier wait, named-barrier hand-over, two
//    wait_groups and the pipeline drain behind them, 8 shuffles + 2 exponentials for the row max
//    and alpha, 64 FMULs to rescale O) comes once per 64 keys; per 64 keys of a consumer thread
//    that is ~270 instructions at BC = 64 against ~225 at BC = 128. Shared memory: Q 32 KB + 3
//    stages × (K + V) 64 KB + 1 KB alignment = 225 KB of 227, so the third stage stays.
//    Predicted: +8% to +15% at D = 128 (0.86–0.92× cuDNN in step 4 → ~0.95–1.05× at N >= 4096),
//    no change at D = 64 from the registers alone (it already had 128-key tiles).
// 2. FA5_CVT_OVERLAP: FlashAttention-3's order inside a turn. O is rescaled by alpha_{j-1} after
//    S_j's wgmmas are issued and before P_{j-1}·V_{j-1} is (then a second wgmma.fence): the
//    FMULs run under Q·K_jᵀ on the tensor cores instead of after `wait_group 0`, where step 4
//    did them on the path to the next turn. O belongs to no running wgmma at that point (the
//    last P·V into it ended at the previous turn's wait_group 0), so ptxas keeps the wgmmas
//    asynchronous (no C75xx). Predicted: 0 to +3%, most at D = 128 (64 FMULs per tile).
// 3. FA5_PF2: P of tile j packed to fp16 before `wait_group 0`, into a second fragment set while
//    P_{j-1}·V_{j-1} still reads the first (the loop unrolled by two so that the sets alternate
//    at compile time; an odd last turn packs after wait_group 0). After wait_group 0 a turn has
//    nothing left but the mbarrier arrive. 32 more registers: only at D = 64 with two consumers
//    (D = 128: ptxas C7512 + spills at 240; three consumers at 160: spills), so in the default
//    build it is active at D = 64 where two consumers run (causal, or N < FA5_BR192_MIN_N).
//    Predicted: 0 to +3% at D = 64.
// 4. FA5_LPT: causal query tiles longest first inside each head (blockIdx.x reversed), the simple
//    FA3 order. Step 4 already did this; the switch only lets it be turned off. FA3's L2-grouped
//    LPT scheduler (heads in groups sized to L2, longest tiles of the group first) was tried on
//    step 4 (README: no gain at 4k, -3% to -8% at 1k) and is not repeated. Predicted: 0.
// 5. FA5_BR192 (D = 64, non-causal, N >= FA5_BR192_MIN_N = 2048): three consumers, 192 query rows
//    per CTA, as FA3 does at D = 64: 512 threads, setmaxnreg 32 / 160 (128 × (32 + 3 × 160) =
//    65536), the ping-pong a round robin (consumer c waits on named barrier 1 + c and hands over
//    on 1 + (c + 1) % 3). Each consumer's softmax now has two other consumers' products to hide
//    under instead of one (at D = 64 the softmax of a 64×128 tile is as long as its two
//    products), and K/V are read once per 192 query rows instead of 128. Not at N = 1024: 1024
//    rows in 192-row tiles compute 1152 (+12.5%), and causal 96 consumer tiles for 72 at
//    BR = 128 (the model). Causal only with FA5_BR192_CAUSAL (default off): the wgmmas of a tile run
//    whole even where the mask empties them, and a 192-row diagonal band costs +9% consumer tiles
//    at N = 4096, +2.3% at 16384 over BR = 128. Predicted: 0 to +6% at D = 64, N >= 4096, non-causal.
// Also FA5_STAGES (default 3; 2 to compare).
//
// Unchanged from step 4: TMA boxes of 64 columns × (BR or BC) rows with 128-byte swizzle and the
// wgmma descriptors over them (the D = 128 V descriptor's leading byte offset is now the 16 KB
// box of a 128-key tile), masking (only the diagonal and ragged tiles), the epilogue, the ABI.
// Only sm_90a builds have the kernel (an sm_80 build compiles to empty kernels, O unwritten).
//
// ptxas (nvcc 13.0, sm_90a, all switches on): no spills, no C75xx warnings in any variant built
// (each switch off alone, all off). "Used 168 registers" (128 for three consumers) is the launch
// count; the highest register the consumer code uses: D = 128 R183, D = 64 two consumers (PF2)
// R215, D = 64 three consumers R152. HGMMA: 104 in all (D = 128: 32; D = 64: 48 with PF2's
// unrolled turns, 24 with three consumers). With every switch off: 153 / 157 registers and 48
// HGMMA, as step 4. The judge's build (nvcc 13.0.88, sm_90a): attn_fwd<128, 2> 168 registers at
// launch, 32 HGMMA; attn_fwd<64, 2> 168, 48 HGMMA; attn_fwd<64, 3> 128, 24 HGMMA; 0 B stack.
//
// Measured (NVIDIA H200, driver 580.159.04, torch 2.11.0+cu130, 2026-11-28): `judge submit --json`
// at 15:19 UTC, both baselines timed in the same run, 1.25-2.03x FA2 (geomean 1.66x) and against
// cuDNN 0.82-0.87x at N = 1024, 0.97-1.07x at N = 4096, 1.03-1.16x at N = 16384 (>= 1.0x on 5 of
// the 12 shapes; README.md has each). `judge compare` against step 4 in one run: faster on every
// shape, its time 0.81-0.98x of step 4's. Per technique (scripts/probes/flash_attn_variants.py,
// each switch off alone; that probe's noise is about +-5%): FA5_REGS +8% to +23% at D = 128,
// FA5_BR192 +13% / +15% at D = 64 non-causal, N >= 4096; FA5_CVT_OVERLAP, FA5_PF2 and FA5_LPT 0 to
// +7%, within the probe's noise; two stages instead of three -9% to -25%.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdlib>

// Each technique of step 5 behind its own switch (all on by default; -DFA5_X=0 builds without it).
#ifndef FA5_REGS         // setmaxnreg (producer 24, consumers 240) and 128-key tiles at D = 128
#define FA5_REGS 1
#endif
#ifndef FA5_CVT_OVERLAP  // O rescaled under Q·K_jᵀ, before P·V is issued (FlashAttention-3's order)
#define FA5_CVT_OVERLAP 1
#endif
#ifndef FA5_PF2          // P packed to fp16 into a second fragment set before wait_group 0
#define FA5_PF2 1
#endif
#ifndef FA5_LPT          // causal: longest query tiles of each head first (step 4 already had it)
#define FA5_LPT 1
#endif
#ifndef FA5_BR192        // D = 64: three consumer warpgroups, 192 query rows per CTA (needs FA5_REGS) ...
#define FA5_BR192 1
#endif
#ifndef FA5_BR192_MIN_N  // ... when N >= this (at N = 1024 a 192-row tiling computes 12.5% padding rows)
#define FA5_BR192_MIN_N 2048
#endif
#ifndef FA5_BR192_CAUSAL // ... and for causal too (off: +9% tiles computed at N = 4096, +2% at 16384)
#define FA5_BR192_CAUSAL 0
#endif
#ifndef FA5_STAGES       // K/V stages (3 fit at D = 128 with 128-key tiles: 225 KB of 227)
#define FA5_STAGES 3
#endif
// Step 6's switches.
#ifndef FA6_PERSISTENT   // 1: persistent grid (one CTA per SM walking work tiles) for D = 64 and for
#define FA6_PERSISTENT 1 // D = 128 up to FA6_PERSIST_D128_MAX_N, else step 5's grid; 0: step 5's
#endif                   // everywhere; 2: persistent everywhere
#ifndef FA6_PERSIST_D128_MAX_N  // FA6_PERSISTENT = 1: D = 128 runs the persistent kernel when N <= this
#define FA6_PERSIST_D128_MAX_N 2048
#endif
#ifndef FA6_PLAN         // persistent: which CTA runs which tile (make_plan): 1 list schedule, 0 stride, 2 snake
#define FA6_PLAN 1
#endif
#ifndef FA6_BR192_CAUSAL_MIN_N  // D = 64 causal: three consumers when N >= this (FA5_BR192_CAUSAL: always)
#define FA6_BR192_CAUSAL_MIN_N 8192
#endif

// Step 7's switches (see the header).
#ifndef FA7_DESC         // wgmma descriptors as base + constant (one add per operand)
#define FA7_DESC 1
#endif
#ifndef FA7_EPI          // epilogue: the quad transpose in two xor-shuffle stages, O / l by rcp.approx
#define FA7_EPI 1
#endif
#ifndef FA7_MASK         // masking: a per-row-half key limit, one compare + one select per element
#define FA7_MASK 1
#endif
#ifndef FA7_QUNI         // the Q descriptor base through a lane-0 shuffle, so that ptxas keeps it uniform
#define FA7_QUNI 1
#endif

// Step 8's switches (see the header).
#ifndef FA8_DYN          // 1: the two-consumer persistent kernels claim non-causal work tiles from a global
#define FA8_DYN 1        // counter as they free (causal keeps step 7's plan); 0: step 7's plan everywhere
#endif
#ifndef FA8_TREE         // the claiming D = 128 kernel: each row half's max as a pairwise tree, not a chain
#define FA8_TREE 1
#endif
#ifndef FA8_OWN_FIRST    // 1: each claiming CTA's first tile is its own index, claims start after the grid;
#define FA8_OWN_FIRST 1  // 0: the first tile claimed too (the first form measured; header)
#endif
static_assert(FA8_DYN == 0 || FA8_DYN == 1, "FA8_DYN: 0 or 1");

static_assert(FA6_PERSISTENT >= 0 && FA6_PERSISTENT <= 2, "FA6_PERSISTENT: 0, 1 or 2");

constexpr int STAGES = FA5_STAGES;

// PERSIST_: the persistent kernel (step 6) or step 5's (one CTA per work tile); see FA6_PERSISTENT.
template <int D, int NC_ = 2, bool PERSIST_ = true> struct Cfg {
    static constexpr int NC = NC_;                                       // consumer warpgroups
    static constexpr bool PERSIST = PERSIST_;
    static_assert(NC == 2 || (NC == 3 && D == 64 && FA5_REGS), "three consumers: D = 64, setmaxnreg");
    static constexpr int BR = 64 * NC, THREADS = 128 * (NC + 1);         // query rows, threads per CTA
    // setmaxnreg: 128 × (24 + 2 × 240) = 64512 and 128 × (32 + 3 × 160) = 65536, of 65536. Persistent
    // with two consumers: 32 + 2 × 232 (= 63488): the producer's tile walk spilled at 24 (ptxas keeps
    // the code after setmaxnreg.dec within the new count: 16 bytes at D = 64, 4 at D = 128), and the
    // consumers use at most R220 (D = 64) and R183 (D = 128) of 232.
    static constexpr int PRODUCER_REGS = (NC == 3 || PERSIST) ? 32 : 24;
    static constexpr int CONSUMER_REGS = NC == 3 ? 160 : PRODUCER_REGS == 32 ? 232 : 240;
    static_assert(128 * (PRODUCER_REGS + NC * CONSUMER_REGS) <= 65536, "register file");
    static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0, "setmaxnreg wants multiples of 8");
    static constexpr int BC = (D == 64 || FA5_REGS) ? 128 : 64;  // keys per tile
    static constexpr int BOXES = D / 64;              // 64-column TMA boxes per row
    static constexpr int Q_BYTES = BR * D * 2, KV_BYTES = BC * D * 2;
    static constexpr int Q_BOX = BR * 128, KV_BOX = BC * 128;  // bytes of one 64-column box
    // Q buffers: two (the next tile's Q loads while this tile's runs) where they fit beside the K/V
    // stages: D = 64 (2 × 16 or 24 KB + 96 KB); at D = 128 one (2 × 32 KB + 192 KB > 227 KB): the
    // next Q loads once both consumers' last Q·Kᵀ of the tile is done (mbarrier q_empty).
    static constexpr int QBUF =
        (PERSIST && 2 * Q_BYTES + STAGES * 2 * KV_BYTES + 1024 + 128 <= 232448) ? 2 : 1;
    static constexpr int SMEM = QBUF * Q_BYTES + STAGES * 2 * KV_BYTES + 1024;
    // Persistent: each Q buffer in NC slices of 64 rows, one per consumer, each with its own
    // mbarriers (TMA boxes of 64 rows): consumer c's slice of the next tile loads as soon as c's own
    // last Q·Kᵀ is done, half a turn before the other consumer's, and it is c that starts the next
    // tile first (consumer 0). Step 5 (PERSIST false): one slice of BR rows.
    static constexpr int QSPLIT = PERSIST ? NC : 1, Q_SLICE_ROWS = BR / QSPLIT;
    // A second set of P fragments (BC / 4 = 32 registers) fits only at D = 64 with two consumers of
    // 240 registers: at D = 128 next to O (64) and S (64) ptxas serialises (C7512) and spills, and
    // so it does at D = 64 with three consumers of 160 or without setmaxnreg (168).
    static constexpr bool PF2 = FA5_PF2 && FA5_REGS && D == 64 && NC == 2;
    // 227 KB per block (sharedMemPerBlockOptin) less the static mbarriers (8 × (2 QBUF·QSPLIT + 2 STAGES) bytes)
    static_assert(SMEM + 8 * (2 * QBUF * QSPLIT + 2 * STAGES) <= 232448, "shared memory");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
}
// arrive only where pred holds (predicated, no branch between a consumer's wgmmas and their wait)
__device__ __forceinline__ void mbar_arrive_if(uint64_t* bar, bool pred) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %1, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n"
                 :: "r"(smem_addr(bar)), "r"((int)pred) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    asm volatile(
        "{\n.reg .pred p;\nWAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT_%=;\n}\n" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        :: "r"(smem_addr(dst)), "l"(map), "r"(smem_addr(bar)), "r"(c0), "r"(c1) : "memory");
}
// A wgmma shared-memory descriptor: 128-byte swizzle, byte offsets >> 4.
__device__ __forceinline__ uint64_t make_desc(const void* base, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((smem_addr(base) & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
           (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | (uint64_t)1 << 62;
}
// The same descriptor in two halves: the low word of a box (address and LBO) and the shared high word.
__device__ __forceinline__ uint32_t desc_lo(const void* base, uint32_t lbo) {
    return ((smem_addr(base) & 0x3FFFF) >> 4) | ((lbo & 0x3FFFF) >> 4) << 16;
}
__device__ __forceinline__ uint64_t desc_of(uint32_t lo) {  // SBO 1024 B, 128-byte swizzle
    return (uint64_t)((1024u >> 4) | (1u << 30)) << 32 | lo;
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// wait until at most N committed groups of this warpgroup are still running
template <int N> __device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }
// named barriers 1 .. NC, each over 256 threads: two consumer warpgroups (0 is __syncthreads)
__device__ __forceinline__ void named_sync(int id) { asm volatile("bar.sync %0, 256;" :: "r"(id) : "memory"); }
__device__ __forceinline__ void named_arrive(int id) { asm volatile("bar.arrive %0, 256;" :: "r"(id) : "memory"); }
__device__ __forceinline__ float fast_exp2(float x) {  // one MUFU.EX2; exp2(-inf) = 0
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float fast_rcp(float x) {  // one MUFU.RCP (step 6: IEEE 1 / x, a slow path)
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ uint32_t pack_half2(float a, float b) {
    __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&h);
}

// D[64×64] += A[64×16] · B[16×64]; A and B K-major, from shared memory.
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, 0, 0;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(scale_d));
}

// D[64×128] += A[64×16] · B[16×128]; A and B K-major, from shared memory.
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d));
}

// D[64×64] += A[64×16] · B[16×64]; A (P) from registers, B N-major (imm-trans-b = 1).
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

// D[64×128] += A[64×16] · B[16×128]; A (P) from registers, B N-major (imm-trans-b = 1).
__device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const uint32_t (&a)[4], uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

template <int D>
__device__ __forceinline__ void qk(float (&s)[Cfg<D>::BC / 2], uint64_t dq, uint64_t dk, int accumulate) {
    if constexpr (Cfg<D>::BC == 128) wgmma_ss_n128(s, dq, dk, accumulate); else wgmma_ss_n64(s, dq, dk, accumulate);
}
template <int D>
__device__ __forceinline__ void pv(float (&o)[D / 2], const uint32_t (&p)[4], uint64_t dv) {
    if constexpr (D == 64) wgmma_rs_n64(o, p, dv); else wgmma_rs_n128(o, p, dv);
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// FA8_DYN's counters: the next work tile to claim, and the CTAs that have claimed past the last one
// (the last of them zeroes both, so every launch starts from 0 with no host work). The process's,
// not a launch's: one persistent launch at a time (the judge calls solve() one call at a time).
__device__ unsigned int fa8_next = 0, fa8_done = 0;

// DYN (FA8_DYN): work tiles claimed from fa8_next instead of read from the plan (persistent, two
// consumers, non-causal); without it the kernel is step 7's.
template <int D, int NC_, bool PERSIST, bool DYN = false>
__global__ void __launch_bounds__(Cfg<D, NC_, PERSIST>::THREADS, 1)
attn_fwd(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
         const __grid_constant__ CUtensorMap tv, half* __restrict__ O, int N, int causal, float scale_log2,
         int BH, const int* __restrict__ plan) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using C = Cfg<D, NC_, PERSIST>;
    // claimed tiles in the two-consumer persistent kernels only (the three-consumer one's producer, at
    // 32 registers, spilled 16 bytes with them)
    static_assert(!DYN || (PERSIST && NC_ == 2), "DYN: the two-consumer persistent kernel");
    constexpr int BC = C::BC, BR = C::BR, NC = C::NC, QBUF = C::QBUF;
    extern __shared__ uint8_t smem_raw[];
    constexpr int QSPLIT = C::QSPLIT;
    __shared__ __align__(8) uint64_t q_full[QBUF][QSPLIT], q_empty[QBUF][QSPLIT], full[STAGES], empty[STAGES];
    // FA8_DYN: the producer's claimed tiles, k-th in tile_ring[k % 4] (-1: none left), tile_full[k % 4]
    // completing when it is there. Four slots are enough: the producer writes tile k's only after it
    // has issued tile k - 1's loads, for which every consumer has given back K/V load g_k - 4, so every
    // consumer has started work tile k - 4 (each tile has a key tile) and read its slot.
    __shared__ int tile_ring[4];
    __shared__ __align__(8) uint64_t tile_full[4];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    uint8_t* ks = smem + QBUF * C::Q_BYTES;           // [STAGES][KV_BYTES] after the Q buffers
    uint8_t* vs = ks + STAGES * C::KV_BYTES;          // [STAGES][KV_BYTES]

    const int n_qtiles = (N + BR - 1) / BR;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    // This CTA's k-th work tile -> (head bh, query tile qt); false when it has none left. Producer and
    // consumers walk the same sequence. Persistent: plan[b] .. plan[b + 1] - 1 index CTA b's tiles,
    // each bh·n_qtiles + qt, made on the host (make_plan: step 5's order, each tile to the CTA that
    // frees first). Without a plan (the host could not make one) one tile per CTA, blockIdx.x in
    // step 5's order.
    auto tile_of = [&](int k, int& bh, int& qt) -> bool {
        if constexpr (PERSIST) {
            int t = blockIdx.x;
            if constexpr (DYN) {  // the producer's claim (the consumers' walk; the producer claims in its loop)
                mbar_wait(&tile_full[k & 3], (k >> 2) & 1);
                t = tile_ring[k & 3];
                if (t < 0) return false;
            } else if (plan != nullptr) {
                const int i = __ldg(plan + blockIdx.x) + k;
                if (i >= __ldg(plan + blockIdx.x + 1)) return false;
                t = __ldg(plan + i);
            } else if (k > 0) {
                return false;
            } else if (FA5_LPT && causal) {
                t += n_qtiles - 1 - 2 * (t % n_qtiles);  // longest first within each head
            }
            bh = t / n_qtiles;
            qt = t - bh * n_qtiles;
            return true;
        } else {  // step 5's grid (n_qtiles, BH): one work tile per CTA, plan unused
            bh = blockIdx.y;
            qt = (FA5_LPT && causal) ? n_qtiles - 1 - blockIdx.x : blockIdx.x;  // causal: longest tiles first
            return k == 0;
        }
    };

    if (threadIdx.x == 0) {
        for (int b = 0; b < QBUF; ++b)
            for (int x = 0; x < QSPLIT; ++x) {
                mbar_init(&q_full[b][x], 1);
                mbar_init(&q_empty[b][x], 128 * NC / QSPLIT);
            }
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 128 * NC);
        }
        if constexpr (DYN)
            for (int i = 0; i < 4; ++i) mbar_init(&tile_full[i], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {  // producer
#if FA5_REGS
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(C::PRODUCER_REGS));
#endif
        if (tid == 0) {
            // g: K/V tiles loaded so far over all of this CTA's work tiles (stage g % STAGES, its use
            // g / STAGES): the stage ring and the mbarrier phases run on across work tiles.
            int g = 0, bh, qt;
            // FA8_DYN: tile k + 1 is claimed (one atomicAdd) as tile k's loads start, so its result is
            // back when it is needed; tile k goes into the ring before any of tile k's waits.
            // The claim waits in shared memory, not in a register (the D = 64 producer, at 32
            // registers, spilled 8 bytes with one more live across its loop).
            __shared__ unsigned claimed;
            // FA8_OWN_FIRST: tile blockIdx.x first, then the claims' tiles from gridDim.x on
            constexpr bool own_first = FA8_OWN_FIRST;
            if constexpr (DYN) claimed = own_first ? blockIdx.x : atomicAdd(&fa8_next, 1u);
            auto next_tile = [&](int k, int& bh_, int& qt_) -> bool {
                if constexpr (!DYN) {
                    return tile_of(k, bh_, qt_);
                } else {
                    const unsigned c = *(volatile unsigned*)&claimed;
                    const int t = c < (unsigned)(BH * n_qtiles) ? (int)c : -1;
                    if (t >= 0) claimed = (own_first ? gridDim.x : 0u) + atomicAdd(&fa8_next, 1u);
                    tile_ring[k & 3] = t;
                    mbar_arrive(&tile_full[k & 3]);
                    if (t < 0) return false;
                    bh_ = t / n_qtiles;
                    qt_ = t - bh_ * n_qtiles;
                    return true;
                }
            };
            for (int k = 0; next_tile(k, bh, qt); ++k) {
                const int q0 = qt * BR, row0 = bh * N;                       // row0: the head's first row
                const int n_kv = ((causal ? min(N, q0 + BR) : N) + BC - 1) / BC;
                const int qb = k % QBUF;                                     // Q buffer, its use k / QBUF
                auto load_q = [&]() {
                    for (int x = 0; x < QSPLIT; ++x) {  // slice x: rows q0 + x·Q_SLICE_ROWS, consumer x's
                        // its last reader: the last Q·Kᵀ of work tile k - QBUF of the slice's consumer(s)
                        if (k >= QBUF) mbar_wait(&q_empty[qb][x], ((k / QBUF) - 1) & 1);
                        mbar_expect_tx(&q_full[qb][x], C::Q_BYTES / QSPLIT);
                        // a slice wholly past the head's last row (ragged N) starts at that row instead:
                        // its rows are never stored, and the box then overlaps the tensor (as step 5's
                        // always did) even in the last head
                        const int qrow = min(row0 + q0 + x * C::Q_SLICE_ROWS, row0 + N - 1);
                        for (int b = 0; b < C::BOXES; ++b)
                            tma_load_2d(smem + qb * C::Q_BYTES + b * C::Q_BOX + x * C::Q_SLICE_ROWS * 128, &tq,
                                        &q_full[qb][x], 64 * b, qrow);
                    }
                };
                if constexpr (!PERSIST) load_q();
                for (int j = 0; j < n_kv; ++j, ++g) {
                    const int s = g % STAGES;
                    if (g >= STAGES) mbar_wait(&empty[s], ((g / STAGES) - 1) & 1);
                    mbar_expect_tx(&full[s], 2 * C::KV_BYTES);
                    for (int b = 0; b < C::BOXES; ++b) {
                        tma_load_2d(ks + s * C::KV_BYTES + b * C::KV_BOX, &tk, &full[s], 64 * b, row0 + j * BC);
                        tma_load_2d(vs + s * C::KV_BYTES + b * C::KV_BOX, &tv, &full[s], 64 * b, row0 + j * BC);
                    }
                    // persistent: Q after the first K/V tile, whose stage frees (the previous work
                    // tile's P·V of key tile n_kv - 3) before a single Q buffer does (its last Q·Kᵀ)
                    if constexpr (PERSIST) {
                        if (j == 0) load_q();
                    }
                }
            }
            // every claim of this CTA is back (the last past the end): the last CTA here zeroes the counters
            if constexpr (DYN) {
                if (atomicAdd(&fa8_done, 1u) == gridDim.x - 1) {
                    fa8_next = 0;
                    fa8_done = 0;
                }
            }
        }
        return;
    }

#if FA5_REGS
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(C::CONSUMER_REGS));
#endif
    // consumer: rows q0 + wrow + [0, 64) of each work tile; this thread: rows r and r + 8 of its warp's 16
    const int warp = tid / 32, lane = tid % 32, quad = lane % 4;
    const int c = wg - 1, wrow = c * 64;
    // Ping-pong: consumer c may issue its wgmmas only after the other one has issued its own
    // (named barrier 1 + c, 256 threads: 128 wait, the other warpgroup's 128 arrive), so one
    // warpgroup's softmax runs while the other's products occupy the tensor cores.
    // Round robin for NC = 3: consumer c waits on barrier 1 + c and hands over on 1 + (c + 1) % NC.
    // Every consumer of a CTA has the same n_kv + 1 issue slots per work tile (n_kv is the CTA's), so
    // the round robin runs on unbroken across work tiles: the last consumer's final hand-over of a
    // tile goes to consumer 0's first slot of the next one, and is left out only after the CTA's last.
    const int next_bar = 1 + (c + 1) % NC;
    if (c == NC - 1) named_arrive(1);  // consumer 0 goes first
    float o[D / 2], s_acc[BC / 2], m[2], l[2], alpha[2];
    uint32_t pfa[BC / 16][4], pfb[BC / 16][4];  // pfb: only with PF2
#if FA7_DESC
    // low descriptor words of this consumer's Q slice in Q buffer 0, of K and of V in stage 0
    const uint32_t q_lo0 = FA7_QUNI ? __shfl_sync(0xffffffffu, desc_lo(smem + wrow * 128, 16), 0) : desc_lo(smem + wrow * 128, 16);
    const uint32_t k_lo0 = desc_lo(ks, 16), v_lo0 = desc_lo(vs, C::KV_BOX);
#endif
    int st_cur = 0, st_prev = 0;  // see step()
    uint32_t ph_cur = 0;
    int kvb = 0;  // K/V tiles of the previous work tiles: key tile j of this one is K/V load kvb + j
    int bh, qt;
    for (int k = 0; tile_of(k, bh, qt); ++k) {
    const int q0 = qt * BR, row0 = bh * N;                   // row0: the head's first row
    const int n_kv = ((causal ? min(N, q0 + BR) : N) + BC - 1) / BC;
    const int r = q0 + wrow + warp * 16 + lane / 4;
    const int qb = k % QBUF, qx = QSPLIT == 1 ? 0 : c;  // Q buffer and this consumer's slice of it
    const uint8_t* qs = smem + qb * C::Q_BYTES;
#if FA7_DESC
    const uint32_t q_lo = q_lo0 + (uint32_t)qb * (C::Q_BYTES >> 4);
#endif
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.f;
    mbar_wait(&q_full[qb][qx], (k / QBUF) & 1);

    // softmax of tile j in s_acc: mask, running max and sum, P = exp2(...) in place; alpha rescales O
    auto softmax = [&](int j) {
        const int k0 = j * BC;
        if (k0 + BC > N || (causal && k0 + BC > q0 + wrow)) {
#if FA7_MASK
            // key = k0 + 2·quad + 8t + (cc & 1) is masked iff key > min(row, N - 1) (causal) or key > N - 1:
            // one limit per row half, then a compare with a constant and a select per element
            // (step 6 recomputed key and row and tested both conditions per element)
            int lim[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) lim[h] = (causal ? min(r + 8 * h, N - 1) : N - 1) - (k0 + 2 * quad);
#pragma unroll
            for (int t = 0; t < BC / 8; ++t)
#pragma unroll
                for (int cc = 0; cc < 4; ++cc)
                    if (8 * t + (cc & 1) > lim[cc >> 1]) s_acc[4 * t + cc] = -INFINITY;
#else
#pragma unroll
            for (int t = 0; t < BC / 8; ++t)
#pragma unroll
                for (int cc = 0; cc < 4; ++cc) {
                    const int key = k0 + 8 * t + 2 * quad + (cc & 1), row = r + 8 * (cc >> 1);
                    if (key >= N || (causal && key > row)) s_acc[4 * t + cc] = -INFINITY;
                }
#endif
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx;
            if constexpr (FA8_TREE && D == 128 && DYN) {
                // FA8_TREE: the row half's 32 values in 5 levels of independent pairs (no start at
                // -inf: 31 FMNMX, depth 5; the chain below is 32 deep). Fixed-count loops only, so
                // that v stays in registers.
                static_assert(BC / 4 == 32, "the tree's 5 levels take 32 values");
                float v[BC / 4];
#pragma unroll
                for (int t = 0; t < BC / 8; ++t) {
                    v[2 * t] = s_acc[4 * t + 2 * h];
                    v[2 * t + 1] = s_acc[4 * t + 2 * h + 1];
                }
#pragma unroll
                for (int lv = 0; lv < 5; ++lv)
#pragma unroll
                    for (int i = 0; i < BC / 8; ++i)
                        if (i < ((BC / 8) >> lv)) v[i] = fmaxf(v[i], v[i + ((BC / 8) >> lv)]);
                mx = v[0];
            } else {
                mx = -INFINITY;
#pragma unroll
                for (int t = 0; t < BC / 8; ++t) mx = fmaxf(mx, fmaxf(s_acc[4 * t + 2 * h], s_acc[4 * t + 2 * h + 1]));
            }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[h], mx * scale_log2);
            const float m_use = m_new == -INFINITY ? 0.f : m_new;
            alpha[h] = fast_exp2(m[h] - m_use);
            m[h] = m_new;
            float sum = 0.f;
#pragma unroll
            for (int t = 0; t < BC / 8; ++t)
#pragma unroll
                for (int cc = 0; cc < 2; ++cc) {
                    const float p = fast_exp2(s_acc[4 * t + 2 * h + cc] * scale_log2 - m_use);
                    s_acc[4 * t + 2 * h + cc] = p;
                    sum += p;
                }
            l[h] = l[h] * alpha[h] + sum;
        }
    };
    // O *= alpha (the alpha of the last softmax). Only while no wgmma that accumulates into O runs.
    auto rescale_o = [&]() {
#pragma unroll
        for (int t = 0; t < D / 8; ++t) {
#pragma unroll
            for (int i = 0; i < 4; ++i) o[4 * t + i] *= alpha[i / 2];
        }
    };
    // P (in s_acc) into the A fragments f. Only while no wgmma that reads f runs.
    auto pack = [&](uint32_t (&f)[BC / 16][4]) {
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
#pragma unroll
            for (int i = 0; i < 4; ++i) f[kk][i] = pack_half2(s_acc[8 * kk + 2 * i], s_acc[8 * kk + 2 * i + 1]);
    };
#if FA7_DESC
    // Descriptors as a base + constant: the high word (SBO 1024 B, 128-byte swizzle) is the same for
    // all of them, and the low word (start address >> 4 in bits 0-13, LBO >> 4 in bits 16-29) of a
    // box at a known byte offset from a base is the base's low word + offset >> 4 (no carry out of
    // the 14-bit address field: every address is below 228 KB). One 32-bit add per wgmma operand
    // instead of step 6's per-wgmma (addr & 0x3FFFF) >> 4 | ... recomputation.
    auto issue_qk = [&](int s) {  // s: the K/V stage
        const uint32_t k_lo = k_lo0 + (uint32_t)s * (C::KV_BYTES >> 4);
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
            qk<D>(s_acc, desc_of(q_lo + (kk / 4) * (C::Q_BOX >> 4) + (kk % 4) * 2),
                  desc_of(k_lo + (kk / 4) * (C::KV_BOX >> 4) + (kk % 4) * 2), kk > 0);  // kk = 0 overwrites S
    };
    auto issue_pv = [&](int s, const uint32_t (&f)[BC / 16][4]) {
        const uint32_t v_lo = v_lo0 + (uint32_t)s * (C::KV_BYTES >> 4);
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) pv<D>(o, f[kk], desc_of(v_lo + kk * (16 * 128 >> 4)));
    };
#else
    auto issue_qk = [&](int s) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const uint8_t* q = qs + (kk / 4) * C::Q_BOX + wrow * 128 + (kk % 4) * 32;
            const uint8_t* kp = ks + s * C::KV_BYTES + (kk / 4) * C::KV_BOX + (kk % 4) * 32;
            qk<D>(s_acc, make_desc(q, 16, 1024), make_desc(kp, 16, 1024), kk > 0);  // kk = 0 overwrites S
        }
    };
    auto issue_pv = [&](int s, const uint32_t (&f)[BC / 16][4]) {
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
            pv<D>(o, f[kk], make_desc(vs + s * C::KV_BYTES + kk * 16 * 128, C::KV_BOX, 1024));
    };
#endif
    // Stage and phase of key tile j (st_cur, ph_cur) and the stage of j - 1 (st_prev), at the start of
    // tile j's turn (step 6's expressions, computed once per turn). Carrying them as counters from turn
    // to turn instead (a compare and two selects) was tried: ptxas moved the whole descriptor
    // arithmetic into vector registers (+48 R2UR per turn) and spilled 8 B at D = 64, so not kept.
    auto step = [&](int j) {
        st_prev = (kvb + j - 1) % STAGES;  // j = 0: unused
        st_cur = (kvb + j) % STAGES;
        ph_cur = ((kvb + j) / STAGES) & 1;
    };
    // One turn, tile j (1 <= j < n_kv): issue S_j, then P_{j-1}·V_{j-1} from fin; the softmax of
    // S_j runs while P·V does; P_j ends in fout. EARLY (a constant at each call) packs P_j into fout before
    // wait_group 0, under P_{j-1}·V_{j-1}: only with two fragment sets (fout != fin).
    auto turn = [&](bool early, int j, const uint32_t (&fin)[BC / 16][4], uint32_t (&fout)[BC / 16][4]) {
        step(j);
        mbar_wait(&full[st_cur], ph_cur);
        named_sync(1 + c);
        wgmma_fence();
        issue_qk(st_cur);
        wgmma_commit();
#if FA5_CVT_OVERLAP
        rescale_o();       // alpha_{j-1}, under S_j's wgmmas: O belongs to no running wgmma
        wgmma_fence();     // O was written: order it before the P·V wgmmas that accumulate into it
#endif
        issue_pv(st_prev, fin);
        wgmma_commit();
        named_arrive(next_bar);
        wgmma_wait<1>();   // S_j is ready
        if constexpr (PERSIST)
            mbar_arrive_if(&q_empty[qb][qx], j == n_kv - 1);  // the tile's last Q·Kᵀ is done: its Q slice is free
        softmax(j);
        if (early) pack(fout);  // not the set P_{j-1}·V_{j-1} reads
        wgmma_wait<0>();   // P_{j-1}·V_{j-1} too: its stage is free, O and fin may change
        mbar_arrive(&empty[st_prev]);
#if !FA5_CVT_OVERLAP
        rescale_o();
#endif
        if (!early) pack(fout);
    };

    // tile 0: S only
    step(0);
    mbar_wait(&full[st_cur], ph_cur);
    named_sync(1 + c);
    wgmma_fence();
    issue_qk(st_cur);
    wgmma_commit();
    named_arrive(next_bar);
    wgmma_wait<0>();
    if constexpr (PERSIST) mbar_arrive_if(&q_empty[qb][qx], n_kv == 1);
    softmax(0);
#if !FA5_CVT_OVERLAP
    rescale_o();           // O = 0: kept only to stay step 4 when the switch is off
#endif
    pack(pfa);
    // tiles 1 .. n_kv-1
    if constexpr (C::PF2) {
        // unrolled by two so that the fragment sets alternate at compile time (registers can't be
        // indexed); P of the last tile always ends in pfa, so the last P·V has one form
        int j = 1;
        for (; j + 1 < n_kv; j += 2) {
            turn(true, j, pfa, pfb);
            turn(true, j + 1, pfb, pfa);
        }
        // once, when an odd number of turns is left: packed after wait_group 0, as without PF2
        // (copying pfb into pfa here instead made ptxas serialise the wgmmas, C7513)
        for (; j < n_kv; ++j) turn(false, j, pfa, pfa);
    } else {
        for (int j = 1; j < n_kv; ++j) turn(false, j, pfa, pfa);
    }
    // the last P·V
#if FA5_CVT_OVERLAP
    rescale_o();
#endif
    named_sync(1 + c);
    wgmma_fence();
    issue_pv(st_cur, pfa);  // stage of key tile n_kv - 1
    wgmma_commit();
    {
        // the next consumer has one more slot (this work tile's, or for the last consumer the next
        // work tile's first); after the CTA's last tile the last consumer's hand-over has no taker
        int bh2, qt2;
        if (c != NC - 1 || tile_of(k + 1, bh2, qt2)) named_arrive(next_bar);
    }
    wgmma_wait<0>();
    if constexpr (PERSIST)
        mbar_arrive(&empty[st_cur]);  // the last stage goes back to the producer too
    kvb += n_kv;

#if FA7_EPI
    // epilogue: O / l, 16-byte stores, the quad's 4 × 4 words transposed in two butterfly stages
    // (step 6 had 4 index shuffles per store, each with its send and receive selects on the runtime
    // lane: ~40 instructions per store, ~290 per work tile at D = 128). Thread (quad q, e = q & 1,
    // f = q >> 1) holds W[u][h]: block t + u, row r + 8h, columns 2q, 2q + 1. Stage A (xor 1, per
    // block u): keep row half e, send the other; then the thread has row r + 8e, columns 4f .. 4f + 3
    // of both blocks. Stage B (xor 2): the f = 0 thread keeps block t and gets columns 4 .. 7 of it,
    // the f = 1 thread block t + 1 and columns 0 .. 3. Per store: 4 shuffles and 14 selects on the
    // two lane bits (computed once). The store map is step 6's: row r + 8e, block t + f.
    const bool e1 = (quad & 1) != 0, f1 = (quad & 2) != 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        l[h] = l[h] > 0.f ? fast_rcp(l[h]) : 0.f;  // l >= 1 on every row that has a key
    }
    {
        const int row = r + 8 * (quad & 1);
        half* orow = O + ((size_t)row0 + row) * D + (quad >> 1) * 8;
#pragma unroll
        for (int t = 0; t < D / 8; t += 2) {
            uint32_t x[2][2];  // after stage A: block t + u, columns 4f + 2i, + 1 of row r + 8e
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                const int i = 4 * (t + u);
                const uint32_t w0 = pack_half2(o[i] * l[0], o[i + 1] * l[0]);      // row r
                const uint32_t w1 = pack_half2(o[i + 2] * l[1], o[i + 3] * l[1]);  // row r + 8
                const uint32_t got = __shfl_xor_sync(0xffffffffu, e1 ? w0 : w1, 1);
                x[u][0] = e1 ? got : w0;
                x[u][1] = e1 ? w1 : got;
            }
            const uint32_t g0 = __shfl_xor_sync(0xffffffffu, f1 ? x[0][0] : x[1][0], 2);
            const uint32_t g1 = __shfl_xor_sync(0xffffffffu, f1 ? x[0][1] : x[1][1], 2);
            const uint4 v = f1 ? make_uint4(g0, g1, x[1][0], x[1][1]) : make_uint4(x[0][0], x[0][1], g0, g1);
            if (row < N) *reinterpret_cast<uint4*>(orow + t * 8) = v;
        }
    }
#else
    // epilogue: O / l, 16-byte stores (a quad gathers the 8 columns its 4 lanes hold). Persistent:
    // it runs while the other consumer's last P·V does and the producer loads the next tile.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        l[h] = l[h] > 0.f ? 1.f / l[h] : 0.f;
    }
#pragma unroll
    for (int t = 0; t < D / 8; t += 2) {
        uint32_t mine[4];  // index v: block t + v / 2, row r + 8 (v % 2)
#pragma unroll
        for (int v = 0; v < 4; ++v) {
            const int i = 4 * (t + v / 2) + 2 * (v % 2);
            mine[v] = pack_half2(o[i] * l[v % 2], o[i + 1] * l[v % 2]);
        }
        uint32_t got[4] = {0, 0, 0, 0};
#pragma unroll
        for (int kq = 0; kq < 4; ++kq) {
            const int p = quad ^ kq;
            const uint32_t send = p == 0 ? mine[0] : p == 1 ? mine[1] : p == 2 ? mine[2] : mine[3];
            const uint32_t v = __shfl_sync(0xffffffffu, send, (lane & ~3) | p);
#pragma unroll
            for (int i = 0; i < 4; ++i) got[i] = p == i ? v : got[i];
        }
        const int row = r + 8 * (quad % 2), col = (t + quad / 2) * 8;
        if (row < N)
            *reinterpret_cast<uint4*>(O + ((size_t)row0 + row) * D + col) = make_uint4(got[0], got[1], got[2], got[3]);
    }
#endif  // FA7_EPI
    }  // work tiles
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

static PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (!fn) {
        cudaDriverEntryPointQueryResult q;
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&fn), 12000,
                                         cudaEnableDefault, &q);
    }
    return fn;
}

// [rows × cols] row-major fp16, boxes of box_rows × 64 columns, 128-byte swizzle.
static bool make_map(CUtensorMap* map, const half* base, long long rows, int cols, int box_rows) {
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)cols * sizeof(half)};
    const cuuint32_t box[2] = {64, (cuuint32_t)box_rows};
    const cuuint32_t elem_strides[2] = {1, 1};
    auto fn = encode_tiled();
    return fn && fn(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<half*>(base), dims, strides, box, elem_strides,
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

#if FA6_PERSISTENT  // 1 or 2: the persistent kernel is built; its host side
// SMs of the current device, queried once: the persistent grid's size
static int sm_count() {
    static int n = 0;
    if (n <= 0) {
        int dev = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) n = 132;
    }
    return n;
}

// The plan: which of the G CTAs runs which tile, and in which order. Tiles in step 5's order
// (head-major, so that a head's K/V stay in L2 while its tiles run; causal query tiles longest first
// within each head). FA6_PLAN = 1: each tile to the CTA whose work so far ends first (list
// scheduling, what the hardware does with step 5's grid), by cost = 2 · key tiles + 1 (a key tile
// is 2; the extra half is the per-tile cost the overlap does not hide, a guess), ties to the lower
// CTA: non-causal tiles all cost the same, so that is a plain stride. FA6_PLAN = 0: a plain stride
// (t % G), causal too; 2: a snake (round k = tiles kG .. kG+G-1, odd rounds reversed, which pairs a
// long causal tile with a short one). FA6_PLAN = 1 takes the snake instead of the list schedule
// where the cost model gives it the shorter makespan (e.g. B = 3, H = 7, N = 3000 causal: -19%). By
// the cost model, causal: the stride is 1.31x the ideal makespan at
// N = 1024; the snake alone 1.23x the list schedule at N = 16384, D = 64 (BR = 192). Returns malloc'ed ints: G + 1 offsets (absolute), then each
// CTA's tiles (bh · n_qtiles + qt) in order; nullptr if out of memory.
static int* make_plan(int BH, int N, int BR, int BC, int causal, int G, int* n_ints) {
    const int nq = (N + BR - 1) / BR;
    const long long total = (long long)BH * nq;
    int* out = (int*)malloc(sizeof(int) * (G + 1 + total));
    int* owner = (int*)malloc(sizeof(int) * total);
    int* count = (int*)calloc(G, sizeof(int));
    long long* heap_t = (long long*)malloc(sizeof(long long) * G);
    int* heap_c = (int*)malloc(sizeof(int) * G);
    if (!out || !owner || !count || !heap_t || !heap_c) {
        free(out); free(owner); free(count); free(heap_t); free(heap_c);
        return nullptr;
    }
    auto tile_qt = [&](long long t) { const int rr = (int)(t % nq); return (FA5_LPT && causal) ? nq - 1 - rr : rr; };
    auto cost = [&](long long t) {
        const int qt = tile_qt(t), kv_end = (causal && (qt + 1) * BR < N) ? (qt + 1) * BR : N;
        return 2LL * ((kv_end + BC - 1) / BC) + 1;
    };
    auto snake = [&](long long t) { const int i = (int)(t % G); return (t / G) & 1 ? G - 1 - i : i; };
    for (int i = 0; i < G; ++i) { heap_t[i] = 0; heap_c[i] = i; }  // a valid min-heap: all 0, by index
    auto less = [&](int a, int b) { return heap_t[a] < heap_t[b] || (heap_t[a] == heap_t[b] && heap_c[a] < heap_c[b]); };
    for (long long t = 0; t < total; ++t) {
        if (FA6_PLAN == 0) { owner[t] = (int)(t % G); continue; }
        if (FA6_PLAN == 2) { owner[t] = snake(t); continue; }
        owner[t] = heap_c[0];
        heap_t[0] += cost(t);
        for (int i = 0;;) {  // sift down
            const int l = 2 * i + 1, r = l + 1;
            int m = i;
            if (l < G && less(l, m)) m = l;
            if (r < G && less(r, m)) m = r;
            if (m == i) break;
            const long long tt = heap_t[i]; heap_t[i] = heap_t[m]; heap_t[m] = tt;
            const int cc = heap_c[i]; heap_c[i] = heap_c[m]; heap_c[m] = cc;
            i = m;
        }
    }
    if (FA6_PLAN == 1) {  // the snake instead where the cost model says it ends sooner (heap_t: loads)
        long long list_end = 0, snake_end = 0;
        for (int i = 0; i < G; ++i) list_end = heap_t[i] > list_end ? heap_t[i] : list_end;
        for (int i = 0; i < G; ++i) heap_t[i] = 0;
        for (long long t = 0; t < total; ++t) heap_t[snake(t)] += cost(t);
        for (int i = 0; i < G; ++i) snake_end = heap_t[i] > snake_end ? heap_t[i] : snake_end;
        if (snake_end < list_end)
            for (long long t = 0; t < total; ++t) owner[t] = snake(t);
    }
    for (long long t = 0; t < total; ++t) ++count[owner[t]];
    out[0] = G + 1;
    for (int b = 0; b < G; ++b) out[b + 1] = out[b] + count[b];
    for (int b = 0; b < G; ++b) count[b] = out[b];  // fill cursors
    for (long long t = 0; t < total; ++t) out[count[owner[t]]++] = (int)((t / nq) * nq + tile_qt(t));
    *n_ints = (int)(G + 1 + total);
    free(owner); free(count); free(heap_t); free(heap_c);
    return out;
}

// The plan in device memory, made and uploaded once per shape (a shape's first call pays for it:
// make_plan on the CPU, a cudaMalloc and a cudaMemcpyAsync of (G + 1 + tiles) ints, 17 KB for the
// benchmark shapes); 64 shapes are kept, then the oldest is replaced (its cudaFree waits for the GPU).
static const int* device_plan(int D, int BH, int N, int BR, int BC, int causal, int G) {
    struct Entry { int D, BH, N, BR, causal, G; int* dev; };
    constexpr int CACHE = 64;
    static Entry cache[CACHE];
    static int used = 0, oldest = 0;
    for (int i = 0; i < used; ++i) {
        const Entry& e = cache[i];
        if (e.D == D && e.BH == BH && e.N == N && e.BR == BR && e.causal == causal && e.G == G) return e.dev;
    }
    int n = 0;
    int* host = make_plan(BH, N, BR, BC, causal, G, &n);
    if (!host) return nullptr;
    int* dev = nullptr;
    if (cudaMalloc(&dev, sizeof(int) * (size_t)n) != cudaSuccess) { free(host); return nullptr; }
    // on the launch's stream (the legacy default), before the kernel; from pageable memory the call
    // returns once the data is staged, without waiting for the device (a timed call's gate holds it)
    if (cudaMemcpyAsync(dev, host, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice, 0) != cudaSuccess) {
        free(host); return nullptr;  // dev stays allocated but unused: freeing it here would wait for the device
    }
    free(host);
    int slot;
    if (used < CACHE) {
        slot = used++;
    } else {
        slot = oldest;
        oldest = (oldest + 1) % CACHE;
        cudaFree(cache[slot].dev);
    }
    cache[slot] = {D, BH, N, BR, causal, G, dev};
    return dev;
}
#endif  // FA6_PERSISTENT

// A kernel's dynamic shared memory allowed once per process (per instantiation).
template <int D, int NC, bool PERSIST, bool DYN>
static void configure() {
    static bool configured = false;
    if (!configured) {
        cudaFuncSetAttribute(attn_fwd<D, NC, PERSIST, DYN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             Cfg<D, NC, PERSIST>::SMEM);
        configured = true;
    }
}

template <int D, int NC, bool PERSIST>
static void launch(const half* Q, const half* K, const half* V, half* O, int BH, int N, int causal) {
    using C = Cfg<D, NC, PERSIST>;
    CUtensorMap mq, mk, mv;
    const long long rows = (long long)BH * N;
    if (!make_map(&mq, Q, rows, D, C::Q_SLICE_ROWS) || !make_map(&mk, K, rows, D, C::BC) || !make_map(&mv, V, rows, D, C::BC))
        return;
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)D);
    const int n_qtiles = (N + C::BR - 1) / C::BR;
    const int* plan = nullptr;
    dim3 grid(n_qtiles, BH);  // step 5: one CTA per (query tile, head)
#if FA6_PERSISTENT  // sm_count and device_plan exist only where the persistent kernel is built
    if constexpr (PERSIST) {
        const long long tiles = (long long)n_qtiles * BH;  // one CTA per SM, each walks its work tiles
        grid = dim3((unsigned)(tiles < sm_count() ? tiles : sm_count()));
        if constexpr (FA8_DYN && NC == 2) {
            if (!causal) {  // claimed tiles: no plan
                configure<D, NC, true, true>();
                attn_fwd<D, NC, true, true><<<grid, C::THREADS, C::SMEM>>>(mq, mk, mv, O, N, causal, scale_log2, BH, plan);
                return;
            }
        }
        plan = device_plan(D, BH, N, C::BR, C::BC, causal, (int)grid.x);
        if (plan == nullptr) grid = dim3((unsigned)tiles);  // no plan: one tile per CTA, as step 5
    }
#endif
    configure<D, NC, PERSIST, false>();
    attn_fwd<D, NC, PERSIST><<<grid, C::THREADS, C::SMEM>>>(mq, mk, mv, O, N, causal, scale_log2, BH, plan);
}

// Persistent or step 5's kernel. FA6_PERSISTENT = 1: persistent at D = 64 (it measured 0.88-1.00x
// of step 5's time at N = 1024..16384), and at D = 128 for N <= FA6_PERSIST_D128_MAX_N (0.91-0.97x
// at N = 1024; 1.00-1.06x at N >= 4096); the other values force one kernel everywhere. Only the
// kernels a build can launch are instantiated: D = 64 has no step 5 kernel at FA6_PERSISTENT = 1.
template <int D, int NC>
static void launch_any(const half* Q, const half* K, const half* V, half* O, int BH, int N, int causal) {
    if constexpr (FA6_PERSISTENT == 0) {
        launch<D, NC, false>(Q, K, V, O, BH, N, causal);
    } else if constexpr (FA6_PERSISTENT == 2 || D == 64) {
        launch<D, NC, true>(Q, K, V, O, BH, N, causal);
    } else {
        if (N <= FA6_PERSIST_D128_MAX_N) launch<D, NC, true>(Q, K, V, O, BH, N, causal);
        else launch<D, NC, false>(Q, K, V, O, BH, N, causal);
    }
}

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int D,
                      int causal) {
    if (B <= 0 || H <= 0 || N <= 0) return;
    if (D == 64) {
        if constexpr (FA5_BR192 && FA5_REGS) {  // three consumers need setmaxnreg (160 registers each)
            if (N >= FA5_BR192_MIN_N && (FA5_BR192_CAUSAL || !causal || N >= FA6_BR192_CAUSAL_MIN_N))
                return launch_any<64, 3>(Q, K, V, O, B * H, N, causal);
        }
        launch_any<64, 2>(Q, K, V, O, B * H, N, causal);
    } else {
        launch_any<128, 2>(Q, K, V, O, B * H, N, causal);
    }
}
