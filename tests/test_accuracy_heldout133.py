"""Hundred-and-thirty-third to hundred-and-thirty-sixth measurements (issue 25, session 51): blind
sets of unseen real cases and the class they left, checked on made-up inputs (none copied from a
real case)."""

from __future__ import annotations

from conftest import issue_verdict, verdict_of

LEGACY = "GPU-7c1e,10,46068,100,NVIDIA-NVIDIA L40S,0,true,0,hami-core:"
DECODE = (
    'E0301 08:12:44.100200       1 device.go:{line}] "failed to decode node devices" '
    'err="invalid character \'G\' looking for beginning of value" node="infer-7" '
    f'device annotation="{LEGACY}"\n'
)


# ---- the mock device plugin's decode failure is not the scheduler's ----------------------------------
def test_the_mock_plugins_decode_failure_is_the_annotation_format_not_the_scheduler(ruleset):
    log = (
        "I0301 08:12:44.001000       1 config.go:116] Loading device configuration from file: "
        "/device-config.yaml\n"
        + DECODE.format(line=104)
        + "I0301 08:12:44.100400       1 device.go:164] no device GPU on this node\n"
    )
    verdict = verdict_of(ruleset, {"device-plugin.log": log})
    assert verdict[:2] == (
        "mock-device-plugin-cannot-decode-annotation",
        "annotation-missing-or-stale",
    )


def test_the_mock_plugin_named_in_the_pasted_command_is_enough(ruleset):
    body = (
        "# mock plugin shows gpumem 0\n\n```\n"
        "$ kubectl logs -n kube-system hami-mock-device-plugin-daemonset-q2x8v\n"
        + DECODE.format(line=106)
        + "```\n"
    )
    assert issue_verdict(ruleset, body)[:2] == (
        "mock-device-plugin-cannot-decode-annotation",
        "annotation-missing-or-stale",
    )


def test_the_schedulers_own_decode_failure_stays_the_schedulers(ruleset):
    log = (
        'I0301 08:12:40.000000       1 scheduler.go:414] "Entering RegisterFromNodeAnnotations"\n'
        + DECODE.format(line=309)
    )
    verdict = verdict_of(ruleset, {"scheduler.log": log})
    assert verdict[:2] == ("scheduler-decode-failed", "scheduler-not-seeing-node")
