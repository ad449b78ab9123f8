"""SASS opcode counts per kernel (judge/build/sass.py): the parser on recorded cuobjdump output, and real
builds (nvcc + cuobjdump, no GPU) of a tensor-core and a plain kernel."""
from __future__ import annotations

from pathlib import Path

from conftest import PROBLEMS_DIR, SOLUTIONS_DIR, needs_cuobjdump, nvcc_test

from judge.build import nvcc as build
from judge.build import sass
from judge.build.cuda import CUDA
from judge.problem import spec

FIXTURE = Path(__file__).parents[1] / "fixtures" / "cuobjdump_sass.txt"

HGEMM = "_Z12hgemm_kernelILb1EEvPK6__halfS2_PS0_iii"


def test_parse_recorded_cuobjdump_output():
    # cuobjdump 13.5 on vector_add/02_float4 (whole) and part of hgemm/04_wmma_pipelined (sm_90a);
    # the counts below were read off the fixture with grep.
    funcs = sass.parse(FIXTURE.read_text())
    assert list(funcs) == ["_Z11tail_kernelPKfS0_Pfll", "_Z11add4_kernelPK6float4S1_PS_l", HGEMM]
    assert funcs["_Z11tail_kernelPKfS0_Pfll"] == {"FADD": 1, "LDG": 2, "STG": 1}
    assert funcs["_Z11add4_kernelPK6float4S1_PS_l"] == {"FADD": 16, "LDG": 8, "STG": 4}
    h = funcs[HGEMM]
    assert (h["HMMA"], h["LDGSTS"], h["LDSM"], h["BAR"]) == (21, 42, 12, 1)
    assert "LDG" not in h and "STG" not in h  # LDGSTS and LDGDEPBAR are not LDG
    assert list(h) == [op for op in sass.SHOWN if op in h]  # shown in SHOWN's order


def test_predicated_and_repeated_functions():
    text = """
		Function : _Z1kv
        /*0000*/              @!P0 HMMA.16816.F32 R4, R8, R12, R4 ;      /* 0x0 */
        /*0010*/               @P1 LDG.E R5, desc[UR4][R4.64] ;          /* 0x0 */
        /*0020*/              @!PT FFMA R1, R2, R3, R4 ;                 /* 0x0 */
        /*0030*/             @!UP0 UTMALDG.2D [UR8], [UR4] ;             /* 0x0 */
        /*0040*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], R24 ;  /* 0x0 */
        /*0050*/                   IMAD R1, R2, R3, R4 ;                 /* 0x0 */
		Function : _Z1kv
        /*0000*/                   HMMA.16816.F32 R4, R8, R12, R4 ;      /* 0x0 */
"""
    assert sass.parse(text) == {"_Z1kv": {"HGMMA": 1, "HMMA": 1, "FFMA": 1, "UTMALDG": 1, "LDG": 1}}


def test_line_says_when_no_tensor_cores():
    assert sass.line({"FADD": 16, "LDG": 8}) == "no tensor-core instructions, 16 FADD, 8 LDG"
    assert sass.line({"HGMMA": 128, "UTMALDG": 4}) == "128 HGMMA, 4 UTMALDG"


def test_missing_cuobjdump_leaves_summary_empty(tmp_path, monkeypatch):
    lib = tmp_path / "lib.so"
    lib.write_bytes(b"not a library")
    monkeypatch.setattr(sass, "tool", lambda name: None)
    assert sass.summarize(lib) == {}
    assert not (tmp_path / sass.CACHE_FILE).exists()  # nothing cached: installing cuobjdump helps at once


def _built(problem: str, solution: str) -> build.BuildResult:
    p = spec.load_problem(PROBLEMS_DIR / problem)
    result = build.build(CUDA.request(p, SOLUTIONS_DIR / problem / solution, "sm_90a"))
    assert result.ok, result.error
    return sass.attach(result)


def _total(result: build.BuildResult) -> dict[str, int]:
    total: dict[str, int] = {}
    for k in result.resources:
        for op, n in k.sass.items():
            total[op] = total.get(op, 0) + n
    return total


@nvcc_test
@needs_cuobjdump
def test_wmma_hgemm_uses_tensor_cores_and_cp_async():
    result = _built("hgemm", "04_wmma_pipelined.cu")
    assert result.resources and all(k.sass for k in result.resources)  # every kernel matched by name
    total = _total(result)
    assert total.get("HMMA", 0) > 0 and total.get("LDGSTS", 0) > 0, total
    assert (result.lib.parent / sass.CACHE_FILE).exists()
    assert sass.summarize(result.lib) == sass.summarize(result.lib)  # the cached answer is the same


@nvcc_test
@needs_cuobjdump
def test_naive_vector_add_has_no_tensor_cores():
    result = _built("vector_add", "01_naive.cu")
    total = _total(result)
    assert not any(op in total for op in sass.TENSOR), total
    assert total.get("FADD", 0) > 0 and total.get("LDG", 0) > 0, total
    assert sass.line(result.resources[0].sass).startswith("no tensor-core instructions")



@nvcc_test
@needs_cuobjdump
def test_submit_shows_a_sass_line_per_kernel():
    """The pipeline attaches the summary after the build; the report (JSON) and the resource report
    carry it. Without a GPU the run stops after the build with INTERNAL_ERROR, which is enough here."""
    from typer.testing import CliRunner

    from cli.app import app
    from judge.contract.report import Report

    src = str(SOLUTIONS_DIR / "vector_add" / "02_float4.cu")
    r = CliRunner().invoke(app, ["test", "vector_add", src, "--arch", "sm_90a", "--no-record", "--json"])
    report = Report.model_validate_json(r.stdout)
    kernels = {k.kernel.split("(")[0]: k.sass for k in report.build.kernels}
    assert set(kernels) == {"tail_kernel", "add4_kernel"} and all(kernels.values()), kernels
    assert kernels["add4_kernel"]["LDG"] > 0 and not any(op in kernels["add4_kernel"] for op in sass.TENSOR)
    r = CliRunner().invoke(app, ["test", "vector_add", src, "--arch", "sm_90a", "--no-record"])
    lines = r.output.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.strip().startswith("add4_kernel("))
    assert lines[i + 1].strip().startswith("sass: no tensor-core instructions, "), r.output


def test_fp8_mma_sync_counts_as_tensor_core_work():
    """sm_89's FP8 mma.sync is QMMA; sm_90 builds the same PTX as F2FP conversions and HMMA."""
    ada = """
		Function : _Z1kv
        /*1a70*/                   QMMA.16832.F32.E4M3.E4M3 R52, R44.reuse.ROW, R36.COL, RZ ;   /* 0x0 */
        /*1a80*/                   F2FP.BF16.F32.PACK_AB R3, R2, R1 ;   /* 0x0 */
"""
    counts = sass.parse(ada)["_Z1kv"]
    assert counts == {"QMMA": 1, "F2FP": 1}
    assert sass.line(counts) == "1 QMMA, 1 F2FP"  # no "no tensor-core instructions"
