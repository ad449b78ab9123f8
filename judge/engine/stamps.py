"""The worker's reported times against GPU timestamps (docs/security.md, class 3).

The worker reports each timed call's time from its own events: a claim, since the candidate's
code shares its process. Around each call it also has the GPU write %globaltimer into the call's
record in the parent's buffer (judge/worker/protocol.py: [CHECK_START] just before the start event,
[CHECK_END] just after the end event, both on the default stream), and the parent stamps the same
clock itself, in its own context, before it sends the request and after the reply
(judge/gpu/witness.py). `check` then requires, per batch:

- order: parent's stamp <= start_0 <= end_0 <= start_1 <= ... <= end_k-1 <= parent's stamp;
- each reported time fits between its call's stamps (the events lie between them):
  reported_i <= (end_i - start_i) * (1 + CLOCK_REL) + EPS_MS;
- the reported times cover the stamps but for the launch gaps the stamps include:
  Σ reported >= Σ (end_i - start_i) * (1 - SLACK_REL) - k * SLACK_MS.

A worker that reports less than its calls took must also forge the stamps, in order and inside
the parent's. The stamps live in memory the candidate's process maps, so code that finds them can
(docs/security.md says what stays open).
"""
from __future__ import annotations

# The tolerances. Measured on an H100 (2026-11-24): %globaltimer ticks every ~8.5-10.8 us there
# (judge/gpu/witness.py's estimate), and an honest call's stamps exceed its events by 27-45 us
# (a 4096^2 matmul in tests/test_gpu.py: 27-39 us; hgemm 06's warm-up at 2048^3: 45 us), more
# than the stamp kernels' own launches explain; not yet understood. BenchResult.stamp_excess_ms
# records, per shape, the largest per-batch (Σ stamps - Σ reported) / k, to keep measuring it.
SLACK_REL = 0.10  # r: the stamps may exceed the reported total by this fraction ...
SLACK_MS = 0.100  # a: ... plus this per call (over 2x the largest excess measured above)
EPS_MS = 0.005  # a reported time may exceed its stamps by this (timer resolutions: events ~0.5 us,
#                 %globaltimer 1 us or coarser on some parts) ...
CLOCK_REL = 1e-3  # ... and by this fraction (the event timer and %globaltimer are separate clocks)


class Disagreement(Exception):
    """Reported times that the GPU's stamps contradict (the message says how)."""


def check(before_ns: int, after_ns: int, stamps: list[tuple[int, int]], times_ms: list[float],
          tick_ns: int = 0) -> float:
    """Raises Disagreement unless the batch's stamps and reported times agree (see the module);
    returns the batch's mean excess of the stamps over the reported times, in ms per call. A
    timer coarser than the tolerances (`tick_ns`, judge/gpu/witness.py) widens them to 2 ticks."""
    eps_ms, slack_ms = max(EPS_MS, 2 * tick_ns / 1e6), max(SLACK_MS, 2 * tick_ns / 1e6)
    k = len(times_ms)
    assert len(stamps) == k and k > 0
    previous, what = before_ns, "the judge's stamp before the request"
    for i, (start, end) in enumerate(stamps):
        if start < previous:
            raise Disagreement(f"call {i}'s start stamp ({start} ns) is before {what} ({previous} ns)")
        if end < start:
            raise Disagreement(f"call {i}'s end stamp ({end} ns) is before its start stamp ({start} ns)")
        previous, what = end, f"call {i}'s end stamp"
    if after_ns < previous:
        raise Disagreement(f"{what} ({previous} ns) is after the judge's stamp after the reply ({after_ns} ns)")
    spans = [(end - start) / 1e6 for start, end in stamps]
    for i, (t, span) in enumerate(zip(times_ms, spans)):
        if t > span * (1 + CLOCK_REL) + eps_ms:
            raise Disagreement(f"call {i} reported {t:.4f} ms, but its stamps are {span:.4f} ms apart")
    reported, stamped = sum(times_ms), sum(spans)
    if reported < stamped * (1 - SLACK_REL) - k * slack_ms:
        raise Disagreement(f"{k} call(s) reported {reported:.4f} ms in all, but their stamps span "
                           f"{stamped:.4f} ms")
    return (stamped - reported) / k
