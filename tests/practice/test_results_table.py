"""`judge verify --table`: rows from timed reports, merging runs, and the README block."""
from __future__ import annotations

from conftest import PROBLEMS_DIR

from judge.contract.report import BaselineTiming, BenchResult, Environment, Report, Stats
from judge.contract.verdict import Status
from judge.practice import results_table as table
from judge.problem import spec


def stats(ms: float) -> Stats:
    return Stats(median_ms=ms, ci_low_ms=ms, ci_high_ms=ms, min_ms=ms, samples=50, warmup_calls=3,
                 stop_reason="noise")


def bench(wid: str, ms: float, flops: float, nbytes: float, base_ms: float) -> BenchResult:
    b = BaselineTiming(name="base", before=stats(base_ms), after=stats(base_ms), median_ms=base_ms, drift=0,
                       drift_flagged=False, speedup=base_ms / ms)
    floor = max(nbytes / 3000e6, flops / 700e9)  # the peaks of report()'s environment
    return BenchResult(workload=wid, stats=stats(ms), flops=flops, bytes=nbytes, tflops=flops / ms / 1e9,
                       gbps=nbytes / ms / 1e6, floor_ms=floor, roofline_pct=round(100 * floor / ms, 1), baselines=[b])


def report(problem: str, solution: str, benches: list[BenchResult], date: str = "2026-11-22") -> Report:
    return Report(problem=problem, solution=f"reference_solutions/{problem}/{solution}", source_sha256="0",
                  mode="submit", status=Status.ACCEPTED, benchmarks=benches, geomean_speedup=1.5,
                  baseline_name="base", started_at=f"{date}T10:00:00+00:00",
                  environment=Environment(gpu="NVIDIA H100", torch="2.11", peak_copy_gbps=3000.0,
                                          peak_tflops=700.0, peak_unit="fp16_tensor"))


def test_row_takes_the_largest_shape_and_the_binding_unit():
    hgemm = spec.load_problem(PROBLEMS_DIR / "hgemm")
    assert table.largest_benchmark(hgemm) == "M=8192,N=8192,K=8192"
    f = 2 * 8192**3
    r = table.row(hgemm, report("hgemm", "03.cu", [
        bench("M=2048,N=2048,K=2048", 0.1, 2 * 2048**3, 3 * 2 * 2048**2, 0.05),
        bench("M=8192,N=8192,K=8192", 2.0, f, 3 * 2 * 8192**2, 1.0)]))
    assert r.workload == "M=8192,N=8192,K=8192" and r.unit == "TFLOPS"
    assert r.value == round(f / 2.0 / 1e9, 1) and r.pct_of_baseline == 50.0 and r.solution == "03.cu"
    va = spec.load_problem(PROBLEMS_DIR / "vector_add")
    n = 268435456
    r = table.row(va, report("vector_add", "02.cu", [bench(f"n={n}", 1.2, n, 12 * n, 1.32)]))
    assert r.unit == "GB/s" and r.value == round(12 * n / 1.2 / 1e6, 1) and r.pct_of_baseline == 110.0


def test_no_row_without_the_largest_shape_timed():
    va = spec.load_problem(PROBLEMS_DIR / "vector_add")
    assert table.row(va, report("vector_add", "01.cu", [])) is None


def test_merge_replaces_by_problem_and_solution_and_orders_by_level():
    hgemm = spec.load_problem(PROBLEMS_DIR / "hgemm")
    va = spec.load_problem(PROBLEMS_DIR / "vector_add")
    big = "M=8192,N=8192,K=8192"
    old = [table.row(hgemm, report("hgemm", "01.cu", [bench(big, 9.0, 1e12, 1e9, 1.0)], "2026-11-01"))]
    new = [table.row(va, report("vector_add", "01.cu", [bench("n=268435456", 1.2, 1, 3.2e9, 1.3)])),
           table.row(hgemm, report("hgemm", "01.cu", [bench(big, 3.0, 1e12, 1e9, 1.0)]))]
    merged = table.merge(old, new)
    assert [(r.problem, r.date) for r in merged] == [("vector_add", "2026-11-22"), ("hgemm", "2026-11-22")]


def test_save_load_and_markdown(tmp_path):
    va = spec.load_problem(PROBLEMS_DIR / "vector_add")
    rows = [table.row(va, report("vector_add", "02.cu", [bench("n=268435456", 1.2, 1, 3.2e9, 1.32)]))]
    table.save(tmp_path / "r.json", rows)
    assert table.load(tmp_path / "r.json") == rows
    md = table.markdown(rows, "judge verify --table")
    assert "| vector_add | easy | `02.cu` | n=268435456 | 2,666.7 GB/s | 110% of base | 89% | 1.50× |" in md
    assert "NVIDIA H100" in md and "2026-11-22" in md and "`judge verify --table`" in md


def test_write_between_markers_keeps_the_rest(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Reference solutions\n\nIntro.\n")
    table.write_between_markers(readme, "| a |\n")
    readme.write_text(readme.read_text() + "\n## After\n\nMore.\n")
    table.write_between_markers(readme, "| b |\n")
    text = readme.read_text()
    assert text.startswith("# Reference solutions\n\nIntro.\n") and text.endswith("## After\n\nMore.\n")
    assert "| b |" in text and "| a |" not in text and text.count(table.BEGIN) == 1


def test_rows_keep_every_shape_and_the_memory_bound_block_lists_the_last_solution():
    va = spec.load_problem(PROBLEMS_DIR / "vector_add")
    small, big = "n=33554432", "n=268435456"
    rows = [table.row(va, report("vector_add", name, [bench(small, ms / 8, 1, 12 * 33554432, 0.15),
                                                      bench(big, ms, 1, 12 * 268435456, 1.1)]))
            for name, ms in (("01.cu", 2.0), ("02.cu", 1.0))]
    assert [x.workload for x in rows[1].shapes] == [small, big]
    s = rows[1].shapes[1]
    assert s.speedup == 1.1 and s.baseline_ms == 1.1 and s.value == round(12 * 268435456 / 1.0 / 1e6, 1)
    assert s.pct_of_copy == round(100 * 12 * 268435456 / 1.0 / 1e6 / 3000.0, 1)
    md = table.markdown(rows, "judge verify --table")
    block = md.split("### Memory-bound problems", 1)[1]
    assert "`02.cu`" in block and "`01.cu`" not in block
    assert f"| vector_add | `02.cu` | {big} | 1.0000 | 3,221.2 | 107.4% | 1.1000 | 1.100× |" in block
    hgemm = spec.load_problem(PROBLEMS_DIR / "hgemm")
    compute = [table.row(hgemm, report("hgemm", "03.cu", [bench("M=8192,N=8192,K=8192", 2.0, 2 * 8192**3, 1e8, 1.0)]))]
    assert "### Memory-bound" not in table.markdown(compute, "judge verify --table")


def test_rows_of_several_gpus_each_name_their_gpu():
    va = spec.load_problem(PROBLEMS_DIR / "vector_add")
    h100 = table.row(va, report("vector_add", "01.cu", [bench("n=268435456", 1.2, 1, 3.2e9, 1.32)]))
    one = table.markdown([h100], "judge verify --table")
    assert "| GPU |" not in one and "compare rows measured on one GPU only" not in one
    h200 = h100.model_copy(update={"solution": "02.cu", "gpu": "NVIDIA H200"})
    md = table.markdown([h100, h200], "judge verify --table")
    assert "compare rows measured on one GPU only" in md and "speedup (all shapes) | GPU |" in md
    assert "| `01.cu` |" in md and md.count(" NVIDIA H100 |") == 1 and md.count(" NVIDIA H200 |") == 1


def test_the_memory_bound_table_shows_the_fastest_answer_not_the_last_named():
    va = spec.load_problem(PROBLEMS_DIR / "vector_add")
    n = 268435456
    fast = table.row(va, report("vector_add", "02_float4.cu", [bench(f"n={n}", 1.0, 1, 12 * n, 1.0)]))
    slow = table.row(va, report("vector_add", "triton_01.py", [bench(f"n={n}", 2.0, 1, 12 * n, 1.0)]))
    md = table.memory_bound_shapes([fast, slow])
    assert "`02_float4.cu`" in md and "`triton_01.py`" not in md


def test_a_problem_bound_by_compute_on_some_shapes_is_not_in_the_memory_bound_table():
    fp8 = spec.load_problem(PROBLEMS_DIR / "fp8_gemm")
    decode, square = "M=128,N=28672,K=8192", "M=8192,N=8192,K=8192"
    # the decode shape is bound by bytes, the square one by FLOPs (the report's peaks: 3000 GB/s, 700 TFLOPS)
    r = table.row(fp8, report("fp8_gemm", "02.cu", [bench(decode, 1.0, 6e10, 3e8, 0.1),
                                                      bench(square, 20.0, 1.1e12, 2.7e8, 1.0)]))
    assert r.workload == decode and r.unit == "GB/s"
    assert table.memory_bound_shapes([r]) == ""


def test_each_shape_records_its_own_bound_and_a_slow_answer_stays_compute_bound():
    """fp8_gemm's naive step was listed as memory-bound: at < 0.05% of both its roofline and the
    copy rate, its rounded percentages were equal (0.0) on the square shapes too."""
    fp8 = spec.load_problem(PROBLEMS_DIR / "fp8_gemm")
    decode, square = "M=128,N=28672,K=8192", "M=8192,N=8192,K=8192"
    naive = table.row(fp8, report("fp8_gemm", "01_naive.cu", [bench(decode, 120.0, 6e10, 3e8, 0.07),
                                                              bench(square, 2200.0, 1.1e12, 2.7e8, 0.75)]))
    assert [x.memory_bound for x in naive.shapes] == [True, False]
    assert table.memory_bound_shapes([naive]) == ""
    # a row stored before shapes recorded their bound, as results.json held it (every % rounded to 0.0)
    old = naive.model_copy(update={"shapes": [x.model_copy(update={"memory_bound": None, "pct_of_copy": 0.0,
                                                                   "pct_of_roofline": 0.0}) for x in naive.shapes]})
    assert table.memory_bound_shapes([old]) == ""
    va = spec.load_problem(PROBLEMS_DIR / "vector_add")
    add = table.row(va, report("vector_add", "02.cu", [bench("n=268435456", 1.0, 268435456, 12 * 268435456, 1.1)]))
    assert add.shapes[0].memory_bound is True and "`02.cu`" in table.memory_bound_shapes([add])
