"""The testbench encoders agree with amaranth's own layouts."""

import numpy as np

from kaleido import KaleidoConfig
from kaleido.hdl.layouts import tile_layout
from kaleido.tb.driver import BeatEncoder, TileDecoder, encode_beat
from kaleido.tb.passes import random_pass


def test_beat_encoder_matches_layout_const(seed):
    rng = np.random.default_rng(seed)
    for rows, cols in ((4, 4), (2, 3), (1, 1)):
        cfg = KaleidoConfig.one_array(array_rows=rows, array_cols=cols, batch=6)
        enc = BeatEncoder(rows, cols)
        for beat in random_pass(rng, cfg)[0]:
            assert enc(beat) == encode_beat(beat, rows, cols)


def test_tile_decoder_matches_layout(seed):
    rng = np.random.default_rng(seed)
    layout = tile_layout(20)
    dec = TileDecoder(20)
    for _ in range(200):
        valid, phase, value = int(rng.integers(2)), int(rng.integers(4)), int(rng.integers(-(2**19), 2**19))
        bits = layout.const({"valid": valid, "phase": phase, "value": value}).as_value().value
        assert dec(bits) == (valid, phase, value)
