"""``kaleido capture`` (issue 16): dump a diffusers video transformer's
attention inputs as exchange-format heads.

Needs the optional extra ``.[capture]`` (torch, diffusers; docs/CAPTURE.md).
:class:`Capture` wraps ``torch.nn.functional.scaled_dot_product_attention``
(which diffusers' attention processors call, directly or through the native
attention backend) while a transformer runs. A forward pre-hook on the
transformer reads the latent's shape and the text length, so it knows the
latent grid and which attention calls are the video self-attention (with
text tokens joined: HunyuanVideo puts them after the video tokens, CogVideoX
before; Wan's self-attention holds video tokens only, its cross-attention is
skipped). Every such call is one layer; every transformer forward one
denoising step. Per head the video tokens' Q, K and V, after RoPE, are
reordered to the exchange format's channel groups (t, then x = width, then
y = height; diffusers orders its RoPE channels t, height, width), quantised
per tensor (:func:`kaleido.golden.workloads.quantise`) and written as one
``.npz`` per (step, layer, head) with a ``manifest.json``
(:func:`kaleido.sweep.write_manifest`) for ``kaleido sweep``.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from typing import Any

import numpy as np

from .golden.workloads import Workload, quantise, save

__all__ = ["FAMILIES", "Geometry", "Capture", "geometry", "tiny_transformer", "tiny_inputs"]

#: diffusers transformer class -> (family, where the video tokens sit in a joint sequence)
FAMILIES = {
    "HunyuanVideoTransformer3DModel": ("hunyuan", "first"),
    "WanTransformer3DModel": ("wan", "all"),
    "CogVideoXTransformer3DModel": ("cogvideox", "last"),
}


@dataclasses.dataclass(frozen=True)
class Geometry:
    """The video tokens of one forward: the latent ``grid`` (T, H, W) after
    patching (token order ``(t H + y) W + x``), the RoPE channel groups
    ``rope`` as diffusers orders them (t, height, width), the text length
    and where the video tokens sit (``first``, ``last`` or ``all``)."""

    family: str
    grid: tuple[int, int, int]
    rope: tuple[int, int, int]
    text: int
    order: str

    @property
    def n(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def split(self) -> tuple[int, int, int]:
        """The exchange format's ``(d_t, d_x, d_y)``: t, width, height."""
        t, h, w = self.rope
        return (t, w, h)

    @property
    def permutation(self) -> np.ndarray:
        """Exchange-format channel ``c`` is diffusers channel ``permutation[c]``."""
        t, h, w = self.rope
        return np.concatenate([np.arange(t), np.arange(t + h, t + h + w), np.arange(t, t + h)])

    def sequence(self) -> int:
        """The length of a video self-attention call's sequence."""
        return self.n if self.order == "all" else self.n + self.text

    def video(self, length: int) -> slice:
        return slice(length - self.n, length) if self.order == "last" else slice(0, self.n)


def _family(transformer) -> tuple[str, str]:
    name = type(transformer).__name__
    if name not in FAMILIES:
        raise ValueError(f"capture supports {sorted(FAMILIES)}, not {name}")
    return FAMILIES[name]


def geometry(transformer, hidden_states, encoder_hidden_states) -> Geometry:
    """The :class:`Geometry` of one forward of ``transformer`` on a latent
    ``hidden_states`` (``(B, C, F, H, W)``; CogVideoX ``(B, F, C, H, W)``)
    with text ``encoder_hidden_states`` (``(B, L, D)``)."""
    family, order = _family(transformer)
    cfg = transformer.config
    head_dim = int(cfg.attention_head_dim)
    shape = tuple(int(x) for x in hidden_states.shape)
    rope: tuple[int, ...]
    patch: tuple[int, ...]
    if family == "hunyuan":
        frames, height, width = shape[2:]
        patch = (int(cfg.patch_size_t), int(cfg.patch_size), int(cfg.patch_size))
        rope = tuple(int(x) for x in cfg.rope_axes_dim)
    elif family == "wan":
        frames, height, width = shape[2:]
        patch = tuple(int(x) for x in cfg.patch_size)
        hw = 2 * (head_dim // 6)
        rope = (head_dim - 2 * hw, hw, hw)
    else:
        frames, height, width = shape[1], shape[3], shape[4]
        patch = (int(cfg.patch_size_t or 1), int(cfg.patch_size), int(cfg.patch_size))
        rope = (head_dim // 4, head_dim // 8 * 3, head_dim // 8 * 3)
    if len(rope) != 3 or sum(rope) != head_dim:
        raise ValueError(f"{family}: RoPE groups {rope} do not cover the head's {head_dim} channels")
    grid = (frames // patch[0], height // patch[1], width // patch[2])
    text = 0 if encoder_hidden_states is None else int(encoder_hidden_states.shape[1])
    return Geometry(family, grid, (rope[0], rope[1], rope[2]), text, order)


class Capture:
    """Within ``with Capture(transformer, out_dir):``, every video
    self-attention call of ``transformer`` is dumped to ``out_dir`` (one
    ``.npz`` per step, layer and head, batch element ``batch_index``;
    ``heads`` and ``layers`` restrict it); the manifest is written on exit.
    ``keep=True`` also keeps each call's float ``q, k, v``, output and
    other arguments (``call``: args, kwargs) in :attr:`records` for tests;
    :attr:`original` is the unwrapped attention function."""

    def __init__(
        self,
        transformer,
        out_dir: str | os.PathLike,
        *,
        model: str = "",
        prompt: str = "",
        heads=None,
        layers=None,
        batch_index: int = 0,
        keep: bool = False,
    ) -> None:
        _family(transformer)
        self.transformer = transformer
        self.out_dir = os.fspath(out_dir)
        self.model = model or type(transformer).__name__
        self.prompt = prompt
        self.heads = None if heads is None else set(heads)
        self.layers = None if layers is None else set(layers)
        self.batch_index = batch_index
        self.keep = keep
        self.records: list[dict[str, Any]] = []
        self.entries: list[dict[str, Any]] = []
        self.skipped = 0
        self.step = -1
        self._layer = 0
        self._geometry: Geometry | None = None
        self.original = None
        self._hook = None

    # -- hooks ---------------------------------------------------------------
    def _pre_forward(self, module, args, kwargs):
        bound = inspect.signature(module.forward).bind_partial(*args, **kwargs).arguments
        self._geometry = geometry(module, bound["hidden_states"], bound.get("encoder_hidden_states"))
        self.step += 1
        self._layer = 0

    def _sdpa(self, query, key, value, *args, **kwargs):
        assert self.original is not None
        out = self.original(query, key, value, *args, **kwargs)
        g = self._geometry
        length = query.shape[-2]
        if g is None or key.shape[-2] != length or length != g.sequence() or query.dim() != 4:
            self.skipped += 1
            return out
        layer = self._layer
        self._layer += 1
        if self.layers is None or layer in self.layers:
            self._dump(g, layer, query, key, value, out, (args, kwargs))
        return out

    def _dump(self, g: Geometry, layer: int, query, key, value, out, call) -> None:
        video = g.video(query.shape[-2])
        perm = g.permutation
        if self.keep:
            self.records.append(
                {
                    "step": self.step,
                    "layer": layer,
                    "geometry": g,
                    "q": query.detach().clone(),
                    "k": key.detach().clone(),
                    "v": value.detach().clone(),
                    "out": out.detach().clone(),
                    "call": call,
                }
            )
        b = self.batch_index
        for h in range(query.shape[1]):
            if self.heads is not None and h not in self.heads:
                continue
            tensors = [t[b, h, video].detach().to("cpu").double().numpy()[:, perm] for t in (query, key, value)]
            (q, qs), (k, ks), (v, vs) = (quantise(t) for t in tensors)
            name = f"s{self.step}_l{layer}_h{h}.npz"
            w = Workload(q, k, v, g.grid, g.split, q_scale=qs, k_scale=ks, v_scale=vs)
            save(os.path.join(self.out_dir, name), w)
            self.entries.append(
                {"file": name, "step": self.step, "layer": layer, "head": h, "grid": g.grid, "split": g.split}
            )

    # -- context -------------------------------------------------------------
    def __enter__(self) -> Capture:
        import torch.nn.functional as F

        os.makedirs(self.out_dir, exist_ok=True)
        self.original = F.scaled_dot_product_attention
        F.scaled_dot_product_attention = self._sdpa
        self._hook = self.transformer.register_forward_pre_hook(self._pre_forward, with_kwargs=True)
        return self

    def __exit__(self, *exc) -> None:
        import torch.nn.functional as F

        F.scaled_dot_product_attention = self.original
        if self._hook is not None:
            self._hook.remove()
        if self.entries:
            from .sweep import write_manifest

            write_manifest(self.out_dir, self.entries, model=self.model, prompt=self.prompt)


# -- tiny randomly initialised transformers (no weights needed) --------------

#: per family: the transformer's config (tiny), the latent shape (B, C, F, H, W) and the text length
TINY: dict[str, tuple[dict[str, Any], tuple[int, ...], int]] = {
    "hunyuan": (
        dict(
            in_channels=4,
            out_channels=4,
            num_attention_heads=2,
            attention_head_dim=16,
            num_layers=1,
            num_single_layers=1,
            num_refiner_layers=1,
            patch_size=2,
            patch_size_t=1,
            text_embed_dim=16,
            pooled_projection_dim=8,
            rope_axes_dim=(4, 6, 6),
            guidance_embeds=False,
        ),
        (1, 4, 3, 8, 12),
        5,
    ),
    "wan": (
        dict(
            patch_size=(1, 2, 2),
            num_attention_heads=2,
            attention_head_dim=12,
            in_channels=4,
            out_channels=4,
            text_dim=16,
            freq_dim=16,
            ffn_dim=32,
            num_layers=2,
        ),
        (1, 4, 3, 8, 12),
        5,
    ),
    "cogvideox": (
        dict(
            num_attention_heads=2,
            attention_head_dim=16,
            in_channels=4,
            out_channels=4,
            time_embed_dim=8,
            text_embed_dim=16,
            num_layers=2,
            sample_width=12,
            sample_height=8,
            sample_frames=9,
            patch_size=2,
            temporal_compression_ratio=4,
            max_text_seq_length=5,
            use_rotary_positional_embeddings=True,
        ),
        (1, 3, 4, 8, 12),  # (B, F, C, H, W)
        5,
    ),
}


def tiny_transformer(family: str, seed: int = 0):
    """A randomly initialised diffusers transformer of ``family`` (``hunyuan``,
    ``wan``, ``cogvideox``) built from a tiny config on the CPU."""
    import torch
    from diffusers import CogVideoXTransformer3DModel, HunyuanVideoTransformer3DModel, WanTransformer3DModel

    classes = {
        "hunyuan": HunyuanVideoTransformer3DModel,
        "wan": WanTransformer3DModel,
        "cogvideox": CogVideoXTransformer3DModel,
    }
    if family not in classes:
        raise ValueError(f"family must be one of {sorted(classes)}, not {family!r}")
    torch.manual_seed(seed)
    model = classes[family](**TINY[family][0])
    return model.eval()


def tiny_inputs(model, seed: int = 0, timestep: float = 500.0) -> dict:
    """Random keyword inputs of one forward of a :func:`tiny_transformer`."""
    import torch

    family, _ = _family(model)
    _, shape, text = TINY[family]
    g = torch.Generator().manual_seed(seed)
    latent = torch.randn(shape, generator=g)
    cfg = model.config
    t = torch.tensor([timestep])
    if family == "hunyuan":
        return {
            "hidden_states": latent,
            "timestep": t,
            "encoder_hidden_states": torch.randn(1, text, cfg.text_embed_dim, generator=g),
            "encoder_attention_mask": torch.ones(1, text, dtype=torch.bool),
            "pooled_projections": torch.randn(1, cfg.pooled_projection_dim, generator=g),
            "return_dict": False,
        }
    if family == "wan":
        return {
            "hidden_states": latent,
            "timestep": t,
            "encoder_hidden_states": torch.randn(1, text, cfg.text_dim, generator=g),
            "return_dict": False,
        }
    from diffusers.models.embeddings import get_3d_rotary_pos_embed

    grid = geometry(model, latent, None).grid
    rope = get_3d_rotary_pos_embed(
        embed_dim=cfg.attention_head_dim,
        crops_coords=((0, 0), (grid[1], grid[2])),
        grid_size=(grid[1], grid[2]),
        temporal_size=grid[0],
        use_real=True,
    )
    return {
        "hidden_states": latent,
        "timestep": t,
        "encoder_hidden_states": torch.randn(1, text, cfg.text_embed_dim, generator=g),
        "image_rotary_emb": rope,
        "return_dict": False,
    }


def add_parser(sub) -> None:
    """The ``capture`` subcommand of :mod:`kaleido.cli`."""
    p = sub.add_parser(
        "capture",
        help="dump a diffusers video transformer's attention inputs as exchange-format heads (.[capture])",
        description="Run a diffusers video pipeline (--pipeline, local weights) or a tiny randomly initialised "
        "transformer (--tiny) with the attention hook and write one .npz per (step, layer, head) and a "
        "manifest.json into OUT (docs/CAPTURE.md).",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--tiny", choices=sorted(TINY), help="a tiny random transformer of this family")
    src.add_argument("--pipeline", metavar="PATH", help="a diffusers pipeline directory (or hub id) with weights")
    p.add_argument("--out", required=True, metavar="OUT")
    p.add_argument("--prompt", default="a cat walks on the grass, realistic")
    p.add_argument("--steps", type=int, default=2, help="denoising steps (forwards of --tiny)")
    p.add_argument("--height", type=int, default=320)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--frames", type=int, default=9)
    p.add_argument("--heads", type=int, nargs="*", default=None, help="only these heads (default all)")
    p.add_argument("--layers", type=int, nargs="*", default=None, help="only these layers (default all)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_run)


def _run(args) -> int:
    try:
        import torch
    except ImportError:
        raise ValueError(
            "kaleido capture needs the optional extra: pip install '.[capture]' (torch, diffusers)"
        ) from None
    if args.steps < 1:
        raise ValueError(f"--steps must be a positive integer, not {args.steps}")
    if args.tiny:
        model = tiny_transformer(args.tiny, args.seed)
        with (
            torch.no_grad(),
            Capture(
                model, args.out, model=f"tiny-{args.tiny}", prompt="random", heads=args.heads, layers=args.layers
            ) as cap,
        ):
            for step in range(args.steps):
                model(**tiny_inputs(model, args.seed + step, timestep=1000.0 * (1 - step / args.steps)))
    else:
        from diffusers import DiffusionPipeline

        pipe = DiffusionPipeline.from_pretrained(args.pipeline)
        with (
            torch.no_grad(),
            Capture(
                pipe.transformer,
                args.out,
                model=args.pipeline,
                prompt=args.prompt,
                heads=args.heads,
                layers=args.layers,
            ) as cap,
        ):
            pipe(
                prompt=args.prompt,
                num_inference_steps=args.steps,
                height=args.height,
                width=args.width,
                num_frames=args.frames,
                generator=torch.Generator().manual_seed(args.seed),
            )
    print(f"{len(cap.entries)} heads ({cap.step + 1} steps) -> {args.out}; {cap.skipped} other attention calls skipped")
    return 0
