"""smolvlm: SmolVLM and Llama-family models on the CPU, exactly as HF transformers computes them.

The engine's C API (include/smolvlm.h) for Python::

    import smolvlm
    m = smolvlm.Model("tests/data/models/smolvlm-tiny")
    r = m.caption("examples/flower.jpg", prompt="Describe this image.", max_new_tokens=32)
    print(r.text, r.token_ids, r.finish_reason, r.timings)
    for piece in m.stream("examples/flower.jpg"):   # break out to cancel
        print(piece, end="", flush=True)

Images are file paths, encoded bytes (JPEG, PNG, WebP, GIF, BMP), numpy uint8 arrays [H, W, 3] (RGB)
or PIL images; all give the same pixels. Every call releases the GIL while the engine computes, so
threads captioning on one Model run in parallel. Errors raise smolvlm.Error subclasses carrying the
engine's message: BadInputError, UnsupportedError, IOError, StateError, InternalError.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Iterator, Optional, Sequence, Tuple, Union

from . import _smolvlm
from ._smolvlm import (  # noqa: F401  (re-exported)
    BadInputError,
    Error,
    InternalError,
    IOError,
    Result,
    StateError,
    Stream,
    UnsupportedError,
    default_model,
    inspect,
    supported_kernel_paths,
    translation_languages,
)

__version__ = _smolvlm.__version__
__all__ = [
    "Model", "Result", "Stream", "batch", "translation_languages", "merge_batch", "preprocess_image", "inspect", "default_model", "supported_kernel_paths",
    "Error", "BadInputError", "UnsupportedError", "IOError", "StateError", "InternalError",
]

DEFAULT_PROMPT = "Describe this image."

_SAMPLING = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "seed")


def _options(max_new_tokens, split, stop, stop_ids, context, ignore_eos, sampling) -> dict:
    unknown = set(sampling) - set(_SAMPLING)
    if unknown:
        raise TypeError(f"unexpected keyword argument {sorted(unknown)[0]!r} (sampling options: {', '.join(_SAMPLING)})")
    opts = dict(sampling)
    opts.update(max_new_tokens=max_new_tokens, split=split, stop=stop, stop_ids=stop_ids, context=context,
                ignore_eos=ignore_eos)
    return opts


class Model:
    """A loaded model: SmolVLM (images and text) or a Llama-family text model.

    Model(path_or_hub_id, threads=None, ctx=None, kernels=None, load_weights=True, precision=None,
          weight_memory=None)

    path_or_hub_id: a model folder (config.json, *.safetensors, tokenizer.json, ...) or a hub id
        "org/name[@revision]" already in the HuggingFace cache (the network is never used).
    threads: worker threads of each request (None: every core).
    ctx: upper bound on any request's context (None: the model's, within 2 GiB of KV cache).
    kernels: "scalar", "avx2", "avx512" or "neon" (None: SMOLVLM_KERNELS where set, else the best this CPU
        runs; one it cannot run is an error).
    load_weights: False reads only the configs and tokenizer (tokenize, render prompts, info).
    precision: "exact" (None: fp32, the results HF computes) or "fast": bf16 vision and prefill
        products on avx512 with avx512_bf16 (measured 1.4-2x faster), and decode with q8/q4/lut4 weights
        on int8 products on avx512 with avx512_vnni, avx2 and neon; other paths refuse it with an error
        naming what is missing. info()["decode_products"] names what decode runs; the cost is in the README.
    weight_memory: "read" (the weight files read whole into memory at load) or "map" (mapped: the load
        returns at once and the pages are shared with other processes; decode measured slower on a VM
        whose kernel samples the page cache); None: "read" where the files take at most three quarters
        of the memory available, else "map". info()["weight_memory"] says which.

    One Model serves many threads at once, each request on a session of its own.

    Generation options of caption/chat/generate/stream (keyword arguments):
    max_new_tokens (default 256), split (None: the model's preprocessor config; images only),
    stop (strings that end generation, trimmed from the text), stop_ids (token ids that end it),
    context (KV capacity; None: prompt + max_new_tokens), ignore_eos, and sampling: temperature
    (0: greedy, the default), top_k, top_p, min_p, repetition_penalty, seed.
    """

    def __init__(self, path_or_hub_id: Union[str, os.PathLike], threads: Optional[int] = None,
                 ctx: Optional[int] = None, kernels: Optional[str] = None, load_weights: bool = True,
                 precision: Optional[str] = None, weight_memory: Optional[str] = None):
        self._m = _smolvlm._Model(os.fspath(path_or_hub_id), threads, ctx, kernels, load_weights, precision,
                                  weight_memory)

    def info(self) -> dict:
        """The architecture, parameters per component, sizes, context length and kernel path."""
        return self._m.info()

    def caption(self, images: Any, prompt: str = DEFAULT_PROMPT, *, max_new_tokens: int = 256,
                split: Optional[bool] = None, stop: Optional[Sequence[str]] = None,
                stop_ids: Optional[Sequence[int]] = None, context: Optional[int] = None,
                ignore_eos: bool = False, **sampling) -> Result:
        """Describes (or answers `prompt` about) one image or a list of them: one user turn holding
        the images, then the prompt, rendered with the model's chat template. Returns a Result."""
        return self._m.caption(images, prompt, _options(max_new_tokens, split, stop, stop_ids, context, ignore_eos, sampling))

    def chat(self, messages: Sequence[dict], *, max_new_tokens: int = 256, split: Optional[bool] = None,
             stop: Optional[Sequence[str]] = None, stop_ids: Optional[Sequence[int]] = None,
             context: Optional[int] = None, ignore_eos: bool = False, **sampling) -> Result:
        """Answers OpenAI-shaped messages: [{"role": "system"|"user"|"assistant", "content": "text" or
        [{"type": "text", "text": ...}, {"type": "image_url", "image_url": {"url": "PATH or file://PATH"}}]}].
        Returns a Result."""
        return self._m.chat(list(messages), _options(max_new_tokens, split, stop, stop_ids, context, ignore_eos, sampling))

    def generate(self, prompt: str, *, max_new_tokens: int = 256, stop: Optional[Sequence[str]] = None,
                 stop_ids: Optional[Sequence[int]] = None, context: Optional[int] = None,
                 ignore_eos: bool = False, **sampling) -> Result:
        """Continues a raw prompt, tokenized as is (special tokens included), no chat template, no
        images. Returns a Result."""
        return self._m.generate(prompt, _options(max_new_tokens, None, stop, stop_ids, context, ignore_eos, sampling))

    def stream(self, images: Any = None, prompt: str = DEFAULT_PROMPT, *, messages: Optional[Sequence[dict]] = None,
               raw_prompt: Optional[str] = None, max_new_tokens: int = 256, split: Optional[bool] = None,
               stop: Optional[Sequence[str]] = None, stop_ids: Optional[Sequence[int]] = None,
               context: Optional[int] = None, ignore_eos: bool = False, **sampling) -> Stream:
        """Streams the text as it is generated: an iterator of str pieces (whole characters, never a
        stop string). Give images (+ prompt) as caption() does, or messages= as chat(), or
        raw_prompt= as generate(). Breaking out of the loop (or close()) cancels the generation;
        the model stays usable. The Stream's .result holds the Result once it ends."""
        opts = _options(max_new_tokens, split, stop, stop_ids, context, ignore_eos, sampling)
        if sum(x is not None for x in (images, messages, raw_prompt)) != 1:
            raise TypeError("stream() takes images (with a prompt), messages= or raw_prompt=: exactly one")
        if messages is not None:
            return self._m.stream_chat(list(messages), opts)
        if raw_prompt is not None:
            opts.pop("split")
            return self._m.stream_generate(raw_prompt, opts)
        return self._m.stream_caption(images, prompt, opts)

    def translate(self, text: str, to: str, *, from_: Optional[str] = None,
                  terms: Optional[Sequence[Tuple[str, str]]] = None, system: Optional[str] = None,
                  sample: bool = False, max_new_tokens: int = 512, stop: Optional[Sequence[str]] = None,
                  context: Optional[int] = None, **sampling) -> Result:
        """Translates text with a translation model (HY-MT) using the model card's prompt: the
        terminology template with terms=[(source, target), ...], the Chinese one when `to` or `from_`
        is Chinese, the English one otherwise (languages: a code such as "de", or an English or
        Chinese name; smolvlm.translation_languages() lists the codes). system= adds a system turn.
        Greedy unless sample=True (generation_config.json's sampling) or sampling keywords are given.
        The same as `smolvlm translate`; returns a Result."""
        if sample:
            given = sorted(set(sampling) - {"seed"})
            if given:
                raise TypeError("sample=True takes generation_config.json's sampling; drop " + ", ".join(given))
            sampling = dict(self.info()["recommended_sampling"], **sampling)
        prompt = _smolvlm._translation_prompt(text, to, from_, [tuple(t) for t in (terms or [])])
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        return self.chat(messages, max_new_tokens=max_new_tokens, stop=stop, context=context, **sampling)

    def tokenize(self, text: str, add_special_tokens: bool = True) -> list:
        """Token ids of text, as HF's tokenizer(text, add_special_tokens=...)."""
        return self._m.tokenize(text, add_special_tokens)

    def detokenize(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of token ids, as HF's tokenizer.decode(ids, skip_special_tokens=...)."""
        return self._m.detokenize(list(ids), skip_special_tokens)

    def token_to_string(self, id: int) -> str:
        """The vocabulary string of one id (e.g. 'Ġthe')."""
        return self._m.token_to_string(id)

    def render_prompt(self, messages: Sequence[dict], split: Optional[bool] = None) -> Tuple[str, list]:
        """The model input OpenAI-shaped messages become: (prompt text with image tokens, token ids)."""
        return self._m.render_prompt(list(messages), {"split": split})

    def __repr__(self) -> str:
        i = self.info()
        return f"smolvlm.Model({i['path']!r}, {i['architecture']}, kernels={i['kernel_path']}, threads={i['threads']})"


def batch(input: Union[str, os.PathLike], output: Union[str, os.PathLike], model: Union[Model, str, None] = None, *,
          shard: Union[str, Tuple[int, int]] = (0, 1), resume: bool = False, progress: Optional[bool] = None,
          prompt: Optional[str] = None, max_new_tokens: int = 256, split: Optional[bool] = None,
          threads: Optional[int] = None, kernels: Optional[str] = None, **sampling) -> dict:
    """Runs a JSONL file of jobs, as `smolvlm batch` does, appending one result line per job to output.

    input lines: {"id": str|int, "images": [paths], "prompt": ... | "messages": [...], options named
    as in the API (max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty, seed, split,
    stop, stop_ids)}. Output lines: {"id", "text", "token_ids", "prompt_tokens", "finish_reason",
    "timings"}, or {"id", "error": {"code", "message"}}, or {"line": N, "error": ...} for a line
    without a readable id. A bad line or image never stops the batch.

    model: a loaded Model (reused), or a path/hub id loaded for this call (None: the default model).
    shard: (I, N) or "I/N": only the jobs whose id hashes to shard I of N.
    resume: skip the ids output already holds (a partial last line from a crash is cut off first);
        without it an output that already holds results is an error.
    progress: a progress bar on stderr (None: when stderr is a terminal).
    prompt, max_new_tokens, split and the sampling options are defaults for jobs that do not set them.

    Returns {"lines", "in_shard", "skipped", "done", "errors", "seconds"}.
    """
    if isinstance(shard, str):
        try:
            i, n = (int(x) for x in shard.split("/"))
        except ValueError:
            raise BadInputError(f"shard {shard!r}: expected 'I/N'") from None
    else:
        i, n = shard
    if not isinstance(model, Model):
        model = Model(model if model is not None else default_model(), threads=threads, kernels=kernels)
    if progress is None:
        import sys
        progress = sys.stderr.isatty()
    opts = _options(max_new_tokens, split, None, None, None, False, sampling)
    return _smolvlm._batch(model._m, os.fspath(input), os.fspath(output), i, n, resume, progress, prompt, opts)


def merge_batch(input: Union[str, os.PathLike], parts: Sequence[Union[str, os.PathLike]],
                output: Union[str, os.PathLike]) -> dict:
    """Merges the outputs of batch() shards of one input into output, in the input's line order, as one
    unsharded run writes it (the first line of each id wins; output appears whole or not at all).
    Returns {"written", "missing", "duplicates"}."""
    return _smolvlm._merge(os.fspath(input), [os.fspath(p) for p in parts], os.fspath(output))


def preprocess_image(model: Union[str, os.PathLike], image: Any, split: Optional[bool] = None) -> dict:
    """An image through HF's load_image + the Idefics3 image processor of a model folder (only its
    preprocessor_config.json is read): {"width", "height", "rows", "cols", "pixel_values" (float32
    [tiles, 3, S, S], normalized), "tiles_u8" (the same tiles before rescaling, uint8)}."""
    return _smolvlm._preprocess_image(os.fspath(model), image, split)
