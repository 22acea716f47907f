"""scripts/shape_frontier.py (research code) prices a core of any array
shape at the paper's chip as the product prices a named design: checked
against :func:`kaleido.efficiency.chip_area_ratio` on the committed
synthesis snapshot, and its configurations against the named designs."""

import importlib.util
import pathlib

import pytest

from kaleido.config import DESIGNS, KaleidoConfig
from kaleido.efficiency import SNAPSHOT, chip_area_ratio, load_synth

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "shape_frontier.py"


def _script():
    spec = importlib.util.spec_from_file_location("shape_frontier", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("design", ["default", "one_array", "paper"])
def test_chip_ratio_is_the_products(design):
    synth = load_synth(SNAPSHOT)
    got = _script().chip_area_ratio(synth.core[design], synth)
    assert got == pytest.approx(chip_area_ratio(design, synth), rel=1e-12)


def test_shapes_are_the_default_design():
    frontier = _script()
    assert frontier.shape_config("1x1") == KaleidoConfig.preset("hunyuan", "default")
    four = frontier.shape_config("4x4")
    assert four.sub_arrays is None and four.pv_pairs == DESIGNS["default"]["pv_pairs"]
    assert frontier.shape_config("4x1").sub_arrays == (4, 1)
