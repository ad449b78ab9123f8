"""The static policy of Python (Triton) submissions (judge/build/pypolicy.py): every attack in
tests/exploits/python/ is refused with the rule its first line names, and the honest controls in
tests/exploits/python/honest/ (the idioms of Triton's tutorials) pass."""
from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

import pytest
from conftest import ROOT

from judge.build import pypolicy
from judge.build.policy import PolicyError

ATTACKS = sorted((ROOT / "tests" / "exploits" / "python").glob("*.py"))
HONEST = sorted((ROOT / "tests" / "exploits" / "python" / "honest").glob("*.py"))
_EXPECTED = re.compile(r"^#\s*expected:\s*(\w+)\s*—\s*(.*)$")


def declared(path: Path) -> tuple[str, str]:
    m = _EXPECTED.match(path.read_text().splitlines()[0])
    assert m, f"{path.name}: line 1 must be `# expected: STATUS — what`"
    return m.group(1), m.group(2)


def refusal(text: str, name: str = "solution.py") -> str | None:
    try:
        pypolicy.check_source(text, name)
    except PolicyError as e:
        return str(e)
    return None


def test_there_are_attacks_and_controls():
    assert len(ATTACKS) >= 15 and len(HONEST) >= 2


@pytest.mark.parametrize("path", ATTACKS, ids=[p.name for p in ATTACKS])
def test_every_attack_is_refused_naming_its_rule(path):
    status, what = declared(path)
    assert status == "REJECTED"
    message = refusal(path.read_text(), path.name)
    assert message is not None, f"{path.name} passed the policy"
    rule, detail = re.match(r"^(\[\w+\])\s*(.*)$", what).groups()  # type: ignore[union-attr]
    assert re.search(re.escape(rule) + r" " + re.escape(path.name) + r":\d+: " + re.escape(detail), message), message


@pytest.mark.parametrize("path", HONEST, ids=[p.name for p in HONEST])
def test_honest_controls_pass(path):
    assert declared(path)[0] == "ACCEPTED"
    assert refusal(path.read_text(), path.name) is None


@pytest.mark.parametrize("text, fragment", [
    ("import triton.language.extra.cuda as c\n", "`import triton.language.extra.cuda`"),
    ("from . import x\n", "`from . import"),
    ("import math\nmath = 3\n", "`math` names a module"),
    ("import math\ndel math.pi\n", "`math.pi` is assigned or deleted"),
    ("def f(__x):\n    pass\n", "parameter `__x`"),
    ("def solve(A):\n    return type(A)\n", "`type` is not allowed"),
    ("def solve(A):\n    return open('/etc/passwd')\n", "`open` is not allowed"),
    ("def solve(A):\n    return vars()\n", "`vars` is not allowed"),
    ("import torch\ndef solve(A):\n    return torch.cuda.Stream()\n", "`torch.cuda` is not allowed"),
    ("import torch\ndef solve(A):\n    return torch.float16.itemsize\n", "`torch.float16.itemsize` is not allowed"),
    ("import triton\n@triton.jit\ndef k():\n    pass\nk.fn.__globals__\n", "attribute `__globals__`"),
    ("def solve(A):\n    return A.matmul.__self__\n", "attribute `__self__`"),
    ("x = 1\nif x == '__main__':\n    import os\n", "`import os`"),  # not the main guard: checked
])
def test_rules_on_small_files(text, fragment):
    message = refusal(text)
    assert message is not None and fragment in message, message


def test_the_main_guard_is_skipped_only_as_itself():
    guard = 'import torch\nif __name__ == "__main__":\n    import os\n    torch.matmul\n'
    assert refusal(guard) is None
    assert refusal(guard.replace("__main__", "main")) is not None  # a string compare: checked, and refused
    assert refusal('def f():\n    if __name__ == "__main__":\n        import os\n') is not None  # nested


def test_at_most_a_few_violations_are_named():
    message = refusal("import os\nimport sys\nimport socket\nimport ctypes\nimport re\nimport io\nimport gc\n")
    assert message is not None and message.count("[import]") == pypolicy.MAX_VIOLATIONS


def test_a_file_that_does_not_parse_is_a_syntax_error():
    with pytest.raises(SyntaxError):
        pypolicy.check_source("def solve(:\n", "s.py")


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs triton")
def test_the_triton_names_exist_and_none_is_a_module():
    import triton
    import triton.language as tl

    assert all(hasattr(triton, n) for n in pypolicy.TRITON)
    for namespace, module in (("triton.language", tl), ("triton.language.math", tl.math)):
        names = pypolicy.NAMESPACES[namespace]
        missing = sorted(n for n in names if not hasattr(module, n))
        assert not missing, f"{namespace}: {missing}"
        modules = sorted(n for n in names if inspect.ismodule(getattr(module, n))
                         and f"{namespace}.{n}" not in pypolicy.SUBMODULES)
        assert not modules, f"{namespace}: {modules} lead to other modules"


def test_the_torch_names_exist_and_none_computes():
    import torch

    for n in pypolicy.TORCH:
        obj = getattr(torch, n)
        assert not inspect.ismodule(obj), n
    assert not {"matmul", "mm", "add", "softmax", "sum", "cuda", "ops", "nn"} & pypolicy.TORCH
