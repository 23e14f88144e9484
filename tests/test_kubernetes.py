"""The Kubernetes manifests in deploy/kubernetes/ (a Kustomize base, one
replica; overlays/replicas, several on PostgreSQL): rendered by
tests/kustomize.py (and compared with `kubectl kustomize` where kubectl is
installed), validated strictly against the schemas of a pinned Kubernetes
version (kubernetes-validate), scanned by checkov with no failed check,
their configs passing `wasm-mcp config check`, and both served for real
with the Deployment's arguments and environment: the real plugins pushed
to a registry, signed, and pulled by digest into an empty plugin folder;
the overlay's replicas on a real PostgreSQL (TLS, the password from the
Secret's file), named after their pods, sharing what they write.

The scanners live in a venv of their own (`scripts/scan-tools`)."""

import hashlib
import http.client
import json
import os
import re
import secrets
import shutil
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from cluster import Postgres, post
from conftest import BINARY, PLUGINS, ROOT, modern_meta
from kustomize import name_hash
from test_oci import Registry
from test_signatures import key_pair

DEPLOY = ROOT / "deploy" / "kubernetes"
KUSTOMIZATIONS = {"base": DEPLOY / "base", "replicas": DEPLOY / "overlays" / "replicas"}
SCAN_VENV = ROOT / ".cache" / "scan-venv" / "bin"
# The Kubernetes version the manifests are validated against (the oldest
# the book promises; `lifecycle.preStop.sleep` is on by default from 1.30).
KUBERNETES_VERSION = "1.32.0"
NAMESPACE = "wasm-mcp"
CONFIG = "wasm-mcp.toml"
# Checkov checks the manifests fail on purpose, each with the reason the
# book's Kubernetes chapter also gives. None.
ACCEPTED_FAILURES: dict[str, str] = {}
# A few of the checks that must be among those passed (so that a scan of
# nothing, or of the wrong framework, cannot pass).
MUST_PASS = {
    "CKV_K8S_8",   # liveness probe
    "CKV_K8S_9",   # readiness probe
    "CKV_K8S_20",  # no privilege escalation
    "CKV_K8S_21",  # not the default namespace
    "CKV_K8S_22",  # read-only root filesystem
    "CKV_K8S_28",  # NET_RAW dropped
    "CKV_K8S_31",  # seccomp RuntimeDefault
    "CKV_K8S_37",  # capabilities minimised
    "CKV_K8S_38",  # no service account token
    "CKV_K8S_40",  # a high uid
    "CKV_K8S_43",  # the image by digest
}


def scan_tool(name):
    tool = SCAN_VENV / name
    assert tool.exists(), f"{tool} is missing: run scripts/scan-tools"
    return tool


def render(directory):
    """The objects of a kustomization, by tests/kustomize.py, and by kubectl
    too where it is installed (then both must agree exactly)."""
    python = scan_tool("python")
    done = subprocess.run([str(python), str(ROOT / "tests" / "kustomize.py"), str(directory)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    objects = json.loads(done.stdout)
    kubectl = shutil.which("kubectl")
    if kubectl:
        theirs = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
        assert theirs.returncode == 0, theirs.stderr
        parsed = subprocess.run([str(python), str(ROOT / "tests" / "kustomize.py"), "--parse", "-"],
                                input=theirs.stdout, capture_output=True, text=True, timeout=60)
        assert parsed.returncode == 0, parsed.stderr
        assert json.loads(parsed.stdout) == objects, f"tests/kustomize.py and kubectl kustomize differ on {directory}"
    return objects


@pytest.fixture(scope="module")
def rendered():
    return {name: render(directory) for name, directory in KUSTOMIZATIONS.items()}


def one(objects, kind):
    found = [obj for obj in objects if obj["kind"] == kind]
    assert len(found) == 1, (kind, [o["kind"] for o in objects])
    return found[0]


def config_of(objects):
    """The config the Deployment mounts: its ConfigMap's wasm-mcp.toml."""
    deployment = one(objects, "Deployment")
    volume = volume_of(deployment, "config")
    config_map = one(objects, "ConfigMap")
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    return config_map["data"][CONFIG]


def pod(deployment):
    return deployment["spec"]["template"]["spec"]


def container(deployment):
    containers = pod(deployment)["containers"]
    assert len(containers) == 1
    return containers[0]


def volume_of(deployment, name):
    return next(v for v in pod(deployment)["volumes"] if v["name"] == name)


def write_objects(objects, folder):
    """Each object in a file of its own (JSON, which is YAML)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, obj in enumerate(objects):
        (folder / f"{i:02}-{obj['kind'].lower()}.yaml").write_text(json.dumps(obj, indent=1))
    return sorted(folder.iterdir())


def validate(files):
    return subprocess.run([str(scan_tool("kubernetes-validate")), "--strict", "-k", KUBERNETES_VERSION,
                           *map(str, files)], capture_output=True, text=True, timeout=300)


def checkov(folder):
    """checkov's kubernetes report on a folder of manifests, offline."""
    done = subprocess.run([str(scan_tool("checkov")), "--framework", "kubernetes", "-d", str(folder),
                           "--output", "json", "--skip-download", "--compact"],
                          capture_output=True, text=True, timeout=600)
    assert done.stdout.strip(), done.stderr[-3000:]
    report = json.loads(done.stdout)
    reports = report if isinstance(report, list) else [report]
    assert [r["check_type"] for r in reports] == ["kubernetes"], done.stdout[:2000]
    return reports[0]


def test_the_renderer_names_a_generated_config_map_as_kustomize_does():
    # `kubectl kustomize` (kustomize 5.5) named this one v-mgh866c99m: a
    # vector for machines without kubectl, with characters Go's JSON escapes.
    assert name_hash({"metadata": {"name": "v"}, "data": {"a.toml": 'x = "<&>"\n'}}) == "mgh866c99m"


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_every_object_is_valid_against_the_pinned_kubernetes_schemas(rendered, name, tmp_path):
    objects = rendered[name]
    files = write_objects(objects, tmp_path / name)
    done = validate(files)
    assert done.returncode == 0, done.stdout + done.stderr
    passed = re.findall(rf"passed for resource \S+ against version {KUBERNETES_VERSION.rsplit('.', 1)[0]}",
                        done.stdout + done.stderr)
    assert len(passed) == len(objects), done.stdout + done.stderr
    # Strict: a misspelt field is refused, not ignored.
    deployment = json.loads(json.dumps(one(objects, "Deployment")))
    container(deployment)["readinesProbe"] = container(deployment).pop("readinessProbe")
    (tmp_path / "bad.yaml").write_text(json.dumps(deployment))
    bad = validate([tmp_path / "bad.yaml"])
    assert bad.returncode != 0 and "readinesProbe" in bad.stdout + bad.stderr, bad.stdout + bad.stderr


def test_checkov_finds_no_failed_check(rendered, tmp_path):
    for name, objects in rendered.items():
        write_objects(objects, tmp_path / "manifests" / name)
    report = checkov(tmp_path / "manifests")
    failed = {(c["check_id"], c["resource"]) for c in report["results"]["failed_checks"]}
    unexplained = sorted(f for f in failed if f[0] not in ACCEPTED_FAILURES)
    assert not unexplained, unexplained
    passed = {c["check_id"] for c in report["results"]["passed_checks"]}
    assert MUST_PASS <= passed, MUST_PASS - passed
    assert report["summary"]["parsing_errors"] == 0, report["summary"]
    # Every object read (checkov counts a Deployment's pod template besides it).
    assert report["summary"]["resource_count"] >= sum(map(len, rendered.values())), report["summary"]
    checked = {c["resource"] for c in report["results"]["passed_checks"]}
    for kind in ("Deployment", "Service", "ServiceAccount", "ConfigMap"):
        assert any(r.startswith(f"{kind}.{NAMESPACE}.wasm-mcp") for r in checked), (kind, sorted(checked))
    # The book states the result and every accepted failure's reason.
    book = (ROOT / "docs" / "src" / "running" / "kubernetes.md").read_text()
    for check, reason in ACCEPTED_FAILURES.items():
        assert check in book and reason in book, check
    # The scanner is armed: the same Deployment without its securityContext fails.
    deployment = json.loads(json.dumps(one(rendered["base"], "Deployment")))
    del container(deployment)["securityContext"]
    del pod(deployment)["securityContext"]
    write_objects([deployment], tmp_path / "insecure")
    insecure = checkov(tmp_path / "insecure")
    refused = {c["check_id"] for c in insecure["results"]["failed_checks"]}
    assert {"CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_28"} <= refused, refused


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_the_config_map_holds_a_config_that_passes_config_check(rendered, name, tmp_path):
    config = tmp_path / CONFIG
    config.write_text(config_of(rendered[name]))
    done = subprocess.run([str(BINARY), "config", "check", "--no-files", str(config)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    # It is the file beside the kustomization, unchanged.
    assert config.read_text() == (KUSTOMIZATIONS[name] / CONFIG).read_text()


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_the_deployment_is_locked_down(rendered, name):
    objects = rendered[name]
    deployment = one(objects, "Deployment")
    spec = pod(deployment)
    main = container(deployment)
    for context in (spec["securityContext"], main["securityContext"]):
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] == 65532 and context["runAsGroup"] == 65532
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert main["securityContext"]["readOnlyRootFilesystem"] is True
    assert main["securityContext"]["allowPrivilegeEscalation"] is False
    assert main["securityContext"]["privileged"] is False
    assert main["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert spec["automountServiceAccountToken"] is False
    account = one(objects, "ServiceAccount")
    assert spec["serviceAccountName"] == account["metadata"]["name"]
    assert account["automountServiceAccountToken"] is False
    assert not [o for o in objects if o["kind"] in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")]
    assert not any(spec.get(k) for k in ("hostNetwork", "hostPID", "hostIPC"))
    # Requests and limits of CPU, memory and ephemeral storage.
    for bound in ("requests", "limits"):
        assert set(main["resources"][bound]) == {"cpu", "memory", "ephemeral-storage"}, main["resources"]
    # The image by digest, pulled by digest only.
    assert re.fullmatch(r"[a-z0-9.-]+(/[a-z0-9._-]+)+@sha256:[0-9a-f]{64}", main["image"]), main["image"]
    # Probes: ready on /readyz, alive on /healthz, and a startup probe.
    port = next(p for p in main["ports"] if p["name"] == "http")
    assert port["containerPort"] == 8080
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert main["startupProbe"]["httpGet"]["path"] in ("/healthz", "/readyz")
    # Writable: only the emptyDirs, each bounded; everything else read-only.
    writable = {m["mountPath"] for m in main["volumeMounts"] if not m.get("readOnly")}
    assert writable == {"/tmp", "/plugins", "/var/lib/wasm-mcp"}, writable
    for mount in main["volumeMounts"]:
        volume = volume_of(deployment, mount["name"])
        if mount["mountPath"] in writable:
            assert volume["emptyDir"]["sizeLimit"], volume
        else:
            assert set(volume) & {"configMap", "secret"}, volume
    # Every namespaced object in the namespace the Namespace declares, under
    # the "restricted" Pod Security Standard.
    namespace = one(objects, "Namespace")
    assert namespace["metadata"]["name"] == NAMESPACE
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for obj in objects:
        if obj["kind"] != "Namespace":
            assert obj["metadata"].get("namespace") == NAMESPACE, obj["kind"]
    # The Service and the NetworkPolicy select the pods; ingress to 8080 only.
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    service = one(objects, "Service")
    assert service["spec"]["selector"].items() <= labels.items()
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"]
    policy = one(objects, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    assert [p for rule in policy["spec"]["ingress"] for p in rule["ports"]] == [{"port": 8080, "protocol": "TCP"}]
    egress = {(p["port"], p["protocol"]) for rule in policy["spec"]["egress"] for p in rule["ports"]}
    assert {(53, "UDP"), (53, "TCP"), (443, "TCP")} <= egress, egress


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_the_grace_period_outlasts_the_drain(rendered, name):
    deployment = one(rendered[name], "Deployment")
    config = tomllib.loads(config_of(rendered[name]))
    drain = config["cluster"]["drain_secs"]
    pre_stop = container(deployment)["lifecycle"]["preStop"]["sleep"]["seconds"]
    # SIGTERM comes after preStop; the host then drains for up to drain_secs.
    assert pod(deployment)["terminationGracePeriodSeconds"] > pre_stop + drain


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_every_path_the_config_names_is_mounted_and_writable_where_the_host_writes(rendered, name):
    deployment = one(rendered[name], "Deployment")
    mounts = {m["mountPath"]: m for m in container(deployment)["volumeMounts"]}
    args = container(deployment)["args"]
    config = tomllib.loads(config_of(rendered[name]))

    def mount(path, writable):
        found = [m for p, m in mounts.items() if path == p or path.startswith(p.rstrip("/") + "/")]
        assert found, f"{path} is in no volume"
        assert writable != bool(found[-1].get("readOnly")), f"{path}: {found[-1]}"
        return volume_of(deployment, found[-1]["name"])

    mount(args[args.index("--config") + 1], writable=False)
    mount(args[args.index("--plugins") + 1], writable=True)
    mount(config["server"]["cache_dir"] + "/x", writable=True)
    # The host's state folder (the compile cache's key, default stores).
    env = {e["name"]: e.get("value") for e in container(deployment)["env"]}
    mount(env["XDG_STATE_HOME"] + "/wasm-mcp/cache.key", writable=True)
    for key in config["signatures"]["keys"]:
        assert mount(key, writable=False)["secret"]["secretName"] == "wasm-mcp-signing-keys"
    if "url" in config.get("state", {}):
        password = config["state"]["password"]
        assert set(password) == {"file"}, "the password comes from a Secret's file, not the environment"
        assert mount(password["file"], writable=False)["secret"]["secretName"] == "wasm-mcp-database"
    else:
        mount(config["tasks"]["store"], writable=True)
        mount(config["state"]["keyvalue_store"], writable=True)
    # Every plugin from OCI, pinned by digest, and signed.
    assert config["plugins"] and config["signatures"]["policy"] == "required"
    for plugin, section in config["plugins"].items():
        assert re.fullmatch(r"oci://[^/]+/.+@sha256:[0-9a-f]{64}", section["source"]), (plugin, section)


def test_one_replica_in_the_base_and_several_sharing_the_database_in_the_overlay(rendered):
    base, replicas = rendered["base"], rendered["replicas"]
    # The base keeps its state in the pod: it must not be scaled.
    assert one(base, "Deployment")["spec"]["replicas"] == 1
    assert not [o for o in base if o["kind"] in ("HorizontalPodAutoscaler", "PodDisruptionBudget")]
    assert "url" not in tomllib.loads(config_of(base)).get("state", {})

    deployment = one(replicas, "Deployment")
    config = tomllib.loads(config_of(replicas))
    assert config["state"]["url"].startswith("postgres://") and "@" in config["state"]["url"]
    assert config["cluster"]["lease_secs"] > 0
    autoscaler = one(replicas, "HorizontalPodAutoscaler")
    assert autoscaler["apiVersion"] == "autoscaling/v2"
    assert autoscaler["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                                    "name": deployment["metadata"]["name"]}
    assert [m["resource"]["name"] for m in autoscaler["spec"]["metrics"]] == ["cpu"]
    assert 2 <= autoscaler["spec"]["minReplicas"] == deployment["spec"]["replicas"] < autoscaler["spec"]["maxReplicas"]
    budget = one(replicas, "PodDisruptionBudget")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert budget["spec"]["maxUnavailable"] == 1
    # Each replica is named after its pod (the downward API).
    env = {e["name"]: e for e in container(deployment)["env"]}
    assert env["WASM_MCP_REPLICA"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    # The database is reachable; the base reaches none.
    def egress_ports(objects):
        return {p["port"] for rule in one(objects, "NetworkPolicy")["spec"]["egress"] for p in rule["ports"]}
    assert 5432 in egress_ports(replicas) and 5432 not in egress_ports(base)


def readyz(authority):
    conn = http.client.HTTPConnection(authority, timeout=30)
    conn.request("GET", "/readyz")
    answer = conn.getresponse()
    status, body = answer.status, json.loads(answer.read())
    conn.close()
    return status, body


def modern(authority, id_, method, params, name=None):
    """A 2026-07-28 request (no session); its JSON-RPC reply."""
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name:
        headers["Mcp-Name"] = name
    status, _, reply = post(authority, {"jsonrpc": "2.0", "id": id_, "method": method,
                                        "params": dict(params, _meta=modern_meta())}, headers)
    assert status == 200 and reply is not None, (status, reply)
    return reply


# What the tests run with, besides what the Deployment sets (no HOME of
# the machine's: a file the host wrote there would show).
def machine_env(tmp_path):
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WASM_MCP_STARTUP_WAIT_MS": "600000"}


def publish(config_text, registry, private, env):
    """The config with each placeholder source replaced as the book says:
    the real plugin pushed to `registry`, signed with `private`, and named
    by the digest push printed."""
    for plugin, section in tomllib.loads(config_text)["plugins"].items():
        placeholder = section["source"]
        repository = re.fullmatch(r"oci://[^/]+/(.+)@sha256:0{64}", placeholder).group(1)
        ref = f"oci://{registry.address}/{repository}:test"
        pushed = subprocess.run([str(BINARY), "push", str(PLUGINS / f"{plugin}.wasm"), ref],
                                capture_output=True, text=True, env=env, timeout=300)
        assert pushed.returncode == 0, pushed.stderr
        digest = re.search(r"sha256:[0-9a-f]{64}", pushed.stdout).group(0)
        signed = subprocess.run([str(BINARY), "sign", ref, "--key", str(private)],
                                capture_output=True, text=True, env=env, timeout=300)
        assert signed.returncode == 0, signed.stderr
        config_text = config_text.replace(placeholder, f"oci://{registry.address}/{repository}@{digest}")
    assert "0" * 64 not in config_text
    return config_text


class Pod:
    """The Deployment's container run here: its folders under `root`, its
    arguments (but a loopback address), its environment (the downward API
    giving `name`), `files` (pod path: content) in its read-only mounts."""

    def __init__(self, root, deployment, config_text, files, env, name):
        self.root, self.name = root, name
        main = container(deployment)
        mounts = sorted((m["mountPath"] for m in main["volumeMounts"]), key=len, reverse=True)
        for mount in mounts:
            self.here(mount).mkdir(parents=True, exist_ok=True)
        # The config's paths, in one pass (the folders here are under /tmp too).
        pattern = "|".join(re.escape(m) for m in mounts)
        config_text = re.sub(f'"({pattern})/', lambda m: f'"{self.here(m.group(1))}/', config_text)
        args = list(main["args"])
        args[args.index("--http") + 1] = "127.0.0.1:0"
        config_path = args[args.index("--config") + 1]
        for path, content in dict(files, **{config_path: config_text}).items():
            self.here(path).write_text(content)
        for flag in ("--plugins", "--config"):
            args[args.index(flag) + 1] = str(self.here(args[args.index(flag) + 1]))
        pod_env = {}
        for variable in main["env"]:
            if "value" in variable:
                value = variable["value"]
                pod_env[variable["name"]] = str(self.here(value)) if value.startswith("/") else value
            else:
                assert variable["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}, variable
                pod_env[variable["name"]] = name
        self.log_path = root / "host.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([str(BINARY), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=log, env=dict(env, TMPDIR=str(self.here("/tmp")), **pod_env))
        url = self.proc.stdout.readline().decode().strip()
        assert url.startswith("http://"), self.log()[-3000:]
        self.authority = url.split("/")[2]

    def here(self, pod_path):
        return self.root / pod_path.lstrip("/")

    def log(self):
        return self.log_path.read_text()

    def tools(self, expected):
        """The tools listed once `expected` are among them (the pulls run in
        the background as the host starts; each plugin is announced as it
        arrives)."""
        deadline = time.monotonic() + 120
        while True:
            names = {tool["name"] for tool in modern(self.authority, 1, "tools/list", {})["result"]["tools"]}
            if expected <= names:
                return names
            assert time.monotonic() < deadline, (names, self.log()[-3000:])
            time.sleep(0.2)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)
        return self.log()


EXPECTED_TOOLS = {"get_current_time", "fetch", "create_entities", "read_graph"}
EMPTY_SET = "sha256:" + hashlib.sha256(b"").hexdigest()


def test_the_base_serves_the_real_plugins_pulled_by_digest_into_an_empty_folder(rendered, tmp_path):
    """The base's config and the Deployment's arguments, with the registry
    and digests replaced as the book says: the real plugins are pushed to a
    registry and signed, and the host, given nothing but the config, an
    empty plugin folder and the public key, pulls and serves them."""
    deployment = one(rendered["base"], "Deployment")
    env = machine_env(tmp_path)
    registry = Registry(tmp_path)
    try:
        _, private, public = key_pair(tmp_path, "signing")
        text = publish(config_of(rendered["base"]), registry, private, env)
        config = tomllib.loads(text)
        pod = Pod(tmp_path / "pod", deployment, text, {"/etc/wasm-mcp/keys/signing.pub": public.read_text()},
                  env, "wasm-mcp-5d8f7c9b4-x2x7q")
        try:
            pod.tools(EXPECTED_TOOLS)
            reply = modern(pod.authority, 2, "tools/call",
                           {"name": "get_current_time", "arguments": {"timezone": "UTC"}}, name="get_current_time")
            assert not reply["result"].get("isError") and "UTC" in reply["result"]["content"][0]["text"], reply
            status, body = readyz(pod.authority)
            assert status == 200 and body["plugins"] != EMPTY_SET, body
        finally:
            log = pod.close()
        # Each was pulled by digest, with its signature verified by the Secret's key.
        assert log.count("verified with") == len(config["plugins"]), log[-3000:]
        assert {p.stem for p in pod.here("/plugins").glob("*.wasm")} == set(config["plugins"])
        # It wrote where the Deployment gives it room, not in its home.
        assert pod.here("/var/lib/wasm-mcp/cache").is_dir()
        assert pod.here("/var/lib/wasm-mcp/cache.key").is_file()
        assert not (tmp_path / ".cache").exists() and not (tmp_path / ".local").exists()
    finally:
        registry.close()


def test_the_replicas_share_the_database_with_the_password_from_its_secret(rendered, tmp_path):
    """The overlay's config and Deployment, two pods of it against a real
    PostgreSQL that takes TLS connections only, and only with the password
    (the Secret's file): each is named after its pod, and what one writes
    the other reads."""
    deployment = one(rendered["replicas"], "Deployment")
    env = machine_env(tmp_path)
    postgres = Postgres(tmp_path / "postgres", tls=True)
    registry = Registry(tmp_path)
    pods = []
    try:
        password = secrets.token_urlsafe(24)
        require_password(postgres, password)
        _, private, public = key_pair(tmp_path, "signing")
        text = publish(config_of(rendered["replicas"]), registry, private, env)
        # The operator's database, and its authority (not a public one here:
        # in the database's Secret beside the password).
        ca = "/etc/wasm-mcp/database/ca.pem"
        text = re.sub(r'^url = "[^"]*"$', f'url = "{postgres.url}"\nca_file = "{ca}"', text, flags=re.M)
        assert postgres.url.endswith("?sslmode=require")
        files = {"/etc/wasm-mcp/keys/signing.pub": public.read_text(),
                 "/etc/wasm-mcp/database/password": password + "\n", ca: postgres.ca.read_text()}
        names = ["wasm-mcp-6c9b8d7f5-4k2zq", "wasm-mcp-6c9b8d7f5-t8wmn"]
        for name in names:
            pods.append(Pod(tmp_path / name, deployment, text, files, env, name))
        for pod in pods:
            deadline = time.monotonic() + 120
            while (answer := readyz(pod.authority))[0] != 200:
                assert time.monotonic() < deadline, (answer, pod.log()[-3000:])
                time.sleep(0.2)
            assert answer[1]["replica"] == pod.name and answer[1]["store"] == "reachable", answer
            pod.tools(EXPECTED_TOOLS)
        # The memory plugin's graph is in the database: written through one
        # replica, read through the other.
        entity = {"name": "kubernetes", "entityType": "test", "observations": ["written through one pod"]}
        reply = modern(pods[0].authority, 3, "tools/call", {"name": "create_entities",
                                                            "arguments": {"entities": [entity]}},
                       name="create_entities")
        assert not reply["result"].get("isError"), reply
        reply = modern(pods[1].authority, 4, "tools/call", {"name": "read_graph", "arguments": {}},
                       name="read_graph")
        assert "written through one pod" in json.dumps(reply["result"]), reply
        # Without the right password, the database turns a replica away (and
        # it is not ready).
        files["/etc/wasm-mcp/database/password"] = "wrong\n"
        pods.append(Pod(tmp_path / "wrong", deployment, text, files, env, "wasm-mcp-6c9b8d7f5-wr0ng"))
        deadline = time.monotonic() + 60
        while "password authentication failed" not in pods[-1].log():
            assert time.monotonic() < deadline, pods[-1].log()[-3000:]
            time.sleep(0.2)
        assert readyz(pods[-1].authority)[0] == 503
    finally:
        for pod in pods:
            pod.close()
        registry.close()
        postgres.stop()


def require_password(postgres, password):
    """Makes the throwaway server take TCP connections only with `password`
    (SCRAM), as an operator's does."""
    data = Path((postgres.folder / "data-dir").read_text().strip())
    port = (postgres.folder / "port").read_text().strip()
    run_as = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    psql = sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"))[-1]
    sql = f"ALTER ROLE wasm_mcp PASSWORD '{password}'; SELECT pg_reload_conf();"
    hba = data / "data" / "pg_hba.conf"
    hba.write_text("local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n")
    done = subprocess.run([*run_as, str(psql), "-h", str(data), "-p", port, "-U", "wasm_mcp", "-d", "wasm_mcp",
                           "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
