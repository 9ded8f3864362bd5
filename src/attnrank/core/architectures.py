"""One record per architecture: what every layer asks about a model, instead of testing its name.

A run's ``arch`` is the key of :data:`ARCHITECTURES` and the ``model_type`` of its HF config, so a built
model finds its record too (:func:`of_model`). Adding an architecture is one :class:`Architecture` here (and its
name in :data:`attnrank.words.glossary.ARCH_NAMES`); ``tests/unit/test_architectures.py`` checks each record
against the model it builds, ``tests/integration/test_architectures_run.py`` trains, probes and ablates each.

This module imports nothing from the library but :mod:`attnrank.core.errors`, and nothing heavy (no torch):
the configuration checks of :mod:`attnrank.core.profiles` read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import check_choice

__all__ = ["Architecture", "ARCHITECTURES", "TOKENIZERS", "architecture", "of_model"]

#: The tokenizer families (:mod:`attnrank.core.data`): lower-cased WordPiece with ``[CLS] [SEP] [MASK] [PAD]
#: [UNK]`` whose blocks are framed ``[CLS] ... [SEP]``, and byte-level BPE with ``<|endoftext|>`` between
#: texts (no padding token).
TOKENIZERS = ("wordpiece", "bytelevel")
#: The special tokens of the WordPiece tokenizer, with ids 0 to 4 in this order; the masked LMs' configs get
#: these ids.
WORDPIECE_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@dataclass(frozen=True)
class Architecture:
    """What the code needs to know about one architecture.

    Attributes:
        name: the run's ``arch`` and the HF config's ``model_type`` (``"gpt2"``).
        causal: a causal LM (next-token targets, ``labels[:, 1:]`` scored, lower-triangular attention) or,
            when false, a masked LM.
        hf_model: the ``transformers`` class of the LM, built from its config (``"GPT2LMHeadModel"``).
        config_names: the HF config's names of the sizes, ``(HF name, our name)`` pairs
            (``("n_embd", "hidden_size")``); :meth:`config_kwargs` fills them in.
        config_fixed: the HF config's arguments that no size changes.
        layer_type: the attention type of every layer (HF's ``layer_types``), where the config has one.
        tokenizer: its tokenizer family (:data:`TOKENIZERS`).
        qk_modules: module-name suffixes of the separate query and key projections (BERT), or empty.
        qkv_fused: ``(module-name suffix, dimension)`` of a fused ``[query, key, value]`` projection
            stacked along that dimension (GPT-2's ``Conv1D`` ``c_attn``: the last; ModernBERT's
            ``nn.Linear`` ``Wqkv``: the first), or ``None``.
        mlp_ratio: the default MLP width, ``intermediate_size / hidden_size``.
        gated_mlp: a gated MLP (GeGLU), whose input projection is twice the intermediate size.
        rotary: rotary position embeddings, which rotate pairs of dimensions (an even ``head_dim``).
    """

    name: str
    causal: bool
    hf_model: str
    config_names: tuple[tuple[str, str], ...] = field(repr=False)
    tokenizer: str
    config_fixed: dict = field(default_factory=dict, repr=False)
    layer_type: str | None = None
    qk_modules: tuple[str, ...] = ()
    qkv_fused: tuple[str, int] | None = None
    mlp_ratio: int = 4
    gated_mlp: bool = False
    rotary: bool = False

    @property
    def objective(self) -> str:
        """``"CLM"`` (causal) or ``"MLM"`` (masked)."""
        return "CLM" if self.causal else "MLM"

    def layer_weights(self, hidden_size: int) -> int:
        """Weights of the matrix products of one block at the default MLP width: attention ``4 d^2`` and
        the MLP ``2 r d^2`` (gated: ``3 r d^2``), ``d = hidden_size``, ``r =`` :attr:`mlp_ratio`."""
        return (4 + (3 if self.gated_mlp else 2) * self.mlp_ratio) * hidden_size**2

    def config_kwargs(self, **sizes) -> dict:
        """The keyword arguments of the HF config class of :attr:`hf_model` for ``sizes`` (``hidden_size``,
        ``num_layers``, ``num_heads``, ``intermediate_size``, ``max_len``, ``vocab_size``, ``dropout``,
        ``pad_token_id``).

        Raises:
            KeyError: naming a size of :attr:`config_names` that ``sizes`` lacks.
        """
        kwargs = {hf: sizes[ours] for hf, ours in self.config_names}
        if self.layer_type is not None:
            kwargs["layer_types"] = [self.layer_type] * sizes["num_layers"]
        return {**kwargs, **self.config_fixed}


_MASKED_SIZES = (
    ("vocab_size", "vocab_size"),
    ("hidden_size", "hidden_size"),
    ("num_hidden_layers", "num_layers"),
    ("num_attention_heads", "num_heads"),
    ("intermediate_size", "intermediate_size"),
    ("max_position_embeddings", "max_len"),
    ("pad_token_id", "pad_token_id"),
)

#: Every architecture a run can have, in the order of :data:`attnrank.core.profiles.ALL_ARCHS`.
ARCHITECTURES: dict[str, Architecture] = {
    a.name: a
    for a in (
        # the study's BERT: post-LayerNorm, learned absolute positions
        Architecture(
            name="bert",
            causal=False,
            hf_model="BertForMaskedLM",
            config_names=(
                *_MASKED_SIZES,
                ("hidden_dropout_prob", "dropout"),
                ("attention_probs_dropout_prob", "dropout"),
            ),
            tokenizer="wordpiece",
            qk_modules=("attention.self.query", "attention.self.key"),
        ),
        # ModernBERT: full (global) attention in every layer, HF's other defaults (rotary positions,
        # pre-LayerNorm, GeGLU MLP, no biases) and the WordPiece tokenizer's special-token ids. Its MLP width is
        # 2 * hidden_size: the gated input projection then matches BERT's (4 * hidden_size). Measured at the
        # quick sizes, tau = 1, seed 0, 1000 steps: 4.49 nats in 63 CPU s, against 4.64 in 84 CPU s at 4 *
        # hidden_size.
        Architecture(
            name="modernbert",
            causal=False,
            hf_model="ModernBertForMaskedLM",
            config_names=(
                *_MASKED_SIZES,
                ("embedding_dropout", "dropout"),
                ("mlp_dropout", "dropout"),
                ("attention_dropout", "dropout"),
            ),
            config_fixed=dict(
                cls_token_id=WORDPIECE_SPECIALS.index("[CLS]"),
                sep_token_id=WORDPIECE_SPECIALS.index("[SEP]"),
                bos_token_id=WORDPIECE_SPECIALS.index("[CLS]"),
                eos_token_id=WORDPIECE_SPECIALS.index("[SEP]"),
            ),
            layer_type="full_attention",
            tokenizer="wordpiece",
            qkv_fused=("attn.Wqkv", 0),
            mlp_ratio=2,
            gated_mlp=True,
            rotary=True,
        ),
        # GPT-2: <|endoftext|> is its bos, eos and the pad id that no loss or collator uses
        Architecture(
            name="gpt2",
            causal=True,
            hf_model="GPT2LMHeadModel",
            config_names=(
                ("vocab_size", "vocab_size"),
                ("n_embd", "hidden_size"),
                ("n_layer", "num_layers"),
                ("n_head", "num_heads"),
                ("n_inner", "intermediate_size"),
                ("n_positions", "max_len"),
                ("resid_pdrop", "dropout"),
                ("embd_pdrop", "dropout"),
                ("attn_pdrop", "dropout"),
                ("bos_token_id", "pad_token_id"),
                ("eos_token_id", "pad_token_id"),
                ("pad_token_id", "pad_token_id"),
            ),
            tokenizer="bytelevel",
            qkv_fused=("attn.c_attn", -1),
        ),
    )
}


def architecture(arch: str) -> Architecture:
    """The record of ``arch``.

    Raises:
        ConfigError: naming ``arch`` when it is not a key of :data:`ARCHITECTURES`.
    """
    check_choice("arch", arch, tuple(ARCHITECTURES))
    return ARCHITECTURES[arch]


def of_model(model) -> Architecture:
    """The record of a built HF model (its config's ``model_type``).

    Raises:
        ConfigError: naming ``arch`` for a model type without a record.
    """
    return architecture(model.config.model_type)
