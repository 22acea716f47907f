"""scripts/shape_frontier.py (research code): its configurations are the
default design's on each array shape, and a bad shape is named."""

import importlib.util
import pathlib

import pytest

from kaleido.config import DESIGNS, KaleidoConfig

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "shape_frontier.py"


def _script():
    spec = importlib.util.spec_from_file_location("shape_frontier", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shapes_are_the_default_design():
    frontier = _script()
    assert frontier.shape_config("1x1") == KaleidoConfig.preset("hunyuan", "default")
    four = frontier.shape_config("4x4")
    assert four.sub_arrays is None and four.pv_pairs == DESIGNS["default"]["pv_pairs"]
    assert frontier.shape_config("4x1").sub_arrays == (4, 1)


@pytest.mark.parametrize("shape", ["3x1", "2", "axb"])
def test_a_bad_shape_is_named(shape):
    with pytest.raises(SystemExit, match=repr(shape)):
        _script().shape_dims(shape)
