"""A GPU's probed rates kept beside the kernel cache (``tuner.data.probed_rates``): read back for
the same GPU and software only, and a damaged file is a miss."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tuner.data.probed_rates import rates_key, rates_path, read_probed, write_probed
from tuner.kernels.resources import table_device
from tuner.model.rates import DeviceRates

H100 = table_device("sm_90")
STACK = {"driver": 13000, "cuda_runtime": 13020}
RATES = DeviceRates(63.7, 60.1, 3.1, 2.4, "probed on the test GPU")


def test_rates_are_read_back_for_the_same_gpu_and_software(tmp_path: Path) -> None:
    assert read_probed(H100, STACK, tmp_path) is None
    write_probed(H100, STACK, RATES, tmp_path)
    assert read_probed(H100, STACK, tmp_path) == RATES
    # Another driver, or another GPU of the same name and a different SM count, probes anew.
    assert read_probed(H100, {**STACK, "driver": 13010}, tmp_path) is None
    assert read_probed(replace(H100, sm_count=114), STACK, tmp_path) is None


def test_a_damaged_file_is_a_miss(tmp_path: Path) -> None:
    write_probed(H100, STACK, RATES, tmp_path)
    path = rates_path(rates_key(H100, STACK), tmp_path)
    path.write_text('{"version": 1, "key": ', encoding="utf-8")  # a torn write
    assert read_probed(H100, STACK, tmp_path) is None
    path.write_text("[]", encoding="utf-8")
    assert read_probed(H100, STACK, tmp_path) is None


def test_an_unwritable_folder_only_means_probing_again(tmp_path: Path) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder", encoding="utf-8")
    write_probed(H100, STACK, RATES, blocker)  # no error
    assert read_probed(H100, STACK, blocker) is None
