"""A solution's header names its problem (and mode): `// judge: softmax [test|submit]`."""
from __future__ import annotations

import pytest

from judge.build import header


def write(tmp_path, text, name="x.cu"):
    f = tmp_path / name
    f.write_text(text)
    return f


@pytest.mark.parametrize("text, problem, mode, line", [
    ("// judge: softmax\n__global__ void k() {}\n", "softmax", None, 1),
    ("#include <cuda_runtime.h>\n  //judge:   rope   submit  \n", "rope", "submit", 2),
    ("// my attempt\n// judge: relu test\n", "relu", "test", 2),
])
def test_a_header_names_problem_and_mode(tmp_path, text, problem, mode, line):
    assert header.read(write(tmp_path, text)) == header.Header(problem, mode, line)


def test_no_header(tmp_path):
    assert header.read(write(tmp_path, "// softmax, by me\nint x;\n")) is None
    late = "\n" * header.LINES + "// judge: softmax\n"
    assert header.read(write(tmp_path, late)) is None  # only the first lines count


@pytest.mark.parametrize("text, says", [("// judge:\n", "expected"), ("// judge: softmax fast\n", "expected"),
                                        ("// judge: a b c\n", "expected"),
                                        ("// judge: relu\n// judge: gelu\n", "a second")])
def test_a_malformed_header_is_an_error(tmp_path, text, says):
    with pytest.raises(header.HeaderError) as e:
        header.read(write(tmp_path, text))
    assert says in str(e.value) and "x.cu" in str(e.value)
