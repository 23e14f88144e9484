"""A Kustomize renderer for exactly the features deploy/kubernetes/ uses, so
the manifests can be rendered where `kubectl kustomize` is not installed
(tests/test_kubernetes.py compares the two where it is).

    python tests/kustomize.py DIR      # the rendered objects, as a JSON list

Supported: `resources` (files and directories), `namespace`, `images`
(newName, newTag, digest), `configMapGenerator` (files; behavior create or
replace; the content-hash name suffix, and the references to it in pod
volumes), `patches` of JSON 6902 operations (add, replace, remove) with a
kind/name target. Anything else in a kustomization is refused, never
ignored. Needs PyYAML (the scan venv's, see scripts/scan-tools) to read
YAML; `name_hash` does not.
"""

import copy
import hashlib
import json
import sys
from pathlib import Path

KNOWN_KEYS = {"apiVersion", "kind", "namespace", "resources", "images", "configMapGenerator", "patches"}

# Kustomize's default ("legacy") order of kinds in its output; kinds not
# named sort between the two lists by group, version and kind.
ORDER_FIRST = [
    "Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
    "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap",
    "Secret", "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume",
    "PersistentVolumeClaim", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
]
ORDER_LAST = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                  "StorageClass", "PersistentVolume", "PriorityClass", "PodSecurityPolicy",
                  "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}


class Generated:
    """A ConfigMap made by a generator: hashed and referenced at the end."""

    def __init__(self, name, body):
        self.name = name
        self.body = body


def render(directory):
    """The objects `kubectl kustomize DIRECTORY` writes, as dicts, in its order."""
    objects, generated = build(Path(directory))
    renamed = {}
    for item in generated:
        hashed = f"{item.name}-{name_hash(item.body)}"
        item.body["metadata"]["name"] = hashed
        renamed[item.name] = hashed
    for obj in objects:
        for volume in pod_spec(obj).get("volumes", []) if pod_spec(obj) else []:
            source = volume.get("configMap")
            if source and source.get("name") in renamed:
                source["name"] = renamed[source["name"]]
    everything = objects + [item.body for item in generated]
    return sorted(everything, key=order)


def build(directory):
    """A kustomization's objects and generated ConfigMaps (names not hashed yet)."""
    import yaml

    path = directory / "kustomization.yaml"
    kustomization = yaml.safe_load(path.read_text())
    unknown = set(kustomization) - KNOWN_KEYS
    if unknown:
        raise ValueError(f"{path}: not supported by this renderer: {sorted(unknown)}")
    objects, generated = [], []
    for entry in kustomization.get("resources", []):
        target = directory / entry
        if target.is_dir():
            more, more_generated = build(target)
            objects += more
            generated += more_generated
        else:
            objects += [doc for doc in yaml.safe_load_all(target.read_text()) if doc]
    for generator in kustomization.get("configMapGenerator", []):
        generated = generate(directory, generator, generated)
    for patch in kustomization.get("patches", []):
        apply_patch(directory, patch, objects + [item.body for item in generated])
    if "namespace" in kustomization:
        for obj in objects + [item.body for item in generated]:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj["metadata"]["namespace"] = kustomization["namespace"]
    for image in kustomization.get("images", []):
        for obj in objects:
            set_image(obj, image)
    return objects, generated


def generate(directory, generator, generated):
    """`generated` with the ConfigMap `generator` makes (or replaces)."""
    unknown = set(generator) - {"name", "files", "behavior"}
    if unknown:
        raise ValueError(f"configMapGenerator: not supported by this renderer: {sorted(unknown)}")
    data = {}
    for entry in generator.get("files", []):
        key, _, file = entry.partition("=") if "=" in entry else (Path(entry).name, "", entry)
        data[key] = (directory / file).read_text()
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": generator["name"]}, "data": data}
    behavior = generator.get("behavior", "create")
    existing = [item for item in generated if item.name == generator["name"]]
    if behavior == "create":
        if existing:
            raise ValueError(f"configMapGenerator {generator['name']} exists already")
        return generated + [Generated(generator["name"], body)]
    if behavior == "replace":
        if not existing:
            raise ValueError(f"configMapGenerator {generator['name']}: nothing to replace")
        body["metadata"] = existing[0].body["metadata"]
        return [item for item in generated if item.name != generator["name"]] + [Generated(generator["name"], body)]
    raise ValueError(f"configMapGenerator behavior {behavior!r} is not supported by this renderer")


def name_hash(config_map):
    """Kustomize's name suffix: the SHA-256 of the ConfigMap's kind, name and
    data as Go's encoding/json writes them, its first 10 hex digits with
    0, 1, 3, a and e spelt g, h, k, m and t (no vowel, no look-alike). The
    name it hashes is empty (kustomize 5.5, as in kubectl 1.32)."""
    encoded = {"kind": "ConfigMap", "name": "", "data": config_map["data"]}
    text = json.dumps(encoded, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return digest.translate(str.maketrans("013ae", "ghkmt"))


def apply_patch(directory, patch, objects):
    """Applies a JSON 6902 patch file to the objects its target names."""
    import yaml

    unknown = set(patch) - {"path", "target"}
    if unknown or set(patch["target"]) - {"kind", "name"}:
        raise ValueError(f"patch {patch}: not supported by this renderer")
    operations = yaml.safe_load((directory / patch["path"]).read_text())
    if not isinstance(operations, list):
        raise ValueError(f"{patch['path']}: only JSON 6902 patches (a list of operations) are supported")
    targets = [obj for obj in objects
               if obj["kind"] == patch["target"]["kind"] and obj["metadata"]["name"] == patch["target"]["name"]]
    if not targets:
        raise ValueError(f"patch {patch['path']}: no target")
    for obj in targets:
        for operation in operations:
            json_patch(obj, operation)


def json_patch(document, operation):
    """One RFC 6902 operation (add, replace, remove), in place."""
    *parents, last = [part.replace("~1", "/").replace("~0", "~") for part in operation["path"].split("/")[1:]]
    node = document
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    op = operation["op"]
    value = copy.deepcopy(operation.get("value"))
    if isinstance(node, list):
        index = len(node) if last == "-" else int(last)
        if op == "add":
            node.insert(index, value)
        elif op == "replace":
            node[index] = value
        elif op == "remove":
            del node[index]
        else:
            raise ValueError(f"operation {op!r} is not supported by this renderer")
    else:
        if op in ("replace", "remove") and last not in node:
            raise ValueError(f"{operation['path']}: nothing to {op}")
        if op in ("add", "replace"):
            node[last] = value
        elif op == "remove":
            del node[last]
        else:
            raise ValueError(f"operation {op!r} is not supported by this renderer")


def pod_spec(obj):
    if obj["kind"] in WORKLOADS:
        return obj["spec"]["template"]["spec"]
    if obj["kind"] == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    if obj["kind"] == "Pod":
        return obj["spec"]
    return None


def set_image(obj, image):
    spec = pod_spec(obj)
    if not spec:
        return
    unknown = set(image) - {"name", "newName", "newTag", "digest"}
    if unknown:
        raise ValueError(f"images: not supported by this renderer: {sorted(unknown)}")
    for container in spec.get("containers", []) + spec.get("initContainers", []):
        name, tag, digest = split_image(container["image"])
        if name != image["name"]:
            continue
        name = image.get("newName", name)
        if "digest" in image:
            container["image"] = f"{name}@{image['digest']}"
        elif "newTag" in image:
            container["image"] = f"{name}:{image['newTag']}"
        else:
            container["image"] = name + (f"@{digest}" if digest else f":{tag}" if tag else "")


def split_image(reference):
    """(name, tag, digest) of an image reference."""
    name, _, digest = reference.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = None
    if colon > slash:
        name, tag = name[:colon], name[colon + 1:]
    return name, tag, digest or None


def order(obj):
    kind = obj["kind"]
    if kind in ORDER_FIRST:
        rank = ORDER_FIRST.index(kind)
    elif kind in ORDER_LAST:
        rank = len(ORDER_FIRST) + 1 + ORDER_LAST.index(kind)
    else:
        rank = len(ORDER_FIRST)
    group, _, version = obj["apiVersion"].rpartition("/")
    return (rank, f"{group}_{version}_{kind}", obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def from_yaml(text):
    """The objects of a multi-document YAML text (what kubectl writes)."""
    import yaml

    return [doc for doc in yaml.safe_load_all(text) if doc]


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--parse":
        # A YAML stream on stdin (kubectl's rendering) as JSON, for callers without PyYAML.
        json.dump(from_yaml(sys.stdin.read()), sys.stdout)
    elif len(sys.argv) == 2:
        json.dump(render(sys.argv[1]), sys.stdout)
    else:
        sys.exit("usage: kustomize.py DIR | kustomize.py --parse -")
