"""docker-compose.yml: valid Compose, and each profile holds what it promises.

Validated by `docker compose config` (or Debian's `docker-compose`) where installed, and
always against the Compose specification's JSON schema (vendored: data/README.md beside this file).
"""

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from backend.config import PROJECT_ROOT

COMPOSE_FILE = PROJECT_ROOT / "docker-compose.yml"
SCHEMA = Path(__file__).parent / "data" / "compose_spec.json"
PROFILES = ("embedded", "cpu", "replicas")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def in_profile(compose: dict, profile: str) -> dict[str, dict]:
    """The services `docker compose --profile PROFILE up` starts (those without profiles too)."""
    return {
        name: service
        for name, service in compose["services"].items()
        if not service.get("profiles") or profile in service["profiles"]
    }


def environment(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {key: str(value) for key, value in env.items()}


def compose_command() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone else None


def test_the_file_follows_the_compose_schema(compose):
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft201909Validator(schema).validate(compose)


def test_a_broken_file_fails_the_schema(compose):
    broken = {**compose, "services": {**compose["services"], "redis": {"image": "redis:7", "restart": 3}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft201909Validator(json.loads(SCHEMA.read_text())).validate(broken)


@pytest.mark.parametrize("profile", PROFILES)
def test_compose_itself_accepts_each_profile(profile):
    command = compose_command()
    if command is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed; the schema test stands")
    result = subprocess.run(
        [*command, "-f", str(COMPOSE_FILE), "--profile", profile, "config", "-q"],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
    )
    assert result.returncode == 0, result.stderr


def test_embedded_is_one_app_with_its_engine_beside_postgres_and_redis(compose):
    for profile, app in (("embedded", "app"), ("cpu", "app-cpu")):
        services = in_profile(compose, profile)
        assert set(services) == {app, "postgres", "redis"}
        assert environment(services[app]).get("PREFIXDESK_ENGINE", "embedded") == "embedded"
    gpu = compose["services"]["app"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["driver"] == "nvidia"


def test_replicas_are_vllm_servers_with_prefix_caching_behind_vllm_router_and_several_apps(compose):
    services = in_profile(compose, "replicas")
    replicas = {name: s for name, s in services.items() if s.get("image", "").startswith("vllm/vllm-openai")}
    apps = {name: s for name, s in services.items() if environment(s).get("PREFIXDESK_ENGINE") == "remote"}
    assert len(replicas) >= 2 and len(apps) >= 2
    for replica in replicas.values():
        flags = replica["command"]
        assert "--enable-prefix-caching" in flags and "--enable-prompt-tokens-details" in flags
        assert "--block-size=32" in flags  # the app's block size, so its cacheable counts are right
        assert replica["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"
    router = " ".join(services["router"]["command"])
    assert "vllm-router==" in router and "--policy consistent_hash" in router
    workers = router.split("--worker-urls", 1)[1].split()[:2]
    assert set(workers) == {f"http://{name}:8000" for name in replicas}
    for app in apps.values():
        env = environment(app)
        assert env["PREFIXDESK_ENGINE_URL"] == "http://router:8000"
        assert env["PREFIXDESK_SESSION_HEADER"] == "X-Session-Id"  # what consistent_hash reads first
        assert env["PREFIXDESK_ENGINE_HEALTH_PATH"] == "/readiness"  # up while one replica is
        # Every app process on the same Postgres and Redis: sessions, metrics, events.
        assert env["DATABASE_URL"].startswith("postgresql://") and env["REDIS_URL"].startswith("redis://")
    assert len({environment(app)["DATABASE_URL"] for app in apps.values()}) == 1
    assert len({environment(app)["REDIS_URL"] for app in apps.values()}) == 1
    assert not any("embedded" in s.get("profiles", []) for s in {**replicas, **apps}.values())
