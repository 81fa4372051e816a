"""Which HAMi release (and which toolkit / GPU Operator release) the bundle comes from: the
register format, the handshake form, version-specific log lines, HAMi's own image tags and
versions named in text. Clues that contradict each other are kept as conflicts (mixed versions)."""

from __future__ import annotations

import re

from analyzer.catalogue.hami import HamiNames
from analyzer.catalogue.signatures import Signature
from analyzer.facts.model import FactSet, Match
from analyzer.parse.annotations import Handshake, RegisterAnnotation
from analyzer.versions import Range, VersionEvidence, VersionInference

_TAG_RE = re.compile(r"v?(\d+)\.(\d+)\.(\d+)$")
# images that are not HAMi's own, by their name under any registry or mirror path: the chart's
# upstream kube-scheduler (its tag is a Kubernetes release, v1.2x / v1.3x), the webhook's cert
# generator, the mock plugin
_NOT_HAMI_IMAGE_RE = re.compile(r"(?i)kube-?scheduler|certgen|mock")
# and by their helm values key, where the webhook's generator is `scheduler.patch` (only the key:
# a HAMi build named hami-patched stays HAMi's)
_NOT_HAMI_KEY_RE = re.compile(rf"{_NOT_HAMI_IMAGE_RE.pattern}|patch")
_HAMI_REPO_RE = re.compile(r"(?i)hami|vgpu")
HELM = "config.helm-values."


def hami_helm_tags(facts: FactSet) -> list[tuple[str, str]]:
    """Image tags of helm values that name HAMi's own images: a tag whose sibling repository is
    HAMi's, or one with no repository beside it (global.imageTag) outside the upstream images.

    >>> fs = FactSet()
    >>> for k, v in {"global.imageTag": "v2.9.0", "scheduler.kubeScheduler.image.tag": "v1.31.2",
    ...     "scheduler.kubeScheduler.imageTag": "v1.20.0", "scheduler.patch.image.tag": "v1.5.2",
    ...     "devicePlugin.image.repository": "projecthami/hami", "devicePlugin.image.tag": "v2.9.0",
    ...     "extender.image.repository": "infra/projecthami/kube-scheduler",
    ...     "extender.image.tag": "v1.29.9"}.items():
    ...     fs.put(HELM + k, v)
    >>> [t for t, _ in hami_helm_tags(fs)]
    ['v2.9.0', 'v2.9.0']
    """
    out = []
    for path, f in facts.facts.items():
        if not (path.startswith(HELM) and path.endswith(("imageTag", "image.tag"))):
            continue
        if not isinstance(f.value, str):
            continue
        base = path[: -len("Tag")] if path.endswith("imageTag") else path[: -len(".tag")]
        repo = facts.value(base + ".repository") or facts.value(base)
        repo = repo if isinstance(repo, str) else ""
        # an upstream image's key, or its name under a HAMi mirror (projecthami/kube-scheduler)
        if _NOT_HAMI_KEY_RE.search(path) or _NOT_HAMI_IMAGE_RE.search(repo.rsplit("/", 1)[-1]):
            continue
        if repo and not _HAMI_REPO_RE.search(repo):
            continue
        out.append((f.value, f"{f.where}"))
    return out


_MINOR_RE = re.compile(r"v?(\d+)\.(\d+)$")
# The register annotation's encoding changed here: v2.8.0's scheduler reads JSON
# (pkg/device/nvidia/device.go GetNodeDevices -> device.UnMarshalNodeDevices), v2.7.x's the CSV
# of device.DecodeNodeDevices; a plugin and a scheduler on two sides cannot read each other.
REGISTER_JSON_SINCE = (2, 8, 0)


def tag_evidence(inf: VersionInference, tag: str, where: str, what: str) -> None:
    """A version evidence from a tag: x.y.z exactly, or x.y as every x.y.* (a driver "570.86").

    >>> inf = VersionInference(); tag_evidence(inf, "570.86", "smi.txt:1", "driver"); str(inf.range)
    '>=v570.86.0,<v570.87.0'
    """
    m = _TAG_RE.match(tag.strip())
    if m:
        inf.add(VersionEvidence(Range.parse(f"=={m[1]}.{m[2]}.{m[3]}"), f"{what} {tag}", where))
    elif m := _MINOR_RE.match(tag.strip()):
        rng = Range.parse(f">={m[1]}.{m[2]}.0,<{m[1]}.{int(m[2]) + 1}.0")
        inf.add(VersionEvidence(rng, f"{what} {tag}", where))


def infer(
    register: RegisterAnnotation | None,
    register_where: str | None,
    handshake: Handshake | None,
    handshake_where: str | None,
    matches: dict[str, list[Match]],
    signatures: dict[str, Signature],
    images: list[str],
    helm_tags: list[tuple[str, str]],
    names: HamiNames,
) -> tuple[VersionInference, dict[str, VersionInference]]:
    """`images`: the node's; only HAMi's own (`names.images`) say which HAMi runs, a
    kube-scheduler tag of v1.32 does not."""
    hami = VersionInference()
    components: dict[str, VersionInference] = {}
    if register is not None and register.versions is not None and register_where:
        hami.add(
            VersionEvidence(
                register.versions, f"register annotation format {register.format}", register_where
            )
        )
        for rng, why in register.version_reasons:
            hami.add(VersionEvidence(rng, why, register_where))
    if handshake is not None and handshake.versions is not None and handshake.state != "other":
        hami.add(
            VersionEvidence(
                handshake.versions, f"handshake value form {handshake.state}", handshake_where or ""
            )
        )
    for sid, ms in sorted(matches.items()):
        sig = signatures[sid]
        if sig.version_capture:
            target = (
                hami
                if sig.version_of == "hami"
                else components.setdefault(sig.version_of, VersionInference())
            )
            what = sig.meaning.split(".")[0].lower() or "version"
            for m in ms[:5]:
                tag_evidence(
                    target, m.captures.get(sig.version_capture, ""), f"{m.file}:{m.line}", what
                )
        if sig.implies_version and not sig.versions.empty():
            hami.add(
                VersionEvidence(
                    sig.versions,
                    f"log line '{sid}' exists only in {sig.versions}",
                    f"{ms[0].file}:{ms[0].line}",
                )
            )
    for tag, where in helm_tags:
        tag_evidence(hami, tag, where, "helm image tag")
    if not hami.known:  # images cached on a node outlive upgrades: a clue only when nothing else is
        for img in images:
            v = names.image_version(img)
            if v:
                tag_evidence(hami, v, f"node image {img}", "image tag")
    if not hami.known:
        hami.missing = missing_clues(register, handshake, helm_tags, images)
    return hami, components


def missing_clues(
    register: RegisterAnnotation | None,
    handshake: Handshake | None,
    helm_tags: list[tuple[str, str]],
    images: list[str],
) -> str:
    """Why the HAMi version is unknown, named by the clues a bundle usually dates it with.

    >>> missing_clues(None, None, [], ["nvcr.io/nvidia/k8s-device-plugin:v0.17.0"])
    'no HAMi image or helm tag, no version-specific log line, no register annotation or handshake'
    >>> missing_clues(None, None, [("latest", "values.yaml:3")], [])[:41]
    'HAMi image tag without a version (latest)'
    """
    tags = [t for t, _ in helm_tags] + [i for i in images if "hami" in i.lower()]
    parts = [
        f"HAMi image tag without a version ({', '.join(t[:60] for t in sorted(set(tags))[:2])})"
        if tags
        else "no HAMi image or helm tag"
    ]
    parts.append("no version-specific log line")
    if register is None and handshake is None:
        parts.append("no register annotation or handshake")
    else:
        parts.append("register annotation and handshake in a format every version uses")
    return ", ".join(parts)


def produce(
    hami: VersionInference, components: dict[str, VersionInference], facts: FactSet
) -> None:
    """
    >>> inf = VersionInference(); tag_evidence(inf, "v2.8.1", "values.yaml", "image tag")
    >>> fs = FactSet(); produce(inf, {}, fs)
    >>> fs.value("version.range"), fs.value("version.known"), fs.lookup("version.toolkit").value
    ('v2.8.1', True, None)
    """
    facts.mark_known("version.")
    facts.put("version.known", hami.known)
    facts.put("version.range", hami.label)
    facts.put("version.conflict", bool(hami.conflicts))
    facts.put("version.register_format_split", hami.splits_at(REGISTER_JSON_SINCE))
    for comp, inf in components.items():
        facts.put(f"version.{comp}", inf.label)
