"""HAMi's helm values without the helm binary: from the release Secret
(`sh.helm.release.v1.<release>.v<N>`, type helm.sh/release.v1), whose `release` field is
base64 (the Secret's own encoding) of base64 of gzip of the release JSON. Only `config`, the
values the user supplied, is kept: the rest of the release (manifest, chart, templates) is never
written anywhere."""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib

import yaml

# the labels helm puts on its release Secrets
SELECTOR = "owner=helm,name={release}"
LISTING = '{range .items[*]}{.metadata.name}{"\\t"}{.metadata.labels.version}{"\\n"}{end}'
FIELD = "{.data.release}"
MAX_RELEASE_BYTES = 64 << 20  # a decoded release (chart and manifest included) bigger is refused


def latest(listing: str, release: str) -> str | None:
    """The Secret of the highest revision of `release` in a LISTING output.

    >>> latest("sh.helm.release.v1.hami.v2\\t2\\nsh.helm.release.v1.hami.v10\\t10\\n"
    ...        "sh.helm.release.v1.other.v99\\t99\\n", "hami")
    'sh.helm.release.v1.hami.v10'
    >>> latest("", "hami") is None
    True
    """
    pattern = re.compile(rf"sh\.helm\.release\.v1\.{re.escape(release)}\.v(\d+)")
    found = []
    for line in listing.splitlines():
        name = line.split("\t", 1)[0]
        if m := pattern.fullmatch(name):
            found.append((int(m.group(1)), name))
    return max(found)[1] if found else None


def user_values(secret_field: bytes) -> bytes:
    """The user-supplied values of a release as YAML, from the Secret's `release` field as
    kubectl prints it (still in the Secret's base64).

    >>> import gzip
    >>> release = {"name": "hami", "config": {"devicePlugin": {"deviceSplitCount": 5}},
    ...            "manifest": "apiVersion: v1 ...", "chart": {"templates": []}}
    >>> inner = base64.b64encode(gzip.compress(json.dumps(release).encode()))
    >>> user_values(base64.b64encode(inner))
    b'devicePlugin:\\n  deviceSplitCount: 5\\n'
    >>> try:
    ...     user_values(b"!!!")
    ... except ValueError as exc:
    ...     print(str(exc)[:19])
    not a helm release:
    """
    try:
        inner = base64.b64decode(secret_field.strip(), validate=False)
        data = base64.b64decode(inner, validate=False)
        if data[:2] == b"\x1f\x8b":  # helm gzips releases (older ones may be plain JSON)
            data = _gunzip(data)
        release = json.loads(data)
    except (binascii.Error, ValueError, OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"not a helm release: {exc}") from None
    config = release.get("config") if isinstance(release, dict) else None
    if not isinstance(config, dict):
        config = {}
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True).encode()


def _gunzip(data: bytes) -> bytes:
    out = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, MAX_RELEASE_BYTES + 1)
    if len(out) > MAX_RELEASE_BYTES:
        raise ValueError(f"the release is over {MAX_RELEASE_BYTES >> 20} MiB")
    return out
