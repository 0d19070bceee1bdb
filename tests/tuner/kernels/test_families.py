from __future__ import annotations

import pytest

from tuner.core.errors import InputError
from tuner.kernels.families import FAMILIES, get_family, parse_config
from tuner.kernels.representative import ALL_REPRESENTATIVE


@pytest.mark.parametrize("name", ALL_REPRESENTATIVE)
def test_representative_configs_are_valid_and_names_round_trip(name: str) -> None:
    config = parse_config(name)
    assert config.name == name
    assert get_family(config.family).broken_rules(config) == []


def test_params_form_equals_name_form() -> None:
    by_params = parse_config("BM=128,BN=128,BK=8,TM=8,TN=8", family="blocktile_2d")
    assert by_params == parse_config("blocktile_2d_bm128_bn128_bk8_tm8_tn8")
    assert hash(by_params) == hash(parse_config("blocktile_2d_bm128_bn128_bk8_tm8_tn8"))


def test_family_prefix_match_prefers_the_longest_family() -> None:
    assert parse_config("smem_tiling_bm8_bn32_bk8").family == "smem_tiling"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("smem_tiling_bm64_bn64_bk8", "at most 1024"),
        ("blocktile_1d_bm32_bn32_bk8_tm64", "multiple of TM"),
        ("blocktile_2d_bm32_bn32_bk8_tm16_tn16", "whole number of warps"),
        ("vectorized_bm64_bn32_bk8_tm4_tn4", "B tile loads in whole float4 passes"),
        ("warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t256", "one warp per warp tile"),
        ("warptile_bm128_bn128_bk16_wm64_wn32_wni4_tm8_tn8_t256", "WMITER is a whole number"),
        ("warptile_bm128_bn128_bk16_wm64_wn128_wni1_tm8_tn2_t64", "lanes tile a subtile"),
        ("pipelined_bm128_bn128_bk8_wm64_wn64_wni4_tm8_tn4_t256_s2", "one warp per warp tile"),
    ],
)
def test_rules_reject_with_their_reason(name: str, reason: str) -> None:
    config = parse_config(name)
    broken = get_family(config.family).broken_rules(config)
    assert broken, f"{name} should be invalid"
    assert any(reason in b for b in broken), broken


def test_warptile_derived_values() -> None:
    config = parse_config("warptile_bm64_bn128_bk8_wm32_wn64_wni2_tm4_tn4_t128")
    values = get_family("warptile").template_values(config)
    assert values["WMITER"] == 2 and values["WSUBM"] == 16 and values["WSUBN"] == 32
    assert values["THREADS"] == 128


def test_every_family_rule_has_a_reason_and_params_have_docs() -> None:
    for family in FAMILIES.values():
        assert family.doc
        assert all(rule.reason for rule in family.rules)
        assert all(p.doc and p.values == tuple(sorted(p.values)) for p in family.params)


@pytest.mark.parametrize(
    ("text", "family", "message"),
    [
        ("nope_bm1", None, "must start with a family"),
        ("warptile_bm128_zz3", None, "unreadable part"),
        ("BM=1,BN=2", None, "name its family"),
        ("BM=1,BN=2", "smem_tiling", "missing: BK"),
        ("BM=1,BN=2,BK=3,XX=4", "smem_tiling", "unknown: XX"),
        ("BM=0,BN=2,BK=3", "smem_tiling", "BM must be a positive integer"),
        ("BM=a", "smem_tiling", "NAME=INTEGER"),
        ("smem_tiling_bm8_bn32_bk8", "warptile", "belongs to family smem_tiling"),
        ("BM=1", "unknown_family", "unknown family"),
    ],
)
def test_parse_config_errors(text: str, family: str | None, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_config(text, family)
