"""Which pod, object and image names are HAMi's own (rules/kinds.yaml `hami:`), declared once for
everyone who asks: the namespace fact (its pods and objects), the version read from an image tag,
`collect` (its pods' component labels, its objects' names) and a signature regex (`{hami:WORKLOAD}`
stands for the names of HAMi's pods of that workload, e.g. in `pods-hami-device-plugin`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import regex

HAMI_KEYS = ("names", "workloads", "component_labels", "images")
_WORD = regex.compile(r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$")  # a name or label word
REFERENCE = regex.compile(r"\{hami:([^{}]*)\}")  # in a signature regex


def _any(words: tuple[str, ...]) -> str:
    return "|".join(words)  # lower-case words (checked at load): nothing to escape


@dataclass(frozen=True)
class HamiNames:
    """HAMi's chart names its workloads `<fullname>-<workload>`, where the fullname holds one of
    `names` (the release name when it contains the chart's name, `hami`, `my-hami`, `myhami`,
    else `<release>-hami`; `vgpu` and `4pd` before v2.3); it labels them `app.kubernetes.io/component: <label>-<workload>` for each of
    `component_labels`; its `images` are the repositories whose tag is HAMi's version.

    >>> hami = HamiNames(("hami", "vgpu", "4pd"), ("device-plugin", "scheduler"), ("hami", "4pd"),
    ...                  ("hami", "hami-scheduler"))
    >>> [hami.is_workload(n) for n in ("hami-device-plugin-7xk2p", "my-hami-scheduler-5d9f-abcde",
    ...  "myhami-device-plugin", "vgpu-device-plugin", "nvidia-device-plugin-daemonset-x",
    ...  "volcano-scheduler", "hami-webhook", None)]
    [True, True, True, True, False, False, False, False]
    >>> [hami.has_word(n) for n in ("hami-webhook", "stack-vgpu", "4pd-vgpu-scheduler", "aws-auth")]
    [True, True, True, False]
    >>> hami.roles
    {'hami-device-plugin': 'device-plugin', '4pd-device-plugin': 'device-plugin', 'hami-scheduler': 'scheduler', '4pd-scheduler': 'scheduler'}
    >>> hami.image_version("docker.io/projecthami/hami:v2.5.1"), hami.image_version("hami/kube-scheduler:v1.32.0")
    ('2.5.1', None)
    """

    names: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    component_labels: tuple[str, ...] = ()
    images: tuple[str, ...] = ()

    def workload_pattern(self, workload: str | None = None) -> str:
        """The regex (unanchored text) of the name of one of HAMi's workloads (of `workload`
        only, when given); a pod adds its own suffix (`-7xk2p`, `-5d9f-abcde`)."""
        workloads = (workload,) if workload else self.workloads
        return rf"[\w.-]*?(?:{_any(self.names)})[\w.-]*?-(?:{_any(workloads)})"

    @cached_property
    def _workload(self) -> regex.Pattern:
        return regex.compile(rf"^{self.workload_pattern()}(?:-|$)")

    @cached_property
    def _word(self) -> regex.Pattern:
        return regex.compile(rf"(?:^|-)(?:{_any(self.names)})(?:-|$)")

    @cached_property
    def _image(self) -> regex.Pattern:
        return regex.compile(rf"(?:^|/)(?:{_any(self.images)}):v?(\d+\.\d+\.\d+)(?:[-@]|$)")

    def is_workload(self, name: str | None) -> bool:
        """A pod, DaemonSet, Deployment or other object the chart names after a workload."""
        return bool(name and self._workload.match(name))

    def has_word(self, name: str) -> bool:
        """A name holding one of HAMi's names as a word (its webhook, its ConfigMaps)."""
        return self._word.search(name) is not None

    @property
    def roles(self) -> dict[str, str]:
        """Component label value -> workload, in the order workloads, then labels."""
        return {f"{label}-{w}": w for w in self.workloads for label in self.component_labels}

    def image_version(self, image: str) -> str | None:
        """The x.y.z of one of HAMi's own images (another image's tag says nothing of HAMi)."""
        m = self._image.search(image)
        return m.group(1) if m else None

    def expand(self, pattern: str) -> str:
        """A signature regex with each `{hami:WORKLOAD}` replaced by `workload_pattern`; an
        unknown workload is a ValueError."""

        def one(m: regex.Match) -> str:
            if m[1] not in self.workloads:
                raise ValueError(
                    f"{m[0]}: HAMi has no workload {m[1]!r} (kinds.yaml hami.workloads)"
                )
            return f"(?:{self.workload_pattern(m[1])})"

        return REFERENCE.sub(one, pattern)


def load_hami_names(raw, where: str, problems: list[str]) -> HamiNames:
    """The `hami:` section: every key a non-empty list of lower-case words."""
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping with {', '.join(HAMI_KEYS)}")
        return HamiNames()
    for key in sorted(k for k in set(raw) - set(HAMI_KEYS) if not str(k).startswith("__")):
        problems.append(f"{where}: unknown key {key!r}")
    lists: dict[str, tuple[str, ...]] = {}
    for key in HAMI_KEYS:
        words = raw.get(key)
        if not isinstance(words, list) or not words:
            problems.append(f"{where}: {key}: expected a non-empty list of names")
            words = []
        bad = [w for w in words if not isinstance(w, str) or not _WORD.match(w)]
        if bad:
            problems.append(f"{where}: {key}: not a lower-case name: {bad!r}")
        lists[key] = tuple(w for w in words if w not in bad)
    return HamiNames(**lists)
