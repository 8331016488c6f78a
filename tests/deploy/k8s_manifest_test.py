#!/usr/bin/env python3
"""deploy/k8s: the manifests agree with each example's cluster.yaml (its values
file) and carry what the processes need (docs/DEPLOY.md, "Kubernetes").

Default mode needs only Python and PyYAML: it assembles each example the way
kustomize would, for the subset of kustomize the manifests use (resources,
components, nameSuffix, labels with includeSelectors, strategic-merge patches of
a Deployment, configMapGenerator, images, namespace; anything else fails, so
the emulation cannot silently drift from the manifests), then checks.

--kubectl renders each example with `kubectl kustomize` and runs the same
checks on its output (plus what only the real renderer does: namespaces, the
ConfigMap's hash suffix); `kubectl apply --dry-run=server` follows when a
cluster answers `kubectl version`. Exit 77 (CTest: skipped) without kubectl.
"""
import argparse
import copy
import os
import re
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("k8s_manifest_test: PyYAML is missing (scripts/setup.sh installs it: pip install pyyaml)")
    sys.exit(1)

SOURCE = os.environ.get("DYNAMO_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
K8S = os.path.join(SOURCE, "deploy", "k8s")
EXAMPLES = os.path.join(K8S, "examples")
IMAGE = "dynamo-cpp"  # the image name the manifests use (docker/Dockerfile's images)
CONFIG_PATH = "/etc/dynamo/cluster.yaml"
SYSTEM_PORT = 9090

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


# ------------------------------------------------------------------ mini-kustomize
KNOWN_KEYS = {"apiVersion", "kind", "namespace", "resources", "components", "nameSuffix", "labels",
              "patches", "configMapGenerator", "images"}


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def merge_patch_deployment(dep, patch):
    """The strategic merge our pool patches use: scalars replace, containers
    merge by name, env entries merge by name."""
    def merge(dst, src, key=None):
        if isinstance(src, dict):
            for k, v in src.items():
                if k in dst and isinstance(dst[k], (dict, list)):
                    dst[k] = merge(dst[k], v, k)
                else:
                    dst[k] = copy.deepcopy(v)
            return dst
        if isinstance(src, list) and key in ("containers", "env"):
            for item in src:
                match = [d for d in dst if d.get("name") == item.get("name")]
                if match:
                    merge(match[0], item)
                else:
                    dst.append(copy.deepcopy(item))
            return dst
        return copy.deepcopy(src)
    merge(dep, {k: v for k, v in patch.items() if k not in ("apiVersion", "kind", "metadata")})


def assemble(directory):
    """Resources of the kustomization (or Component) in `directory`."""
    k = load_all(os.path.join(directory, "kustomization.yaml"))[0]
    unknown = set(k) - KNOWN_KEYS
    if unknown:
        raise SystemExit(f"{directory}: kustomize keys {sorted(unknown)} are not emulated; extend this test")
    out = []
    for r in k.get("resources", []) + k.get("components", []):
        p = os.path.join(directory, r)
        out += assemble(p) if os.path.isdir(p) else load_all(p)
    renamed = {}
    if "nameSuffix" in k:
        for o in out:
            old = o["metadata"]["name"]
            o["metadata"]["name"] = old + k["nameSuffix"]
            renamed[(o["kind"], old)] = o["metadata"]["name"]
    for entry in k.get("labels", []):
        for o in out:
            o["metadata"].setdefault("labels", {}).update(entry["pairs"])
            if o["kind"] == "Deployment":
                o["spec"]["template"]["metadata"].setdefault("labels", {}).update(entry["pairs"])
                if entry.get("includeSelectors"):
                    o["spec"]["selector"]["matchLabels"].update(entry["pairs"])
    for p in k.get("patches", []):
        if set(p) != {"patch"}:
            raise SystemExit(f"{directory}: only inline strategic-merge patches are emulated")
        patch = yaml.safe_load(p["patch"])
        name = patch["metadata"]["name"]
        name = renamed.get((patch["kind"], name), name)
        targets = [o for o in out if o["kind"] == patch["kind"] and o["metadata"]["name"] == name]
        if len(targets) != 1 or patch["kind"] != "Deployment":
            raise SystemExit(f"{directory}: patch of {patch['kind']}/{name} matches {len(targets)} resources")
        merge_patch_deployment(targets[0], patch)
    for g in k.get("configMapGenerator", []):
        data = {}
        for f in g["files"]:
            with open(os.path.join(directory, f)) as fh:
                data[os.path.basename(f)] = fh.read()
        out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": g["name"]}, "data": data})
    for img in k.get("images", []):
        for o in out:
            for c in pod_containers(o):
                if c["image"] == img["name"]:
                    c["image"] = f"{img.get('newName', img['name'])}:{img['newTag']}"
    if "namespace" in k:
        for o in out:
            o["metadata"]["namespace"] = k["namespace"]
            for s in o.get("subjects", []) if o["kind"] == "RoleBinding" else []:
                if s["kind"] == "ServiceAccount":
                    s["namespace"] = k["namespace"]
    return out


def pod_containers(o):
    if o.get("kind") != "Deployment":
        return []
    return o["spec"]["template"]["spec"]["containers"]


# ------------------------------------------------------------------ the checks
def dockerfile_uid():
    with open(os.path.join(SOURCE, "docker", "Dockerfile")) as f:
        users = re.findall(r"^USER (\d+):\d+", f.read(), re.M)
    return int(users[-1])


def env_of(c):
    return {e["name"]: e for e in c.get("env", [])}


def probe_port(c, probe):
    port = c[probe]["httpGet"]["port"]
    if isinstance(port, int):
        return port
    named = [p["containerPort"] for p in c.get("ports", []) if p.get("name") == port]
    return named[0] if named else None


def check_dynamo_container(where, dep, c, cluster, configmaps):
    spec = dep["spec"]["template"]["spec"]
    args = c.get("args", [])
    check(args and os.path.isdir(os.path.join(SOURCE, "apps", args[0])), f"{where}: args[0] is no binary of apps/: {args[:1]}")
    check(args[1:3] == ["--config", CONFIG_PATH], f"{where}: args do not start with --config {CONFIG_PATH}")
    check(c["image"].split(":")[0].endswith(IMAGE), f"{where}: image {c['image']} is not {IMAGE}")
    env = env_of(c)
    adv = env.get("DYNAMO_ADVERTISE_HOST", {})
    check(adv.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.podIP",
          f"{where}: DYNAMO_ADVERTISE_HOST is not the pod IP (downward API status.podIP)")
    check(env.get("DYN_SYSTEM_PORT", {}).get("value") == str(SYSTEM_PORT), f"{where}: DYN_SYSTEM_PORT is not {SYSTEM_PORT}")
    check(c.get("livenessProbe", {}).get("httpGet", {}).get("path") == "/live", f"{where}: liveness is not GET /live")
    check(c.get("readinessProbe", {}).get("httpGet", {}).get("path") == "/health", f"{where}: readiness is not GET /health")
    want_port = cluster["frontend"]["port"] if args[0] == "dynamo-frontend" else SYSTEM_PORT
    for probe in ("livenessProbe", "readinessProbe"):
        check(probe_port(c, probe) == want_port, f"{where}: {probe} port is {probe_port(c, probe)}, not {want_port}")
    mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    cm_mounts = [m for n, m in mounts.items() if "configMap" in vols.get(n, {})]
    check(len(cm_mounts) == 1 and cm_mounts[0]["mountPath"] == os.path.dirname(CONFIG_PATH),
          f"{where}: the cluster ConfigMap is not mounted at {os.path.dirname(CONFIG_PATH)}")
    for m in cm_mounts:
        cm = vols[m["name"]]["configMap"]["name"]
        check(cm in configmaps and "cluster.yaml" in configmaps[cm]["data"],
              f"{where}: volume {m['name']} names ConfigMap {cm}, which has no cluster.yaml")
    sc = spec.get("securityContext", {})
    check(sc.get("runAsNonRoot") is True and sc.get("runAsUser") == dockerfile_uid(),
          f"{where}: not runAsNonRoot as the image's user {dockerfile_uid()}")
    check(spec.get("enableServiceLinks") is False, f"{where}: enableServiceLinks is not false")
    grace_ms = 1000 * spec.get("terminationGracePeriodSeconds", 30)
    if args[0] != "dynamo-planner":
        check(grace_ms > cluster.get("shutdown_grace_ms", 5000),
              f"{where}: terminationGracePeriodSeconds {grace_ms // 1000} s does not cover shutdown_grace_ms "
              f"{cluster.get('shutdown_grace_ms', 5000)} (the drain would be cut)")


def check_planner_rbac(name, objs, dep):
    by = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    sa = dep["spec"]["template"]["spec"].get("serviceAccountName")
    check(("ServiceAccount", sa) in by, f"{name}: planner's ServiceAccount {sa} is missing")
    roles = [o for o in objs if o["kind"] in ("Role", "ClusterRole")]
    check(len(roles) == 1 and roles[0]["kind"] == "Role", f"{name}: want exactly one Role (namespaced), got {len(roles)}")
    if roles:
        rules = roles[0]["rules"]
        check(len(rules) == 1 and rules[0]["apiGroups"] == ["apps"] and rules[0]["resources"] == ["deployments/scale"]
              and sorted(rules[0]["verbs"]) == ["get", "patch"],
              f"{name}: the planner's Role must allow get and patch on apps deployments/scale only: {rules}")
    bindings = [o for o in objs if o["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    check(len(bindings) == 1 and bindings[0]["kind"] == "RoleBinding", f"{name}: want exactly one RoleBinding")
    if bindings and roles:
        b = bindings[0]
        check(b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": roles[0]["metadata"]["name"]},
              f"{name}: RoleBinding does not bind the Role: {b['roleRef']}")
        check([(s["kind"], s["name"]) for s in b["subjects"]] == [("ServiceAccount", sa)],
              f"{name}: RoleBinding subjects are not the planner's ServiceAccount")
        ns = b["metadata"].get("namespace")
        check(all(s.get("namespace") == ns for s in b["subjects"]),
              f"{name}: RoleBinding subject namespace is not the binding's ({ns})")
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    check(args[args.index("--connector") + 1] == "kubernetes" if "--connector" in args else False,
          f"{name}: the planner does not run --connector kubernetes")
    prefix = args[args.index("--deployment-prefix") + 1] if "--deployment-prefix" in args else "worker-"
    return prefix


def check_example(name, objs, cluster, cluster_text, rendered):
    deps = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Deployment"}
    services = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Service"}
    configmaps = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ConfigMap"}
    pools = cluster.get("pools", [])
    standalone = cluster.get("router", {}).get("standalone", False)
    planner = cluster.get("planner", {}).get("enabled", False)

    # The cluster config is what a pod can run with.
    check(cluster.get("plane_host") == "0.0.0.0", f"{name}: plane_host must be 0.0.0.0 in pods (each advertises its IP)")
    check(not cluster.get("advertise_host"), f"{name}: advertise_host in the file would be one address for every pod")
    check(cluster.get("frontend", {}).get("host") == "0.0.0.0", f"{name}: frontend.host must be 0.0.0.0 (the Service reaches the pod IP)")
    d = cluster.get("discovery", {})
    etcd_port = services["etcd"]["spec"]["ports"][0]["port"] if "etcd" in services else None
    check(d.get("backend") == "etcd" and d.get("endpoints") == [f"http://etcd:{etcd_port}"],
          f"{name}: discovery must be etcd at http://etcd:{etcd_port} (the etcd Service)")
    pl = cluster.get("planner", {})
    if pl.get("throughput_scaling") or pl.get("mode") == "sla":
        url = f"http://frontend:{services['frontend']['spec']['ports'][0]['port']}/metrics" if "frontend" in services else None
        check(pl.get("metrics_url") == url,
              f"{name}: planner.metrics_url must be {url} (the default, the frontend host, is not the planner's pod)")
    for cm in configmaps.values():
        check(cm["data"].get("cluster.yaml") == cluster_text, f"{name}: ConfigMap {cm['metadata']['name']} is not cluster.yaml")

    # One Deployment per process kind the config asks for, nothing else.
    want = {"etcd", "frontend"} | ({"router"} if standalone else set()) | ({"planner"} if planner else set())
    prefix = check_planner_rbac(name, objs, deps["planner"]) if "planner" in deps else "worker-"
    want |= {prefix + p["name"] for p in pools}
    check(set(deps) == want, f"{name}: Deployments {sorted(deps)} do not mirror cluster.yaml, want {sorted(want)}")
    if not planner:
        check(not any(o["kind"] in ("Role", "RoleBinding", "ServiceAccount") for o in objs), f"{name}: RBAC without a planner")

    for p in pools:
        dep = deps.get(prefix + p["name"])
        if not check(dep is not None, f"{name}: pool {p['name']} has no Deployment {prefix + p['name']}"):
            continue
        where = f"{name}: {dep['metadata']['name']}"
        check(dep["spec"].get("replicas", 1) == p.get("replicas", 1),
              f"{where}: replicas {dep['spec'].get('replicas', 1)} != cluster.yaml's {p.get('replicas', 1)}")
        c = dep["spec"]["template"]["spec"]["containers"][0]
        check(env_of(c).get("DYNAMO_POOL", {}).get("value") == p["name"], f"{where}: DYNAMO_POOL is not {p['name']}")
        check(c["args"][:1] == ["dynamo-worker"] and c["args"][3:5] == ["--pool", "$(DYNAMO_POOL)"],
              f"{where}: not dynamo-worker --config ... --pool $(DYNAMO_POOL)")
        if p.get("engine") == "cuda":
            check("nvidia.com/gpu" in c.get("resources", {}).get("limits", {}), f"{where}: a cuda pool without a GPU limit")

    # Every Deployment: its selector picks its own pods and no other Deployment's.
    for n, dep in deps.items():
        sel = dep["spec"]["selector"]["matchLabels"]
        labels = dep["spec"]["template"]["metadata"]["labels"]
        check(sel.items() <= labels.items(), f"{name}: {n}'s selector does not match its pods")
        for m, other in deps.items():
            if m != n:
                check(not sel.items() <= other["spec"]["template"]["metadata"]["labels"].items(),
                      f"{name}: {n}'s selector also selects {m}'s pods")
        for c in pod_containers(dep):
            if c["image"].split(":")[0].endswith(IMAGE):
                check_dynamo_container(f"{name}: {n}", dep, c, cluster, configmaps)

    fe = services.get("frontend")
    if check(fe is not None, f"{name}: no frontend Service"):
        port = [c for c in pod_containers(deps["frontend"])][0]["ports"][0]["containerPort"]
        check(port == cluster["frontend"]["port"], f"{name}: frontend containerPort {port} != frontend.port")
    if rendered:
        namespaced = [o for o in objs if o["kind"] not in ("ClusterRole", "ClusterRoleBinding", "Namespace")]
        check(len({o["metadata"].get("namespace") for o in namespaced}) == 1 and namespaced[0]["metadata"].get("namespace"),
              f"{name}: objects are not all in one namespace")
        check(all(re.fullmatch(r"cluster-[a-z0-9]{10}", n) for n in configmaps),
              f"{name}: the ConfigMap has no content hash suffix (pods would not roll on a change): {sorted(configmaps)}")


def examples():
    return sorted(e for e in os.listdir(EXAMPLES) if os.path.isfile(os.path.join(EXAMPLES, e, "kustomization.yaml")))


def run_checks(kubectl):
    for ex in examples():
        d = os.path.join(EXAMPLES, ex)
        with open(os.path.join(d, "cluster.yaml")) as f:
            text = f.read()
        cluster = yaml.safe_load(text)
        if kubectl:
            out = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True)
            if not check(out.returncode == 0, f"{ex}: kubectl kustomize failed: {out.stderr.strip()}"):
                continue
            objs = [o for o in yaml.safe_load_all(out.stdout) if o]
        else:
            objs = assemble(d)
        n = len(failures)
        check_example(ex, objs, cluster, text, rendered=bool(kubectl))
        print(f"{ex}: {len(objs)} objects, {sum(o['kind'] == 'Deployment' for o in objs)} Deployments: "
              f"{'ok' if len(failures) == n else 'FAILED'}")
    return len(examples())


def dry_run(kubectl):
    v = subprocess.run([kubectl, "version", "--request-timeout=5s"], capture_output=True, text=True)
    if v.returncode != 0:
        print("kubectl apply --dry-run=server: skipped, no cluster answers (kubectl version: "
              f"{v.stderr.strip().splitlines()[-1] if v.stderr.strip() else 'failed'})")
        return
    for ex in examples():
        out = subprocess.run([kubectl, "apply", "--dry-run=server", "-k", os.path.join(EXAMPLES, ex)],
                             capture_output=True, text=True)
        check(out.returncode == 0, f"{ex}: kubectl apply --dry-run=server: {out.stderr.strip()}")
        print(f"{ex}: kubectl apply --dry-run=server: {'ok' if out.returncode == 0 else 'FAILED'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubectl", action="store_true", help="render with kubectl kustomize (exit 77 without kubectl)")
    a = ap.parse_args()
    kubectl = None
    if a.kubectl:
        kubectl = shutil.which("kubectl")
        if not kubectl:
            print("k8s_manifest_test --kubectl: skipped, kubectl is not installed")
            return 77
    n = run_checks(kubectl)
    check(n >= 2, f"only {n} examples under {EXAMPLES}")
    if kubectl:
        dry_run(kubectl)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
