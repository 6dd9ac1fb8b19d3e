"""bench_cpu_vs_torch.py's pure-Python parts (cpu_report.py, svg_bars.py):
expectations worked out by hand or from the formula's definition."""
import json
import math
import os
import sys
import xml.etree.ElementTree as ET

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_report  # noqa: E402
import svg_bars  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "benchmarks.md")

DEMO_OUTPUT = """fp8-block    done

precision      final loss   vs fp32   ms/step    params  fp8 copies  saved act  workspace  peak total
fp32              0.40978         -      65.0     265.1         0.0      209.0       80.0       638.3
bf16              0.41006    +0.07%      16.7     132.5         0.0      105.0       40.0       319.8
fp8-delayed       0.41246    +0.65%      11.6     265.1        40.1      125.1       80.2       626.4
fp8-static        0.41468    +1.20%      14.0     265.1        40.1      125.1       80.2       626.4  (static scale 32)
fp8-block    unsupported on this backend

final loss: mean MSE of the last 10 steps
"""


def test_log_axis_spans_whole_decades():
    assert svg_bars.log_axis([0.4, 428.0]) == (-1, 3)
    assert svg_bars.log_axis([100.0]) == (2, 3)
    with pytest.raises(ValueError, match="no positive"):
        svg_bars.log_axis([0.0, -1.0])


def test_bar_length_is_logarithmic():
    assert svg_bars.bar_length(0.1, -1, 3, 400) == pytest.approx(0.0)
    assert svg_bars.bar_length(1000.0, -1, 3, 400) == pytest.approx(400.0)
    assert svg_bars.bar_length(10.0, -1, 3, 400) == pytest.approx(200.0)


def test_svg_has_one_bar_per_value_with_log_lengths():
    groups, series = ["GEMM a", "GEMM b"], ["octet_fp8", "torch_bf16", "torch_fp32"]
    values = {("GEMM a", "octet_fp8"): 400.0, ("GEMM a", "torch_bf16"): 40.0, ("GEMM b", "torch_fp32"): 4.0}
    root = ET.fromstring(svg_bars.grouped_bars_svg(groups, series, values, "t & <title>", "GFLOP/s"))
    bars = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert len(bars) == 3  # the pair without a value draws nothing
    widths = {r.find(f"{SVG}title").text.split(":")[0]: float(r.get("width")) for r in bars}
    # Axis 10^0 .. 10^3 over PLOT_WIDTH: 4 -> log10(4)/3, 40 -> log10(40)/3, 400 -> log10(400)/3.
    w = svg_bars.PLOT_WIDTH
    assert widths["GEMM a, octet_fp8"] == pytest.approx(w * math.log10(400) / 3, abs=0.06)
    assert widths["GEMM a, torch_bf16"] == pytest.approx(w * math.log10(40) / 3, abs=0.06)
    assert widths["GEMM b, torch_fp32"] == pytest.approx(w * math.log10(4) / 3, abs=0.06)
    colours = {r.find(f"{SVG}title").text.split(":")[0]: r.get("fill") for r in bars}
    assert colours["GEMM a, octet_fp8"] == svg_bars.PALETTE[0]
    assert colours["GEMM b, torch_fp32"] == svg_bars.PALETTE[2]
    assert root.find(f"{SVG}text").text == "t & <title>"


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_svg_refuses_values_a_log_axis_cannot_draw(bad):
    with pytest.raises(ValueError, match=r"\('g', 's'\)"):
        svg_bars.grouped_bars_svg(["g"], ["s"], {("g", "s"): bad}, "t", "u")


def test_svg_refuses_unknown_names_and_too_many_series():
    with pytest.raises(ValueError, match="unknown"):
        svg_bars.grouped_bars_svg(["g"], ["s"], {("g", "x"): 1.0}, "t", "u")
    many = [f"s{i}" for i in range(len(svg_bars.PALETTE) + 1)]
    with pytest.raises(ValueError, match="at most"):
        svg_bars.grouped_bars_svg(["g"], many, {("g", "s0"): 1.0}, "t", "u")


def test_rows_speedup_is_the_peers_time_over_octets():
    rows = cpu_report.rows_from_times("GEMM 2x3x4", "octet_fp8", {"octet_fp8": 0.5, "torch_bf16": 1.5}, 48.0)
    by = {r.candidate: r for r in rows}
    assert by["torch_bf16"].speedup == pytest.approx(3.0)
    assert by["octet_fp8"].speedup == pytest.approx(1.0)
    assert by["octet_fp8"].rate == pytest.approx(48.0 / 0.5 / 1e9)
    with pytest.raises(ValueError, match="octet_fp8"):
        cpu_report.rows_from_times("w", "octet_fp8", {"torch_bf16": 1.0}, 1.0)


def test_targets_from_one_run():
    g = cpu_report.gemm_work
    times = {g(2048, 2048, 2048): {"octet_fp8": 1.0, "torch_bf16": 1.1, "onednn_sgemm": 1.5},
             g(1, 8192, 8192): {"octet_fp8": 1.0, "torch_bf16": 1.6},
             cpu_report.LINEAR_WORK: {"octet_fp8_current": 1.0, "octet_fp32": 2.0, "octet_torch_fp8_current": 1.05}}
    rows = []
    for work, t in times.items():
        ours = "octet_fp8_current" if work == cpu_report.LINEAR_WORK else "octet_fp8"
        rows += cpu_report.rows_from_times(work, ours, t, 1.0)
    targets = cpu_report.issue_targets(rows, read_gbps=20.0, m1_weight_gbps=15.0,
                                       quantize_ratios={"mxfp8": 0.6, "cast_transpose": 0.5},
                                       demo_ms={"fp32": 10.0, "bf16": 5.0, "fp8-delayed": 8.0, "fp8-block": 12.0})
    got = {t.text: (t.measured, t.verdict) for t in targets}
    assert got["FP8 GEMM 2048^3 >= 1.0x torch BF16 matmul"] == (pytest.approx(1.1), "yes")
    assert got["FP8 GEMM 2048^3 >= 1.8x oneDNN sgemm"] == (pytest.approx(1.5), "**no**")
    assert got["FP8 GEMM M=1, N=K=8192 >= 1.5x torch BF16 matmul"] == (pytest.approx(1.6), "yes")
    assert got["FP8 GEMM M=16, N=K=8192 >= 1.5x torch BF16 matmul"] == (None, "not measured")
    assert got["M=1 reads its weights at >= 0.7 of the read bandwidth"] == (pytest.approx(0.75), "yes")
    assert got["Linear 4096^3 fwd+bwd >= 1.8x Octet FP32"] == (pytest.approx(2.0), "yes")
    assert got["Linear 4096^3 fwd+bwd >= 1.2x torch BF16 autocast"] == (None, "not measured")
    assert got["octet.torch.Linear 4096^3 fwd+bwd FP8 costs <= 1.1x the octet layer"] == (pytest.approx(1 / 1.05), "yes")
    assert got["MXFP8 quantize (both usages) >= 0.5 of memcpy"] == (pytest.approx(0.6), "yes")
    assert got["cast+transpose with amax >= 0.7 of memcpy"] == (pytest.approx(0.5), "**no**")
    assert got["1x128 block quantize (both usages) >= 0.5 of memcpy"] == (None, "not measured")
    assert got["octet demo --backend cpu: fp8-delayed ms/step below fp32's"] == (pytest.approx(1.25), "yes")
    assert got["octet demo --backend cpu: fp8-block ms/step below fp32's"] == (pytest.approx(10 / 12), "**no**")
    assert not any("bf16" in t for t in got if t.startswith("octet demo"))


def test_equal_demo_times_do_not_meet_below():
    (t,) = cpu_report.issue_targets([], None, None, {}, {"fp32": 10.0, "fp8-current": 10.0})[-1:]
    assert t.verdict == "**no**"


def test_demo_table_is_parsed_by_its_header():
    assert cpu_report.demo_ms_per_step(DEMO_OUTPUT) == {"fp32": 65.0, "bf16": 16.7, "fp8-delayed": 11.6,
                                                       "fp8-static": 14.0}
    with pytest.raises(ValueError, match="no results table"):
        cpu_report.demo_ms_per_step("nothing here\n")


def test_benchmark_counters_take_the_median_aggregate():
    data = {"benchmarks": [
        {"name": "BM_X/2/manual_time_mean", "run_name": "BM_X/2/manual_time", "run_type": "aggregate",
         "aggregate_name": "mean", "ratio_vs_memcpy": 0.9},
        {"name": "BM_X/2/manual_time_median", "run_name": "BM_X/2/manual_time", "run_type": "aggregate",
         "aggregate_name": "median", "ratio_vs_memcpy": 0.4},
        {"name": "BM_X/2/manual_time_stddev", "run_name": "BM_X/2/manual_time", "run_type": "aggregate",
         "aggregate_name": "stddev", "ratio_vs_memcpy": 0.1},
        {"name": "BM_Y/manual_time", "run_name": "BM_Y/manual_time", "run_type": "iteration",
         "ratio_vs_memcpy": 0.7}]}
    c = cpu_report.benchmark_counters(json.dumps(data))
    assert c["BM_X/2/manual_time"]["ratio_vs_memcpy"] == 0.4
    assert c["BM_Y/manual_time"]["ratio_vs_memcpy"] == 0.7


def test_machine_class_from_each_class_flags():
    # Flags as /proc/cpuinfo lists them on each class (subsets of real lines).
    assert cpu_report.machine_class({"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "amx_int8"}) == "AMX"
    assert cpu_report.machine_class({"avx2", "avx512f", "avx512_bf16", "avx512_vbmi"}) == "AVX-512 BF16"  # Zen 4
    assert cpu_report.machine_class({"avx2", "avx512f", "avx512_vbmi", "avx512_vnni"}) == "AVX-512"  # Ice Lake
    assert cpu_report.machine_class({"avx2", "fma", "f16c"}) == "AVX2"
    assert cpu_report.machine_class({"sse4_2"}) == "below AVX2"
    assert cpu_report.machine_class({"avx2", "avx512f", "amx_tile"}) == "AVX-512"  # tiles without AMX-BF16
    text = "processor\t: 0\nflags\t\t: fpu avx2 avx512f\n\nprocessor\t: 1\nflags\t\t: fpu\n"
    assert cpu_report.cpu_flags(text) == {"fpu", "avx2", "avx512f"}


def test_class_sections_are_replaced_alone_and_new_ones_inserted_in_order():
    b512, e512 = cpu_report.class_marks("AVX-512")
    doc = (f"head\n### {cpu_report.MACHINE_CLASS_NAMES['AVX-512']}\n\n{b512}\nold\n{e512}\n\n"
           f"{cpu_report.CLASSES_END_MARK}\ntail\n")
    once = cpu_report.replace_class_section(doc, "AVX-512", "new table\n")
    assert once == doc.replace("\nold\n", "\nnew table\n")
    assert cpu_report.replace_class_section(once, "AVX-512", "new table") == once
    # AMX comes before AVX-512; AVX2 after it, at the end marker.
    amx = cpu_report.replace_class_section(once, "AMX", "amx table")
    bamx, eamx = cpu_report.class_marks("AMX")
    assert amx.index(bamx) < amx.index("amx table") < amx.index(eamx) < amx.index(b512)
    assert f"### {cpu_report.MACHINE_CLASS_NAMES['AMX']}" in amx
    avx2 = cpu_report.replace_class_section(amx, "AVX2", "avx2 table")
    assert avx2.index(e512) < avx2.index("avx2 table") < avx2.index(cpu_report.CLASSES_END_MARK)
    assert cpu_report.replace_class_section(avx2, "AMX", "amx again").count("amx table") == 0
    with pytest.raises(ValueError, match="not one of"):
        cpu_report.class_marks("SSE")
    with pytest.raises(ValueError, match="machine classes end"):
        cpu_report.replace_class_section("no markers", "AVX2", "x")
    with pytest.raises(ValueError, match="before"):
        cpu_report.replace_class_section(f"{e512}\n{b512}", "AVX-512", "x")


def test_emulated_is_a_rate_under_a_twentieth_of_the_native_one():
    assert cpu_report.emulated(1e9, 30e9)
    assert not cpu_report.emulated(2e9, 30e9)
    assert not cpu_report.emulated(50e9, 30e9)


def test_benchmarks_md_has_each_class_section_at_most_once_and_the_end_marker():
    with open(DOCS) as f:
        doc = f.read()
    assert doc.count(cpu_report.CLASSES_END_MARK) == 1
    sections = 0
    for cls in cpu_report.MACHINE_CLASSES:
        begin, end = cpu_report.class_marks(cls)
        assert doc.count(begin) == doc.count(end) <= 1, cls
        if doc.count(begin):
            sections += 1
            assert doc.index(begin) < doc.index(end) < doc.index(cpu_report.CLASSES_END_MARK)
            assert cpu_report.plot_file(cls) in doc[doc.index(begin):doc.index(end)], cls
    assert sections >= 1
