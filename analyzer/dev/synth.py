"""Synthetic ticket folders for the batch benchmark and tests.

`make_tickets(out, n)` writes n bundles built from the realistic sample bundles (each with its
own node name, so contents differ), as folders and .tar.gz archives, plus a share of hostile or
broken ones (corrupt archive, path traversal, binary junk, empty folder) and exact duplicates.
The samples come from the checkout's `sample_bundles/` or the folder passed as `samples`.
"""

from __future__ import annotations

import io
import random
import tarfile
from pathlib import Path

from analyzer.dev import sample_bundles

HOSTILE_SHARE = 0.04
DUPLICATE_SHARE = 0.05


def _templates(samples: Path) -> list[tuple[str, dict[str, bytes]]]:
    out = []
    for d in sorted(samples.iterdir()):
        b = d / "bundle"
        if b.is_dir():
            out.append(
                (d.name, {f.name: f.read_bytes() for f in sorted(b.iterdir()) if f.is_file()})
            )
    return out


def _tar(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(f"bundle/{name}")
            info.size = len(data)
            info.mtime = 1786000000
            tf.addfile(info, io.BytesIO(data))


def _hostile(path: Path, kind: int) -> None:
    if kind == 0:
        path.with_suffix(".tgz").write_bytes(b"\x1f\x8b\x08\x00garbage-not-gzip" * 10)
    elif kind == 1:
        with tarfile.open(path.with_suffix(".tar"), "w") as tf:
            data = b"owned"
            info = tarfile.TarInfo("../../escape.txt")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    elif kind == 2:
        path.mkdir()
        (path / "blob.bin").write_bytes(bytes(random.Random(7).randrange(256) for _ in range(4096)))
    else:
        path.mkdir()


def make_tickets(out: Path, n: int, seed: int = 1, samples: Path | None = None) -> list[Path]:
    rng = random.Random(seed)
    templates = _templates(sample_bundles(samples))
    out.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    for i in range(n):
        base = out / f"ticket-{i:05d}"
        r = rng.random()
        if r < HOSTILE_SHARE:
            _hostile(base, i % 4)
        elif r < HOSTILE_SHARE + DUPLICATE_SHARE and made:
            src = rng.choice([m for m in made if m.exists()] or made)
            if src.is_dir():
                base.mkdir()
                for f in src.iterdir():
                    (base / f.name).write_bytes(f.read_bytes())
            else:
                base = base.with_suffix(src.suffix if src.suffix != ".gz" else ".tar.gz")
                base.write_bytes(src.read_bytes())
        else:
            _name, files = rng.choice(templates)
            node = f"gpu-{i:05d}"
            files = {k: v.replace(b"gpu-node-", node.encode() + b"-") for k, v in files.items()}
            if rng.random() < 0.5:
                base.mkdir()
                for k, v in files.items():
                    (base / k).write_bytes(v)
            else:
                base = base.with_suffix(".tgz")
                _tar(base, files)
        made.append(next((p for p in out.glob(base.name + "*")), base))
    return sorted(out.iterdir())
