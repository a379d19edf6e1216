"""The console command, as a user runs it."""

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
