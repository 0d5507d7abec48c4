"""Device profiles, detection on fake board roots and on this machine, telemetry, placement.

Jetson and GPU tools cannot run here: their output is tested on lines recorded from real
boards (sources noted); psutil, /proc and threads are tested for real on this machine.
"""
import json
import os
import time

import psutil
import pytest
import yaml

from edgert.devices import (PlacementError, ProfileError, Sampler, check_placement, detect, load_profile,
                     measure_peak_memory, parse_nvidia_smi, parse_tegrastats, profiles)
from edgert.devices.detect import choose_profile, parse_gpus, parse_l4t
from edgert.devices.profile import PROFILES
from edgert.devices.telemetry import summarize_nvidia_smi, summarize_tegrastats

SHIPPED = {"jetson-orin-nano-8gb", "jetson-orin-nx-16gb", "jetson-agx-orin-64gb",
           "jetson-xavier-nx", "desktop-cuda", "cpu"}

# tegrastats lines recorded on real boards (from public test fixtures and logs).
ORIN_NANO_JP6 = (  # Orin Nano 8GB dev kit, L4T r36
    "11-30-2025 13:26:01 RAM 2461/7620MB (lfb 3x2MB) SWAP 1243/3810MB (cached 5MB) "
    "CPU [19%@729,14%@729,22%@729,8%@729,15%@729,17%@729] EMC_FREQ 4%@2133 GR3D_FREQ 0%@[305] "
    "NVDEC off NVJPG off NVJPG1 off VIC off OFA off APE 200 cpu@46.531C soc2@47.312C "
    "soc0@46.593C gpu@48.218C tj@48.843C soc1@48.843C VDD_IN 5704mW/5704mW "
    "VDD_CPU_GPU_CV 831mW/831mW VDD_SOC 1624mW/1624mW")
ORIN_NX_JP5 = (  # Orin NX 16GB, L4T r35, half the cores offline (power mode)
    "RAM 6334/15388MB (lfb 1770x4MB) SWAP 491/7694MB (cached 0MB) "
    "CPU [6%@729,9%@729,5%@729,16%@729,off,off,off,off] EMC_FREQ 0%@2133 GR3D_FREQ 0%@611 "
    "VIC_FREQ 729 APE 174 CV0@45.812C CPU@47.937C SOC2@46.093C SOC0@46.968C CV1@46.406C "
    "GPU@45.875C tj@48.875C SOC1@48.875C CV2@45.75C VDD_IN 5299mW/5299mW "
    "VDD_CPU_GPU_CV 773mW/773mW VDD_SOC 1424mW/1424mW")
AGX_ORIN_JP5 = (  # AGX Orin 64GB, L4T r35: no board-input rail, sensors off read -256C
    "04-24-2023 00:01:24 RAM 1282/62795MB (lfb 15152x4MB) SWAP 0/31398MB (cached 0MB) "
    "CPU [0%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729] "
    "EMC_FREQ 0%@2133 GR3D_FREQ 0%@0 GR3D2_FREQ 0%@0 VIC_FREQ 729 APE 174 CV0@-256C "
    "CPU@42.593C Tboard@32C SOC2@39.343C Tdiode@33.25C SOC0@39.375C CV1@-256C GPU@-256C "
    "tj@42.593C SOC1@40.468C CV2@-256C VDD_GPU_SOC 2399mW/2399mW VDD_CPU_CV 400mW/400mW "
    "VIN_SYS_5V0 4032mW/4032mW NC 0mW/0mW VDDQ_VDD2_1V8AO 301mW/301mW NC 0mW/0mW")
AGX_ORIN_JP6 = (  # AGX Orin 32GB, L4T r36: two GPCs, ragged spacing, engines listed
    "RAM 29114/30697MB (lfb 3x4MB)    SWAP 4915/15348MB (cached 1MB) CPU [3%@729,4%@729,0%@729,"
    "1%@729,0%@2201,100%@2201,1%@2201,0%@2201,100%@2201,0%@2201,0%@2201,0%@2201] "
    "EMC_FREQ 1%@2133 GR3D_FREQ 0%@[305,305] NVENC      off  NVDEC    off NVJPG off NVJPG1    off"
    "         VIC        off          OFA           off          NVDLA0    off       NVDLA1     "
    "off          PVA0_FREQ off         APE           174        cpu@53.062C soc2@48.25C "
    "soc0@48.843C  gpu@47.812C tj@53.062C soc1@48.968C    VDD_GPU_SOC 3205mW/3205mW "
    "VDD_CPU_CV 4405mW/4405mW VIN_SYS_5V0 4767mW/4767mW")
XAVIER_NX_JP5 = (  # Xavier NX, L4T r35 (JetPack 5.1.2)
    "07-09-2024 13:31:31 RAM 3168/6851MB (lfb 2x4MB) SWAP 161/3426MB (cached 0MB) "
    "CPU [23%@1397,17%@1192,16%@1190,13%@1190,23%@1190,10%@1190] EMC_FREQ 2%@204 "
    "GR3D_FREQ 0%@[114] VIC_FREQ 115 APE 150 AUX@45C CPU@46.5C thermal@45.6C AO@45C GPU@45.5C "
    "PMIC@50C VDD_IN 2763mW/2846mW VDD_CPU_GPU_CV 650mW/670mW VDD_SOC 650mW/711mW")
XAVIER_NX_JP4 = (  # Xavier NX, L4T r32: rails without a unit
    "RAM 4412/7772MB (lfb 237x4MB) SWAP 139/3886MB (cached 2MB) "
    "CPU [9%@1190,6%@1190,6%@1190,5%@1190,4%@1190,8%@1267] EMC_FREQ 10%@1600 GR3D_FREQ 62%@306 "
    "APE 150 MTS fg 0% bg 0% AO@41.5C GPU@43C PMIC@100C AUX@41.5C CPU@43.5C thermal@42.55C "
    "VDD_IN 4067/4067 VDD_CPU_GPU_CV 738/738 VDD_SOC 1353/1353")
NANO_JP4 = (  # Jetson Nano, L4T r32: POM_ rails, IRAM
    "RAM 1923/3964MB (lfb 2x2MB) SWAP 191/1982MB (cached 6MB) IRAM 0/252kB(lfb 252kB) "
    "CPU [5%@1224,4%@1224,3%@1224,6%@1224] EMC_FREQ 0%@1600 GR3D_FREQ 0%@76 APE 25 PLL@37C "
    "CPU@40C PMIC@50C GPU@40C AO@45C thermal@40C POM_5V_IN 1750/1628 POM_5V_GPU 0/0 "
    "POM_5V_CPU 366/406")

# nvidia-smi --query-gpu=name,memory.total,compute_cap,driver_version --format=csv,noheader,nounits
SMI_GPUS = ("NVIDIA GeForce RTX 4090, 24564, 8.9, 550.54.14\n"
            "NVIDIA RTX A2000 12GB, 12282, 8.6, 550.54.14\n")
# nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu ...
SMI_USAGE = ["97, 7431, 24564, 312.45, 71", "35, 7431, 24564, 118.02, 64",
             "0, 1, 24564, [N/A], 38"]


# --- profiles ---------------------------------------------------------------------------

def test_every_shipped_profile_loads_and_says_what_the_board_is():
    assert set(profiles()) == SHIPPED
    loaded = {name: load_profile(name) for name in profiles()}
    for name, profile in loaded.items():
        assert profile.name == name
        assert profile.ort_providers[-1] == "CPUExecutionProvider"
        if profile.memory_total_mb:
            assert profile.memory_budget_mb < profile.memory_total_mb
    orins = ["jetson-orin-nano-8gb", "jetson-orin-nx-16gb", "jetson-agx-orin-64gb"]
    assert {loaded[n].compute_capability for n in orins} == {"8.7"}
    assert loaded["jetson-xavier-nx"].compute_capability == "7.2"
    assert [loaded[n].dla_cores for n in orins + ["jetson-xavier-nx"]] == [0, 2, 2, 2]
    assert loaded["jetson-orin-nano-8gb"].precisions == ["int8", "fp16", "fp32"]
    assert loaded["jetson-xavier-nx"].precisions == ["fp16", "fp32"]
    assert loaded["cpu"].precisions == ["fp32"]
    assert loaded["cpu"].ort_providers == ["CPUExecutionProvider"]
    assert loaded["cpu"].backends[0] == "ort"
    assert loaded["jetson-orin-nx-16gb"].ort_providers[0] == "TensorrtExecutionProvider"
    assert all(loaded[n].shared_memory for n in orins) and not loaded["desktop-cuda"].shared_memory


def test_power_modes_are_nvidias_ids_names_and_budgets():
    modes = lambda ms: {m.id: (m.name, m.watts) for m in ms}  # noqa: E731
    nano = load_profile("jetson-orin-nano-8gb")
    assert modes(nano.power_modes) == {0: ("15W", 15), 1: ("7W", 7)}
    assert modes(nano.super_power_modes)[2] == ("MAXN_SUPER", None)
    assert modes(load_profile("jetson-agx-orin-64gb").power_modes) == {
        0: ("MAXN", None), 1: ("15W", 15), 2: ("30W", 30), 3: ("50W", 50)}
    assert modes(load_profile("jetson-orin-nx-16gb").super_power_modes)[4] == ("40W", 40)
    xavier = modes(load_profile("jetson-xavier-nx").power_modes)
    assert xavier[2] == ("MODE_15W_6CORE", 15) and xavier[8] == ("MODE_20W_6CORE", 20)
    assert load_profile("cpu").power_modes == []


def test_an_unknown_profile_names_the_ones_there_are():
    with pytest.raises(ProfileError) as err:
        load_profile("jetson-orin-nano-4gb")
    assert "jetson-orin-nano-4gb" in str(err.value)
    assert all(name in str(err.value) for name in SHIPPED)


def test_a_profile_of_your_own_loads_by_path(tmp_path):
    text = (PROFILES / "jetson-orin-nano-8gb.yaml").read_text()
    path = tmp_path / "orin-nano-4gb.yaml"
    path.write_text(text.replace("memory_budget_mb: 4000", "memory_budget_mb: 1800")
                    .replace("memory_total_mb: 8192", "memory_total_mb: 4096"))
    profile = load_profile(path)
    assert (profile.memory_budget_mb, profile.memory_total_mb) == (1800, 4096)


@pytest.mark.parametrize("edit, field", [
    ({"gpu_cores": 1024}, "gpu_cores"),
    ({"precisions": ["fp8"]}, "precisions.0"),
    ({"ort_providers": ["CPUExecutionProvider", "CUDAExecutionProvider"]}, "ort_providers"),
    ({"memory_budget_mb": 9000}, "memory_budget_mb (9000) is more than memory_total_mb"),
    ({"power_modes": [{"id": 0, "name": "15W"}]}, "power_modes.0.watts"),
])
def test_a_bad_profile_names_the_file_and_the_field(tmp_path, edit, field):
    data = yaml.safe_load((PROFILES / "jetson-orin-nano-8gb.yaml")
                          .read_text())
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**data, **edit}))
    with pytest.raises(ProfileError) as err:
        load_profile(str(path))
    assert str(path) in str(err.value) and field in str(err.value)


def test_threads_never_exceed_the_cores_this_process_may_use():
    usable = len(os.sched_getaffinity(0))
    for name in profiles():
        assert 1 <= load_profile(name).threads() <= usable
    assert load_profile("cpu").threads() == max(1, usable - 1)


# --- detection --------------------------------------------------------------------------

def board(root, model=None, release=None, nvpmodel=None, status=None, mem_kb=None, cores=0):
    """A fake root with a board's files, in their real formats."""
    files = {"proc/device-tree/model": model.encode() + b"\0" if model else None,
             "etc/nv_tegra_release": release.encode() if release else None,
             "etc/nvpmodel.conf": nvpmodel.encode() if nvpmodel else None,
             "var/lib/nvpmodel/status": status.encode() if status else None,
             "proc/meminfo": f"MemTotal:       {mem_kb} kB\nMemFree: 1 kB\n".encode()
             if mem_kb else None,
             "proc/cpuinfo": "".join(f"processor\t: {i}\nBogoMIPS\t: 62.50\n\n"
                                     for i in range(cores)).encode() if cores else None}
    for rel, content in files.items():
        if content is not None:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(content)
    return root


R35 = ("# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, "
       "DATE: Tue Aug  1 19:57:35 UTC 2023\n# KERNEL_VARIANT: oot\n")
R36 = ("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, "
       "DATE: Wed Jan  8 01:49:37 UTC 2025\n")


@pytest.mark.parametrize("model, release, mem_kb, cores, profile", [
    ("NVIDIA Jetson Orin Nano Developer Kit", R35, 7802172, 6, "jetson-orin-nano-8gb"),
    ("NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super", R36, 7802172, 6,
     "jetson-orin-nano-8gb"),
    ("NVIDIA Jetson Orin NX Engineering Reference Developer Kit", R35, 15757428, 8,
     "jetson-orin-nx-16gb"),
    ("NVIDIA Jetson AGX Orin Developer Kit", R36, 64335836, 12, "jetson-agx-orin-64gb"),
    ("Jetson AGX Orin", R35, 64335836, 12, "jetson-agx-orin-64gb"),
    ("NVIDIA Jetson Xavier NX Developer Kit", R35, 7015464, 6, "jetson-xavier-nx"),
])
def test_jetson_boards_get_their_profile(tmp_path, model, release, mem_kb, cores, profile):
    found = detect(board(tmp_path, model, release, mem_kb=mem_kb, cores=cores))
    assert found.profile == profile
    assert found.jetson_model == model and model in found.reasons[0]
    assert found.l4t == ("35.4.1" if release is R35 else "36.4.3")
    assert found.cpu_cores == cores and found.memory_total_mb == round(mem_kb / 1024, 1)
    assert found.gpus == [] and found.warnings == []


def test_a_jetson_reads_its_power_modes_and_the_current_one(tmp_path):
    conf = ("< PARAM TYPE=FILE NAME=CPU_ONLINE >\nCORE_0 /sys/devices/system/cpu/cpu0/online\n"
            "< POWER_MODEL ID=0 NAME=15W >\nCPU_ONLINE CORE_0 1\n< POWER_MODEL ID=1 NAME=25W >\n"
            "< POWER_MODEL ID=2 NAME=MAXN_SUPER >\n< POWER_MODEL ID=3 NAME=7W >\n"
            "< PM_CONFIG DEFAULT=2 >\n")
    found = detect(board(tmp_path, "NVIDIA Jetson Orin Nano Engineering Reference Developer Kit "
                         "Super", R36, nvpmodel=conf, status="pmode:0002 fmode:quiet\n"))
    assert found.power_modes == [{"id": 0, "name": "15W"}, {"id": 1, "name": "25W"},
                                 {"id": 2, "name": "MAXN_SUPER"}, {"id": 3, "name": "7W"}]
    assert found.power_mode == 2
    assert found.power_modes == [{"id": m.id, "name": m.name}
                                 for m in load_profile(found.profile).super_power_modes]


def test_a_smaller_module_than_the_profile_is_warned_about(tmp_path):
    found = detect(board(tmp_path, "NVIDIA Jetson Orin Nano Developer Kit", R35, mem_kb=3624032))
    assert found.profile == "jetson-orin-nano-8gb"
    assert len(found.warnings) == 1 and "3539 MB" in found.warnings[0]
    assert "memory_budget_mb" in found.warnings[0]


def test_a_jetson_without_a_profile_falls_back_to_cpu_and_says_so(tmp_path):
    found = detect(board(tmp_path, "NVIDIA Jetson Nano Developer Kit",
                         "# R32 (release), REVISION: 7.1, GCID: 29818004, BOARD: t210ref, "
                         "EABI: aarch64, DATE: Sat Feb 19 17:05:08 UTC 2022\n"))
    assert found.profile == "cpu" and found.l4t == "32.7.1"
    assert "no matching profile" in found.reasons[0] and "devices/profiles" in found.reasons[0]


def test_a_root_without_jetson_files_or_nvidia_smi_is_cpu(tmp_path):
    found = detect(board(tmp_path, mem_kb=16384000, cores=4))
    assert found.profile == "cpu"
    assert any("nvidia-smi not on PATH" in r for r in found.reasons)
    assert found.cpu_cores == 4


def test_nvidia_smi_gpus_parse_and_choose_desktop_cuda():
    gpus = parse_gpus(SMI_GPUS)
    assert [(g.name, g.memory_total_mb, g.compute_capability, g.driver) for g in gpus] == [
        ("NVIDIA GeForce RTX 4090", 24564.0, "8.9", "550.54.14"),
        ("NVIDIA RTX A2000 12GB", 12282.0, "8.6", "550.54.14")]
    profile, reasons = choose_profile(None, False, gpus)
    assert profile == "desktop-cuda" and "RTX 4090" in reasons[0] and len(reasons) == 2
    assert parse_gpus("Tesla T4, [N/A], 7.5, 535.104.05")[0].memory_total_mb is None
    with pytest.raises(ValueError, match="expected 4"):
        parse_gpus("Field \"compute_cap\" is not a valid field to query.")


def recorded_tool(root, name, stdout, code=0):
    """A tool under root/usr/bin that replays output recorded from the real one."""
    tool = root / "usr/bin" / name
    tool.parent.mkdir(parents=True, exist_ok=True)
    tool.write_text(f"#!/bin/sh\ncat <<'EOF'\n{stdout}EOF\nexit {code}\n")
    tool.chmod(0o755)


def test_nvidia_smi_under_root_is_run_and_its_gpus_decide(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin")
    recorded_tool(tmp_path, "nvidia-smi",
                  "NVIDIA GeForce RTX 3050 Laptop GPU, 4096, 8.6, 535.183.01\n")
    found = detect(board(tmp_path, mem_kb=16384000, cores=8))
    assert found.profile == "desktop-cuda" and found.gpus[0].memory_total_mb == 4096
    assert "RTX 3050" in found.reasons[0]
    assert len(found.warnings) == 1 and "6000 MB budget" in found.warnings[0]


def test_a_failing_nvidia_smi_is_cpu_with_its_message(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin")
    recorded_tool(tmp_path, "nvidia-smi", "NVIDIA-SMI has failed because it couldn't communicate "
                  "with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed "
                  "and running.\n", code=9)
    found = detect(board(tmp_path))
    assert found.profile == "cpu" and found.gpus == []
    assert any("exited 9: NVIDIA-SMI has failed" in r for r in found.reasons)


def test_a_jetson_wins_over_a_gpu_and_l4t_alone_means_jetson():
    gpus = parse_gpus(SMI_GPUS)
    assert choose_profile("NVIDIA Jetson AGX Orin Developer Kit", True, gpus)[0] == \
        "jetson-agx-orin-64gb"
    assert choose_profile(None, True, [])[0] == "cpu"
    assert parse_l4t("R35 without the format") is None


def test_this_machine_is_detected_for_real():
    found = detect()
    assert found.profile == "cpu"
    assert found.cpu_cores == psutil.cpu_count()
    assert found.memory_total_mb == pytest.approx(psutil.virtual_memory().total / 2**20, abs=1)
    assert found.reasons
    assert json.loads(json.dumps(found.to_dict()))["profile"] == "cpu"


# --- telemetry --------------------------------------------------------------------------

def test_tegrastats_orin_nano_jetpack6():
    s = parse_tegrastats(ORIN_NANO_JP6)
    assert (s["ram_used_mb"], s["ram_total_mb"], s["swap_used_mb"]) == (2461, 7620, 1243)
    assert s["cpu_pct"] == [19, 14, 22, 8, 15, 17] and s["cpu_mhz"] == [729] * 6
    assert (s["emc_pct"], s["emc_mhz"], s["gpu_pct"], s["gpu_mhz"]) == (4, 2133, 0, 305)
    assert s["temps_c"]["tj"] == 48.843 and s["temps_c"]["gpu"] == 48.218
    assert s["rails_mw"]["VDD_IN"] == {"now": 5704, "avg": 5704}
    assert s["power_mw"] == 5704  # the board input, not the sum with its own sub-rails


def test_tegrastats_offline_cores_and_uppercase_sensors():
    s = parse_tegrastats(ORIN_NX_JP5)
    assert s["cpu_pct"] == [6, 9, 5, 16, None, None, None, None]
    assert s["gpu_mhz"] == 611 and s["temps_c"]["cpu"] == 47.937 and "CPU" not in s["temps_c"]


def test_tegrastats_agx_orin_sums_rails_and_drops_sensors_that_are_off():
    s = parse_tegrastats(AGX_ORIN_JP5)
    assert "cv0" not in s["temps_c"] and "gpu" not in s["temps_c"]
    assert s["temps_c"]["tj"] == 42.593
    assert s["power_mw"] == 2399 + 400 + 4032 + 0 + 301
    j6 = parse_tegrastats(AGX_ORIN_JP6)
    assert (j6["gpu_pct"], j6["gpu_mhz"], j6["ram_used_mb"]) == (0, 305, 29114)
    assert j6["cpu_pct"][5] == 100 and len(j6["cpu_pct"]) == 12
    assert j6["power_mw"] == 3205 + 4405 + 4767 and "RAM" not in j6["rails_mw"]


def test_tegrastats_xavier_and_jetpack4_formats():
    j5 = parse_tegrastats(XAVIER_NX_JP5)
    assert j5["rails_mw"]["VDD_IN"] == {"now": 2763, "avg": 2846} and j5["gpu_mhz"] == 114
    j4 = parse_tegrastats(XAVIER_NX_JP4)
    assert (j4["gpu_pct"], j4["gpu_mhz"], j4["power_mw"]) == (62, 306, 4067)
    assert j4["temps_c"]["thermal"] == 42.55 and j4["cpu_mhz"][-1] == 1267
    nano = parse_tegrastats(NANO_JP4)
    assert nano["power_mw"] == 1750 and nano["rails_mw"]["POM_5V_CPU"] == {"now": 366, "avg": 406}
    assert "IRAM" not in nano["rails_mw"] and nano["ram_total_mb"] == 3964


def test_a_line_that_is_not_tegrastats_is_an_error():
    with pytest.raises(ValueError, match="not a tegrastats line"):
        parse_tegrastats("tegrastats: command not found")


def test_tegrastats_summary_over_recorded_lines():
    busy = ORIN_NANO_JP6.replace("GR3D_FREQ 0%@[305]", "GR3D_FREQ 99%@[612]").replace(
        "VDD_IN 5704mW", "VDD_IN 9704mW").replace("RAM 2461/", "RAM 6712/")
    summary = summarize_tegrastats([parse_tegrastats(ORIN_NANO_JP6), parse_tegrastats(busy)])
    assert summary["gpu_pct_mean"] == 49.5 and summary["gpu_pct_max"] == 99
    assert summary["power_w_max"] == 9.7 and summary["power_w_mean"] == 7.7  # 2 decimals
    assert summary["ram_used_peak_mb"] == 6712 and summary["temperature_c_max"] == 48.84


def test_nvidia_smi_usage_lines_and_summary():
    records = [parse_nvidia_smi(line)[0] for line in SMI_USAGE]
    assert records[0] == {"gpu_pct": 97, "memory_used_mb": 7431, "memory_total_mb": 24564,
                          "power_w": 312.45, "temperature_c": 71}
    assert records[2]["power_w"] is None
    summary = summarize_nvidia_smi(records)
    assert summary["gpu_pct_max"] == 97 and summary["gpu_memory_used_peak_mb"] == 7431
    assert summary["power_w_mean"] == pytest.approx((312.45 + 118.02) / 2, abs=0.01)
    assert summary["temperature_c_max"] == 71 and summary["samples"] == 3


def test_sampler_sees_this_process_get_busy():
    sampler = Sampler(interval=0.05).start()
    time.sleep(0.5)
    busy_from = time.monotonic() - sampler._t0
    end = time.monotonic() + 0.8
    while time.monotonic() < end:
        sum(i * i for i in range(1000))
    summary = sampler.stop()
    idle = [s["cpu_pct"] for s in sampler.samples if 0.1 < s["t"] < busy_from]
    busy = [s["cpu_pct"] for s in sampler.samples if s["t"] > busy_from + 0.15]
    assert len(idle) >= 4 and len(busy) >= 5
    idle_mean, busy_mean = sum(idle) / len(idle), sum(busy) / len(busy)
    assert busy_mean > max(20.0, 3 * idle_mean)  # ~100 alone, ~35 beside two busy processes
    assert summary["rss_peak_mb"] > 0 and summary["cpu_pct_max"] >= max(busy)
    assert summary["samples"] == len(sampler.samples)


# --- placement --------------------------------------------------------------------------

def test_a_model_that_fits_passes_and_one_that_does_not_says_how_to_fix_it():
    nano = load_profile("jetson-orin-nano-8gb")
    check_placement(3999.0, nano, "bundle bolt")
    with pytest.raises(PlacementError) as err:
        check_placement(5200.4, nano, "bundle bolt")
    message = str(err.value)
    for part in ("bundle bolt", "5200 MB", "4000 MB", "'jetson-orin-nano-8gb'", "batch",
                 "int8", "fp16", "desktop-cuda (6000 MB), jetson-orin-nx-16gb (10000 MB)"):
        assert part in message
    assert "jetson-xavier-nx" not in message  # its 3500 MB would not hold the model either
    with pytest.raises(PlacementError, match="no shipped device profile"):
        check_placement(1e6, load_profile("cpu"), "bundle huge")
    with pytest.raises(ValueError, match="finite"):
        check_placement(float("nan"), nano, "bundle bolt")


@pytest.mark.parametrize("method", ["hwm", "sample"])
def test_peak_memory_of_an_allocation_that_is_freed_before_fn_returns(method):
    def load():
        block = bytearray(120 * 2**20)  # written, so every page is resident
        block[::4096] = b"\1" * len(block[::4096])
        time.sleep(0.05)
        del block

    peak = measure_peak_memory(load, method=method)
    assert 110 < peak < 200
    assert measure_peak_memory(lambda: None, method=method) < 20
