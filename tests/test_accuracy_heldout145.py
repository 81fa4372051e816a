"""Hundred-and-forty-fifth and later measurements (issue 25, session 52): blind sets of unseen real
cases and the classes they left, checked on made-up inputs (none copied from a real case)."""

from __future__ import annotations

from conftest import diagnose_texts, issue_verdict, verdict_of


# ---- the DRA driver waiting for a driver that another component installs ------------------------------
def _dra_wait(root: str, contents: str) -> str:
    return (
        "create symlink: /driver-root -> /driver-root-parent/nvidia\n"
        f"2026-05-02T09:14:20Z  /driver-root ({root} on host): nvidia-smi: not found, "
        f"libnvidia-ml.so.1: not found, current contents: [{contents}].\n"
        "Check failed. Has the NVIDIA GPU driver been set up? It is expected to be installed under "
        f"NVIDIA_DRIVER_ROOT (currently set to '{root}') in the host filesystem.\n"
    )


def test_an_empty_installer_root_is_a_wait_for_the_driver_installer(ruleset):
    for root in ("/home/kubernetes/bin/nvidia/", "/run/nvidia/driver"):
        verdict = verdict_of(ruleset, {"init-container.log": _dra_wait(root, "")})
        assert verdict[:2] == (
            "dra-driver-waits-for-the-driver-installer",
            "plugin-init-toolkit-wait",
        ), root


def test_a_root_that_holds_files_but_no_driver_stays_a_wrong_root(ruleset):
    host = _dra_wait("/", "bin  boot  dev  etc  lib  usr  var")
    assert verdict_of(ruleset, {"init-container.log": host})[0] == "dra-driver-finds-no-gpu-driver"
    empty_host_root = _dra_wait("/opt/nvidia", "")
    assert verdict_of(ruleset, {"init.log": empty_host_root})[0] == "dra-driver-finds-no-gpu-driver"


# ---- the kubelet knows the resource but has lost its plugin's endpoint --------------------------------
def test_an_endpoint_missing_from_the_kubelets_cache_is_a_lost_plugin_not_a_shortage(ruleset):
    files = {
        "events.txt": (
            "  Warning  FailedScheduling  1m  default-scheduler  0/3 nodes are available: "
            "1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector.\n"
        ),
        "kubelet.log": (
            "Mar 02 10:11:12 gpu-2 kubelet[2211]: E0302 10:11:12.104411    2211 "
            "kuberuntime_manager.go:815] container start failed: CreateContainerConfigError: "
            "endpoint not found in cache for a registered resource: nvidia.com/gpu\n"
        ),
    }
    verdict = verdict_of(ruleset, files)
    assert verdict[:2] == ("kubelet-lost-device-plugin", "no-allocatable-kubelet-socket")
    cut = {"kubelet.log": files["kubelet.log"].split("a regist")[0] + "a regist\n"}
    assert verdict_of(ruleset, cut)[0] == "kubelet-lost-device-plugin"


# ---- the runtime's set-up: K3s's containerd template ---------------------
def test_k3s_stopping_on_its_containerd_template_is_the_runtimes_failure(ruleset):
    journal = (
        'Mar 03 09:00:01 edge-4 k3s[2210]: time="2024-03-03T09:00:01Z" level=info msg="Starting '
        'k3s agent v1.27.7+k3s1"\n'
        'Mar 03 09:00:02 edge-4 k3s[2210]: time="2024-03-03T09:00:02Z" level=fatal msg="template: '
        'compiled_template:88:14: executing \\"compiled_template\\" at <.SystemdCgroup>: can\'t '
        'evaluate field SystemdCgroup in type templates.ContainerdRuntimeConfig"\n'
    )
    report_rule, category, _ = verdict_of(ruleset, {"k3s-journal.txt": journal})
    assert (report_rule, category) == ("k3s-containerd-template-failed", "runtime-other")
    own = 'level=fatal msg="template: compiled_template:7: function \\"base\\" not defined"\n'
    assert verdict_of(ruleset, {"k3s.log": own})[0] == "k3s-containerd-template-failed"


# ---- the DCGM exporter without the host engine it was told to use ----------------------------------
def test_an_exporter_that_cannot_reach_its_host_engine_is_no_toolkit_wait(ruleset):
    files = {
        "exporter.log": (
            'time="2023-05-02T08:00:00Z" level=info msg="Starting dcgm-exporter"\n'
            'time="2023-05-02T08:00:00Z" level=info msg="Attemping to connect to remote hostengine '
            'at localhost:5555"\n'
            'time="2023-05-02T08:00:05Z" level=fatal msg="Error connecting to nv-hostengine: Host '
            'engine connection invalid/disconnected"\n'
        ),
        "pods.txt": (
            "NAME                               READY   STATUS             RESTARTS   AGE\n"
            "nvidia-dcgm-exporter-5kq2x         0/1     CrashLoopBackOff   31         2h\n"
            "gpu-feature-discovery-8xw2l        0/1     Init:0/1           0          2h\n"
        ),
    }
    verdict = verdict_of(ruleset, files)
    assert verdict[:2] == ("dcgm-exporter-cannot-reach-hostengine", "runtime-other")


# ---- installs that never ran and drivers never installed: what four builders read --------------------
def _helm_refused(verb: str, failed: str, constraint: str) -> str:
    """An issue whose one code block is Helm refusing the chart on EKS's version."""
    return (
        f"# helm {verb} fails on EKS\n\n```\n$ helm {verb} hami hami-charts/hami -n hami\n"
        f"Error: {failed} FAILED: chart requires kubeVersion: {constraint} which is incompatible "
        "with Kubernetes v1.31.4-eks-2d5f260\n```\n"
    )


def test_a_refused_helm_install_leaves_no_plugin_pod(ruleset):
    body = _helm_refused("install", "INSTALLATION", ">= 1.18.0")
    assert issue_verdict(ruleset, body)[:2] == (
        "helm-chart-refuses-provider-version",
        "no-device-plugin-pod",
    )


def test_gkes_failing_driver_installer_leaves_the_plugin_without_nvml(ruleset):
    listing = (
        "NAMESPACE     NAME                            READY   STATUS                  RESTARTS   AGE\n"
        "kube-system   nvidia-driver-installer-q7m2d   0/1     Init:CrashLoopBackOff   9          25m\n"
    )
    verdict = verdict_of(ruleset, {"pods.txt": listing})
    assert verdict[:2] == ("gke-driver-installer-failing", "plugin-crash-nvml")


# ---- the GPU Operator's CUDA test pod: the driver and toolkit passed, CUDA cannot run ----------------
def test_the_cuda_test_pod_failing_is_a_cuda_workload_that_cannot_run(ruleset):
    listing = (
        "NAME                                       READY   STATUS                  RESTARTS   AGE\n"
        "nvidia-container-toolkit-daemonset-7kq2w   1/1     Running                 0          20m\n"
        "nvidia-cuda-validator-w2x8p                0/1     Init:CrashLoopBackOff   6          19m\n"
    )
    verdict = verdict_of(ruleset, {"pods.txt": listing})
    assert verdict == ("gpu-operator-cuda-workload-failing", "runtime-other", "low")
    own = listing.replace("nvidia-cuda-validator-w2x8p ", "nvidia-operator-validator-w2x8p")
    assert verdict_of(ruleset, {"pods.txt": own})[0] == "gpu-operator-validation-failing"


# ---- the review's counter-examples: recovered states, other components' words, other resources -------
def test_every_runtimes_wording_of_exec_format_error(ruleset):
    for line in (
        "standard_init_linux.go:228: exec user process caused: exec format error",
        "exec ./k8s-device-plugin: exec format error",
        "Error: container create failed: exec container process `/usr/bin/dp`: Exec format error",
    ):
        assert verdict_of(ruleset, {"plugin.log": line + "\n"})[0] == (
            "image-for-another-architecture"
        ), line


def test_a_dra_check_that_passed_later_is_no_wait(ruleset):
    passed = _dra_wait("/run/nvidia/driver", "") + (
        "2026-05-02T09:16:20Z  /driver-root (/run/nvidia/driver on host): nvidia-smi: "
        "'/driver-root/usr/bin/nvidia-smi', libnvidia-ml.so.1: '/driver-root/usr/lib64/libnvidia-ml.so.1'\n"
        "nvidia-smi returned with code 0: success, leave\n"
    )
    rule = verdict_of(ruleset, {"init.log": passed})[0]
    assert rule not in (
        "dra-driver-waits-for-the-driver-installer",
        "dra-driver-finds-no-gpu-driver",
    )


def test_a_dra_wait_behind_a_failing_installer_is_the_installers(ruleset):
    files = {
        "init.log": _dra_wait("/home/kubernetes/bin/nvidia/", ""),
        "pods.txt": (
            "NAMESPACE     NAME                            READY   STATUS                  RESTARTS   AGE\n"
            "kube-system   nvidia-driver-installer-m2k9x   0/1     Init:CrashLoopBackOff   7          20m\n"
        ),
    }
    assert verdict_of(ruleset, files)[0] == "gke-driver-installer-failing"


def test_a_dra_root_left_empty_beside_a_working_host_driver_is_the_wrong_root(ruleset):
    smi = (
        "+-----------------------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n"
        "|-----------------------------------------+------------------------+----------------------+\n"
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
        "|   0  NVIDIA A100-SXM4-40GB          On  |   00000000:07:00.0 Off |                    0 |\n"
        "+-----------------------------------------+------------------------+----------------------+\n"
    )
    files = {"init.log": _dra_wait("/run/nvidia/driver", ""), "nvidia-smi.txt": smi}
    assert verdict_of(ruleset, files)[0] == "dra-driver-finds-no-gpu-driver"


def test_an_endpoint_the_plugin_brought_back_or_another_resources_is_no_lost_gpu_plugin(ruleset):
    lost = (
        "Mar 02 10:11:12 gpu-2 kubelet[2211]: E0302 10:11:12.104411    2211 "
        "kuberuntime_manager.go:815] container start failed: CreateContainerConfigError: "
        "endpoint not found in cache for a registered resource: {res}\n"
    )
    back = (
        'Mar 02 10:11:40 gpu-2 kubelet[2211]: I0302 10:11:40.000000    2211 server.go:160] "Got '
        'registration request from device plugin with resource" resourceName="nvidia.com/gpu"\n'
    )
    assert verdict_of(ruleset, {"kubelet.log": lost.format(res="nvidia.com/gpu") + back})[0] != (
        "kubelet-lost-device-plugin"
    )
    rdma = {"kubelet.log": lost.format(res="rdma/hca_shared_devices_a")}
    assert verdict_of(ruleset, rdma)[0] != "kubelet-lost-device-plugin"


def test_a_k3s_that_started_after_its_template_failed_is_no_template_failure(ruleset):
    journal = (
        'Nov 01 10:03:02 n1 k3s[1314]: time="2023-11-01T10:03:02+01:00" level=fatal msg="template: '
        'compiled_template:119:21: executing \\"compiled_template\\" at <.SystemdCgroup>: can\'t '
        'evaluate field SystemdCgroup in type templates.ContainerdRuntimeConfig"\n'
        'Nov 01 10:41:12 n1 k3s[2210]: time="2023-11-01T10:41:12+01:00" level=info msg="Containerd '
        'is now running"\n'
    )
    assert verdict_of(ruleset, {"k3s.log": journal})[0] != "k3s-containerd-template-failed"
    terminal = (
        'FATA[0001] template: compiled_template:119:21: executing "compiled_template" at '
        "<.SystemdCgroup>: can't evaluate field SystemdCgroup in type "
        "templates.ContainerdRuntimeConfig\n"
    )
    report = diagnose_texts(ruleset, {"k3s-agent.txt": terminal})
    assert report.primary.rule_id == "k3s-containerd-template-failed"
    assert "SystemdCgroup regression" in report.primary.title


def test_an_exporter_that_connected_later_or_dcgmi_by_hand_is_no_unreachable_engine(ruleset):
    later = (
        'time="2024-02-01T08:00:05Z" level=fatal msg="Error connecting to nv-hostengine: Host '
        'engine connection invalid/disconnected"\n'
        'time="2024-02-01T08:00:31Z" level=info msg="DCGM successfully initialized!"\n'
    )
    assert (
        verdict_of(ruleset, {"exporter.log": later})[0] != "dcgm-exporter-cannot-reach-hostengine"
    )
    dcgmi = (
        "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n"
    )
    assert verdict_of(ruleset, {"dcgmi.txt": dcgmi})[0] != "dcgm-exporter-cannot-reach-hostengine"


def test_a_refused_helm_upgrade_leaves_the_release_running(ruleset):
    body = _helm_refused("upgrade", "UPGRADE", ">= 1.16.0")
    assert issue_verdict(ruleset, body)[0] != "helm-chart-refuses-provider-version"


# ---- the MIG manager's own NVML failure is not the device plugin's -----------------------------------
def test_the_mig_managers_nvml_failure_is_not_the_device_plugins(ruleset):
    files = {
        "mig-manager.log": (
            'time="2025-10-01T09:00:00Z" level=info msg="Applying the selected MIG config to the node"\n'
            'time="2025-10-01T09:00:01Z" level=fatal msg="Error applying MIG configuration with hooks: '
            'error initializing NVML: ERROR_LIBRARY_NOT_FOUND"\n'
        ),
        "labels.txt": "    nvidia.com/gpu.deploy.device-plugin: paused-for-mig-change\n",
    }
    verdict = verdict_of(ruleset, files)
    assert verdict[:2] == ("mig-manager-cannot-load-nvml", "runtime-other")


# ---- a device plugin described as running on a node whose Capacity has no GPU -----------------------
def test_a_running_plugin_beside_a_capacity_without_gpus_is_no_missing_plugin_pod(ruleset):
    capacity = (
        "Capacity:\n  cpu:                16\n  memory:             65842436Ki\n  pods:               110\n"
        "Allocatable:\n  cpu:                16\n  memory:             65740036Ki\n  pods:               110\n"
    )
    describe = (
        "Name:                 nvidia-device-plugin-daemonset-q2x7m\n"
        "Namespace:            kube-system\n"
        "Priority:             2000001000\n"
        "Node:                 gpu-7/10.0.0.7\n"
        "Status:               Running\n"
        "Controlled By:  DaemonSet/nvidia-device-plugin-daemonset\n"
        "Containers:\n"
        "  nvidia-device-plugin-ctr:\n"
        "    Image:         nvcr.io/nvidia/k8s-device-plugin:v0.14.5\n"
        "    State:          Running\n"
        "    Ready:          True\n"
    )
    alone = verdict_of(ruleset, {"capacity.txt": capacity})
    assert alone[:2] == ("gpu-resource-absent-from-capacity", "no-device-plugin-pod")
    both = verdict_of(ruleset, {"capacity.txt": capacity, "describe.txt": describe})
    assert both[1] != "no-device-plugin-pod"


# ---- Volcano's admission webhooks, which fail closed ---------------------------------------------------
def test_volcanos_admission_webhook_unreachable_is_a_scheduling_failure(ruleset):
    err = (
        'Error from server (InternalError): error when creating "job.yaml": Internal error occurred: '
        'failed calling webhook "validatejob.volcano.sh": failed to call webhook: Post '
        '"https://volcano-admission-service.volcano-system.svc:443/jobs/validate?timeout=10s": '
        "dial tcp 10.96.14.2:443: connect: connection refused\n"
    )
    verdict = verdict_of(ruleset, {"kubectl.txt": err})
    assert verdict[:2] == ("volcano-admission-webhook-failing", "scheduling-other")
    hami = err.replace("validatejob.volcano.sh", "vgpu.hami.io")
    assert verdict_of(ruleset, {"kubectl.txt": hami})[0] != "volcano-admission-webhook-failing"


# ---- the kubelet's socket refused to a plugin; a device in the pod's own resources ---------------------
def test_a_plugin_refused_the_kubelets_socket_is_a_socket_permission(ruleset):
    log = (
        "E0502 08:00:00.000000       1 manager.go:146] Failed to serve example.com/accel: rpc error: "
        'code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial unix '
        '/var/lib/kubelet/device-plugins/kubelet.sock: connect: permission denied"\n'
    )
    verdict = verdict_of(ruleset, {"plugin.log": log})
    assert verdict[:2] == ("kubelet-socket-permission-denied", "no-allocatable-kubelet-socket")
    missing = log.replace("permission denied", "no such file or directory")
    assert verdict_of(ruleset, {"plugin.log": missing})[0] == "kubelet-register-failed"


def test_a_device_in_the_pods_own_resources_is_refused_before_any_node(ruleset):
    body = (
        "# GPU resource not accepted\n\n```\n$ kubectl apply -f infer.yaml\n"
        'The Deployment "infer" is invalid: spec.template.spec.resources.limits[nvidia.com/gpu]: '
        'Unsupported value: "nvidia.com/gpu": supported values: "cpu", "hugepages-", "memory"\n```\n'
    )
    assert issue_verdict(ruleset, body)[:2] == (
        "device-requested-in-pod-level-resources",
        "scheduling-other",
    )


# ---- the kubelet refusing a bound pod for cpu or memory: another scheduler's count -------------------
def test_a_bound_pod_refused_for_memory_is_the_schedulers_count(ruleset):
    describe = (
        "Name:             trainer-0\nNamespace:        ml\nNode:             gpu-3/10.0.0.3\n"
        "Status:           Failed\nReason:           OutOfcpu\n"
        "Message:          Pod was rejected: Node didn't have enough resource: cpu, requested: 8000, "
        "used: 60500, capacity: 64000\n"
    )
    verdict = verdict_of(ruleset, {"describe.txt": describe})
    assert verdict[:2] == ("kubelet-rejected-what-the-scheduler-counted", "scheduling-other")
    gpu = describe.replace("OutOfcpu", "OutOfnvidia.com/gpu").replace(
        "cpu, requested: 8000, used: 60500, capacity: 64000",
        "nvidia.com/gpu, requested: 1, used: 0, capacity: 0",
    )
    assert verdict_of(ruleset, {"describe.txt": gpu})[0] == "kubelet-has-no-gpu-at-admission"


# ---- the second review's counter-examples ------------------------------------------------------------
def test_a_rules_text_quotes_the_line_it_fired_on(ruleset):
    log = (
        'E0707 11:53:33.346585       1 dispatcher.go:180] failed calling webhook "validate.nginx.ingress'
        '.kubernetes.io": failed to call webhook: Post "https://ingress-nginx-controller-admission.'
        'ingress-nginx.svc:443/networking/v1/ingresses?timeout=10s": dial tcp 10.96.1.2:443: connect: '
        "connection refused\n"
        'E0707 11:53:35.346585       1 dispatcher.go:180] failed calling webhook "validatejob.volcano.sh":'
        ' failed to call webhook: Post "https://volcano-admission-service.volcano-system.svc:443/jobs/'
        'validate?timeout=10s": context deadline exceeded\n'
    )
    report = diagnose_texts(ruleset, {"apiserver.log": log})
    assert report.primary.rule_id == "volcano-admission-webhook-failing"
    assert "validatejob.volcano.sh" in report.primary.title
    finding = next(
        f for n in report.nodes for f in n.all_findings() if f.rule_id == report.primary.rule_id
    )
    assert "nginx" not in finding.title + finding.explanation


def test_a_volcano_webhook_that_fails_open_or_a_queue_the_scheduler_cannot_create(ruleset):
    failing_open = (
        "W0707 11:53:34.346585       1 dispatcher.go:210] Failed calling webhook, failing open "
        'mutatepod.volcano.sh: failed calling webhook "mutatepod.volcano.sh": failed to call webhook: '
        "context deadline exceeded\n"
    )
    assert verdict_of(ruleset, {"apiserver.log": failing_open})[0] != (
        "volcano-admission-webhook-failing"
    )
    exits = (
        "F0302 08:00:00.000000       1 scheduler.go:90] failed to init default queue: Internal error "
        'occurred: failed calling webhook "mutatequeue.volcano.sh": failed to call webhook: EOF\n'
    )
    assert verdict_of(ruleset, {"volcano-scheduler.log": exits})[0] == (
        "volcano-scheduler-cannot-create-default-queue"
    )


def test_a_socket_refusal_a_retry_got_past_is_no_fault(ruleset):
    log = (
        "E0502 08:00:00.000000       1 manager.go:146] Failed to serve gpu.intel.com/i915: rpc error: "
        'code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial unix '
        '/var/lib/kubelet/device-plugins/kubelet.sock: connect: permission denied"\n'
        "I0502 08:00:31.000000       1 server.go:303] Device plugin for gpu.intel.com/i915 registered\n"
    )
    assert verdict_of(ruleset, {"plugin.log": log})[0] != "kubelet-socket-permission-denied"


def test_pod_level_resources_other_wordings_and_a_fixed_manifest(ruleset):
    unknown = (
        'Error from server (BadRequest): error when creating "infer.yaml": Deployment in version "v1" '
        "cannot be handled as a Deployment: strict decoding error: unknown field "
        '"spec.template.spec.resources"\n'
    )
    assert (
        verdict_of(ruleset, {"apply.txt": unknown})[0] == "device-requested-in-pod-level-resources"
    )
    storage = (
        'The Pod "p" is invalid: spec.resources.limits[ephemeral-storage]: Unsupported value: '
        '"ephemeral-storage": supported values: "cpu", "memory"\n'
    )
    assert (
        verdict_of(ruleset, {"apply.txt": storage})[0] != "device-requested-in-pod-level-resources"
    )


def test_the_cuda_test_pod_a_runtime_could_not_start_or_that_passed_later(ruleset):
    header = "NAME                          READY   STATUS                  RESTARTS   AGE\n"
    never_started = (
        header + "nvidia-cuda-validator-ccq5m   0/1     Init:RunContainerError  4          6m\n"
    )
    assert (
        verdict_of(ruleset, {"pods.txt": never_started})[0] != "gpu-operator-cuda-workload-failing"
    )
    passed = (
        header
        + "nvidia-cuda-validator-ccq5m   0/1     Init:CrashLoopBackOff   5          9m\n"
        + "\n$ kubectl get pods -n gpu-operator\n"
        + header
        + "nvidia-cuda-validator-7hq2w   0/1     Completed               0          3m\n"
    )
    assert verdict_of(ruleset, {"pods.txt": passed})[0] != "gpu-operator-cuda-workload-failing"


def test_a_mig_layout_applied_later_or_hamis_own_mig_parted_is_no_mig_manager_fault(ruleset):
    failed = (
        'time="2025-09-12T18:54:04Z" level=fatal msg="Error applying MIG configuration with hooks: '
        'error initializing NVML: ERROR_LIBRARY_NOT_FOUND"\n'
    )
    later = failed + (
        'time="2025-09-12T19:10:31Z" level=info msg="Successfully updated to MIG config: all-1g.10gb"\n'
    )
    rule = verdict_of(ruleset, {"mig-manager.log": later})[0]
    assert rule not in ("mig-manager-cannot-load-nvml", "nvml-init-failed")
    hami = (
        "F0314 08:00:01.000000       1 server.go:270] nvidia-mig-parted failed with exit status 1,"
        "reason:" + failed
    )
    assert (
        verdict_of(ruleset, {"hami-device-plugin.log": hami})[0] != "mig-manager-cannot-load-nvml"
    )


def test_a_plugin_running_elsewhere_or_crash_looping_leaves_the_missing_gpu_resource(ruleset):
    node = (
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n  labels:\n"
        '    kubernetes.io/hostname: gpu-1\n    gpu: "on"\n    nvidia.com/gpu.present: "true"\n'
        'status:\n  capacity: {cpu: "16", pods: "110"}\n  allocatable: {cpu: "16", pods: "110"}\n'
    )
    describe = (
        "Name:                 nvidia-device-plugin-daemonset-q2x7m\n"
        "Namespace:            kube-system\n"
        "Priority:             2000001000\n"
        "Node:                 {node}/10.0.0.7\n"
        "Status:               Running\n"
        "Controlled By:  DaemonSet/nvidia-device-plugin-daemonset\n"
        "Containers:\n  nvidia-device-plugin-ctr:\n"
        "    State:          {state}\n    Ready:          {ready}\n"
    )
    for where, state, ready in (
        ("gpu-2", "Running", "True"),
        ("gpu-1", "Waiting\n      Reason:       CrashLoopBackOff", "False"),
    ):
        files = {
            "node.yaml": node,
            "describe.txt": describe.format(node=where, state=state, ready=ready),
        }
        assert verdict_of(ruleset, files)[0] == "gpu-resource-absent-from-capacity", where


def test_another_vendors_plugin_gets_its_own_fix_not_hamis_chart(ruleset):
    line = (
        "E0502 08:00:00.000000       1 manager.go:88] Registration failed: rpc error: code = "
        'Unavailable desc = connection error: desc = "transport: Error while dialing: dial unix '
        '/var/lib/kubelet/device-plugins/kubelet.sock: connect: no such file or directory"\n'
    )
    report = diagnose_texts(ruleset, {"amd-dp.log": line})
    [finding] = [
        f for n in report.nodes for f in n.all_findings() if f.rule_id == "kubelet-register-failed"
    ]
    commands = " ".join(step.command or "" for step in finding.remediation)
    assert "$DS" in commands and "helm upgrade hami" not in commands
