"""The console command, as a user runs it; `serve` with a bad model says why."""

import sqlite3
import subprocess
import sys


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "backend.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={"PATH": "/usr/bin:/bin", **env},
    )


def test_migrate_creates_the_sqlite_schema(tmp_path):
    database = tmp_path / "var" / "prefixdesk.db"
    result = run("migrate", env={"DATABASE_URL": f"sqlite:///{database}", "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    tables = {
        row[0]
        for row in sqlite3.connect(database).execute("select name from sqlite_master where type='table'")
    }
    assert {"bots", "conversations", "messages", "prompt_versions"} <= tables


def test_help_lists_the_commands(tmp_path):
    result = run("--help", env={"HOME": str(tmp_path)})
    assert result.returncode == 0
    for command in ("serve", "migrate", "model", "bench"):
        assert command in result.stdout


def test_agents_create_prints_a_token_once_that_opens_the_api(tmp_path):
    database = tmp_path / "agents.db"
    env = {"DATABASE_URL": f"sqlite:///{database}", "HOME": str(tmp_path)}
    assert run("migrate", env=env).returncode == 0
    created = run(
        "agents", "create", "--name", "Ada", "--email", "ada@example.com", "--role", "admin", env=env
    )
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip().splitlines()[-1]
    assert token.startswith("pdk_")
    assert token.encode() not in database.read_bytes()  # only its hash is stored
    listed = run("agents", "list", env=env)
    assert "ada@example.com" in listed.stdout and token[:10] in listed.stdout and token not in listed.stdout
    assert run("agents", "revoke", "1", env=env).returncode == 0
    assert "revoked" in run("agents", "list", env=env).stdout
    duplicate = run("agents", "create", "--name", "Ada", "--email", "ada@example.com", env=env)
    assert duplicate.returncode == 1 and "already exists" in duplicate.stderr


def test_serve_with_a_bad_model_prints_an_error_not_a_traceback(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "backend.cli", "serve"],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": "/usr/bin:/bin",
            "PREFIXDESK_MODEL": str(tmp_path / "missing"),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
            "HOME": str(tmp_path),
        },
    )
    assert result.returncode == 1
    assert "error: Model directory" in result.stderr and "does not exist" in result.stderr
    assert "Traceback" not in result.stderr
