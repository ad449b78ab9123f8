"""The HTML leaderboard in headless Chromium: a screenshot that shows the charts' colours, and the
charts in the DOM. Skipped without chromium unless JUDGE_REQUIRE_CHROMIUM=1 (CI), where it fails."""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from test_leaderboard import golden_boards

from judge.board import html as board_html

WIDTH, HEIGHT = 1200, 1600
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)


@pytest.fixture(scope="module")
def chromium():
    if CHROMIUM is None:
        if os.environ.get("JUDGE_REQUIRE_CHROMIUM") == "1":
            pytest.fail("chromium is required (JUDGE_REQUIRE_CHROMIUM=1) but not installed: apt-get install chromium")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return CHROMIUM


def run_chromium(binary: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp / 'profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("board")
    text = board_html.html(golden_boards(), generated="2026-11-23T00:00:00+00:00")
    path = d / "board.html"
    path.write_text(text)
    return path


def test_page_is_self_contained(page):
    text = page.read_text()
    assert "<script" not in text.lower() and "@import" not in text and "@font-face" not in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "no resources from a network"
    assert "<svg" in text and "<style>" in text


def decode_png(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Width, height and RGB pixels of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    w, h, depth, colour, _, _, interlace = ihdr
    assert depth == 8 and colour in (2, 6) and interlace == 0, ihdr
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    prev, pixels, i = bytearray(stride), [], 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels += [tuple(line[x:x + 3]) for x in range(0, stride, bpp)]
        prev = line
    return w, h, pixels


def rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


def test_screenshot_shows_the_charts(chromium, page, tmp_path):
    shot = tmp_path / "board.png"
    r = run_chromium(chromium, tmp_path, "--force-device-scale-factor=1", "--hide-scrollbars",
                     f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}", page.as_uri())
    assert shot.exists(), f"no screenshot: {r.stderr[-2000:]}"
    w, h, pixels = decode_png(shot.read_bytes())
    assert (w, h) == (WIDTH, HEIGHT)
    counts: dict[tuple[int, int, int], int] = {}
    for p in pixels:
        counts[p] = counts.get(p, 0) + 1
    assert len(counts) > 20, "the page looks blank"
    assert counts.get((255, 255, 255), 0) < 0.98 * w * h, "the page looks blank"
    # Bars are solid fills: far more pixels of each series colour than its legend swatch (~14×14)
    # holds. The first two problems' charts fit in the window.
    for name, colour in (("first participant", board_html.PALETTE[0]), ("second participant", board_html.PALETTE[1]),
                         ("baseline", board_html.BASELINE_COLOUR)):
        assert counts.get(rgb(colour), 0) > 600, f"{name}'s bars ({colour}) are not in the screenshot"
    red = rgb(board_html.ROOFLINE_COLOUR)
    near_red = sum(n for p, n in counts.items() if max(abs(a - b) for a, b in zip(p, red)) < 40)
    assert near_red > 150, "the roofline is not in the screenshot"


def test_dom_holds_the_charts(chromium, page, tmp_path):
    r = run_chromium(chromium, tmp_path, "--dump-dom", page.as_uri())
    dom = r.stdout
    assert "<svg" in dom, r.stderr[-2000:]
    charts = re.findall(r'<svg class="chart"[^>]*data-problem="([^"]+)"', dom)
    assert charts == ["hgemm", "vector_add"]
    hgemm = dom.split('data-problem="hgemm"')[1].split("</svg>")[0]
    assert len(re.findall(r'class="bar candidate"', hgemm)) == 6  # 3 ranked × 2 shapes
    assert len(re.findall(r'class="bar baseline"', hgemm)) == 2 and 'class="roofline"' in hgemm
    assert "WRONG_ANSWER" in dom and "=1" in dom


def test_page_does_not_scroll_sideways_at_phone_width(chromium, tmp_path):
    """At the narrowest window headless Chromium opens (500 px; a phone is 360 to 430), the page is
    no wider than the window: wide tables scroll inside their own box, the charts scale down."""
    probe = ("<script>document.body.setAttribute('data-overflow', String(document.documentElement.scrollWidth "
             "- window.innerWidth) + ' ' + window.innerWidth)</script>")
    page = tmp_path / "phone.html"
    page.write_text(board_html.html(golden_boards()).replace("</body>", probe + "</body>"))
    r = run_chromium(chromium, tmp_path, "--window-size=375,800", "--dump-dom", page.as_uri())
    found = re.findall(r'data-overflow="(-?\d+) (\d+)"', r.stdout)
    assert found, r.stderr[-2000:]
    overflow, width = map(int, found[0])
    assert width <= 500 and overflow <= 0, f"{overflow} px wider than a {width} px window"
