"""Sealed inputs (judge/gpu/seal.py, docs/security.md "Sealed inputs"): the keystream's reference on
the CPU against Philox's published answer and against the kernel's own code (built for the host by
nvcc), and, with `-m gpu`, the kernel against the reference."""
from __future__ import annotations

import re
import subprocess

import pytest
import torch
from conftest import ROOT, nvcc_test

from judge.gpu import seal
from judge.gpu.seal import Key


def test_the_keystream_is_philox4x32_10():
    """Random123's known answer for philox4x32_10, counter 0 and key 0 (its kat_vectors file)."""
    assert seal.keystream(1, 0, Key(0, 0, 0))[0].tolist() == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_crypt_is_its_own_inverse_and_depends_on_key_job_and_place():
    x = torch.randn(1001)  # 4004 bytes: a partial last block
    plain = x.clone()
    seal.crypt(x, 0, Key(1, 2, 3))
    assert (x != plain).float().mean() > 0.99
    y = plain.clone()
    seal.crypt(y, 1, Key(1, 2, 3))  # another input of the same call
    z = plain.clone()
    seal.crypt(z, 0, Key(1, 2, 4))  # another call
    assert not torch.equal(x, y) and not torch.equal(x, z)
    seal.crypt(x, 0, Key(1, 2, 3))
    assert torch.equal(x, plain)
    blocks = seal.keystream(4, 0, Key(1, 2, 3))
    assert torch.equal(seal.keystream(2, 0, Key(1, 2, 3), first=2), blocks[2:])  # a block's stream is its own
    assert len({tuple(b) for b in blocks.tolist()}) == 4


HOST = r"""
#include <cstdio>
#include "KERNELS"
int main() {
    unsigned long long blocks[] = {0ull, 1ull, 77ull, 0x100000001ull};
    for (unsigned long long b : blocks) {
        uint32_t c[4] = {(uint32_t)b, (uint32_t)(b >> 32), 5u, 0xCAFEBABEu};
        judge_keystream(c, 0x12345678u, 0xFFFFFFFFu);
        printf("%u %u %u %u\n", c[0], c[1], c[2], c[3]);
    }
}
"""


@nvcc_test
def test_the_kernels_keystream_is_the_reference(tmp_path):
    """judge_keystream of integrity_kernels.cu, built for the host, against `seal.keystream`."""
    src = tmp_path / "ks.cu"
    src.write_text(HOST.replace("KERNELS", str(ROOT / "judge" / "gpu" / "integrity_kernels.cu")))
    subprocess.run(["nvcc", "-o", str(tmp_path / "ks"), str(src)], check=True, capture_output=True, timeout=300)
    out = subprocess.run([str(tmp_path / "ks")], check=True, capture_output=True, text=True).stdout.split("\n")
    key = Key(0x12345678, 0xFFFFFFFF, 0xCAFEBABE)
    for line, b in zip(out, (0, 1, 77, 0x100000001)):
        assert [int(x) for x in line.split()] == seal.keystream(1, 5, key, first=b)[0].tolist()


@nvcc_test
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_gate_fits_every_block_slot(tmp_path, arch):
    """judge_hold is 32 one-warp blocks on every SM: 1024 threads, so at most 64 registers each (65536
    an SM). With 80 (its first build with the keystream inside) only 25 blocks fit: the gate never
    held every SM, and the workers ran every call without it (measured on the H100, 2026-11-25)."""
    out = subprocess.run(["ptxas", f"-arch={arch}", "-v", str(ROOT / "judge" / "gpu" / "integrity_kernels.ptx"),
                          "-o", str(tmp_path / "k.cubin")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    info = out.stderr[out.stderr.index("Compiling entry function 'judge_hold'"):]
    used = int(re.search(r"Used (\d+) registers", info).group(1))
    assert used <= 64, info[:400]


@pytest.mark.gpu
@pytest.mark.parametrize("nbytes", [4, 1000, 4003, (1 << 22) + 7])
def test_the_kernel_seals_as_the_reference_does(nbytes):
    from judge.gpu import integrity

    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    x = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda")
    plain = x.cpu()
    key = Key.fresh()
    kernels = integrity.Kernels()
    kernels.crypt(x.data_ptr(), nbytes, 3, key.wire())
    torch.cuda.synchronize()
    expected = plain.clone()
    seal.crypt(expected, 3, key)
    assert torch.equal(x.cpu(), expected)
    kernels.crypt(x.data_ptr(), nbytes, 3, key.wire())
    torch.cuda.synchronize()
    assert torch.equal(x.cpu(), plain)
