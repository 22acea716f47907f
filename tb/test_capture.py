"""``kaleido capture`` (issue 16): tiny randomly initialised HunyuanVideo,
Wan and CogVideoX transformers built from a config on the CPU. Runs where
the optional extra ``.[capture]`` (torch, diffusers) is installed
(``make capture-venv``); skipped elsewhere."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")

from kaleido.capture import Capture, tiny_inputs, tiny_transformer  # noqa: E402
from kaleido.cli import main  # noqa: E402
from kaleido.golden.workloads import load  # noqa: E402
from kaleido.sweep import SweepConfig, discover, evaluate  # noqa: E402

#: per family: the latent grid after patching and the exchange-format split (t, width, height)
EXPECT = {
    "hunyuan": ((3, 4, 6), (4, 6, 6), 2),
    "wan": ((3, 4, 6), (4, 4, 4), 2),
    "cogvideox": ((3, 4, 6), (4, 6, 6), 2),
}


@pytest.fixture(scope="module", params=sorted(EXPECT))
def captured(request, tmp_path_factory):
    family = request.param
    out = tmp_path_factory.mktemp(family)
    model = tiny_transformer(family, seed=1)
    with torch.no_grad(), Capture(model, out, keep=True, prompt="random") as cap:
        for step in range(2):
            model(**tiny_inputs(model, seed=step))
    return family, out, cap


def test_grid_split_and_manifest(captured):
    family, out, cap = captured
    grid, split, layers = EXPECT[family]
    heads = int(cap.transformer.config.num_attention_heads)
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["heads"]) == 2 * layers * heads
    assert {(e["step"], e["layer"], e["head"]) for e in manifest["heads"]} == {
        (s, l, h) for s in range(2) for l in range(layers) for h in range(heads)
    }
    for e in manifest["heads"]:
        w = load(out / e["file"])
        assert w.grid == grid == tuple(e["grid"]) and w.split == split == tuple(e["split"])
        assert w.q.dtype == np.int8 and w.n == np.prod(grid) and w.d == sum(split)
    assert len(discover(out)) == len(manifest["heads"])


def _unpermute(x, perm):
    out = np.empty_like(x)
    out[:, perm] = x
    return out


def test_dumped_tensors_reproduce_the_attention(captured):
    """Each dumped head, dequantised and put back in its place (video
    tokens, diffusers channel order) in the model's own attention call,
    reproduces the model's attention output for the video queries; every
    dumped value is within half a quantisation step of the model's. A head
    put back one token off does not."""
    family, out, cap = captured
    assert cap.records
    for rec in cap.records:
        g = rec["geometry"]
        video, perm = g.video(rec["q"].shape[-2]), g.permutation
        args, kwargs = rec["call"]
        for h in range(rec["q"].shape[1]):
            w = load(out / f"s{rec['step']}_l{rec['layer']}_h{h}.npz")
            tensors = {}
            for name, x, s in (("q", w.q, w.q_scale), ("k", w.k, w.k_scale), ("v", w.v, w.v_scale)):
                deq = _unpermute(x.astype(np.float64) * s, perm)
                true = rec[name][0, h, video].double().numpy()
                assert np.abs(deq - true).max() <= s / 2 * (1 + 1e-6), (family, name)
                tensors[name] = deq
            for shift, expect_close in ((0, True), (1, False)):
                q, k, v = (rec[n].clone() for n in "qkv")
                for t, n in ((q, "q"), (k, "k"), (v, "v")):
                    t[0, h, video] = torch.from_numpy(np.roll(tensors[n], shift, axis=0)).to(t.dtype)
                o = cap.original(q, k, v, *args, **kwargs)[0, h, video].double().numpy()
                ref = rec["out"][0, h, video].double().numpy()
                rel = np.linalg.norm(o - ref) / np.linalg.norm(ref)
                assert (rel < 0.05) == expect_close, (family, rec["step"], rec["layer"], h, shift, rel)


def test_capture_cli_feeds_the_sweep(tmp_path, capsys):
    out = tmp_path / "heads"
    assert main(["capture", "--tiny", "wan", "--out", str(out), "--steps", "2", "--heads", "1"]) == 0
    assert "4 heads (2 steps)" in capsys.readouterr().out
    heads = discover(out)
    assert [(h.step, h.layer, h.head) for h in heads] == [(0, 0, 1), (0, 1, 1), (1, 0, 1), (1, 1, 1)]
    row = evaluate(heads[0], SweepConfig())
    assert row["cycles"] > 0 and row["grid"] == "3x4x6"
